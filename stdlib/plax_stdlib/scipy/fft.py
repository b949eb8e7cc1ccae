"""`plax.scipy.fft`: the type-II discrete cosine transform and its inverse, in one or
several axes, with SciPy's "backward" and "ortho" scalings (`jax.scipy.fft`'s subset:
other types and norms raise).

Both directions go through a complex FFT of twice the length: with x zero-padded to
2N, X_k = 2 Re[e^{-iπk/2N} FFT(x)_k]; the inverse weights X_0 by ½, turns each X_k by
e^{iπk/2N} and keeps 2 Re of the inverse FFT's first N entries. Complex input is
transformed as its real and imaginary parts.
"""
from __future__ import annotations

import operator

import numpy as np

from plax import errors
from plax.extend import dtypes
from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.numpy import fft as np_fft
from plax_stdlib.numpy import util

_NORMS = (None, "backward", "ortho")


def _operand(name, x, type, norm):
    util.check_arraylike(name, x)
    if type != 2:
        raise NotImplementedError(f"plax.scipy.fft.{name}: only DCT type 2 is implemented; "
                                  f"got type={type!r}")
    if norm not in _NORMS:
        raise ValueError(f"plax.scipy.fft.{name}: norm={norm!r} is not implemented; use "
                         "None, 'backward' or 'ortho'")
    (x,) = util.promote_dtypes_inexact(x)
    return jnp.asarray(x)


def _resized(name, x, n, axis):
    """x cut or zero-padded to length n along axis (unchanged for n=None)."""
    if n is None:
        return x
    n = operator.index(n)
    if n < 1:
        raise errors.InvalidShapeError(f"plax.scipy.fft.{name}: the transform length must "
                                       f"be positive, got n={n}")
    length = x.shape[axis]
    if n <= length:
        return lax.slice_in_dim(x, 0, n, axis=axis)
    widths = [(0, n - length if a == axis else 0) for a in range(x.ndim)]
    return jnp.pad(x, widths)


def _twiddle(length, axis, ndim, sign):
    """e^{sign·iπk/2N} for k < N, shaped to broadcast along `axis`."""
    k = np.arange(length)
    w = np.exp(sign * 0.5j * np.pi * k / length)
    return w.reshape([length if a == axis else 1 for a in range(ndim)])


def _ortho_scale(length, axis, ndim):
    """The factors that make the type-II DCT orthonormal: √(1/4N) for k=0, √(1/2N) else."""
    f = np.full(length, np.sqrt(0.5 / length))
    f[0] = np.sqrt(0.25 / length)
    return f.reshape([length if a == axis else 1 for a in range(ndim)])


def _real_dct(x, axis, norm):
    length = x.shape[axis]
    spectrum = np_fft.fft(x, n=2 * length, axis=axis)
    spectrum = lax.slice_in_dim(spectrum, 0, length, axis=axis)
    w = _twiddle(length, axis, x.ndim, -1).astype(spectrum.dtype)
    out = 2 * jnp.real(spectrum * w)
    if norm == "ortho":
        out = out * _ortho_scale(length, axis, x.ndim).astype(out.dtype)
    return out


def _real_idct(x, axis, norm):
    length = x.shape[axis]
    if norm == "ortho":
        x = x / _ortho_scale(length, axis, x.ndim).astype(x.dtype)
    first = np.ones(length)
    first[0] = 0.5
    first = first.reshape([length if a == axis else 1 for a in range(x.ndim)])
    w = _twiddle(length, axis, x.ndim, 1).astype(dtypes.to_complex_dtype(x.dtype))
    turned = (x * first.astype(x.dtype)) * w
    signal = np_fft.ifft(turned, n=2 * length, axis=axis)
    return 2 * jnp.real(lax.slice_in_dim(signal, 0, length, axis=axis))


def _along(real_transform, x, axis, norm):
    """The transform of x along one axis, a complex x through its two parts."""
    if jnp.iscomplexobj(x):
        return lax.complex(real_transform(jnp.real(x), axis, norm),
                           real_transform(jnp.imag(x), axis, norm))
    return real_transform(x, axis, norm)


def _one_axis(name, real_transform, x, type, n, axis, norm):
    x = _operand(name, x, type, norm)
    axis = util.canonicalize_axis(axis, x.ndim)
    return _along(real_transform, _resized(name, x, n, axis), axis, norm)


def _shape_and_axes(x, s, axes):
    """SciPy's pairing of `s` and `axes`: the last len(s) axes when only `s` is given,
    every axis when neither is; `s` pairs with the first len(s) of `axes`."""
    if s is not None:
        s = [operator.index(s)] if np.ndim(s) == 0 else [operator.index(n) for n in s]
        if len(s) > x.ndim:
            raise ValueError(f"s must have at most x.ndim ({x.ndim}) elements, got {len(s)}")
    if axes is None:
        axes = tuple(range(x.ndim - (x.ndim if s is None else len(s)), x.ndim))
    else:
        axes = [axes] if np.ndim(axes) == 0 else list(axes)
        canonical = tuple(util.canonicalize_axis(a, x.ndim) for a in axes)
        if len(set(canonical)) != len(canonical):
            raise ValueError(f"repeated axis: {tuple(axes)}")
        axes = canonical
    return dict(zip(axes, s)) if s is not None else {}, axes


def _many_axes(name, real_transform, x, type, s, axes, norm):
    x = _operand(name, x, type, norm)
    lengths, axes = _shape_and_axes(x, s, axes)
    for axis in axes:
        x = _along(real_transform, _resized(name, x, lengths.get(axis), axis), axis, norm)
    return x


def dct(x, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The type-II DCT of x along `axis`, cut or zero-padded to length `n` first."""
    return _one_axis("dct", _real_dct, x, type, n, axis, norm)


def idct(x, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The inverse of `dct` (a scaled type-III DCT) along `axis`, after cutting or
    zero-padding to length `n`."""
    return _one_axis("idct", _real_idct, x, type, n, axis, norm)


def dctn(x, type: int = 2, s=None, axes=None, norm: str | None = None):
    """The type-II DCT along each of `axes`, each cut or zero-padded to its length in `s`."""
    return _many_axes("dctn", _real_dct, x, type, s, axes, norm)


def idctn(x, type: int = 2, s=None, axes=None, norm: str | None = None):
    """The inverse of `dctn`: `idct` along each of `axes`, sized by `s`."""
    return _many_axes("idctn", _real_idct, x, type, s, axes, norm)

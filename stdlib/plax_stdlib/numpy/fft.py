"""`plax.numpy.fft`: NumPy's discrete Fourier transforms on the `lax.fft` primitive.

Each transform pads or truncates the chosen axes to the requested lengths, moves
them last (lax.fft transforms trailing axes, at most three at a time), and scales
the result for `norm`: "backward" (the default) divides the inverse by N, "ortho"
both directions by √N, "forward" the forward transform by N.
"""
from __future__ import annotations

import math
import operator
import textwrap
from typing import Sequence

import numpy as np

from plax.extend import dtypes
from plax_stdlib import lax
from plax_stdlib.lax.fourier import FftType
from plax_stdlib.numpy import creation, shape_ops, ufuncs, util

_NORMS = (None, "backward", "ortho", "forward")
_MAX_AXES = 3  # per lax.fft


def _check_norm(norm) -> None:
    if norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm!r}; should be "backward", "ortho" or '
                         '"forward".')


def _scale(x, n: int, norm, inverse: bool):
    """Multiply `x` by the factor `norm` asks for beyond what XLA applies (XLA's inverse
    transforms already divide by n). The factor is rounded as JAX computes it in `x`'s
    precision: √n first, then its reciprocal."""
    if norm in (None, "backward"):
        return x
    dtype = util.dtype_of(x)
    real = dtypes.finfo(dtype).dtype.type
    factor = np.sqrt(real(n)) if norm == "ortho" else real(n)
    if not inverse:
        factor = real(1) / factor
    return lax.mul(x, np.asarray(factor).astype(dtype))


def _fit(x, axis: int, length: int):
    """`x` cut or zero-padded to `length` along `axis`."""
    size = util.shape_of(x)[axis]
    if size == length:
        return x
    if size > length:
        return lax.slice_in_dim(x, 0, length, axis=axis)
    config = [(0, 0, 0)] * len(util.shape_of(x))
    config[axis] = (0, length - size, 0)
    return lax.pad(x, np.zeros((), util.dtype_of(x)), config)


def _axes_and_lengths(fun_name: str, x, s, axes):
    """Canonical (distinct) axes, by default all or the last len(s); and the lengths
    `s` checked (None stays None)."""
    ndim = len(util.shape_of(x))
    if axes is None:
        count = ndim if s is None else len(s)
        if count > ndim:
            raise ValueError(f"{fun_name}: {count} axes requested for an array of dimension "
                             f"{ndim}")
        axes = tuple(range(ndim - count, ndim))
    else:
        axes = tuple(util.canonicalize_axis(a, ndim) for a in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"{fun_name}: repeated axes in {axes}")
    if s is None:
        return axes, None
    s = tuple(operator.index(n) for n in s)
    if len(s) != len(axes):
        raise ValueError(f"{fun_name}: s {s} and axes {axes} must have the same length")
    if any(n < 1 for n in s):
        raise ValueError(f"{fun_name}: the transform lengths s={s} must be positive")
    return axes, s


def _on_axes(x, axes: Sequence[int], fn):
    """`fn` (which transforms trailing axes) applied to `axes` of `x`."""
    ndim = len(util.shape_of(x))
    axes = list(axes)
    tail = list(range(ndim - len(axes), ndim))
    if axes == tail:
        return fn(x)
    return shape_ops.moveaxis(fn(shape_ops.moveaxis(x, axes, tail)), tail, axes)


def _transform_last(x, kind: FftType, lengths: Sequence[int]):
    """lax.fft over x's trailing len(lengths) axes; beyond three axes (lax.fft's
    limit), the complex transforms go three axes at a time, and a real transform's
    last axis is done on its own."""
    lengths = tuple(lengths)
    if len(lengths) <= _MAX_AXES:
        return lax.fft(x, kind, lengths)
    first = len(util.shape_of(x)) - len(lengths)
    if kind in (FftType.FFT, FftType.IFFT):
        for start in range(0, len(lengths), _MAX_AXES):
            group = lengths[start:start + _MAX_AXES]
            x = _on_axes(x, range(first + start, first + start + len(group)),
                         lambda y, g=group: lax.fft(y, kind, g))
        return x
    rest = range(first, first + len(lengths) - 1)
    if kind == FftType.RFFT:
        x = lax.fft(x, FftType.RFFT, lengths[-1:])
        return _on_axes(x, rest, lambda y: _transform_last(y, FftType.FFT, lengths[:-1]))
    x = _on_axes(x, rest, lambda y: _transform_last(y, FftType.IFFT, lengths[:-1]))
    return lax.fft(x, FftType.IRFFT, lengths[-1:])


def _fftn(fun_name: str, kind: FftType, a, s, axes, norm):
    _check_norm(norm)
    a = util.ensure_arraylike(fun_name, a)
    if kind == FftType.RFFT:
        if util.dtype_category(util.dtype_of(a)) == "c":
            raise ValueError(f"{fun_name} takes real input, got dtype {util.dtype_of(a)}")
        a = util.convert(a, dtypes.to_inexact_dtype(util.dtype_of(a)))
    else:
        a = util.convert(a, dtypes.to_complex_dtype(util.dtype_of(a)))
    axes, s = _axes_and_lengths(fun_name, a, s, axes)
    if not axes:
        return util.as_array(a)
    shape = util.shape_of(a)
    if s is None:
        s = tuple(shape[ax] for ax in axes)
        if kind == FftType.IRFFT:
            s = (*s[:-1], 2 * (s[-1] - 1))
            if s[-1] < 1:
                raise ValueError(f"{fun_name}: the output length {s[-1]} along axis "
                                 f"{axes[-1]} must be positive")
    for ax, n in zip(axes[:-1], s[:-1]):
        a = _fit(a, ax, n)
    a = _fit(a, axes[-1], s[-1] // 2 + 1 if kind == FftType.IRFFT else s[-1])
    out = _on_axes(a, axes, lambda y: _transform_last(y, kind, s))
    # which way `norm` scales goes by the name, as in JAX: hfft scales as a forward
    # transform, ihfft as an inverse one
    return _scale(out, math.prod(s), norm, fun_name.startswith("i"))


def _check_one_axis(fun_name: str, axis) -> None:
    if isinstance(axis, (list, tuple)):
        raise ValueError(f"{fun_name} transforms along one axis, got axis={axis!r} (the "
                         "n-dimensional transforms take several)")


def _one_axis(fun_name: str, kind: FftType, a, n, axis, norm):
    _check_one_axis(fun_name, axis)
    return _fftn(fun_name, kind, a, None if n is None else (n,), (axis,), norm)


def _axis_length(fun_name: str, a, axis) -> int:
    """The length of `a` along `axis`, a checked single axis."""
    _check_one_axis(fun_name, axis)
    shape = util.shape_of(a)
    return shape[util.canonicalize_axis(axis, len(shape), IndexError)]  # (JAX indexes)


def fft(a, n=None, axis: int = -1, norm=None):
    """The one-dimensional DFT of `a` along `axis` (cut or zero-padded to `n`)."""
    return _one_axis("fft", FftType.FFT, a, n, axis, norm)


def ifft(a, n=None, axis: int = -1, norm=None):
    """The one-dimensional inverse DFT along `axis`."""
    return _one_axis("ifft", FftType.IFFT, a, n, axis, norm)


def rfft(a, n=None, axis: int = -1, norm=None):
    """The DFT of real input along `axis`: the n // 2 + 1 non-negative frequencies."""
    return _one_axis("rfft", FftType.RFFT, a, n, axis, norm)


def irfft(a, n=None, axis: int = -1, norm=None):
    """The inverse of `rfft`: `n` (default 2·(m - 1)) real values along `axis`."""
    return _one_axis("irfft", FftType.IRFFT, a, n, axis, norm)


def hfft(a, n=None, axis: int = -1, norm=None):
    """The DFT of a Hermitian-symmetric signal given by its first half: `n` real values
    (by default 2·(m - 1)), an inverse real transform of `conj(a)` scaled back by `n`."""
    _check_norm(norm)
    a = util.ensure_arraylike("hfft", a)
    length = 2 * (_axis_length("hfft", a, axis) - 1) if n is None else n
    return ufuncs.multiply(_one_axis("hfft", FftType.IRFFT, ufuncs.conj(a), n, axis, norm),
                           length)


def ihfft(a, n=None, axis: int = -1, norm=None):
    """The inverse of `hfft`: the conjugated first half of the spectrum of a real signal,
    divided by its length `n`."""
    _check_norm(norm)
    a = util.ensure_arraylike("ihfft", a)
    length = _axis_length("ihfft", a, axis) if n is None else n
    return ufuncs.multiply(ufuncs.conj(_one_axis("ihfft", FftType.RFFT, a, n, axis, norm)),
                           1 / length)


def fft2(a, s=None, axes: Sequence[int] = (-2, -1), norm=None):
    """The two-dimensional DFT over `axes`."""
    return _fftn("fft2", FftType.FFT, a, s, axes, norm)


def ifft2(a, s=None, axes: Sequence[int] = (-2, -1), norm=None):
    """The two-dimensional inverse DFT over `axes`."""
    return _fftn("ifft2", FftType.IFFT, a, s, axes, norm)


def rfft2(a, s=None, axes: Sequence[int] = (-2, -1), norm=None):
    """The two-dimensional DFT of real input (half spectrum along the last axis)."""
    return _fftn("rfft2", FftType.RFFT, a, s, axes, norm)


def irfft2(a, s=None, axes: Sequence[int] = (-2, -1), norm=None):
    """The inverse of `rfft2`."""
    return _fftn("irfft2", FftType.IRFFT, a, s, axes, norm)


def fftn(a, s=None, axes=None, norm=None):
    """The n-dimensional DFT over `axes` (all, or the last len(s))."""
    return _fftn("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a, s=None, axes=None, norm=None):
    """The n-dimensional inverse DFT."""
    return _fftn("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a, s=None, axes=None, norm=None):
    """The n-dimensional DFT of real input (half spectrum along the last axis)."""
    return _fftn("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a, s=None, axes=None, norm=None):
    """The inverse of `rfftn`."""
    return _fftn("irfftn", FftType.IRFFT, a, s, axes, norm)


# --- frequencies and shifts ------------------------------------------------------------------

def _frequency_dtype(dtype):
    dtype = util.check_user_dtype(dtype, "fftfreq")
    return dtypes.default_float_dtype() if dtype is None else dtype


def fftfreq(n: int, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of an n-point DFT with sample spacing `d`:
    [0, 1, ..., (n-1)//2, -(n//2), ..., -1] / (d·n)."""
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"fftfreq: n must be positive, got {n}")
    dtype = _frequency_dtype(dtype)
    k = np.concatenate([np.arange(0, (n - 1) // 2 + 1), np.arange(-(n // 2), 0)])
    return _frequencies(k, n, d, dtype, device)


def rfftfreq(n: int, d=1.0, *, dtype=None, device=None):
    """The non-negative sample frequencies of an n-point real DFT: [0, ..., n//2] / (d·n)."""
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"rfftfreq: n must be positive, got {n}")
    return _frequencies(np.arange(0, n // 2 + 1), n, d, _frequency_dtype(dtype), device)


def _frequencies(k: np.ndarray, n: int, d, dtype, device):
    values = creation.asarray(k.astype(dtype), device=device)
    if util.is_python_scalar(d) or isinstance(d, np.generic):
        return lax.mul(values, np.asarray(1 / (float(d) * n), dtype)[()])
    return lax.div(values, lax.mul(util.convert(d, dtype), np.asarray(n, dtype)[()]))


def _shift(fun_name: str, x, axes, inverse: bool):
    x = util.ensure_arraylike(fun_name, x)
    shape = util.shape_of(x)
    axes = tuple(range(len(shape))) if axes is None else \
        tuple(util.canonicalize_axis(a, len(shape), IndexError) for a in
              ((axes,) if isinstance(axes, (int, np.integer)) else axes))
    shifts = tuple(-(shape[a] // 2) if inverse else shape[a] // 2 for a in axes)
    return shape_ops.roll(x, shifts, axes) if axes else util.as_array(x)


def fftshift(x, axes=None):
    """`x` with the zero frequency moved to the middle of each of `axes` (all)."""
    return _shift("fftshift", x, axes, inverse=False)


def ifftshift(x, axes=None):
    """The inverse of `fftshift`."""
    return _shift("ifftshift", x, axes, inverse=True)


# Errors raised below a public function are shown from the caller (plax.errors).
from plax.extend.traceback_util import api_boundaries as _api_boundaries  # noqa: E402

_api_boundaries(globals())


# --- the public docstrings: each function's own summary above, then what the kind of
# function shares (NumPy differences, arguments), then its example from this table.

_FFT_NOTE = ("Follows `numpy.fft.{name}`, except for dtypes: float32 input gives complex64 "
             "(NumPy computes in complex128), and integer input the default complex type. "
             "`norm` is \"backward\" (default: the inverse transform divides by n), \"ortho\" "
             "or \"forward\".")
_ARGS = {
    "one_axis": ("    a: an array.\n    n: the transform's length along `axis` (the input is "
                 "cut or zero-padded).\n    axis: the axis to transform.\n    norm: the "
                 "normalization.", "An array; along `axis`, the transform's values."),
    "axes": ("    a: an array.\n    s: the transform's lengths along `axes` (cut or "
             "zero-padded).\n    axes: the axes to transform.\n    norm: the normalization.",
             "An array; over `axes`, the transform's values."),
    "freq": ("    n: the transform's length.\n    d: the sample spacing.\n    dtype: the "
             "result's dtype (default the default float type).\n    device: a Device to "
             "place the result on.", "A 1-D array of frequencies, in cycles per unit of `d`."),
    "shift": ("    x: an array.\n    axes: the axes to shift (default all).",
              "An array of `x`'s shape."),
}
_FFT_EXAMPLES = {  # name: (kind, example, its output)
    "fft": ("one_axis", "jnp.fft.fft(jnp.array([1.0, 0.0, 0.0, 0.0]))",
            "Array([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j], dtype=complex64)"),
    "ifft": ("one_axis", "jnp.fft.ifft(jnp.array([4.0, 0.0, 0.0, 0.0]))",
             "Array([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j], dtype=complex64)"),
    "rfft": ("one_axis", "jnp.fft.rfft(jnp.array([1.0, 1.0, 1.0, 1.0]))",
             "Array([4.+0.j, 0.+0.j, 0.+0.j], dtype=complex64)"),
    "irfft": ("one_axis", "jnp.fft.irfft(jnp.array([4.0, 0.0, 0.0]))",
              "Array([1., 1., 1., 1.], dtype=float32)"),
    "hfft": ("one_axis", "jnp.fft.hfft(jnp.array([1.0, 0.0, 0.0]))",
             "Array([1., 1., 1., 1.], dtype=float32)"),
    "ihfft": ("one_axis", "jnp.fft.ihfft(jnp.array([1.0, 1.0, 1.0, 1.0]))",
              "Array([1.+0.j, 0.+0.j, 0.+0.j], dtype=complex64)"),
    "fft2": ("axes", "jnp.fft.fft2(jnp.ones((2, 2)))",
             "Array([[4.+0.j, 0.+0.j],\n           [0.+0.j, 0.+0.j]], dtype=complex64)"),
    "ifft2": ("axes", "jnp.fft.ifft2(jnp.array([[4.0, 0.0], [0.0, 0.0]]))",
              "Array([[1.+0.j, 1.+0.j],\n           [1.+0.j, 1.+0.j]], dtype=complex64)"),
    "rfft2": ("axes", "jnp.fft.rfft2(jnp.ones((2, 4))).shape", "(2, 3)"),
    "irfft2": ("axes", "jnp.fft.irfft2(jnp.fft.rfft2(jnp.ones((2, 4)))).shape", "(2, 4)"),
    "fftn": ("axes", "jnp.fft.fftn(jnp.ones((2, 2, 2)))[0, 0, 0]",
             "Array(8.+0.j, dtype=complex64)"),
    "ifftn": ("axes", "jnp.fft.ifftn(jnp.fft.fftn(jnp.ones((2, 3)))).real",
              "Array([[1., 1., 1.],\n           [1., 1., 1.]], dtype=float32)"),
    "rfftn": ("axes", "jnp.fft.rfftn(jnp.ones((2, 2, 4))).shape", "(2, 2, 3)"),
    "irfftn": ("axes", "jnp.fft.irfftn(jnp.fft.rfftn(jnp.ones((2, 4)))).shape", "(2, 4)"),
    "fftfreq": ("freq", "jnp.fft.fftfreq(4)",
                "Array([ 0.  ,  0.25, -0.5 , -0.25], dtype=float32)"),
    "rfftfreq": ("freq", "jnp.fft.rfftfreq(4)", "Array([0.  , 0.25, 0.5 ], dtype=float32)"),
    "fftshift": ("shift", "jnp.fft.fftshift(jnp.fft.fftfreq(4))",
                 "Array([-0.5 , -0.25,  0.  ,  0.25], dtype=float32)"),
    "ifftshift": ("shift", "jnp.fft.ifftshift(jnp.array([-0.5, -0.25, 0.0, 0.25]))",
                  "Array([ 0.  ,  0.25, -0.5 , -0.25], dtype=float32)"),
}


def _teach() -> None:
    for name, (kind, example, output) in _FFT_EXAMPLES.items():
        fn = globals()[name]
        args, returns = _ARGS[kind]
        note = ("" if kind in ("freq", "shift") else
                "\n\n" + textwrap.fill(_FFT_NOTE.format(name=name), 84))
        fn.__doc__ = (f"{fn.__doc__.strip()}{note}\n\nArgs:\n{args}\n\nReturns:\n    {returns}"
                      f"\n\nExamples:\n    >>> {example}\n    {output}\n")


_teach()

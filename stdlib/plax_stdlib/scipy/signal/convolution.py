"""N-dimensional convolution and correlation (direct, as one
`lax.conv_general_dilated`, or through the FFT), and the 2-D forms with SciPy's
boundary conditions, with `jax.scipy.signal`'s dtypes (integers compute in floats)."""
from __future__ import annotations

import numpy as np

from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.numpy import fft, util

_MODES = ("full", "same", "valid")
_METHODS = ("auto", "direct", "fft")
_BOUNDARIES = ("fill", "wrap", "symm")


def _operands(name, in1, in2, mode, ndim=None):
    util.check_arraylike(name, in1, in2)
    if mode not in _MODES:
        raise ValueError(f"{name}: mode must be one of {list(_MODES)}; got {mode!r}")
    in1, in2 = (jnp.asarray(a) for a in util.promote_dtypes_inexact(in1, in2))
    if in1.ndim != in2.ndim:
        raise ValueError(f"{name}: in1 and in2 should have the same dimensionality; got "
                         f"shapes {in1.shape} and {in2.shape}")
    if ndim is not None and in1.ndim != ndim:
        raise ValueError(f"{name}: inputs must be {ndim}-D; got shapes {in1.shape} and "
                         f"{in2.shape}")
    if in1.size == 0 or in2.size == 0:
        raise ValueError(f"{name}: inputs cannot be empty; got shapes {in1.shape} and "
                         f"{in2.shape}")
    return in1, in2


def _is_complex(x):
    return jnp.issubdtype(x.dtype, np.complexfloating)


def _valid_order(name, in1, in2):
    """The operands with the larger first: 'valid' needs one at least as large as the
    other along every axis (SciPy swaps them when the second is)."""
    if all(a >= b for a, b in zip(in1.shape, in2.shape)):
        return in1, in2
    if all(b >= a for a, b in zip(in1.shape, in2.shape)):
        return in2, in1
    raise ValueError(f"{name}: for 'valid' mode, one input must be at least as large as the "
                     f"other in every dimension; got shapes {in1.shape} and {in2.shape}")


def _padding(mode, k):
    """Zeros added on each side of an axis for a kernel of length k: all its overlaps
    ('full'), those centred on the first input ('same', SciPy's centring) or none."""
    return {"full": (k - 1, k - 1), "same": (k - 1 - (k - 1) // 2, (k - 1) // 2),
            "valid": (0, 0)}[mode]


def _direct(in1, in2, padding, precision):
    """Σ in1[n - m] in2[m] over the padded in1: a correlation with the flipped kernel."""
    kernel = lax.rev(in2, tuple(range(in2.ndim)))
    out = lax.conv_general_dilated(in1[None, None], kernel[None, None], (1,) * in1.ndim,
                                   padding, precision=precision)
    return out[0, 0]


def _through_fft(in1, in2, mode):
    """The full convolution as a product of transforms, cropped to the mode."""
    shape = tuple(a + b - 1 for a, b in zip(in1.shape, in2.shape))
    axes = tuple(range(in1.ndim))
    if _is_complex(in1):
        full = fft.ifftn(fft.fftn(in1, shape, axes) * fft.fftn(in2, shape, axes), shape, axes)
    else:
        full = fft.irfftn(fft.rfftn(in1, shape, axes) * fft.rfftn(in2, shape, axes), shape, axes)
    full = full.astype(in1.dtype)
    if mode == "full":
        return full
    starts = [_padding("full", k)[0] - _padding(mode, k)[0] for k in in2.shape]
    sizes = [n if mode == "same" else n - k + 1 for n, k in zip(in1.shape, in2.shape)]
    return lax.slice(full, starts, [s + n for s, n in zip(starts, sizes)])


def _convolve(name, in1, in2, mode, method, precision):
    if method not in _METHODS:
        raise ValueError(f"{name}: method must be one of {list(_METHODS)}; got {method!r}")
    if mode == "valid":
        in1, in2 = _valid_order(name, in1, in2)
    if method == "fft":
        return _through_fft(in1, in2, mode)
    return _direct(in1, in2, [_padding(mode, k) for k in in2.shape], precision)


def _reversed_conjugate(x):
    x = lax.rev(x, tuple(range(x.ndim)))
    return jnp.conj(x) if _is_complex(x) else x


def convolve(in1, in2, mode="full", method="auto", precision=None):
    """The N-D convolution of in1 and in2 ('auto' and 'direct' compute it directly,
    'fft' through the FFT)."""
    in1, in2 = _operands("convolve", in1, in2, mode)
    return _convolve("convolve", in1, in2, mode, method, precision)


def correlate(in1, in2, mode="full", method="auto", precision=None):
    """The N-D cross-correlation Σ in1[n + k] conj(in2[n]): the convolution with in2
    reversed and conjugated."""
    in1, in2 = _operands("correlate", in1, in2, mode)
    return _convolve("correlate", in1, _reversed_conjugate(in2), mode, method, precision)


def fftconvolve(in1, in2, mode="full", axes=None):
    """The N-D convolution through the FFT (over every axis; `axes` is not supported)."""
    if axes is not None:
        raise NotImplementedError("fftconvolve: the axes argument is not supported")
    in1, in2 = _operands("fftconvolve", in1, in2, mode)
    return _convolve("fftconvolve", in1, in2, mode, "fft", None)


def _extended(x, pads, boundary, fillvalue):
    """x extended by `pads` on each axis: with fillvalue, periodically ('wrap') or
    mirrored with the edge repeated ('symm')."""
    if boundary == "fill":
        config = [(lo, hi, 0) for lo, hi in pads]
        return lax.pad(x, jnp.asarray(fillvalue, x.dtype), config)
    for axis, (lo, hi) in enumerate(pads):
        n = x.shape[axis]
        i = np.arange(-lo, n + hi)
        if boundary == "wrap":
            i = i % n
        else:
            i = i % (2 * n)
            i = np.where(i < n, i, 2 * n - 1 - i)
        x = jnp.take(x, i, axis=axis)
    return x


def _convolve2d(name, in1, in2, mode, boundary, fillvalue, precision, correlation):
    """The 2-D forms, following SciPy's (and JAX's) correlate2d where it is not the
    convolution with the reversed conjugate: its 'same' window is centred the other way,
    and when 'valid' swaps the operands the result is the swapped correlation reversed."""
    if boundary not in _BOUNDARIES:
        raise ValueError(f"{name}: boundary must be one of {list(_BOUNDARIES)}; got "
                         f"{boundary!r}")
    swapped = False
    if mode == "valid":
        ordered = _valid_order(name, in1, in2)
        swapped = ordered[0] is not in1
        in1, in2 = ordered
    pads = [_padding(mode, k) for k in in2.shape]
    if correlation:
        in2 = _reversed_conjugate(in2)
        pads = [(hi, lo) for lo, hi in pads]
    out = _direct(_extended(in1, pads, boundary, fillvalue), in2, [(0, 0), (0, 0)], precision)
    return lax.rev(out, (0, 1)) if swapped and correlation else out


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
    """The 2-D convolution, in1 extended beyond its edges by `boundary`: 'fill' (with
    fillvalue), 'wrap' (periodic) or 'symm' (mirrored)."""
    in1, in2 = _operands("convolve2d", in1, in2, mode, ndim=2)
    return _convolve2d("convolve2d", in1, in2, mode, boundary, fillvalue, precision, False)


def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
    """The 2-D cross-correlation, with convolve2d's boundary conditions."""
    in1, in2 = _operands("correlate2d", in1, in2, mode, ndim=2)
    return _convolve2d("correlate2d", in1, in2, mode, boundary, fillvalue, precision, True)

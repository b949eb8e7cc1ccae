"""`fft`: discrete Fourier transforms over the trailing `len(fft_lengths)` dimensions.

Four kinds (`FftType`): complex forward (FFT) and inverse (IFFT, scaled by 1/N),
real-to-complex (RFFT, keeping the n//2 + 1 non-negative frequencies of the last
dimension) and its inverse (IRFFT, taking them back to n real values). All are
linear; their transposes, in JAX's convention for complex values (the pairing
Re Σ a·b, no conjugation), are:

* FFT and IFFT: themselves (the DFT matrix is symmetric);
* RFFT (a truncated FFT of real input): the real part of the FFT of the
  cotangent padded with zeros back to full length;
* IRFFT: the RFFT of the cotangent, conjugated, weighted by 2 for the frequencies
  that stand for a conjugate pair (all but 0 and, for even n, n/2) and by 1/N.
"""
from __future__ import annotations

import enum
import math
from typing import Sequence

import numpy as np

from plax.extend.ad import Zero, linear_jvp
from plax.extend.batching import bdim_at_front
from plax.extend.constructors import COMPLEX, F32_OR_F64, check_dtype, complex_dtype, \
    describe, real_dtype, standard_primitive
from plax.extend.core import get_aval
from plax.extend.dtypes import to_complex_dtype, to_inexact_dtype
from plax.extend.mlir import hlo, mu
from plax_stdlib.lax.conversion import convert_element_type
from plax_stdlib.lax.elementwise import conj, mul, real
from plax_stdlib.lax.shape_ops import broadcast_in_dim, pad


class FftType(enum.IntEnum):
    """Which transform `fft` computes."""
    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3


def _fft_abstract_eval(x, *, fft_type, fft_lengths):
    rank = len(fft_lengths)
    if not 1 <= rank <= min(3, x.ndim):
        raise ValueError(f"fft: fft_lengths {fft_lengths} must name 1 to 3 trailing "
                         f"dimensions of the operand {describe(x)}")
    trailing = x.shape[x.ndim - rank:]
    if fft_type == FftType.RFFT:
        check_dtype("fft", x, F32_OR_F64)
        if trailing != fft_lengths:
            raise ValueError(f"fft: RFFT of lengths {fft_lengths} needs trailing dimensions "
                             f"equal to them, got operand {describe(x)}")
        shape = (*x.shape[:x.ndim - 1], fft_lengths[-1] // 2 + 1)
        return x.update(shape=shape, dtype=complex_dtype(x.dtype), weak_type=False)
    check_dtype("fft", x, COMPLEX)
    if fft_type == FftType.IRFFT:
        if trailing[:-1] != fft_lengths[:-1] or trailing[-1] != fft_lengths[-1] // 2 + 1:
            raise ValueError(f"fft: IRFFT of lengths {fft_lengths} needs trailing dimensions "
                             f"{(*fft_lengths[:-1], fft_lengths[-1] // 2 + 1)}, got operand "
                             f"{describe(x)}")
        shape = (*x.shape[:x.ndim - 1], fft_lengths[-1])
        return x.update(shape=shape, dtype=real_dtype(x.dtype), weak_type=False)
    if trailing != fft_lengths:
        raise ValueError(f"fft: {fft_type.name} of lengths {fft_lengths} needs trailing "
                         f"dimensions equal to them, got operand {describe(x)}")
    return x.update(weak_type=False)


def _fft_lower(ctx, x, *, fft_type, fft_lengths):
    if 0 in ctx.avals_in[0].shape or 0 in ctx.avals_out[0].shape:
        return [mu.splat(0, ctx.avals_out[0])]
    return [hlo.fft(x, hlo.FftTypeAttr.get(fft_type.name), list(fft_lengths))]


def _pair_weights(length: int, dtype):
    """1 for frequency 0 (and n/2 when n is even), 2 for those that stand for a pair."""
    weights = np.full(length // 2 + 1, 2.0)
    weights[0] = 1.0
    if length % 2 == 0:
        weights[-1] = 1.0
    return weights.astype(dtype)


def _fft_transpose(ct, x, *, fft_type, fft_lengths):
    if isinstance(ct, Zero):
        return [Zero(x.aval)]
    lengths = tuple(fft_lengths)
    if fft_type in (FftType.FFT, FftType.IFFT):
        return [fft_p.bind(ct, fft_type=fft_type, fft_lengths=lengths)]
    ct_aval = get_aval(ct)
    if fft_type == FftType.RFFT:
        missing = lengths[-1] - ct_aval.shape[-1]
        padded = pad(ct, np.zeros((), ct_aval.dtype),
                     [(0, 0, 0)] * (ct_aval.ndim - 1) + [(0, missing, 0)])
        full = fft_p.bind(padded, fft_type=FftType.FFT, fft_lengths=lengths)
        return [real(full)]
    spectrum = fft_p.bind(ct, fft_type=FftType.RFFT, fft_lengths=lengths)
    out_aval = get_aval(spectrum)
    weights = _pair_weights(lengths[-1], real_dtype(out_aval.dtype)) / math.prod(lengths)
    weights = broadcast_in_dim(convert_element_type(weights, out_aval.dtype), out_aval.shape,
                               (out_aval.ndim - 1,))
    return [conj(mul(spectrum, weights))]


def _fft_batching(axis_data, args, dims, *, fft_type, fft_lengths):
    x = bdim_at_front(args[0], dims[0], axis_data.size)
    return fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths), 0


fft_p = standard_primitive("lax.fft", _fft_abstract_eval, _fft_lower, jvp=linear_jvp(),
                           transpose=_fft_transpose, batching=_fft_batching)


def _fft_type(fft_type) -> FftType:
    if isinstance(fft_type, FftType):
        return fft_type
    if isinstance(fft_type, str):
        try:
            return FftType[fft_type.upper()]
        except KeyError:
            pass
    raise ValueError(f"fft: unknown FFT type {fft_type!r}; use a lax.FftType or one of "
                     "'fft', 'ifft', 'rfft', 'irfft'")


def fft(x, fft_type: FftType | str, fft_lengths: Sequence[int]):
    """A fast Fourier transform over the trailing dimensions of `x`.

    `fft_type` is `"FFT"` (complex to complex), `"IFFT"` (its inverse, scaled
    by 1/n), `"RFFT"` (real to complex, the last dimension n // 2 + 1 long) or
    `"IRFFT"` (complex to real); `jnp.fft` is built on it.

    Args:
        x: an array (converted to a complex dtype, or a real one for `"RFFT"`).
        fft_type: a `lax.FftType` or its name.
        fft_lengths: the transform's length in each trailing dimension.

    Returns:
        The transformed array.

    Raises:
        ValueError: `fft_lengths` does not fit `x`'s trailing dimensions.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.fft(jnp.array([1.0, 0.0, 0.0, 0.0]), "FFT", (4,))
        Array([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j], dtype=complex64)
        >>> lax.fft(jnp.array([1.0, 2.0, 3.0, 4.0]), "RFFT", (4,))
        Array([10.+0.j, -2.+2.j, -2.+0.j], dtype=complex64)
    """
    kind = _fft_type(fft_type)
    lengths = tuple(int(n) for n in fft_lengths)
    dtype = get_aval(x).dtype
    if kind == FftType.RFFT:
        if np.dtype(dtype).kind == "c":
            raise ValueError(f"fft: RFFT takes real input, got {describe(get_aval(x))}")
        target = to_inexact_dtype(dtype)
    else:
        target = to_complex_dtype(dtype)
    if np.dtype(dtype) != target:
        x = convert_element_type(x, target)
    if not lengths:
        return x
    return fft_p.bind(x, fft_type=kind, fft_lengths=lengths)

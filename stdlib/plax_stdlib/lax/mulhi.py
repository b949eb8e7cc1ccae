"""`mulhi`: the high half of the double-width product of two integers (signed or
unsigned). Up to 32 bits the product is formed in the double-width type; 64-bit
operands are split into 32-bit halves (the schoolbook product, with the sign
correction for signed operands)."""
from __future__ import annotations

import numpy as np

from plax.extend import dtypes
from plax.extend.constructors import INT, elementwise_lowering, kind_of
from plax.extend.core import ShapedArray
from plax.extend.mlir import hlo, mu
from plax_stdlib.lax.op_table import PIECEWISE_CONSTANT, binary_op



def _wider(dtype) -> np.dtype:
    """A type holding the exact product of two values of `dtype` (up to 32 bits)."""
    signed = kind_of(dtype) == "signed"
    if dtypes.itemsize_bits(dtype) <= 16:
        return np.dtype(np.int32 if signed else np.uint32)
    return np.dtype(np.int64 if signed else np.uint64)


def _const(value, aval: ShapedArray):
    return mu.splat(value, aval)


def _high_by_widening(x, y, aval: ShapedArray):
    wide = ShapedArray(aval.shape, _wider(aval.dtype))
    bits = dtypes.itemsize_bits(aval.dtype)
    product = hlo.multiply(mu.convert(x, aval, wide), mu.convert(y, aval, wide))
    shift = hlo.shift_right_arithmetic if kind_of(aval.dtype) == "signed" \
        else hlo.shift_right_logical
    return mu.convert(shift(product, _const(bits, wide)), wide, aval)


def _high_64(x, y, aval: ShapedArray):
    unsigned = ShapedArray(aval.shape, np.dtype(np.uint64))
    signed = kind_of(aval.dtype) == "signed"
    a = hlo.bitcast_convert(mu.ir_type(unsigned), x) if signed else x
    b = hlo.bitcast_convert(mu.ir_type(unsigned), y) if signed else y
    mask, half = _const(0xFFFFFFFF, unsigned), _const(32, unsigned)
    a_lo, a_hi = hlo.and_(a, mask), hlo.shift_right_logical(a, half)
    b_lo, b_hi = hlo.and_(b, mask), hlo.shift_right_logical(b, half)
    lo_lo, hi_lo = hlo.multiply(a_lo, b_lo), hlo.multiply(a_hi, b_lo)
    lo_hi, hi_hi = hlo.multiply(a_lo, b_hi), hlo.multiply(a_hi, b_hi)
    middle = hlo.add(hlo.add(hlo.shift_right_logical(lo_lo, half), hlo.and_(hi_lo, mask)),
                     hlo.and_(lo_hi, mask))
    high = hlo.add(hlo.add(hi_hi, hlo.shift_right_logical(hi_lo, half)),
                   hlo.add(hlo.shift_right_logical(lo_hi, half),
                           hlo.shift_right_logical(middle, half)))
    if not signed:
        return high
    # For two's complement operands: hi(a*b) = hi_u(a*b) - (a<0 ? b : 0) - (b<0 ? a : 0).
    zero = _const(0, aval)
    zero_u = _const(0, unsigned)
    high = hlo.subtract(high, hlo.select(mu.compare(x, zero, "LT", aval.dtype), b, zero_u))
    high = hlo.subtract(high, hlo.select(mu.compare(y, zero, "LT", aval.dtype), a, zero_u))
    return hlo.bitcast_convert(mu.ir_type(aval), high)


@elementwise_lowering
def _mulhi_lower(ctx, x, y):
    aval = ShapedArray(ctx.avals_out[0].shape, ctx.avals_out[0].dtype)
    if dtypes.itemsize_bits(aval.dtype) <= 32:
        return _high_by_widening(x, y, aval)
    return _high_64(x, y, aval)


mulhi_p, mulhi = binary_op(
    "mulhi", INT, _mulhi_lower, "Elementwise high half of the double-width product x * y.",
    jvp=PIECEWISE_CONSTANT,
    example=("lax.mulhi(jnp.array([2**30, -2**31], jnp.int32), jnp.int32(4))",
             "Array([ 1, -2], dtype=int32)"))

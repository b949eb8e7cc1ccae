"""`reduce_precision`: floats rounded (to nearest even) to a format with fewer
exponent and mantissa bits, kept in their own dtype, as XLA's ReducePrecision. It
is linear for differentiation, as in JAX: tangents are rounded the same way."""
from __future__ import annotations

import operator

from plax.extend.ad import Zero, linear_jvp
from plax.extend.constructors import FLOAT, elementwise_lowering, unary
from plax.extend.mlir import hlo

reduce_precision_p = unary(
    "lax.reduce_precision", dtypes=FLOAT,
    lower=elementwise_lowering(lambda ctx, x, *, exponent_bits, mantissa_bits:
                               hlo.reduce_precision(x, exponent_bits, mantissa_bits)),
    jvp=linear_jvp(),
    transpose=lambda ct, x, **params: [ct if isinstance(ct, Zero)
                                       else reduce_precision_p.bind(ct, **params)])


def reduce_precision(operand, exponent_bits: int, mantissa_bits: int):
    """Rounds floating-point values to fewer exponent and mantissa bits, keeping
    the dtype: simulates a narrower format (bfloat16 is 8 exponent and 7
    mantissa bits).

    Args:
        operand: an array of a floating-point dtype.
        exponent_bits: the exponent bits to keep (>= 1).
        mantissa_bits: the mantissa bits to keep (>= 0).

    Returns:
        An array of `operand`'s shape and dtype.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.reduce_precision(jnp.float32(1.001), exponent_bits=8, mantissa_bits=7)
        Array(1., dtype=float32)
    """
    exponent_bits, mantissa_bits = operator.index(exponent_bits), operator.index(mantissa_bits)
    if exponent_bits < 1 or mantissa_bits < 0:
        raise ValueError(f"reduce_precision: need exponent_bits >= 1 and mantissa_bits >= 0, "
                         f"got {exponent_bits} and {mantissa_bits}")
    return reduce_precision_p.bind(operand, exponent_bits=exponent_bits,
                                   mantissa_bits=mantissa_bits)

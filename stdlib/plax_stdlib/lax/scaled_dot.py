"""`scaled_dot`: `(lhs * lhs_scale) @ (rhs * rhs_scale)` for block-scaled operands
(e.g. float8 data with a float8_e8m0fnu scale per block of the contracting
dimension), as `dot_general` computes it.

Each scale has its operand's shape except along the contracting dimensions, which
it divides (into blocks of at least 2). It lowers to the `xla.scaled_dot`
composite, which a backend may run natively; its decomposition repeats each scale
over its block, multiplies in bfloat16 (exact for float8/float4 data and power-of-two
or float8 scales) and takes the `dot_general` in `preferred_element_type`
(bfloat16 by default). Not differentiable, as in JAX.
"""
from __future__ import annotations

import numpy as np

from plax.extend import dtypes
from plax.extend.batching import bdim_at_front
from plax.extend.constructors import (
    FLOAT,
    INT,
    check_dtype,
    describe,
    dtype_name,
    kind_of,
    standard_primitive,
)
from plax.extend.core import ShapedArray, get_aval, stage_flat
from plax.extend.mlir import hlo, ir, mu
from plax_stdlib.lax.conversion import convert_element_type
from plax_stdlib.lax.creation import full
from plax_stdlib.lax.dot_general import dot_general
from plax_stdlib.lax.elementwise import mul
from plax_stdlib.lax.shape_ops import broadcast_in_dim, reshape

_NAME = "scaled_dot"


def _check_scale(side: str, operand: ShapedArray, scale: ShapedArray, contracting) -> None:
    for i, (size, scale_size) in enumerate(zip(operand.shape, scale.shape)):
        if i not in contracting:
            if scale_size != size:
                raise TypeError(f"{_NAME}: {side} dim {i} of size {size} does not match "
                                f"its scale's dim size {scale_size} ({side.lower()} "
                                f"{describe(operand)}, scale {describe(scale)})")
        elif size % scale_size:
            raise TypeError(f"{_NAME}: {side} contracting dim {i} of size {size} must be "
                            f"divisible by its scale's dim size {scale_size}")
        elif size // scale_size < 2:
            raise TypeError(f"{_NAME}: the ratio of {side} contracting dim {i} to its "
                            f"scale's dim size ({size // scale_size}) must be at least 2")


def _abstract_eval(lhs, rhs, lhs_scale, rhs_scale, *, dimension_numbers,
                   preferred_element_type):
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    for what, aval in (("lhs", lhs), ("rhs", rhs), ("lhs_scale", lhs_scale),
                       ("rhs_scale", rhs_scale)):
        check_dtype(_NAME, aval, INT | FLOAT, what=what)
    if kind_of(preferred_element_type) != "float":
        raise TypeError(f"{_NAME}: preferred_element_type must be a floating dtype (such "
                        f"as bfloat16 or float32), got {dtype_name(preferred_element_type)}")
    ranks = (lhs.ndim, rhs.ndim, lhs_scale.ndim, rhs_scale.ndim)
    if len(set(ranks)) != 1:
        raise TypeError(f"{_NAME}: all operands must have the same rank, got lhs "
                        f"{describe(lhs)}, rhs {describe(rhs)}, lhs_scale "
                        f"{describe(lhs_scale)}, rhs_scale {describe(rhs_scale)}")
    if len(lhs_batch) != len(rhs_batch) or len(lhs_contract) != len(rhs_contract):
        raise TypeError(f"{_NAME}: lhs and rhs need as many batch and contracting "
                        f"dimensions as each other, got dimension_numbers {dimension_numbers}")
    for i, j in zip(lhs_batch, rhs_batch):
        sizes = (lhs.shape[i], rhs.shape[j], lhs_scale.shape[i], rhs_scale.shape[j])
        if len(set(sizes)) != 1:
            raise TypeError(f"{_NAME}: all operands must have the same size in batch dims "
                            f"({i}, {j}), got {sizes} (lhs, rhs, lhs_scale, rhs_scale)")
    for i, j in zip(lhs_contract, rhs_contract):
        if lhs.shape[i] != rhs.shape[j]:
            raise TypeError(f"{_NAME}: LHS contracting dim {i} of size {lhs.shape[i]} does "
                            f"not match RHS contracting dim {j} of size {rhs.shape[j]}")
    _check_scale("LHS", lhs, lhs_scale, lhs_contract)
    _check_scale("RHS", rhs, rhs_scale, rhs_contract)
    free = lambda aval, used: tuple(d for i, d in enumerate(aval.shape) if i not in used)
    shape = (tuple(lhs.shape[i] for i in lhs_batch) + free(lhs, lhs_contract + lhs_batch)
             + free(rhs, rhs_contract + rhs_batch))
    return ShapedArray(shape, preferred_element_type)


def _repeat_blocks(scale, shape, contracting):
    """`scale` with each entry repeated over its block of the contracting dims."""
    for i in contracting:
        scale_shape = get_aval(scale).shape
        if scale_shape[i] == shape[i]:
            continue
        block = shape[i] // scale_shape[i]
        spread = scale_shape[:i + 1] + (block,) + scale_shape[i + 1:]
        dims = tuple(d if d <= i else d + 1 for d in range(len(scale_shape)))
        scale = broadcast_in_dim(scale, spread, dims)
        scale = reshape(scale, scale_shape[:i] + (shape[i],) + scale_shape[i + 1:])
    return scale


def _dequantized_dot(lhs, rhs, lhs_scale, rhs_scale, *, dimension_numbers,
                     preferred_element_type):
    """The composite's decomposition: each operand times its repeated scale in
    bfloat16, then their `dot_general`."""
    (lhs_contract, rhs_contract), _ = dimension_numbers

    def scaled(x, scale, contracting):
        scale = _repeat_blocks(scale, get_aval(x).shape, contracting)
        return mul(convert_element_type(x, dtypes.bfloat16),
                   convert_element_type(scale, dtypes.bfloat16))

    return dot_general(scaled(lhs, lhs_scale, lhs_contract),
                       scaled(rhs, rhs_scale, rhs_contract), dimension_numbers,
                       preferred_element_type=preferred_element_type)


def _lower(ctx, *operands, dimension_numbers, preferred_element_type):
    params = dict(dimension_numbers=dimension_numbers,
                  preferred_element_type=preferred_element_type)
    closed = stage_flat(lambda *xs: [_dequantized_dot(*xs, **params)], list(ctx.avals_in))
    decomposition = ctx.emit_function("xla.scaled_dot", ctx.avals_in, ctx.avals_out,
                                      lambda *args: ctx.lower_inline(closed, *args))
    i64 = lambda dims: ir.ArrayAttr.get(
        [ir.IntegerAttr.get(ir.IntegerType.get_signless(64), d) for d in dims])
    pairs = lambda pair: ir.ArrayAttr.get([i64(dims) for dims in pair])
    attributes = {"dimension_numbers": ir.ArrayAttr.get([pairs(p) for p in dimension_numbers]),
                  "preferred_element_type": ir.TypeAttr.get(
                      mu.ir_element_type(preferred_element_type))}
    return hlo.composite([mu.ir_type(ctx.avals_out[0])], list(operands), "xla.scaled_dot",
                         decomposition, 0, composite_attributes=attributes)


def _batching(axis_data, args, dims, *, dimension_numbers, preferred_element_type):
    """Every operand's mapped axis in front (the unmapped ones broadcast), as a new
    first batch dimension."""
    args = [bdim_at_front(x, d, axis_data.size) for x, d in zip(args, dims)]
    (lc, rc), (lb, rb) = dimension_numbers
    shift = lambda axes: tuple(a + 1 for a in axes)
    dnums = ((shift(lc), shift(rc)), ((0,) + shift(lb), (0,) + shift(rb)))
    return scaled_dot_p.bind(*args, dimension_numbers=dnums,
                             preferred_element_type=preferred_element_type), 0


scaled_dot_p = standard_primitive("lax.scaled_dot", _abstract_eval, _lower,
                                  batching=_batching)


def _unit_scale(x, contracting):
    """A scale of ones (float8_e8m0fnu) with one block per contracting dimension."""
    shape = tuple(1 if i in contracting else d for i, d in enumerate(get_aval(x).shape))
    return full(shape, 1.0, dtypes.float8_e8m0fnu)


def scaled_dot(lhs, rhs, *, lhs_scale=None, rhs_scale=None, dimension_numbers=None,
               preferred_element_type=None):
    """A matrix product of scaled operands: `(lhs * lhs_scale) @ (rhs * rhs_scale)`,
    the building block of block-scaled low-precision (e.g. float8 or MX)
    matmuls.

    Each scale is broadcast over a block of its operand's contracted dimension
    (its size along that dimension divides the operand's); a missing scale is
    ones. The default dimension numbers contract `lhs`'s last dimension with
    `rhs`'s one before last, batching over the leading ones.

    Args:
        lhs: an array (..., m, k).
        rhs: an array (..., k, n).
        lhs_scale: scales of `lhs`, one per block of its contracted dimension.
        rhs_scale: scales of `rhs`.
        dimension_numbers: as for `dot_general`.
        preferred_element_type: the result's dtype (by default bfloat16, as in
            JAX).

    Returns:
        The scaled product.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lhs, rhs = jnp.ones((1, 2, 4)), jnp.ones((1, 4, 3))
        >>> lhs_scale = jnp.full((1, 2, 2), 0.5)  # one scale per block of 2 along k
        >>> lax.scaled_dot(lhs, rhs, lhs_scale=lhs_scale)
        Array([[[2, 2, 2],
                [2, 2, 2]]], dtype=bfloat16)
    """
    ndim = get_aval(lhs).ndim
    if dimension_numbers is None:
        if ndim < 2:
            raise TypeError(f"{_NAME} does not support 0-rank and 1-rank operands (lhs "
                            f"{describe(get_aval(lhs))}) without dimension_numbers")
        batch = tuple(range(ndim - 2))
        dimension_numbers = (((ndim - 1,), (ndim - 2,)), (batch, batch))
    dnums = tuple(tuple(tuple(int(d) for d in dims) for dims in pair)
                  for pair in dimension_numbers)
    lhs_scale = _unit_scale(lhs, dnums[0][0]) if lhs_scale is None else lhs_scale
    rhs_scale = _unit_scale(rhs, dnums[0][1]) if rhs_scale is None else rhs_scale
    element_type = np.dtype(dtypes.check_and_canonicalize_user_dtype(
        dtypes.bfloat16 if preferred_element_type is None else preferred_element_type,
        _NAME))
    return scaled_dot_p.bind(lhs, rhs, lhs_scale, rhs_scale, dimension_numbers=dnums,
                             preferred_element_type=element_type)

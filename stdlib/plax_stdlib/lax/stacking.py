"""Primitives that cut an array into pieces or repeat it: `split` (along one axis,
into given sizes), `unstack` (into its slices), `stack` (slices joined along a new
axis) and `tile` (repetitions along each axis). All are linear: each one's
transpose is another of them, or a sum over the tiles for `tile`.
"""
from __future__ import annotations

from typing import Sequence

from plax.extend.ad import Zero, instantiate, is_undefined_primal, linear_jvp
from plax.extend.batching import axes_batcher, batched_axis, bdim_at_front
from plax.extend.constructors import (
    ANY,
    canonicalize_axis,
    check_dtype,
    check_same_dtypes,
    describe,
    standard_primitive,
    weak_result,
)
from plax.extend.core import ShapedArray, canonical_dim, get_aval
from plax.extend.mlir import hlo, mu
from plax_stdlib.lax.reductions import reduce_sum
from plax_stdlib.lax.shape_ops import concatenate, param_int, reshape


def _with_dim(shape: Sequence[int], axis: int, size: int | None) -> tuple[int, ...]:
    """`shape` with dimension `axis` set to `size` (removed if None)."""
    shape = list(shape)
    if size is None:
        del shape[axis]
    else:
        shape[axis] = size
    return tuple(shape)


def _slices(x, aval: ShapedArray, axis: int, sizes: Sequence[int]) -> list:
    """The consecutive pieces of `x` of the given sizes along `axis`."""
    start, outs = 0, []
    for size in sizes:
        lo = [0] * aval.ndim
        hi = list(aval.shape)
        lo[axis], hi[axis] = start, start + size
        piece = ShapedArray(_with_dim(aval.shape, axis, size), aval.dtype)
        outs.append(mu.slice(x, lo, hi, [1] * aval.ndim, piece))  # (other sizes: symbolic)
        start += size
    return outs


def _zeros_for(ct, aval: ShapedArray):
    return instantiate(ct, ShapedArray(aval.shape, aval.dtype))


# --- split ------------------------------------------------------------------------------

def _split_abstract_eval(operand, *, sizes, axis):
    check_dtype("split", operand, ANY)
    if not 0 <= axis < operand.ndim:
        raise ValueError(f"split: axis {axis} out of range for {describe(operand)}")
    if any(s < 0 for s in sizes) or sum(sizes) != operand.shape[axis]:
        raise ValueError(f"split: sizes {sizes} must be non-negative and sum to the size of "
                         f"axis {axis} of {describe(operand)}")
    return [ShapedArray(_with_dim(operand.shape, axis, s), operand.dtype, operand.weak_type)
            for s in sizes]


def _split_transpose(cts, operand, *, sizes, axis):
    aval = operand.aval
    pieces = [_zeros_for(ct, ShapedArray(_with_dim(aval.shape, axis, s), aval.dtype))
              for ct, s in zip(cts, sizes)]
    return [concatenate(pieces, axis) if len(pieces) > 1 else pieces[0]]


split_p = standard_primitive(
    "lax.split", _split_abstract_eval,
    lambda ctx, x, *, sizes, axis: _slices(x, ctx.avals_in[0], axis, sizes),
    multiple_results=True, jvp=linear_jvp(), transpose=_split_transpose,
    batching=axes_batcher("axis"))


def split(operand, sizes: Sequence[int], axis: int = 0) -> list:
    """Cuts an array along a dimension into consecutive pieces of given sizes.

    Args:
        operand: an array.
        sizes: the pieces' sizes along `axis`; they must add up to its size.
        axis: the dimension to cut.

    Returns:
        A list of arrays, one per size.

    Raises:
        ValueError: the sizes do not add up to the dimension's size, or one is
            negative.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.split(jnp.arange(5), (2, 3))
        [Array([0, 1], dtype=int32), Array([2, 3, 4], dtype=int32)]
    """
    axis = canonicalize_axis("split", axis, get_aval(operand).ndim)
    return list(split_p.bind(operand, sizes=tuple(param_int(n, canonical_dim) for n in sizes),
                             axis=axis))


# --- unstack and stack --------------------------------------------------------------------

def _unstack_abstract_eval(operand, *, axis):
    check_dtype("unstack", operand, ANY)
    if not 0 <= axis < operand.ndim:
        raise ValueError(f"unstack: axis {axis} out of range for {describe(operand)}")
    piece = ShapedArray(_with_dim(operand.shape, axis, None), operand.dtype, operand.weak_type)
    return [piece] * operand.shape[axis]


def _unstack_lower(ctx, x, *, axis):
    aval = ctx.avals_in[0]
    pieces = _slices(x, aval, axis, [1] * aval.shape[axis])
    return [mu.reshape(p, out) for p, out in zip(pieces, ctx.avals_out)]


def _unstack_transpose(cts, operand, *, axis):
    aval = operand.aval
    piece = ShapedArray(_with_dim(aval.shape, axis, None), aval.dtype)
    return [stack_p.bind(*(_zeros_for(ct, piece) for ct in cts), axis=axis)]


def _unstack_batching(axis_data, args, dims, *, axis):
    (x,), (d,) = args, dims
    new_axis = batched_axis(axis, d)
    out_dim = d if d < new_axis else d - 1
    outs = unstack_p.bind(x, axis=new_axis)
    return outs, [out_dim] * len(outs)


unstack_p = standard_primitive("lax.unstack", _unstack_abstract_eval, _unstack_lower,
                               multiple_results=True, jvp=linear_jvp(),
                               transpose=_unstack_transpose, batching=_unstack_batching)


def unstack(x, axis: int = 0) -> tuple:
    """Splits an array into its slices along a dimension (the inverse of `stack`).

    Args:
        x: an array.
        axis: the dimension to split along.

    Returns:
        A tuple of `x.shape[axis]` arrays, each without that dimension.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.unstack(jnp.array([[1, 2], [3, 4]]), axis=1)
        (Array([1, 3], dtype=int32), Array([2, 4], dtype=int32))
    """
    axis = canonicalize_axis("unstack", axis, get_aval(x).ndim)
    return tuple(unstack_p.bind(x, axis=axis))


def _stack_abstract_eval(*operands, axis):
    if not operands:
        raise ValueError("stack requires at least one operand")
    dtype = check_same_dtypes("stack", *operands)
    if any(o.shape != operands[0].shape for o in operands):
        raise ValueError(f"stack requires operands of one shape, got "
                         f"{', '.join(map(describe, operands))}")
    if not 0 <= axis <= operands[0].ndim:
        raise ValueError(f"stack: axis {axis} out of range for operands of rank "
                         f"{operands[0].ndim}")
    shape = operands[0].shape[:axis] + (len(operands),) + operands[0].shape[axis:]
    return ShapedArray(shape, dtype, weak_result(operands, dtype))


def _stack_lower(ctx, *xs, axis):
    aval = ctx.avals_in[0]
    expanded = ShapedArray(aval.shape[:axis] + (1,) + aval.shape[axis:], aval.dtype)
    pieces = [mu.reshape(x, expanded) for x in xs]  # (dynamic where a size is symbolic)
    return hlo.concatenate(pieces, axis) if len(pieces) > 1 else pieces[0]


def _stack_transpose(ct, *operands, axis):
    if isinstance(ct, Zero):
        return [Zero(o.aval) if is_undefined_primal(o) else None for o in operands]
    pieces = unstack_p.bind(ct, axis=axis)
    return [p if is_undefined_primal(o) else None for p, o in zip(pieces, operands)]


def _stack_batching(axis_data, args, dims, *, axis):
    args = [bdim_at_front(x, d, axis_data.size) for x, d in zip(args, dims)]
    return stack_p.bind(*args, axis=axis + 1), 0


stack_p = standard_primitive("lax.stack", _stack_abstract_eval, _stack_lower,
                             jvp=linear_jvp(), transpose=_stack_transpose,
                             batching=_stack_batching)


def stack(operands: Sequence, axis: int = 0):
    """Joins arrays of one shape along a new dimension.

    Args:
        operands: a non-empty sequence of arrays of one shape and dtype.
        axis: where the new dimension goes in the result.

    Returns:
        An array with a new dimension of size `len(operands)` at `axis`.

    Raises:
        ValueError: no operands, or operands of different shapes.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.stack([jnp.array([1, 2]), jnp.array([3, 4])], axis=1)
        Array([[1, 3],
               [2, 4]], dtype=int32)
    """
    operands = list(operands)
    if not operands:
        raise ValueError("stack requires at least one operand")
    axis = canonicalize_axis("stack", axis, get_aval(operands[0]).ndim + 1)
    return stack_p.bind(*operands, axis=axis)


# --- tile ---------------------------------------------------------------------------------

def _tile_abstract_eval(operand, *, reps):
    check_dtype("tile", operand, ANY)
    if len(reps) != operand.ndim:
        raise TypeError(f"tile: reps length must be equal to the ndim of the operand, got "
                        f"reps={reps} for {describe(operand)}")
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: reps must be non-negative, got {reps}")
    return ShapedArray(tuple(d * r for d, r in zip(operand.shape, reps)),  # d: symbolic too
                       operand.dtype, operand.weak_type)


def _tile_lower(ctx, x, *, reps):
    aval, out = ctx.avals_in[0], ctx.avals_out[0]
    interleaved = ShapedArray(tuple(k for pair in zip(reps, aval.shape) for k in pair),
                              aval.dtype)
    spread = mu.broadcast_in_dim(x, interleaved.shape, [2 * i + 1 for i in range(aval.ndim)])
    return mu.reshape(spread, out)


def _tile_transpose(ct, operand, *, reps):
    aval = operand.aval
    if isinstance(ct, Zero):
        return [Zero(aval)]
    interleaved = tuple(k for pair in zip(reps, aval.shape) for k in pair)
    return [reduce_sum(reshape(ct, interleaved), tuple(range(0, 2 * aval.ndim, 2)))]


def _tile_batching(axis_data, args, dims, *, reps):
    (x,), (d,) = args, dims
    return tile_p.bind(x, reps=reps[:d] + (1,) + reps[d:]), d


tile_p = standard_primitive("lax.tile", _tile_abstract_eval, _tile_lower, jvp=linear_jvp(),
                            transpose=_tile_transpose, batching=_tile_batching)


def tile(operand, reps: Sequence[int]):
    """Repeats an array along each dimension.

    Args:
        operand: an array.
        reps: how many times to repeat along each dimension (one int per
            dimension).

    Returns:
        An array whose dimension i has size `operand.shape[i] * reps[i]`.

    Raises:
        TypeError: `reps` does not have one entry per dimension.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.tile(jnp.array([[1, 2]]), (2, 2))
        Array([[1, 2, 1, 2],
               [1, 2, 1, 2]], dtype=int32)
    """
    return tile_p.bind(operand, reps=tuple(int(r) for r in reps))


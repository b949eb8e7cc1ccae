"""`gather`: slices of an operand at many start positions at once (XLA's Gather).

`start_indices` holds one index vector per slice in its last dimension; its other
dimensions (the *batch* dimensions) index the slices. `dimension_numbers` says
which operand dimensions the index vector addresses (`start_index_map`), which
sliced dimensions of size 1 are dropped (`collapsed_slice_dims`), where the kept
slice dimensions go in the result (`offset_dims`; the batch dimensions fill the
other positions in order), and which operand dimensions are matched one to one
with index dimensions (`operand_batching_dims`/`start_indices_batching_dims`).

By default (as in JAX) indices are promised in bounds, and XLA clamps start
positions so slices stay in bounds, as `dynamic_slice` does; `mode="clip"` clamps
explicitly (also in the transpose), and `mode="fill"` fills slices that would stick
out with the primitive's `fill_value` parameter (masked in the lowering).

Gather is linear in its operand; its transpose scatter-adds the cotangent back
(`lax.scatter`).
"""
from __future__ import annotations

import enum
import operator
from typing import NamedTuple, Sequence

import numpy as np

from plax.extend import dtypes
from plax.extend.ad import Zero, is_undefined_primal, tangent_aval
from plax.extend.batching import broadcast_dim, moveaxis
from plax.extend.constructors import (
    EXTENDED,
    ANY,
    INT,
    check_dtype,
    describe,
    kind_of,
    standard_primitive,
)
from plax.extend.core import ShapedArray, SymbolicDimension, canonical_dim, get_aval, stage_flat
from plax.extend.mlir import hlo, mu
from plax_stdlib.lax import bitwise, comparison, reductions, shape_ops
from plax_stdlib.lax.dimensions import size_scalar


class GatherDimensionNumbers(NamedTuple):
    """Describes how a `gather`'s index vectors and slices map to the operand's
    and the result's dimensions.

    The index vector is the last dimension of `start_indices`.

    Attributes:
        offset_dims: the result dimensions that hold each slice's (kept)
            dimensions, in order.
        collapsed_slice_dims: operand dimensions of slice size 1 that are
            dropped from the result.
        start_index_map: for each component of an index vector, the operand
            dimension it indexes.
        operand_batching_dims: operand dimensions matched one to one with...
        start_indices_batching_dims: ...these dimensions of `start_indices`
            (batched gathers).

    Examples:
        `x[idx]` on a matrix, taking whole rows:

        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> dnums = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
        ...                                    start_index_map=(0,))
        >>> lax.gather(jnp.eye(3), jnp.array([[2]]), dnums, slice_sizes=(1, 3))
        Array([[0., 0., 1.]], dtype=float32)
    """
    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


class GatherScatterMode(enum.Enum):
    """What gathers and scatters do with slices that would stick out of the
    operand (the `mode=` of `gather`, `scatter...`, and `x.at[...]`).

    `CLIP` (`"clip"`) moves them back inside; `FILL_OR_DROP` (`"fill"`) gives
    gathered out-of-bounds slices a fill value and drops out-of-bounds
    updates; `PROMISE_IN_BOUNDS` (`"promise_in_bounds"`) promises that none
    occur (the result is unspecified if some do). Strings are accepted where a
    mode is.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.GatherScatterMode.from_any("clip")
        <GatherScatterMode.CLIP: 'clip'>
        >>> jnp.arange(3).at[5].get(mode="clip")
        Array(2, dtype=int32)
    """
    CLIP = "clip"
    FILL_OR_DROP = "fill"
    PROMISE_IN_BOUNDS = "promise_in_bounds"

    @classmethod
    def from_any(cls, mode) -> "GatherScatterMode":
        if mode is None:
            return cls.FILL_OR_DROP
        if isinstance(mode, cls):
            return mode
        try:
            return cls(mode)
        except ValueError:
            raise ValueError(f"unknown gather mode {mode!r}; use 'clip', 'fill' or "
                             "'promise_in_bounds'") from None


def _canonical_dnums(dnums) -> GatherDimensionNumbers:
    if not isinstance(dnums, GatherDimensionNumbers):
        raise TypeError(f"gather: dimension_numbers must be a GatherDimensionNumbers, got "
                        f"{dnums!r}")
    return GatherDimensionNumbers(*(tuple(map(operator.index, f)) for f in dnums))


def _gather_shape(operand: ShapedArray, indices: ShapedArray, dnums: GatherDimensionNumbers,
                  slice_sizes: Sequence[int]) -> tuple[int, ...]:
    name = "gather"
    check_dtype(name, operand, ANY | EXTENDED)
    check_dtype(name, indices, INT, what="start_indices")
    if indices.ndim < 1 or indices.shape[-1] != len(dnums.start_index_map):
        raise TypeError(f"{name}: the last dimension of start_indices {describe(indices)} "
                        f"must have size len(start_index_map) = {len(dnums.start_index_map)}")
    if len(slice_sizes) != operand.ndim:
        raise TypeError(f"{name}: slice_sizes {tuple(slice_sizes)} must have one entry per "
                        f"dimension of operand {describe(operand)}")
    for d, (s, n) in enumerate(zip(slice_sizes, operand.shape)):
        if not 0 <= s <= n:
            raise TypeError(f"{name}: slice size {s} of dimension {d} does not fit in "
                            f"operand {describe(operand)}")
    dropped = dnums.collapsed_slice_dims + dnums.operand_batching_dims
    for what, axes in (("collapsed_slice_dims", dnums.collapsed_slice_dims),
                       ("operand_batching_dims", dnums.operand_batching_dims),
                       ("start_index_map", dnums.start_index_map)):
        if any(not 0 <= a < operand.ndim for a in axes) or len(set(axes)) != len(axes):
            raise ValueError(f"{name}: {what} {axes} must be distinct dimensions of operand "
                             f"{describe(operand)}")
    # a batching dimension of size 0 (vmap over an empty batch) has slice size 0
    if (len(set(dropped)) != len(dropped)
            or any(slice_sizes[a] != 1 for a in dnums.collapsed_slice_dims)
            or any(slice_sizes[a] not in (0, 1) for a in dnums.operand_batching_dims)):
        raise ValueError(f"{name}: collapsed_slice_dims {dnums.collapsed_slice_dims} and "
                         f"operand_batching_dims {dnums.operand_batching_dims} must be "
                         f"distinct dimensions with slice size 1 (0 or 1 for a batching "
                         f"dimension; slice_sizes {tuple(slice_sizes)})")
    if set(dnums.start_index_map) & set(dnums.operand_batching_dims):
        raise ValueError(f"{name}: start_index_map {dnums.start_index_map} must not contain "
                         f"operand_batching_dims {dnums.operand_batching_dims}")
    if len(dnums.operand_batching_dims) != len(dnums.start_indices_batching_dims):
        raise ValueError(f"{name}: operand_batching_dims and start_indices_batching_dims "
                         "must have the same length")
    for o, i in zip(dnums.operand_batching_dims, dnums.start_indices_batching_dims):
        if not 0 <= i < indices.ndim - 1 or operand.shape[o] != indices.shape[i]:
            raise TypeError(f"{name}: operand batching dimension {o} of {describe(operand)} "
                            f"and start_indices batching dimension {i} of "
                            f"{describe(indices)} must have the same size")
    offset_sizes = [s for d, s in enumerate(slice_sizes) if d not in dropped]
    batch_sizes = list(indices.shape[:-1])
    rank = len(batch_sizes) + len(offset_sizes)
    offset_dims = dnums.offset_dims
    if (len(offset_dims) != len(offset_sizes) or list(offset_dims) != sorted(set(offset_dims))
            or any(not 0 <= d < rank for d in offset_dims)):
        raise ValueError(f"{name}: offset_dims {offset_dims} must be {len(offset_sizes)} "
                         f"increasing dimensions of the result, of rank {rank}")
    offset_iter, batch_iter = iter(offset_sizes), iter(batch_sizes)
    return tuple(next(offset_iter) if d in offset_dims else next(batch_iter)
                 for d in range(rank))


def _gather_abstract_eval(operand, indices, *, dimension_numbers, slice_sizes,
                          indices_are_sorted, unique_indices, mode, fill_value):
    shape = _gather_shape(operand, indices, dimension_numbers, slice_sizes)
    return ShapedArray(shape, operand.dtype, operand.weak_type)


def _gather_lower(ctx, operand, indices, *, dimension_numbers, slice_sizes,
                  indices_are_sorted, unique_indices, mode, fill_value):
    if mode is GatherScatterMode.FILL_OR_DROP:  # a gather in bounds, then masked (JAX's)
        def fill(op, idx):
            out = gather_p.bind(op, idx, dimension_numbers=dimension_numbers,
                                slice_sizes=slice_sizes, indices_are_sorted=indices_are_sorted,
                                unique_indices=unique_indices,
                                mode=GatherScatterMode.PROMISE_IN_BOUNDS, fill_value=None)
            return [_fill_out_of_bounds(out, op, idx, dimension_numbers, slice_sizes,
                                        fill_value)]
        return ctx.lower_inline(stage_flat(fill, list(ctx.avals_in)), operand, indices)
    dnums = dimension_numbers
    out = ctx.avals_out[0]
    element = mu.element_shape(out)  # keys: gather their data whole
    attr = hlo.GatherDimensionNumbers.get(
        offset_dims=[*dnums.offset_dims, *mu.element_dims(out)],
        collapsed_slice_dims=list(dnums.collapsed_slice_dims),
        operand_batching_dims=list(dnums.operand_batching_dims),
        start_indices_batching_dims=list(dnums.start_indices_batching_dims),
        start_index_map=list(dnums.start_index_map),
        index_vector_dim=ctx.avals_in[1].ndim - 1)
    sizes = [*slice_sizes, *element]
    if not mu.is_static(sizes):  # shape-polymorphic export
        return hlo.dynamic_gather(operand, indices, mu.shape_tensor(sizes), attr,
                                  indices_are_sorted=bool(indices_are_sorted),
                                  results=[mu.ir_type(out)])
    return hlo.gather(operand, indices, attr, sizes, indices_are_sorted=bool(indices_are_sorted),
                      results=[mu.ir_type(out)])


def batching_slice_size(batch_size) -> int:
    """The slice size along a gather batching dimension of `batch_size` members: one
    slice of each, none of an empty batch (1 would not fit in its operand)."""
    return 0 if isinstance(batch_size, (int, np.integer)) and batch_size == 0 else 1


def _gather_batching(axis_data, args, dims, *, dimension_numbers, slice_sizes, **params):
    """JAX's rule. Only the operand batched: its batch dimension is one more offset
    dimension, sliced whole. Only the indices batched: one more index batch dimension.
    Both (an unbatched index array is broadcast, which is cheap): the batch dimension
    becomes a gather batching dimension. Either way the result is batched at 0."""
    (operand, indices), (od, idim) = args, dims
    dn = dimension_numbers
    up = lambda axes: tuple(np.add(1, axes))  # noqa: E731 - (JAX's: they print as np.int64)
    if od is not None and idim is None:
        operand = moveaxis(operand, od, 0)
        new = GatherDimensionNumbers((0, *up(dn.offset_dims)), up(dn.collapsed_slice_dims),
                                     up(dn.start_index_map), up(dn.operand_batching_dims),
                                     dn.start_indices_batching_dims)
        slice_sizes = (operand.shape[0], *slice_sizes)
        return gather_p.bind(operand, indices, dimension_numbers=new, slice_sizes=slice_sizes,
                             **params), 0
    indices = (broadcast_dim(indices, axis_data.size, 0) if idim is None
               else moveaxis(indices, idim, 0))
    up = lambda axes: tuple(a + 1 for a in axes)  # noqa: E731
    if od is None:
        new = dn._replace(offset_dims=up(dn.offset_dims),
                          start_indices_batching_dims=up(dn.start_indices_batching_dims))
    else:
        operand = moveaxis(operand, od, 0)
        new = GatherDimensionNumbers(
            up(dn.offset_dims), up(dn.collapsed_slice_dims), up(dn.start_index_map),
            (0,) + up(dn.operand_batching_dims), (0,) + up(dn.start_indices_batching_dims))
        slice_sizes = (batching_slice_size(operand.shape[0]),) + tuple(slice_sizes)
    return gather_p.bind(operand, indices, dimension_numbers=new, slice_sizes=slice_sizes,
                         **params), 0


def _gather_jvp(primals, tangents, **params):
    """Linear in the operand (out-of-bounds slices' tangents are 0); the indices only
    choose."""
    ans = gather_p.bind(*primals, **params)
    if isinstance(tangents[0], Zero):
        return ans, Zero(tangent_aval(get_aval(ans)))
    fill = None if params["mode"] is not GatherScatterMode.FILL_OR_DROP else 0
    return ans, gather_p.bind(tangents[0], primals[1], **dict(params, fill_value=fill))


def _gather_transpose(ct, operand, indices, *, dimension_numbers, slice_sizes,
                      indices_are_sorted, unique_indices, mode, fill_value):
    """Scatter-add the cotangent's slices back where gather read them (from the
    clamped start positions gather used; out-of-bounds ones dropped with fill)."""
    from plax_stdlib.lax import creation, scatters
    if not is_undefined_primal(operand):
        return [None, None]
    aval = operand.aval
    if isinstance(ct, Zero):
        return [Zero(aval), None]
    dn = dimension_numbers
    if mode is GatherScatterMode.CLIP:
        indices = clamp_indices(indices, aval.shape, slice_sizes, dn.start_index_map)
    dnums = scatters.ScatterDimensionNumbers(dn.offset_dims, dn.collapsed_slice_dims,
                                            dn.start_index_map, dn.operand_batching_dims,
                                            dn.start_indices_batching_dims)
    zeros = creation.full(aval.shape, np.zeros((), aval.dtype)[()], sharding=aval.typed_sharding)
    params = dict(dimension_numbers=dnums, indices_are_sorted=indices_are_sorted,
                  unique_indices=unique_indices,
                  mode=(mode if mode is GatherScatterMode.FILL_OR_DROP
                        else GatherScatterMode.PROMISE_IN_BOUNDS))
    return [scatters.scatter_add_p.bind(
        zeros, indices, ct, **scatters.with_update_params(scatters.scatter_add_p, zeros,
                                                          params)), None]


gather_p = standard_primitive("lax.gather", _gather_abstract_eval, _gather_lower,
                              jvp=_gather_jvp, transpose=_gather_transpose,
                              batching=_gather_batching)


def _last_starts(indices_aval, operand_shape, window, index_map):
    """The largest in-bounds start of each index vector entry, broadcast like the
    indices."""
    lasts = [operand_shape[d] - window[d] for d in index_map]
    if any(isinstance(n, SymbolicDimension) for n in lasts):  # export: their values
        upper = shape_ops.concatenate([shape_ops.broadcast_in_dim(
            size_scalar(n, indices_aval.dtype), (1,), ()) for n in lasts], 0)
    else:
        upper = np.asarray(lasts, indices_aval.dtype)
    return shape_ops.broadcast_in_dim(upper, indices_aval.shape, (indices_aval.ndim - 1,))


def clamp_indices(indices, operand_shape, window, index_map):
    """Start indices moved so each window of sizes `window` (one per operand
    dimension) fits in the operand, as gather's primitive does."""
    aval = get_aval(indices)
    upper = _last_starts(aval, operand_shape, window, index_map)
    return comparison.clamp(np.zeros((), aval.dtype)[()], indices, upper)


def fill_value_for(dtype, fill_value):
    """The value out-of-bounds reads give, in `dtype`: `fill_value` (a symbolic size as
    its value), else the default (`_default_fill`)."""
    if isinstance(fill_value, SymbolicDimension):
        return size_scalar(fill_value, dtype)
    return np.asarray(_default_fill(dtype) if fill_value is None else fill_value, dtype)[()]


def gather(operand, start_indices, dimension_numbers: GatherDimensionNumbers,
           slice_sizes: Sequence[int], *, unique_indices: bool = False,
           indices_are_sorted: bool = False, mode=None, fill_value=None):
    """Takes many slices of `operand` at once, one per index vector of
    `start_indices` (XLA's Gather): the general form of NumPy indexing, which
    `jnp` lowers to it.

    Each index vector (the last dimension of `start_indices`) gives the start
    of a slice of size `slice_sizes`. `dimension_numbers` (a
    `GatherDimensionNumbers`) says which operand dimensions the index vector
    addresses (`start_index_map`), which size-1 slice dimensions are dropped
    (`collapsed_slice_dims`), and where the slices' remaining dimensions go in
    the result (`offset_dims`); the other result dimensions follow
    `start_indices`'s leading dimensions.

    Args:
        operand: the array to index.
        start_indices: an integer array of index vectors.
        dimension_numbers: a `GatherDimensionNumbers`.
        slice_sizes: the size of every slice, one int per operand dimension.
        unique_indices: a promise that no two indices are equal.
        indices_are_sorted: a promise that the indices are sorted.
        mode: slices that would stick out: moved back in (`"clip"`), filled
            with `fill_value` (`"fill"`), or promised not to occur (the default).
        fill_value: the value of out-of-bounds slices with `"fill"` (default:
            NaN for inexact dtypes, the smallest value for signed, the largest
            for unsigned integers, True for bool).

    Returns:
        The gathered array.

    Raises:
        TypeError: the shapes do not fit `dimension_numbers` and `slice_sizes`.

    Examples:
        Picking rows 2 and 0 of a matrix (`m[jnp.array([2, 0])]`):

        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> m = jnp.arange(12.0).reshape(3, 4)
        >>> dnums = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
        ...                                    start_index_map=(0,))
        >>> lax.gather(m, jnp.array([[2], [0]]), dnums, slice_sizes=(1, 4))
        Array([[ 8., 9., 10., 11.],
               [ 0.,  1.,  2.,  3.]], dtype=float32)
    """
    dnums = _canonical_dnums(dimension_numbers)
    slice_sizes = tuple(map(canonical_dim, slice_sizes))
    mode = GatherScatterMode.PROMISE_IN_BOUNDS if mode is None else GatherScatterMode.from_any(mode)
    if mode is not GatherScatterMode.FILL_OR_DROP:
        fill_value = None
    elif fill_value is None:  # the parameter holds the default, as JAX's
        fill_value = _default_fill(get_aval(operand).dtype)
    return gather_p.bind(operand, start_indices, dimension_numbers=dnums,
                         slice_sizes=slice_sizes, indices_are_sorted=bool(indices_are_sorted),
                         unique_indices=bool(unique_indices), mode=mode, fill_value=fill_value)


def _default_fill(dtype):
    """What out-of-bounds reads give by default: NaN, the lowest signed (highest
    unsigned) integer, True; a key's data words all set."""
    if isinstance(dtype, dtypes.ExtendedDType):
        return int(np.iinfo(np.uint32).max)
    kind = kind_of(dtype)
    if kind == "bool":
        return True
    if kind in ("signed", "unsigned"):
        info = np.iinfo(dtype)
        return int(info.min if kind == "signed" else info.max)
    return np.nan


def _fill_out_of_bounds(out, operand, indices, dnums, slice_sizes, fill_value):
    """`out` with the slices whose start would have been clamped set to the fill value."""
    op_aval, idx_aval, out_aval = get_aval(operand), get_aval(indices), get_aval(out)
    upper = _last_starts(idx_aval, op_aval.shape, slice_sizes, dnums.start_index_map)
    zero = np.zeros((), idx_aval.dtype)[()]
    inside = bitwise.bitwise_and(comparison.ge(indices, zero), comparison.le(indices, upper))
    inside = reductions.reduce_and(inside, (idx_aval.ndim - 1,))
    batch_positions = tuple(d for d in range(out_aval.ndim) if d not in dnums.offset_dims)
    inside = shape_ops.broadcast_in_dim(inside, out_aval.shape, batch_positions)
    if isinstance(out_aval.dtype, dtypes.ExtendedDType):  # keys: data words filled
        fill = out_aval.dtype.full(out_aval.shape,
                                   fill_value_for(out_aval.dtype.physical_dtype, fill_value))
    else:
        fill = shape_ops.broadcast_in_dim(fill_value_for(out_aval.dtype, fill_value),
                                          out_aval.shape, ())
    return comparison.select_n(inside, fill, out)

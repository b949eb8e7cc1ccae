"""Slicing primitives: `slice` (static bounds), `dynamic_slice` and
`dynamic_update_slice` (start indices are traced operands), with the `*_in_dim`
conveniences of `jax.lax`.

Dynamic start indices are clamped so the slice stays in bounds, as XLA does; the
public functions first wrap negative indices around, like NumPy's.
"""
from __future__ import annotations

import operator
from typing import Sequence

import numpy as np

from plax.extend import dtypes
from plax.extend.ad import (
    Zero,
    instantiate,
    is_undefined_primal,
    linear_jvp,
    tangent_aval,
    zeros_like_aval,
)
from plax.extend.batching import common_dim, move_to, moveaxis, not_mapped
from plax.extend.constructors import (
    INT,
    canonicalize_axis,
    check_dtype,
    check_same_dtypes,
    describe,
    standard_primitive,
)
from plax.extend.core import ShapedArray, canonical_dim, get_aval, is_python_scalar
from plax.extend.mlir import hlo, mu
from plax_stdlib.lax.comparison import lt, select
from plax_stdlib.lax.conversion import constant_like, convert_with_weak_type
from plax_stdlib.lax.dimensions import dimension_as_value, size_scalar
from plax_stdlib.lax.gathers import (GatherDimensionNumbers, GatherScatterMode,
                                     batching_slice_size, gather_p)
from plax_stdlib.lax.shape_ops import (broadcast_in_dim, concatenate, expand_dims, pad,
                                       param_int, squeeze)


def _check_rank(name: str, operand: ShapedArray, what: str, values: Sequence,
                error: type[Exception] = ValueError) -> None:
    """One entry per dimension (JAX's class: a ValueError, a TypeError for `slice`)."""
    if len(values) != operand.ndim:
        raise error(f"{name}: {what} {tuple(values)} must have one entry per dimension "
                    f"of operand {describe(operand)}")


# --- slice ----------------------------------------------------------------------------------

def _slice_abstract_eval(operand, *, start_indices, limit_indices, strides):
    name = "slice"
    _check_rank(name, operand, "start_indices", start_indices, TypeError)
    _check_rank(name, operand, "limit_indices", limit_indices, TypeError)
    strides = strides or (1,) * operand.ndim
    _check_rank(name, operand, "strides", strides, TypeError)
    for d, (start, limit, size) in enumerate(zip(start_indices, limit_indices, operand.shape)):
        if not 0 <= start <= limit <= size:
            raise TypeError(f"{name}: bounds [{start}:{limit}] of dimension {d} are not "
                            f"within [0, {size}] (operand {describe(operand)}, start_indices "
                            f"{start_indices}, limit_indices {limit_indices})")
    if any(s <= 0 for s in strides):
        raise ValueError(f"{name}: strides must be positive, got {strides}")
    # (JAX's form, which keeps symbolic sizes as JAX prints them: `floordiv(b - 1, 2) + 1`)
    shape = tuple(limit - start if stride == 1 else
                  (limit - start - 1) // stride + 1 if limit != start else 0
                  for start, limit, stride in zip(start_indices, limit_indices, strides))
    return ShapedArray(shape, operand.dtype, operand.weak_type)


def _slice_lower(ctx, operand, *, start_indices, limit_indices, strides):
    strides = strides or (1,) * len(start_indices)
    element = mu.element_shape(ctx.avals_in[0])  # keys: their data is taken whole
    starts = [*start_indices, *(0 for _ in element)]
    limits = [*limit_indices, *element]
    steps = [*strides, *(1 for _ in element)]
    return mu.slice(operand, starts, limits, steps, ctx.avals_out[0])


def _element_starts(ctx, starts) -> list:
    """`starts` followed by zeros for the data dimensions of extended-dtype elements."""
    element = mu.element_shape(ctx.avals_in[0])
    if not element:
        return list(starts)
    zero = mu.dense_constant(0, ctx.avals_in[-1].dtype if starts else np.int32)
    return [*starts, *(zero for _ in element)]


def _slice_transpose(ct, operand, *, start_indices, limit_indices, strides):
    """Pad the cotangent back into the operand's shape, zeros between strides (JAX's
    arithmetic: the high padding and interior as NumPy integers)."""
    shape = operand.aval.shape
    if strides is None or all(s == 1 for s in strides):
        config = zip(start_indices, np.subtract(shape, limit_indices), (0,) * len(shape))
    else:
        out_shape = np.array(get_aval(ct).shape)
        limits = np.add(start_indices, np.where(out_shape == 0, 0,
                                                1 + (out_shape - 1) * np.array(strides)))
        config = zip(start_indices, np.subtract(shape, limits), np.subtract(strides, 1))
    return [pad(ct, np.zeros((), get_aval(ct).dtype)[()], list(config))]


def _slice_batching(axis_data, args, dims, *, start_indices, limit_indices, strides):
    (x,), (d,) = args, dims
    insert = lambda values, v: values[:d] + (v,) + values[d:]  # noqa: E731
    return slice_p.bind(x, start_indices=insert(start_indices, 0),
                        limit_indices=insert(limit_indices, axis_data.size),
                        strides=None if strides is None else insert(strides, 1)), d


slice_p = standard_primitive("lax.slice", _slice_abstract_eval, _slice_lower, jvp=linear_jvp(),
                             transpose=_slice_transpose, batching=_slice_batching)


def slice(operand, start_indices, limit_indices, strides=None):  # noqa: A001 - lax's name
    """`operand[start:limit:stride]` in every dimension, with static bounds.

    Args:
        operand: an array.
        start_indices: the first index in each dimension (ints, non-negative).
        limit_indices: one past the last index in each dimension.
        strides: the step in each dimension (default: all 1).

    Returns:
        The sliced array.

    Raises:
        TypeError: a bound is out of range or the sequences' lengths differ
            from `operand`'s rank.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> x = jnp.arange(12).reshape(3, 4)
        >>> lax.slice(x, (0, 1), (2, 4))
        Array([[1, 2, 3],
               [5, 6, 7]], dtype=int32)
    """
    return slice_p.bind(
        operand, start_indices=tuple(param_int(d, canonical_dim) for d in start_indices),
        limit_indices=tuple(param_int(d, canonical_dim) for d in limit_indices),
        strides=None if strides is None else tuple(map(param_int, strides)))


def slice_in_dim(operand, start_index, limit_index, stride: int = 1, axis: int = 0):
    """`operand[start:limit:stride]` along one dimension, with static bounds.

    Args:
        operand: an array.
        start_index: the first index (None: 0; negative counts from the end).
        limit_index: one past the last index (None: the dimension's size).
        stride: the step, a positive int.
        axis: the dimension to slice.

    Returns:
        The slice, `operand`'s other dimensions unchanged.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.slice_in_dim(jnp.arange(10), 1, 8, stride=3)
        Array([1, 4, 7], dtype=int32)
    """
    shape = get_aval(operand).shape
    axis = canonicalize_axis("slice_in_dim", axis, len(shape))
    size = shape[axis]
    start = 0 if start_index is None else canonical_dim(start_index)
    limit = size if limit_index is None else canonical_dim(limit_index)
    start, limit = (start + size if start < 0 else start), (limit + size if limit < 0 else limit)
    starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
    starts[axis], limits[axis], strides[axis] = start, limit, operator.index(stride)
    return slice(operand, starts, limits, strides)


def index_in_dim(operand, index: int, axis: int = 0, keepdims: bool = True):
    """Picks the element at a static `index` along `axis`.

    Args:
        operand: an array.
        index: a Python int; negative counts from the end.
        axis: the dimension to index.
        keepdims: keep `axis` with size 1 (the default) rather than removing it.

    Returns:
        The slice `operand[..., index, ...]`.

    Raises:
        IndexError: `index` is out of range.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.index_in_dim(jnp.arange(6).reshape(2, 3), -1, axis=0)
        Array([[3, 4, 5]], dtype=int32)
    """
    shape = get_aval(operand).shape
    axis = canonicalize_axis("index_in_dim", axis, len(shape))
    index, size = operator.index(index), shape[axis]
    if not -size <= index < size:
        raise IndexError(f"index {index} is out of bounds for axis {axis} with size {size}")
    index = index + size if index < 0 else index
    result = slice_in_dim(operand, index, index + 1, 1, axis)
    return result if keepdims else squeeze(result, (axis,))


# --- start indices ----------------------------------------------------------------------------

def _check_start_indices(name: str, operand: ShapedArray, indices: Sequence[ShapedArray]):
    if len(indices) != operand.ndim:
        raise ValueError(f"{name} takes one start index per dimension of operand "
                         f"{describe(operand)}, got {len(indices)}")
    for index in indices:
        check_dtype(name, index, INT, what="start index")
        if index.shape:
            raise TypeError(f"{name} requires scalar start indices, got {describe(index)}")
    if indices:
        check_same_dtypes(name, *indices)


def _start_indices(name: str, operand_shape: Sequence[int], start_indices,
                   allow_negative_indices=True) -> list:
    """Start indices as scalars of one integer dtype, negative ones wrapped around in
    the dimensions `allow_negative_indices` (a bool, or one per dimension) allows;
    in the others a negative Python index is a ValueError, a traced one is clamped."""
    if isinstance(start_indices, np.ndarray):
        start_indices = list(start_indices)
    if not isinstance(start_indices, (list, tuple)):  # a traced 1-D array of indices
        aval = get_aval(start_indices)
        if aval.ndim != 1:
            raise TypeError(f"{name}: start_indices must be a sequence of scalars or a 1-D "
                            f"array, got {describe(aval)}")
        start_indices = [index_in_dim(start_indices, i, keepdims=False)
                         for i in range(aval.shape[0])]
    if len(start_indices) != len(operand_shape):
        raise ValueError(f"{name} takes one start index per dimension of an operand of shape "
                         f"{tuple(operand_shape)}, got {len(start_indices)}")
    start_indices = [dimension_as_value(i) for i in start_indices]  # `x.shape[0] - 1`
    array_avals = [get_aval(i) for i in start_indices if not is_python_scalar(i)]
    for aval in array_avals:
        check_dtype(name, aval, INT, what="start index")
    array_dtypes = {aval.dtype for aval in array_avals}
    dtype = array_dtypes.pop() if len(array_dtypes) == 1 else dtypes.default_int_dtype()
    wrap = allow_negative_indices
    wrap = [wrap] * len(operand_shape) if isinstance(wrap, (bool, np.bool_)) else list(wrap)
    if len(wrap) != len(operand_shape):
        raise ValueError(f"{name}: allow_negative_indices takes a bool or one per dimension "
                         f"of an operand of shape {tuple(operand_shape)}, got "
                         f"{allow_negative_indices!r}")
    return [_wrap_negative(i, size, dtype, w)
            for i, size, w in zip(start_indices, operand_shape, wrap)]


def _wrap_negative(index, size: int, dtype: np.dtype, wrap: bool):
    if is_python_scalar(index) or isinstance(index, np.integer):
        index = operator.index(index)
        if index < 0 and not wrap:
            raise ValueError(f"Index {index} is out of bounds for dimension {size} if "
                             "allow_negative_indices=False")
        return size_scalar(index + size if index < 0 else index, dtype)
    unsigned = dtypes.issubdtype(get_aval(index).dtype, np.unsignedinteger)
    if get_aval(index).dtype != dtype:  # (one dtype for all of an op's start indices)
        index = convert_with_weak_type(index, dtype, weak_type=False)
    if not wrap or unsigned:  # an unsigned index cannot be negative
        return index
    # JAX's: the index's sign tested as it is, the size added as an array (a weakly
    # typed index is converted for the sum only)
    return select(lt(index, constant_like(index, 0)), index + size_scalar(size, dtype), index)


# --- dynamic_slice ------------------------------------------------------------------------------

def _dynamic_slice_abstract_eval(operand, *start_indices, slice_sizes):
    name = "dynamic_slice"
    _check_start_indices(name, operand, start_indices)
    _check_rank(name, operand, "slice_sizes", slice_sizes)
    if any(not 0 <= s <= d for s, d in zip(slice_sizes, operand.shape)):
        raise TypeError(f"{name}: slice_sizes {slice_sizes} must be non-negative and fit "
                        f"in operand {describe(operand)}")
    return ShapedArray(slice_sizes, operand.dtype, operand.weak_type)


def _dynamic_slice_jvp(primals, tangents, *, slice_sizes):
    ans = dynamic_slice_p.bind(*primals, slice_sizes=slice_sizes)
    if isinstance(tangents[0], Zero):
        return ans, Zero(tangent_aval(get_aval(ans)))
    return ans, dynamic_slice_p.bind(tangents[0], *primals[1:], slice_sizes=slice_sizes)


def _dynamic_slice_transpose(ct, operand, *starts, slice_sizes):
    zeros = zeros_like_aval(operand.aval)
    return [dynamic_update_slice_p.bind(zeros, ct, *starts)] + [None] * len(starts)


def _zero_start(starts) -> np.generic:
    """A start index of 0, of the other start indices' dtype."""
    dtype = get_aval(starts[0]).dtype if starts else dtypes.default_int_dtype()
    return np.zeros((), dtype)[()]


def _dynamic_slice_batching(axis_data, args, dims, *, slice_sizes):
    """Start indices shared by the batch: the batch dimension is sliced whole.
    Start indices per batch member: a gather of one slice per member."""
    (operand, *starts), (od, *sds) = args, dims
    size = axis_data.size
    if all(d is not_mapped for d in sds):
        starts.insert(od, _zero_start(starts))
        sizes = slice_sizes[:od] + (size,) + slice_sizes[od:]
        return dynamic_slice_p.bind(operand, *starts, slice_sizes=sizes), od
    indices = concatenate([broadcast_in_dim(move_to(s, d, 0, size), (size, 1), (0,))
                           for s, d in zip(starts, sds)], 1)
    rank = len(slice_sizes)
    offset = tuple(range(1, rank + 1))
    if od is not_mapped:
        dnums = GatherDimensionNumbers(offset, (), tuple(range(rank)))
    else:
        operand = moveaxis(operand, od, 0)
        slice_sizes = (batching_slice_size(size),) + tuple(slice_sizes)
        dnums = GatherDimensionNumbers(offset, (), offset, (0,), (0,))
    return gather_p.bind(operand, indices, dimension_numbers=dnums, slice_sizes=slice_sizes,
                         indices_are_sorted=False, unique_indices=False,
                         mode=GatherScatterMode.CLIP,
                         fill_value=None), 0


def _dynamic_slice_lower(ctx, operand, *starts, slice_sizes):
    sizes = [*slice_sizes, *mu.element_shape(ctx.avals_in[0])]
    return mu.dynamic_slice(operand, _element_starts(ctx, starts), sizes,
                            mu.physical_aval(ctx.avals_in[0]).shape)


dynamic_slice_p = standard_primitive(
    "lax.dynamic_slice", _dynamic_slice_abstract_eval, _dynamic_slice_lower,
    jvp=_dynamic_slice_jvp, transpose=_dynamic_slice_transpose,
    batching=_dynamic_slice_batching)


def dynamic_slice(operand, start_indices, slice_sizes, *, allow_negative_indices=True):
    """Takes a block of static size from `operand`, starting at indices that may be
    traced values.

    The block's size is static (so the shape is known at trace time) while its
    position can depend on data. A start index that would make the block stick
    out of `operand` is moved back so that the block fits (as XLA does), and
    negative indices count from the end.

    Args:
        operand: an array.
        start_indices: one scalar integer per dimension (arrays or ints, traced
            or not), or a 1-d integer array.
        slice_sizes: the block's size in each dimension (ints).
        allow_negative_indices: whether negative indices count from the end
            (False skips that adjustment when they are known non-negative).

    Returns:
        An array of shape `slice_sizes`.

    Raises:
        ValueError: the number of indices or sizes differs from `operand`'s rank.
        TypeError: an index is not an integer.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> from plax import lax
        >>> x = jnp.arange(10)
        >>> plax.jit(lambda i: lax.dynamic_slice(x, (i,), (3,)))(4)
        Array([4, 5, 6], dtype=int32)
        >>> lax.dynamic_slice(x, (8,), (3,))  # moved back to fit
        Array([7, 8, 9], dtype=int32)
    """
    shape = get_aval(operand).shape
    starts = _start_indices("dynamic_slice", shape, start_indices, allow_negative_indices)
    return dynamic_slice_p.bind(operand, *starts,
                                slice_sizes=tuple(map(canonical_dim, slice_sizes)))


def dynamic_slice_in_dim(operand, start_index, slice_size: int, axis: int = 0, *,
                         allow_negative_indices: bool = True):
    """`dynamic_slice` along one dimension: `slice_size` elements from a (possibly
    traced) `start_index`, the other dimensions whole.

    Args:
        operand: an array.
        start_index: a scalar integer (traced or not).
        slice_size: the number of elements to take (an int).
        axis: the dimension to slice.
        allow_negative_indices: whether a negative index counts from the end.

    Returns:
        `operand` with dimension `axis` cut to `slice_size`.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.dynamic_slice_in_dim(jnp.arange(12).reshape(3, 4), 1, 2, axis=1)
        Array([[ 1,  2],
               [ 5,  6],
               [ 9, 10]], dtype=int32)
    """
    shape = get_aval(operand).shape
    axis = canonicalize_axis("dynamic_slice_in_dim", axis, len(shape))
    starts = [0] * len(shape)
    starts[axis] = start_index
    sizes = list(shape)
    sizes[axis] = slice_size
    return dynamic_slice(operand, starts, sizes,
                         allow_negative_indices=allow_negative_indices)


def dynamic_index_in_dim(operand, index, axis: int = 0, keepdims: bool = True, *,
                         allow_negative_indices: bool = True):
    """Picks the element at a (possibly traced) `index` along `axis`.

    Args:
        operand: an array.
        index: a scalar integer.
        axis: the dimension to index.
        keepdims: keep `axis` with size 1 (the default) rather than removing it.
        allow_negative_indices: whether a negative index counts from the end.

    Returns:
        The slice `operand[..., index, ...]`.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> x = jnp.arange(6).reshape(2, 3)
        >>> lax.dynamic_index_in_dim(x, 2, axis=1, keepdims=False)
        Array([2, 5], dtype=int32)
    """
    axis = canonicalize_axis("dynamic_index_in_dim", axis, get_aval(operand).ndim)
    result = dynamic_slice_in_dim(operand, index, 1, axis,
                                  allow_negative_indices=allow_negative_indices)
    return result if keepdims else squeeze(result, (axis,))


# --- dynamic_update_slice -------------------------------------------------------------------------

def _dynamic_update_slice_abstract_eval(operand, update, *start_indices):
    name = "dynamic_update_slice"
    check_same_dtypes(name, operand, update)
    if update.ndim != operand.ndim or any(u > d for u, d in zip(update.shape, operand.shape)):
        raise TypeError(f"{name} requires an update of the operand's rank that fits in it, "
                        f"got update {describe(update)} for operand {describe(operand)}")
    _check_start_indices(name, operand, start_indices)
    return operand


def _dynamic_update_slice_jvp(primals, tangents):
    ans = dynamic_update_slice_p.bind(*primals)
    t_operand, t_update = tangents[:2]
    if isinstance(t_operand, Zero) and isinstance(t_update, Zero):
        return ans, Zero(tangent_aval(get_aval(ans)))
    return ans, dynamic_update_slice_p.bind(instantiate(t_operand), instantiate(t_update),
                                            *primals[2:])


def _dynamic_update_slice_transpose(ct, operand, update, *starts):
    update_aval = update.aval if is_undefined_primal(update) else get_aval(update)
    ct_operand = ct_update = None
    if is_undefined_primal(operand):
        ct_operand = dynamic_update_slice_p.bind(ct, zeros_like_aval(update_aval), *starts)
    if is_undefined_primal(update):
        ct_update = dynamic_slice_p.bind(ct, *starts, slice_sizes=update_aval.shape)
    return [ct_operand, ct_update] + [None] * len(starts)


def _dynamic_update_slice_batching(axis_data, args, dims):
    """Start indices shared by the batch: the batch dimension is updated whole.
    Start indices per batch member: each result element selects the operand or the
    update element that lands on it (gathered at its offset from the clamped start)."""
    from plax_stdlib.lax.bitwise import bitwise_and
    from plax_stdlib.lax.comparison import clamp, ge, select_n
    from plax_stdlib.lax.creation import broadcasted_iota
    from plax_stdlib.lax.elementwise import sub
    (operand, update, *starts), (od, ud, *sds) = args, dims
    size = axis_data.size
    if all(d is not_mapped for d in sds):
        (operand, update), d = common_dim([operand, update], [od, ud], size)
        starts.insert(d, _zero_start(starts))
        return dynamic_update_slice_p.bind(operand, update, *starts), d
    operand, update = move_to(operand, od, 0, size), move_to(update, ud, 0, size)
    shape, update_shape = get_aval(operand).shape, get_aval(update).shape
    rank = len(shape) - 1
    offsets, inside = [], None
    for k, (start, sd) in enumerate(zip(starts, sds)):
        start = move_to(start, sd, 0, size)
        dtype = get_aval(start).dtype
        start = clamp(0, start, shape[k + 1] - update_shape[k + 1])
        offset = sub(broadcasted_iota(dtype, shape, k + 1), broadcast_in_dim(start, shape, (0,)))
        fits = bitwise_and(ge(offset, 0), lt(offset, update_shape[k + 1]))
        inside = fits if inside is None else bitwise_and(inside, fits)
        offsets.append(expand_dims(offset, (rank + 1,)))
    axes = tuple(range(1, rank + 1))
    picked = gather_p.bind(update, concatenate(offsets, rank + 1),
                           dimension_numbers=GatherDimensionNumbers((), axes, axes, (0,), (0,)),
                           slice_sizes=(batching_slice_size(size),) + (1,) * rank,
                           indices_are_sorted=False,
                           unique_indices=False, mode=GatherScatterMode.CLIP,
                           fill_value=None)
    return select_n(inside, operand, picked), 0


dynamic_update_slice_p = standard_primitive(
    "lax.dynamic_update_slice", _dynamic_update_slice_abstract_eval,
    lambda ctx, operand, update, *starts: hlo.dynamic_update_slice(
        operand, update, _element_starts(ctx, starts)),
    jvp=_dynamic_update_slice_jvp, transpose=_dynamic_update_slice_transpose,
    batching=_dynamic_update_slice_batching)


def dynamic_update_slice(operand, update, start_indices, *, allow_negative_indices=True):
    """Writes `update` into `operand` at indices that may be traced values.

    The functional form of `operand[i:i + n] = update`: a new array is returned.
    A start index that would make `update` stick out is moved back so that it
    fits, and negative indices count from the end.

    Args:
        operand: an array.
        update: an array of `operand`'s dtype and rank, no larger in any
            dimension.
        start_indices: one scalar integer per dimension, or a 1-d integer array.
        allow_negative_indices: whether negative indices count from the end.

    Returns:
        A copy of `operand` with the block replaced.

    Raises:
        TypeError: `update`'s dtype or rank differs from `operand`'s.
        ValueError: the number of indices differs from `operand`'s rank.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.dynamic_update_slice(jnp.zeros(5), jnp.ones(2), (1,))
        Array([0., 1., 1., 0., 0.], dtype=float32)
    """
    shape = get_aval(operand).shape
    starts = _start_indices("dynamic_update_slice", shape, start_indices,
                            allow_negative_indices)
    return dynamic_update_slice_p.bind(operand, update, *starts)


def dynamic_update_slice_in_dim(operand, update, start_index, axis: int, *,
                                allow_negative_indices: bool = True):
    """`dynamic_update_slice` along one dimension: writes `update` into `operand`
    from a (possibly traced) `start_index` along `axis`.

    Args:
        operand: an array.
        update: an array whose shape is `operand`'s except along `axis`.
        start_index: a scalar integer.
        axis: the dimension along which to write.
        allow_negative_indices: whether a negative index counts from the end.

    Returns:
        A copy of `operand` with the block replaced.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.dynamic_update_slice_in_dim(jnp.zeros((2, 4)), jnp.ones((2, 1)), 3, axis=1)
        Array([[0., 0., 0., 1.],
               [0., 0., 0., 1.]], dtype=float32)
    """
    ndim = get_aval(operand).ndim
    axis = canonicalize_axis("dynamic_update_slice_in_dim", axis, ndim)
    starts = [0] * ndim
    starts[axis] = start_index
    return dynamic_update_slice(operand, update, starts,
                                allow_negative_indices=allow_negative_indices)


def dynamic_update_index_in_dim(operand, update, index, axis: int, *,
                                allow_negative_indices: bool = True):
    """Replaces the slice at a (possibly traced) `index` along `axis` by `update`.

    Args:
        operand: an array.
        update: the new slice: `operand`'s shape with `axis` of size 1, or
            without `axis`.
        index: a scalar integer.
        axis: the dimension to index.
        allow_negative_indices: whether a negative index counts from the end.

    Returns:
        A copy of `operand` with that slice replaced.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.dynamic_update_index_in_dim(jnp.zeros((3, 2)), jnp.ones(2), 1, axis=0)
        Array([[0., 0.],
               [1., 1.],
               [0., 0.]], dtype=float32)
    """
    ndim = get_aval(operand).ndim
    axis = canonicalize_axis("dynamic_update_index_in_dim", axis, ndim)
    if get_aval(update).ndim == ndim - 1:
        update = expand_dims(update, (axis,))
    return dynamic_update_slice_in_dim(operand, update, index, axis,
                                       allow_negative_indices=allow_negative_indices)

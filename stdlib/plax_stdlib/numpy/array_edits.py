"""Functions that edit arrays by position or mask, returning new arrays (plax arrays
are immutable, so NumPy's in-place `put`/`place`/`put_along_axis`/`fill_diagonal`
require `inplace=False`): append, insert, delete, resize, trim_zeros, place, put,
put_along_axis, fill_diagonal, compress, extract, choose, select, piecewise.

Positions given as arrays may be traced where the result's shape does not depend
on them (insert, delete with `assume_unique_indices`, put, place; compress and
extract with `size=`).
"""
from __future__ import annotations

import math
import operator

import numpy as np

from plax.extend import dtypes
from plax_stdlib import jax_jits, lax
from plax_stdlib.numpy import (creation, functional, index_tricks, reductions,
                               shape_ops, sorting, ufuncs, util)


def _immutable(name: str, inplace: bool) -> None:
    if inplace:
        raise ValueError(f"plax.numpy.{name} cannot modify arrays in place, because plax "
                         "arrays are immutable. Pass inplace=False to get an updated array "
                         "instead.")


def _along(axis: int, index) -> tuple:
    return (slice(None),) * axis + (index,)


def _tile_to_size(flat, size: int):
    n = util.shape_of(flat)[0]
    if n < size:
        flat = shape_ops.tile(flat, -(-size // n))
    return flat[:size]


def append(arr, values, axis: int | None = None):
    """`values` joined to the end of `arr`, as a new array (both flattened first if `axis`
    is None).

    Follows `numpy.append`.

    Args:
        arr: an array.
        values: an array; with `axis`, shaped like `arr` except along `axis`.
        axis: the axis to join along; None flattens both.

    Returns:
        A new array.

    Examples:
        >>> jnp.append(jnp.array([[1, 2]]), jnp.array([3, 4]))
        Array([1, 2, 3, 4], dtype=int32)
        >>> jnp.append(jnp.array([[1, 2]]), jnp.array([[3, 4]]), axis=0)
        Array([[1, 2],
               [3, 4]], dtype=int32)
    """
    if axis is None:
        return shape_ops.concatenate([shape_ops.ravel(arr), shape_ops.ravel(values)], 0)
    return shape_ops.concatenate([arr, values], axis=axis)


def resize(a, new_shape):
    """`a`'s elements repeated cyclically (or cut) to fill `new_shape`, in row-major order.

    Follows `numpy.resize` (the function; there is no in-place `ndarray.resize`).

    Args:
        a: an array.
        new_shape: the result's shape (concrete).

    Returns:
        An array of `new_shape`.

    Examples:
        >>> jnp.resize(jnp.array([1, 2, 3]), (2, 4))
        Array([[1, 2, 3, 1],
               [2, 3, 1, 2]], dtype=int32)
    """
    a = util.ensure_arraylike("resize", a)
    new_shape = util.canonicalize_shape(new_shape, "resize")
    flat = shape_ops.ravel(a)
    size = math.prod(new_shape)
    if size == 0 or util.shape_of(flat)[0] == 0:
        return creation.zeros(new_shape, util.dtype_of(a))
    return shape_ops.reshape(_tile_to_size(flat, size), new_shape)


def trim_zeros(filt, trim: str = "fb", axis=None):
    """`filt` without its leading ("f") and/or trailing ("b") zeros.

    Follows `numpy.trim_zeros` (with NumPy 2's `axis`: along each axis given, the
    all-zero slices at the ends are removed). The result's size depends on the values,
    so `filt` must be concrete (not traced).

    Args:
        filt: an array.
        trim: "f" (front), "b" (back) or "fb" (both).
        axis: the axes to trim along; None means all.

    Returns:
        The trimmed array.

    Raises:
        ConcretizationTypeError: `filt` is traced.

    Examples:
        >>> jnp.trim_zeros(jnp.array([0, 0, 1, 2, 0]))
        Array([1, 2], dtype=int32)
        >>> jnp.trim_zeros(jnp.array([0, 1, 0]), trim="f")
        Array([1, 0], dtype=int32)
    """
    filt = creation.asarray(util.ensure_arraylike("trim_zeros", filt))
    value = np.asarray(util.concrete_or_error(
        filt, "trim_zeros: the length of the result depends on the values of filt"))
    axes = set(util.canonicalize_axes(axis, value.ndim))
    trim = trim.lower()
    index = []
    for ax in range(value.ndim):
        if ax not in axes:
            index.append(slice(None))
            continue
        nonzero = value.any(axis=tuple(i for i in range(value.ndim) if i != ax))
        if not nonzero.any():
            index.append(slice(0, 0))
            continue
        start = int(nonzero.argmax()) if "f" in trim else None
        stop = value.shape[ax] - int(nonzero[::-1].argmax()) if "b" in trim else None
        index.append(slice(start, stop))
    return filt[tuple(index)]


def delete(arr, obj, axis: int | None = None, *, assume_unique_indices: bool = False):
    """`arr` without the entries `obj` along `axis` (of the flattened array if `axis` is
    None), as a new array.

    Follows `numpy.delete`. `obj` is an int, a slice, an index array or a boolean mask.
    The result's size must be known when tracing: index arrays and masks must be
    concrete, unless `assume_unique_indices=True` promises that an index array has no
    duplicates (its length then fixes the size, and it may be traced).

    Args:
        arr: an array.
        obj: what to delete.
        axis: the axis to delete along; None flattens `arr` first.
        assume_unique_indices: promise that the indices in `obj` are distinct.

    Returns:
        A smaller array.

    Examples:
        >>> jnp.delete(jnp.array([10, 20, 30, 40]), 1)
        Array([10, 30, 40], dtype=int32)
        >>> jnp.delete(jnp.array([[1, 2], [3, 4]]), jnp.array([0]), axis=1)
        Array([[2],
               [4]], dtype=int32)
    """
    a = creation.asarray(util.ensure_arraylike("delete", arr))
    if axis is None:
        a, axis = shape_ops.ravel(a), 0
    axis = util.canonicalize_axis(axis, len(util.shape_of(a)))
    n = util.shape_of(a)[axis]
    if isinstance(obj, (int, np.integer)) and not isinstance(obj, (bool, np.bool_)):
        i = util.canonicalize_axis(obj, n)  # out of range: JAX's ValueError
        return shape_ops.concatenate([a[_along(axis, slice(0, i))],
                                      a[_along(axis, slice(i + 1, None))]], axis)
    if isinstance(obj, slice):
        obj, assume_unique_indices = np.arange(n)[obj], True
    util.check_arraylike("delete", obj)
    if assume_unique_indices and util.dtype_category(util.dtype_of(obj)) in "iu":
        removed = lax.reshape(util.operand(obj), (math.prod(util.shape_of(obj)),))
        removed = ufuncs.clip(ufuncs.where(lax.lt(removed, 0), ufuncs.add(removed, n), removed),
                              0, n)
        k = util.shape_of(removed)[0]
        removed = ufuncs.subtract(sorting.sort(removed), creation.arange(k, dtype=util.dtype_of(
            removed)))
        kept = creation.arange(n - k, dtype=util.dtype_of(removed))
        shift = reductions.sum(lax.ge(lax.broadcast_in_dim(kept, (k, n - k), (1,)),
                                      lax.broadcast_in_dim(removed, (k, n - k), (0,))),
                               axis=0, dtype=util.dtype_of(kept))
        return a[_along(axis, ufuncs.add(kept, shift))]
    value = np.asarray(util.concrete_or_error(
        obj, "delete: the 'obj' array must be concrete (or pass assume_unique_indices=True "
        "with unique integer indices)"))
    if value.dtype == bool:
        if value.shape != (n,):
            raise ValueError(f"delete: a boolean obj must be one-dimensional with the length "
                             f"of the axis ({n}), got shape {value.shape}")
        keep = ~value
    elif np.issubdtype(value.dtype, np.integer):
        if value.size and (value.min() < -n or value.max() >= n):
            raise IndexError(f"delete: index {value.max() if value.max() >= n else value.min()}"
                             f" is out of bounds for axis {axis} with size {n}")
        keep = np.ones(n, bool)
        keep[value] = False
    else:
        raise ValueError(f"delete: obj must be integer or boolean, got dtype {value.dtype}")
    return a[_along(axis, np.nonzero(keep)[0])]


def insert(arr, obj, values, axis: int | None = None):
    """`arr` with `values` inserted before the positions `obj` along `axis` (of the
    flattened array if `axis` is None), as a new array.

    Follows `numpy.insert`; `obj` (an int, a slice or an index array) may be traced,
    since the result's size depends only on how many values are inserted.

    Args:
        arr: an array.
        obj: the insertion index or indices.
        values: the values (broadcast to the inserted slices).
        axis: the axis to insert along; None flattens `arr` first.

    Returns:
        A larger array.

    Examples:
        >>> jnp.insert(jnp.array([1, 2, 3]), 1, 9)
        Array([1, 9, 2, 3], dtype=int32)
        >>> jnp.insert(jnp.array([[1, 2], [3, 4]]), 1, 0, axis=1)
        Array([[1, 0, 2],
               [3, 0, 4]], dtype=int32)
    """
    a, values = util.ensure_arraylike("insert", arr, values)
    a = creation.asarray(a)
    if axis is None:
        a, axis = shape_ops.ravel(a), 0
    axis = util.canonicalize_axis(axis, len(util.shape_of(a)))
    n = util.shape_of(a)[axis]
    if isinstance(obj, slice):
        positions = creation.arange(*obj.indices(n))
    else:
        positions = creation.asarray(util.ensure_arraylike("insert", obj))
    pshape = util.shape_of(positions)
    if len(pshape) > 1:
        raise ValueError(f"insert: obj must be a slice, a one-dimensional array or a scalar; "
                         f"got shape {pshape}")
    if util.dtype_category(util.dtype_of(positions)) not in "iu":
        if math.prod(pshape) == 0 and not isinstance(obj, slice):
            positions = util.convert(positions, dtypes.default_int_dtype())
        else:
            raise ValueError(f"insert: index array must be integer typed; got dtype "
                             f"{util.dtype_of(positions)}")
    values = creation.array(values, ndmin=len(util.shape_of(a)), dtype=util.dtype_of(a),
                            copy=False)
    if math.prod(pshape) == 1:
        # One position: `values` is a block inserted there (a scalar position takes it
        # with its first axis moved to `axis`, as NumPy does).
        if not pshape:
            values = shape_ops.moveaxis(values, 0, axis)
        positions = creation.full((util.shape_of(values)[axis],),
                                  lax.reshape(positions, ()), util.dtype_of(positions))
    count = util.broadcast_shapes(util.shape_of(positions), (util.shape_of(values)[axis],))[0]
    out_shape = list(util.shape_of(a))
    out_shape[axis] += count
    positions = ufuncs.clip(ufuncs.where(lax.lt(positions, 0), ufuncs.add(positions, n),
                                         positions), 0, n)
    positions = util.broadcast_to_shape(positions, (count,))
    # The k-th inserted value (in stable order of position) lands at position + k.
    rank = sorting.argsort(positions)
    landing = positions.at[rank].add(creation.arange(count, dtype=util.dtype_of(positions)))
    is_old = creation.ones((n + count,), bool).at[landing].set(False)
    old_at = sorting.nonzero(is_old, size=n)[0]
    value_shape = list(out_shape)
    value_shape[axis] = count
    out = creation.zeros(tuple(out_shape), util.dtype_of(a))
    out = out.at[_along(axis, landing)].set(shape_ops.broadcast_to(values, tuple(value_shape)))
    return out.at[_along(axis, old_at)].set(a)


def place(arr, mask, vals, *, inplace: bool = True):
    """`arr` with the elements where `mask` is true replaced, in order, by `vals`
    (repeated cyclically as needed), returned as a new array.

    NumPy's `place` modifies `arr` in place; plax arrays are immutable, so pass
    `inplace=False` to get the result (the default `inplace=True` raises, to catch code
    that expects in-place modification). The number of true elements must be
    concrete.

    Args:
        arr: an array.
        mask: a boolean array of `arr`'s size.
        vals: the values to write.
        inplace: must be False.

    Returns:
        The updated array.

    Raises:
        ValueError: `inplace=True`, or `mask` and `arr` differ in size.

    Examples:
        >>> x = jnp.array([1, -2, 3, -4])
        >>> jnp.place(x, x < 0, jnp.array([0]), inplace=False)
        Array([1, 0, 3, 0], dtype=int32)
    """
    _immutable("place", inplace)
    data, mask, vals = util.ensure_arraylike("place", arr, mask, vals)
    size = math.prod(util.shape_of(data))
    if size != math.prod(util.shape_of(mask)):
        raise ValueError(f"place: arr and mask must be the same size, got shapes "
                         f"{util.shape_of(data)} and {util.shape_of(mask)}")
    vals = shape_ops.ravel(vals)
    if not util.shape_of(vals)[0]:
        raise ValueError("place: cannot place values from an empty array")
    if not size:
        return creation.asarray(data)
    at = sorting.nonzero(shape_ops.ravel(mask), size=size, fill_value=size)[0]
    flat = creation.asarray(shape_ops.ravel(data)).at[at].set(_tile_to_size(vals, size),
                                                           mode="drop")
    return shape_ops.reshape(flat, util.shape_of(data))


def put(a, ind, v, mode: str | None = None, *, inplace: bool = True):
    """`a` with the elements at the flat indices `ind` set to `v` (repeated as needed),
    returned as a new array.

    NumPy's `put` modifies `a` in place; plax arrays are immutable, so pass
    `inplace=False` (the default raises). The JAX idiom for this is
    `a.ravel().at[ind].set(v).reshape(a.shape)`. Out-of-range indices are dropped by
    default, or follow `mode` ("clip" or "wrap").

    Args:
        a: an array.
        ind: flat indices (any shape).
        v: the values (broadcast or repeated to match `ind`).
        mode: None (drop out-of-range indices), "clip" or "wrap".
        inplace: must be False.

    Returns:
        The updated array.

    Raises:
        ValueError: `inplace=True`.

    Examples:
        >>> jnp.put(jnp.zeros((2, 2)), jnp.array([0, 3]), 1.0, inplace=False)
        Array([[1., 0.],
               [0., 1.]], dtype=float32)
    """
    _immutable("put", inplace)
    arr, ind, _ = util.ensure_arraylike("put", a, ind, v)
    arr = creation.asarray(arr)
    ind, v = shape_ops.ravel(ind), shape_ops.ravel(v)
    size = math.prod(util.shape_of(arr))
    if not size or not util.shape_of(ind)[0] or not util.shape_of(v)[0]:
        return arr
    v = _tile_to_size(v, util.shape_of(ind)[0])
    if mode is None:
        scatter_mode = "drop"
    elif mode == "clip":
        ind, scatter_mode = ufuncs.clip(ind, 0, size - 1), "promise_in_bounds"
    elif mode == "wrap":
        ind, scatter_mode = ufuncs.remainder(ind, size), "promise_in_bounds"
    elif mode == "raise":
        raise NotImplementedError("The 'raise' mode of plax.numpy.put is not supported.")
    else:
        raise ValueError(f"put: mode should be one of 'wrap' or 'clip'; got mode={mode!r}")
    return arr.at[index_tricks.unravel_index(ind, util.shape_of(arr))].set(v, mode=scatter_mode)


def put_along_axis(arr, indices, values, axis: int | None, inplace: bool = True, *,
                   mode: str | None = None):
    """`arr` with `values` written at `indices` along `axis`, matched one to one along the
    other axes: the update form of `take_along_axis`.

    NumPy's version modifies `arr` in place; plax arrays are immutable, so pass
    `inplace=False` (the default raises). `mode` handles out-of-range indices as in
    `.at[].set`.

    Args:
        arr: an array.
        indices: an integer array of `arr`'s rank.
        values: the values (broadcast against `indices`).
        axis: the axis to write along; None for the flattened array.
        inplace: must be False.
        mode: out-of-range handling ("fill"/"drop" drop them, "clip" clamps).

    Returns:
        The updated array.

    Raises:
        ValueError: `inplace=True`.

    Examples:
        >>> x = jnp.array([[3, 1], [2, 4]])
        >>> i = jnp.argmax(x, axis=1, keepdims=True)
        >>> jnp.put_along_axis(x, i, 0, axis=1, inplace=False)  # zero each row's maximum
        Array([[0, 1],
               [2, 0]], dtype=int32)
    """
    _immutable("put_along_axis", inplace)
    arr, indices, values = util.ensure_arraylike("put_along_axis", arr, indices, values)
    arr = creation.asarray(arr)
    shape = util.shape_of(arr)
    if axis is None:
        arr, axis = shape_ops.ravel(arr), 0
    ndim = len(util.shape_of(arr))
    if ndim != len(util.shape_of(indices)):
        raise ValueError(f"put_along_axis: arr and indices must have the same ndim, got "
                         f"{ndim} and {len(util.shape_of(indices))}")
    axis = util.canonicalize_axis(axis, ndim)
    ishape = util.shape_of(indices)
    try:
        values = shape_ops.broadcast_to(values, ishape)
    except ValueError:
        raise ValueError(f"put_along_axis: values of shape {util.shape_of(values)} must "
                         f"broadcast to the shape of indices, {ishape}") from None
    index = tuple(indices if d == axis else lax.broadcasted_iota(
        dtypes.default_int_dtype(), tuple(ishape[i] if i == d else 1 for i in range(ndim)), d)
        for d in range(ndim))
    out = arr.at[index].set(values, mode=mode)
    return shape_ops.reshape(out, shape)


def fill_diagonal(a, val, wrap: bool = False, *, inplace: bool = True):
    """`a` with its main diagonal set to `val` (repeated as needed), returned as a new
    array.

    NumPy's version modifies `a` in place; plax arrays are immutable, so pass
    `inplace=False` (the default raises). For arrays of more than two dimensions, the
    diagonal is `a[i, i, ..., i]` (all dimensions equal).

    Args:
        a: an array of at least two dimensions.
        val: the value(s) for the diagonal.
        wrap: for tall matrices, start the diagonal again after each N+1 rows (as NumPy).
        inplace: must be False.

    Returns:
        The updated array.

    Raises:
        ValueError: `inplace=True`, or a shape NumPy rejects.

    Examples:
        >>> jnp.fill_diagonal(jnp.zeros((2, 3), jnp.int32), 7, inplace=False)
        Array([[7, 0, 0],
               [0, 7, 0]], dtype=int32)
    """
    if inplace:
        raise NotImplementedError("plax arrays are immutable: use "
                                  "fill_diagonal(..., inplace=False)")
    if wrap:
        raise NotImplementedError("fill_diagonal: wrap=True is not implemented")
    a, val = util.ensure_arraylike("fill_diagonal", a, val)
    shape = util.shape_of(a)
    if len(shape) < 2:
        raise ValueError("fill_diagonal: array must be at least 2-d")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise ValueError(f"fill_diagonal: all dimensions of input must be of equal length, "
                         f"got shape {shape}")
    n = min(shape)
    if util.shape_of(val):
        flat = lax.reshape(val, (math.prod(util.shape_of(val)),))
        val = _tile_to_size(flat, n) if util.shape_of(flat)[0] else flat
    return creation.asarray(a).at[index_tricks.diag_indices(n, len(shape))].set(val)


def compress(condition, a, axis: int | None = None, *, size: int | None = None,
             fill_value=0, out=None):
    """The slices of `a` along `axis` (of the flattened array if `axis` is None) where the
    1-D `condition` is true.

    Follows `numpy.compress`, plus JAX's `size`/`fill_value`: the number of slices
    kept depends on the values, so without `size` the condition must be concrete; with
    a static `size`, exactly `size` slices are returned (padded with `fill_value`),
    which works under `jit`.

    Args:
        condition: a 1-D boolean array (shorter than the axis: the rest counts false).
        a: an array.
        axis: the axis to select along; None flattens `a`.
        size: the number of slices to return (static).
        fill_value: the padding value.
        out: unsupported; must be None.

    Returns:
        An array with the selected slices.

    Examples:
        >>> jnp.compress(jnp.array([True, False, True]), jnp.array([[1, 2, 3], [4, 5, 6]]), axis=1)
        Array([[1, 3],
               [4, 6]], dtype=int32)
    """
    if out is not None:
        raise NotImplementedError("The 'out' argument to plax.numpy.compress is not supported.")
    condition, a, fill_value = util.ensure_arraylike("compress", condition, a, fill_value)
    condition = ufuncs._as_bool(condition)
    if len(util.shape_of(condition)) != 1:
        raise ValueError(f"compress: condition must be a 1D array, got shape "
                         f"{util.shape_of(condition)}")
    if axis is None:
        a, axis = shape_ops.ravel(a), 0
    axis = util.canonicalize_axis(axis, len(util.shape_of(a)))
    a = creation.asarray(shape_ops.moveaxis(a, axis, 0))
    n, m = util.shape_of(a)[0], util.shape_of(condition)[0]
    extra, condition = condition[n:], condition[:n]
    a = a[:m]
    if size is None:
        if bool(np.any(util.concrete_or_error(extra, "compress: condition must be concrete "
                                              "without size="))):
            raise ValueError("compress: condition contains entries that are out of bounds")
        result = a[util.concrete_or_error(condition, "compress: the length of the result "
                                          "depends on condition; pass size=")]
    else:
        size = operator.index(size)
        if not 0 <= size <= util.shape_of(a)[0]:
            raise ValueError(f"compress: size must be between 0 and the length of the axis; "
                             f"got size={size} for a.shape[axis]={util.shape_of(a)[0]}")
        rows = util.shape_of(a)
        mask = lax.broadcast_in_dim(condition, rows, (0,))
        filled = ufuncs.where(mask, a, util.convert(fill_value, util.dtype_of(a)))
        result = filled[sorting.argsort(condition, stable=True, descending=True)][:size]
    return shape_ops.moveaxis(result, 0, axis)


def extract(condition, arr, *, size: int | None = None, fill_value=0):
    """The elements of `arr` where `condition` is true (both flattened).

    Follows `numpy.extract`; as with `compress`, a static `size` (padded with
    `fill_value`) makes it work on traced values.

    Args:
        condition: an array of `arr`'s size; nonzero is true.
        arr: an array.
        size: the number of elements to return (static).
        fill_value: the padding value.

    Returns:
        A 1-D array.

    Examples:
        >>> x = jnp.array([[1, -2], [-3, 4]])
        >>> jnp.extract(x > 0, x)
        Array([1, 4], dtype=int32)
        >>> jnp.extract(x > 0, x, size=3, fill_value=99)
        Array([ 1,  4, 99], dtype=int32)
    """
    util.check_arraylike("extract", condition, arr, fill_value)
    return compress(shape_ops.ravel(condition), shape_ops.ravel(arr), size=size,
                    fill_value=fill_value)


def choose(a, choices, out=None, mode: str = "raise"):
    """Builds an array elementwise from several choices: where `a` is `i`, the result takes
    the element of `choices[i]` (`a` and the choices broadcast together).

    Follows `numpy.choose`. Out-of-range indices follow `mode`: "raise" (the default;
    only possible when `a` is concrete), "wrap" (modulo the number of choices) or
    "clip".

    Args:
        a: an integer array of choice indices.
        choices: a sequence of arrays (or an array, indexed along its first axis).
        out: unsupported; must be None.
        mode: "raise", "wrap" or "clip".

    Returns:
        An array of the broadcast shape.

    Raises:
        ValueError: an out-of-range index with `mode="raise"`, or an unknown mode.

    Examples:
        >>> jnp.choose(jnp.array([0, 1, 0]), [jnp.array([1, 2, 3]), jnp.array([10, 20, 30])])
        Array([ 1, 20,  3], dtype=int32)
    """
    if out is not None:
        raise NotImplementedError("The 'out' argument to plax.numpy.choose is not supported.")
    if util.is_arraylike(choices) and not isinstance(choices, (list, tuple)):
        choices = [choices[i] for i in range(util.shape_of(choices)[0])]
    a = util.ensure_arraylike("choose", a)
    choices = [util.ensure_arraylike("choose", c) for c in choices]
    if util.dtype_category(util.dtype_of(a)) not in "iu":
        raise ValueError(f"choose: `a` must be integer typed, got {util.dtype_of(a)}")
    count = len(choices)
    if mode == "raise":
        value = np.asarray(util.concrete_or_error(
            a, "choose with mode='raise' needs a concrete `a`; use mode='wrap' or mode='clip' "
            "under jit"))
        if np.any((value < 0) | (value >= count)):
            raise ValueError("choose: invalid entry in choice array")
    elif mode == "wrap":
        a = ufuncs.remainder(a, count)
    elif mode == "clip":
        a = ufuncs.clip(a, 0, count - 1)
    else:
        raise ValueError(f"choose: mode={mode!r} not understood. Must be 'raise', 'wrap', or "
                         "'clip'")
    a, *choices = shape_ops.broadcast_arrays(a, *util.promote_dtypes(*choices))
    return util.as_array(lax.select_n(util.convert(a, np.int32), *choices))


def select(condlist, choicelist, default=0):
    """Elementwise, the choice whose condition is the first to hold: `choicelist[i]` where
    `condlist[i]` is the first true condition, `default` where none is.

    Follows `numpy.select`; conditions and choices broadcast together. A traceable
    alternative to chains of `if`/`elif` on array values.

    Args:
        condlist: a sequence of boolean arrays.
        choicelist: a sequence of arrays, as long as `condlist`.
        default: the value where no condition holds.

    Returns:
        An array of the broadcast shape and the choices' promoted dtype.

    Raises:
        ValueError: lists of different lengths, or empty ones.

    Examples:
        >>> x = jnp.array([-2, 0, 3])
        >>> jnp.select([x < 0, x > 0], [-x, x * 10], default=-1)
        Array([ 2, -1, 30], dtype=int32)
    """
    if len(condlist) != len(choicelist):
        raise ValueError(f"select: condlist must have length equal to choicelist "
                         f"({len(condlist)} vs {len(choicelist)})")
    if not condlist:
        raise ValueError("select: condlist must be non-empty")
    util.check_arraylike("select", *condlist, *choicelist, default)
    conditions = [creation.asarray(c) for c in condlist]
    choices = util.promote_dtypes(*map(util.operand, (default, *choicelist)))
    # As JAX's: the default goes first under a condition that never holds, so that the
    # argmax over the stacked conditions (the first true one) is 0 where none holds.
    stacked = shape_ops.stack(shape_ops.broadcast_arrays(False, *conditions))
    index = reductions.argmax(stacked.astype(bool), axis=0)
    return lax.select_n(*shape_ops.broadcast_arrays(index, *choices))


def piecewise(x, condlist, funclist, *args, **kw):
    """`x` mapped piece by piece: where `condlist[i]` holds, by `funclist[i]` (a function
    of the selected values, or a constant); where no condition holds, by an extra last
    function if one is given, else 0.

    Follows JAX's `piecewise`: `condlist` is stacked into one boolean array whose first
    axis lists the conditions (so a 1-D boolean array is a list of scalar conditions,
    each choosing for all of `x`; NumPy would read it as one condition), and where
    several conditions hold, the last one wins. Each element is mapped on its own
    (the functions are vectorized with `vmap` and chosen with `lax.switch`, so they see
    scalars); `args` and `kw` reach them whole. The result has `x`'s dtype.

    Args:
        x: an array.
        condlist: a sequence of boolean arrays (or scalars) of one shape, or an array
            whose first axis lists them.
        funclist: functions or constants, one per condition (plus an optional default).
        *args: extra positional arguments for the functions.
        **kw: extra keyword arguments for the functions.

    Returns:
        An array of the shape of `x` and the conditions broadcast, and `x`'s dtype.

    Raises:
        ValueError: `funclist` of the wrong length.

    Examples:
        >>> x = jnp.array([-2.0, 0.5, 3.0])
        >>> jnp.piecewise(x, [x < 0, x > 1], [lambda v: -v, 1.0, lambda v: v / 2])
        Array([2.  , 0.25, 1.  ], dtype=float32)
        >>> jnp.piecewise(x, jnp.array([False, True]), [lambda v: -v, lambda v: v * 10])
        Array([-20.,   5.,  30.], dtype=float32)
    """
    x = util.ensure_arraylike("piecewise", x)
    nc, nf = len(condlist), len(funclist)
    if nf == nc + 1:
        funclist = [funclist[-1], *funclist[:-1]]
    elif nf == nc:
        funclist = [0, *funclist]
    else:
        raise ValueError(f"piecewise: with {nc} condition(s), either {nc} or {nc + 1} "
                         f"functions are expected; got {nf}")
    conditions = creation.asarray(condlist, dtype=bool)
    which = lax.full(util.shape_of(conditions)[1:], 0, np.int32)  # the last that holds, + 1
    for i in range(nc):
        which = util.select_n(conditions[i], which, np.int32(i + 1))
    dtype = util.dtype_of(x)

    def branch(f):
        if callable(f):
            return lambda v: util.convert(f(v, *args, **kw), dtype)
        return lambda v: util.convert(creation.asarray(f), dtype)

    branches = [branch(f) for f in funclist]
    return util.as_array(functional.vectorize(lambda i, v: lax.switch(i, branches, v))(which, x))


jax_jits.apply(globals())  # JAX's jitted functions become jit functions

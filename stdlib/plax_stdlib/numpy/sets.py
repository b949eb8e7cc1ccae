"""Unique values and set operations: unique (and the array API's unique_all,
unique_counts, unique_inverse, unique_values), isin, intersect1d, setdiff1d,
setxor1d, union1d.

Each result has a data-dependent length. Without `size` the inputs must be concrete;
with `size` (and optionally `fill_value`) the result has exactly `size` entries, the
true ones first, and the functions work under `jit`. Everything is computed from one
stable sort: the entries that start a run of equal values are the unique ones, and a
nonzero of that mask (with `size`) compacts them.
"""
from __future__ import annotations

import math
import operator
from typing import NamedTuple

import numpy as np

from plax.extend import dtypes
from plax_stdlib import lax
from plax_stdlib.numpy import creation, reductions, shape_ops, sorting, ufuncs, util
from plax_stdlib.numpy.searching import searchsorted

_SIZE_HINT = ("To use it under jit or other transformations, pass a static size= argument, "
              "which fixes the length of the result.")


class _UniqueAllResult(NamedTuple):
    values: object
    indices: object
    inverse_indices: object
    counts: object


class _UniqueCountsResult(NamedTuple):
    values: object
    counts: object


class _UniqueInverseResult(NamedTuple):
    values: object
    inverse_indices: object


def _static_size(size, fun_name: str) -> int | None:
    if size is None:
        return None
    size = operator.index(util.concrete_or_error(size, f"{fun_name}: size must be static"))
    if size < 0:
        raise ValueError(f"{fun_name}: size must be non-negative, got {size}")
    return size


def _concrete_input(x, fun_name: str):
    util.concrete_or_error(x, f"{fun_name}: the length of the result depends on the values "
                           f"of its input. {_SIZE_HINT}")


def _int_iota(n: int):
    return lax.iota(dtypes.default_int_dtype(), n)


def _row_keys(rows):
    """The columns of 2-D `rows`, most significant first."""
    return [lax.index_in_dim(rows, j, axis=1, keepdims=False)
            for j in range(util.shape_of(rows)[1])]


def _sorted_runs(rows, equal_nan: bool):
    """Rows of 2-D `rows` sorted lexicographically (stably), the permutation that sorts
    them, and a mask of the rows that differ from the previous one."""
    n, width = util.shape_of(rows)
    index_dtype = dtypes.default_int_dtype()
    if util.dtype_category(util.dtype_of(rows)) == "c" and equal_nan:
        rows = ufuncs.where(ufuncs.isnan(rows), np.asarray(np.nan, util.dtype_of(rows)), rows)
    if n == 0 or width == 0:
        perm, aux = lax.iota(index_dtype, n), rows
    else:
        *columns, perm = lax.sort((*_row_keys(rows), lax.iota(index_dtype, n)), dimension=0,
                                  num_keys=width, is_stable=True)
        aux = shape_ops.stack(columns, axis=1)
    if n == 0:
        return aux, lax.full((0,), False, bool), perm
    later, earlier = aux[1:], aux[:-1]
    differs = lax.ne(later, earlier)
    if equal_nan and util.dtype_category(util.dtype_of(aux)) in "fc":
        both_nan = lax.bitwise_and(ufuncs.isnan(later), ufuncs.isnan(earlier))
        differs = lax.bitwise_and(differs, lax.bitwise_not(both_nan))
    mask = shape_ops.concatenate([lax.full((1,), True, bool),
                                  reductions.any(differs, axis=1)])
    return aux, mask, perm


def _first_positions(mask, size: int | None):
    """Positions of the true entries of `mask` (concrete without `size`, else the
    first `size` of them, padded with 0)."""
    if size is None:
        return sorting.nonzero(mask)[0]
    return sorting.nonzero(mask, size=size, fill_value=0)[0]


def _padded_with(values, count, fill_value, size: int):
    """`values` (of leading length `size`) with the entries from `count` on replaced by
    `fill_value`."""
    fill = util.convert(util.ensure_arraylike("unique", fill_value), util.dtype_of(values))
    valid = lax.lt(_int_iota(size), util.convert(count, dtypes.default_int_dtype()))
    shape = util.shape_of(values)
    valid = lax.broadcast_in_dim(valid, shape, (0,))
    return util.select_n(valid, lax.broadcast_in_dim(fill, shape, ()), values)


def _unique_along_0(x, return_index, return_inverse, return_counts, equal_nan, size,
                    fill_value):
    """`unique` of the leading axis of `x`: (values, *requested extras)."""
    shape = util.shape_of(x)
    n, rest = shape[0], shape[1:]
    if n == 0 and size and fill_value is None:
        raise ValueError("plax.numpy.unique: for zero-sized input with nonzero size argument, "
                         "fill_value must be specified")
    rows = lax.reshape(x, (n, math.prod(rest)))
    aux, mask, perm = _sorted_runs(rows, equal_nan)
    count = reductions.sum(mask)
    positions = _first_positions(mask, size) if n else None
    out_len = (util.shape_of(positions)[0] if size is None else size) if n else (size or 0)
    if n:
        values = aux[positions]
        if size is not None and fill_value is not None:
            values = _padded_with(values, count, fill_value, size)
    else:
        values = creation.full((out_len, math.prod(rest)), 0 if fill_value is None
                               else fill_value, util.dtype_of(x))
    results = [lax.reshape(values, (out_len,) + rest)]
    index_dtype = dtypes.default_int_dtype()
    if return_index:
        results.append(perm[positions] if n else lax.full((out_len,), 0, index_dtype))
    if return_inverse:
        run = lax.sub(reductions.cumsum(mask, dtype=index_dtype), np.asarray(1, index_dtype))
        results.append(lax.full((n,), 0, index_dtype).at[perm].set(run) if n
                       else lax.full((0,), 0, index_dtype))
    if return_counts:
        results.append(_run_lengths(mask, n, size, index_dtype))
    return results


def _run_lengths(mask, n: int, size: int | None, index_dtype):
    """How many rows each unique row stands for."""
    if n == 0:
        return lax.full((size or 0,), 0, index_dtype)
    if size is None:
        starts = sorting.nonzero(mask)[0]
        return ufuncs.subtract(
            shape_ops.concatenate([starts[1:], lax.full((1,), n, index_dtype)]), starts)
    starts = sorting.nonzero(mask, size=size + 1, fill_value=0)[0]
    # After the true starts comes padding (zeros), which becomes n: the differences of
    # consecutive bounds are the run lengths, then zeros.
    bounds = shape_ops.concatenate([starts[:1], ufuncs.where(lax.gt(starts[1:], 0),
                                                             starts[1:], n)])
    return util.convert(ufuncs.subtract(bounds[1:], bounds[:-1]), index_dtype)


def unique(ar, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, axis: int | None = None, *, equal_nan: bool = True,
           size: int | None = None, fill_value=None, sorted: bool = True):  # noqa: A002
    """The sorted unique elements of `ar` (or unique slices along `axis`), with, on
    request, where each first occurs, which unique element each input is, and how
    often each occurs.

    Follows `numpy.unique`, plus JAX's `size` and `fill_value`. The number of unique
    elements depends on the values, so without `size` the input must be concrete.
    With a static `size`, exactly `size` values are returned: the first `size`
    unique ones, or all of them padded with `fill_value` (default: the smallest
    unique value), which makes `unique` usable inside `jit`. NaNs count as one value
    unless `equal_nan=False`.

    Args:
        ar: an array.
        return_index: also return the index of each unique value's first occurrence.
        return_inverse: also return, for each element, the index of its value in the
            result (reconstruct `ar` as `values[inverse]`).
        return_counts: also return how many times each unique value occurs.
        axis: find unique slices along this axis instead of unique elements of the
            flattened array.
        equal_nan: treat all NaNs as one value.
        size: the number of unique values to return (static).
        fill_value: the padding value, with `size`.
        sorted: accepted for compatibility; the result is always sorted.

    Returns:
        The unique values, or a tuple starting with them and followed by the requested
        index, inverse and counts arrays (padding entries get index 0 and count 0).

    Raises:
        ConcretizationTypeError: a traced input without `size`.

    Examples:
        >>> jnp.unique(jnp.array([3, 1, 3, 2, 1]))
        Array([1, 2, 3], dtype=int32)
        >>> values, counts = jnp.unique(jnp.array([3, 1, 3]), return_counts=True)
        >>> values, counts
        (Array([1, 3], dtype=int32), Array([1, 2], dtype=int32))
        >>> plax.jit(lambda x: jnp.unique(x, size=4, fill_value=-1))(jnp.array([5, 5, 7]))
        Array([ 5,  7, -1, -1], dtype=int32)
    """
    ar = creation.asarray(util.ensure_arraylike("unique", ar))
    size = _static_size(size, "unique")
    if size is None:
        _concrete_input(ar, "unique")
    shape = util.shape_of(ar)
    if axis is None:
        x, axis_ = lax.reshape(ar, (math.prod(shape),)), 0
    else:
        axis_ = util.canonicalize_axis(axis, len(shape))
        x = shape_ops.moveaxis(ar, axis_, 0)
    results = _unique_along_0(x, return_index, return_inverse, return_counts,
                              bool(equal_nan), size, fill_value)
    if axis is not None:
        results[0] = shape_ops.moveaxis(results[0], 0, axis_)
    if return_inverse and axis is None:
        slot = 2 if return_index else 1
        results[slot] = lax.reshape(results[slot], shape)
    results = [util.as_array(r) for r in results]
    return results[0] if len(results) == 1 else tuple(results)


def unique_all(x, /, *, size: int | None = None, fill_value=None) -> _UniqueAllResult:
    """The array API's `unique_all`: the unique values of `x`, the index of each one's
    first occurrence, the inverse indices (shaped like `x`), and the counts.

    NaNs are all distinct (the array API's rule). `size` and `fill_value` make the
    result's length static, as for `unique`.

    Args:
        x: an array.
        size: the number of unique values to return (static).
        fill_value: the padding value.

    Returns:
        A named tuple `(values, indices, inverse_indices, counts)`.

    Examples:
        >>> r = jnp.unique_all(jnp.array([2, 1, 2]))
        >>> r.values, r.counts
        (Array([1, 2], dtype=int32), Array([1, 2], dtype=int32))
        >>> r.indices, r.inverse_indices
        (Array([1, 0], dtype=int32), Array([1, 0, 1], dtype=int32))
    """
    util.check_arraylike("unique_all", x)
    return _UniqueAllResult(*unique(x, True, True, True, equal_nan=False, size=size,
                                    fill_value=fill_value))


def unique_counts(x, /, *, size: int | None = None, fill_value=None) -> _UniqueCountsResult:
    """The array API's `unique_counts`: the unique values of `x` and how often each
    occurs (NaNs are all distinct).

    Args:
        x: an array.
        size: the number of unique values to return (static; see `unique`).
        fill_value: the padding value.

    Returns:
        A named tuple `(values, counts)`.

    Examples:
        >>> values, counts = jnp.unique_counts(jnp.array([2, 1, 2]))
        >>> values, counts
        (Array([1, 2], dtype=int32), Array([1, 2], dtype=int32))
    """
    util.check_arraylike("unique_counts", x)
    return _UniqueCountsResult(*unique(x, return_counts=True, equal_nan=False, size=size,
                                       fill_value=fill_value))


def unique_inverse(x, /, *, size: int | None = None, fill_value=None) -> _UniqueInverseResult:
    """The array API's `unique_inverse`: the unique values of `x` and, for each element,
    the index of its value among them (shaped like `x`; NaNs are all distinct).

    Args:
        x: an array.
        size: the number of unique values to return (static; see `unique`).
        fill_value: the padding value.

    Returns:
        A named tuple `(values, inverse_indices)`.

    Examples:
        >>> values, inverse = jnp.unique_inverse(jnp.array([[2, 1], [2, 2]]))
        >>> values, inverse
        (Array([1, 2], dtype=int32), Array([[1, 0],
               [1, 1]], dtype=int32))
    """
    util.check_arraylike("unique_inverse", x)
    return _UniqueInverseResult(*unique(x, return_inverse=True, equal_nan=False, size=size,
                                        fill_value=fill_value))


def unique_values(x, /, *, size: int | None = None, fill_value=None):
    """The array API's `unique_values`: the sorted unique values of `x` (NaNs are all
    distinct).

    Args:
        x: an array.
        size: the number of unique values to return (static; see `unique`).
        fill_value: the padding value.

    Returns:
        A 1-D array.

    Examples:
        >>> jnp.unique_values(jnp.array([2, 1, 2]))
        Array([1, 2], dtype=int32)
    """
    util.check_arraylike("unique_values", x)
    return unique(x, equal_nan=False, size=size, fill_value=fill_value)


# --- membership ---------------------------------------------------------------------------

def _in_sorted(values, sorted_tests):
    """Whether each of `values` equals an element of the sorted 1-D `sorted_tests`."""
    m = util.shape_of(sorted_tests)[0]
    at = ufuncs.minimum(searchsorted(sorted_tests, values), m - 1)
    return lax.eq(sorted_tests[at], values)


def _in_by_merging(values, tests):
    """Membership by one stable sort of both arrays, tests before equal values: each
    value is present when the last test element before it equals it."""
    n, m = util.shape_of(values)[0], util.shape_of(tests)[0]
    both = lax.concatenate([tests, values], 0)
    is_value = lax.concatenate([lax.full((m,), 0, np.int32), lax.full((n,), 1, np.int32)], 0)
    merged, tags, order = lax.sort((both, is_value, _int_iota(n + m)), num_keys=2)
    # The merged index of the latest test element at or before each position.
    test_at = lax.cummax(ufuncs.where(lax.eq(tags, 0), _int_iota(n + m), -1), 0)
    found = lax.bitwise_and(lax.ge(test_at, 0),
                            lax.eq(merged[ufuncs.maximum(test_at, 0)], merged))
    # Back to the order of `values`: merged positions holding values, by original index.
    target = ufuncs.where(lax.ge(order, m), ufuncs.subtract(order, m), n)  # n: dropped
    return lax.full((n,), False, bool).at[target].set(found, mode="drop")


def _isin_flat(a, b, invert: bool, method: str):
    n, m = util.shape_of(a)[0], util.shape_of(b)[0]
    if n == 0 or m == 0:
        return lax.full((n,), bool(invert), bool)
    if method in ("auto", "compare_all"):
        table = lax.eq(lax.broadcast_in_dim(a, (n, m), (0,)), lax.broadcast_in_dim(b, (n, m), (1,)))
        found = reductions.any(table, axis=1)
    elif method == "binary_search":
        found = _in_sorted(a, lax.sort(b))
    elif method == "sort":
        found = _in_by_merging(a, b)
    else:
        raise ValueError(f"isin: method={method!r} is not implemented; options are "
                         "'compare_all', 'binary_search', 'sort', and 'auto'")
    return lax.bitwise_not(found) if invert else found


def isin(element, test_elements, assume_unique: bool = False, invert: bool = False, *,
         method: str = "auto"):
    """Whether each element of `element` equals some element of `test_elements`.

    Follows `numpy.isin`, comparing with `==` (so NaN is never found). The result has
    `element`'s shape; it works on traced arrays (no data-dependent shapes).

    Args:
        element: an array.
        test_elements: the values to look for (any shape).
        assume_unique: accepted for compatibility (it does not change the result).
        invert: return the negation (elements NOT in `test_elements`).
        method: "auto", "compare_all" (compares every pair: memory grows as the product
            of the sizes), "binary_search" or "sort" (sorts the test elements).

    Returns:
        A bool array shaped like `element`.

    Examples:
        >>> jnp.isin(jnp.array([1, 2, 3, 4]), jnp.array([2, 4, 6]))
        Array([False,  True, False,  True], dtype=bool)
    """
    element, test_elements = util.ensure_arraylike("isin", element, test_elements)
    a, b = util.promote_dtypes(element, test_elements)
    shape = util.shape_of(a)
    found = _isin_flat(lax.reshape(a, (math.prod(shape),)),
                       lax.reshape(b, (math.prod(util.shape_of(b)),)), invert, method)
    return util.as_array(lax.reshape(found, shape))


# --- set operations on flattened arrays -------------------------------------------------------

def _flat_pair(name: str, ar1, ar2):
    ar1, ar2 = util.ensure_arraylike(name, ar1, ar2)
    a, b = util.promote_dtypes(ar1, ar2)
    return (creation.asarray(lax.reshape(a, (math.prod(util.shape_of(a)),))),
            creation.asarray(lax.reshape(b, (math.prod(util.shape_of(b)),))))


def _sorted_unique_mask(x, assume_unique: bool):
    """1-D `x` sorted (stably), the sorting permutation, and a mask of the entries that
    start a run of equal values (every entry, if `assume_unique`)."""
    aux, mask, perm = _sorted_runs(lax.reshape(x, (util.shape_of(x)[0], 1)), True)
    aux = lax.reshape(aux, util.shape_of(x))
    if assume_unique:
        mask = lax.full(util.shape_of(x), True, bool)
    return aux, mask, perm


def _compact(values, keep, size: int | None, fill):
    """The entries of 1-D `values` where `keep`, in order: all of them (concrete), or
    exactly `size`, padded with `fill` (a scalar, or a function of the kept values)."""
    if size is None:
        return values[util.concrete_or_error(keep, "set operation mask")]
    n = util.shape_of(values)[0]
    count = reductions.sum(keep)
    if n == 0:
        kept = lax.full((size,), 0, util.dtype_of(values))
    else:
        kept = values[sorting.nonzero(keep, size=size, fill_value=0)[0]]
    if callable(fill):
        fill = fill(kept, count)
    return _padded_with(kept, count, fill, size)


def _smallest_kept(kept, count):
    """The default fill of intersect1d and setxor1d: their smallest result (0 if none)."""
    size = util.shape_of(kept)[0]
    if size == 0:
        return 0
    return ufuncs.where(lax.gt(count, 0), kept[0], np.zeros((), util.dtype_of(kept)))


def _check_concrete(size, fun_name: str, *arrays):
    if size is None:
        for x in arrays:
            _concrete_input(x, fun_name)


def union1d(ar1, ar2, *, size: int | None = None, fill_value=None):
    """The sorted unique values found in either array (both flattened).

    Follows `numpy.union1d`; as for `unique`, the inputs must be concrete unless a
    static `size` fixes the result's length (padded with `fill_value`, default the
    smallest value).

    Args:
        ar1: an array.
        ar2: an array.
        size: the result's length (static).
        fill_value: the padding value.

    Returns:
        A 1-D array.

    Examples:
        >>> jnp.union1d(jnp.array([3, 1]), jnp.array([2, 1]))
        Array([1, 2, 3], dtype=int32)
    """
    a, b = _flat_pair("union1d", ar1, ar2)
    size = _static_size(size, "union1d")
    _check_concrete(size, "union1d", a, b)
    return unique(lax.concatenate([a, b], 0), size=size, fill_value=fill_value)


def setdiff1d(ar1, ar2, assume_unique: bool = False, *, size: int | None = None,
              fill_value=None):
    """The unique values of `ar1` that are not in `ar2` (sorted, unless `assume_unique`,
    which keeps `ar1`'s order).

    Follows `numpy.setdiff1d`; the inputs must be concrete unless a static `size`
    fixes the result's length (padded with `fill_value`, default 0).

    Args:
        ar1: an array.
        ar2: an array.
        assume_unique: `ar1`'s values are unique (skips de-duplication).
        size: the result's length (static).
        fill_value: the padding value.

    Returns:
        A 1-D array.

    Examples:
        >>> jnp.setdiff1d(jnp.array([5, 1, 3, 1]), jnp.array([3]))
        Array([1, 5], dtype=int32)
    """
    a, b = _flat_pair("setdiff1d", ar1, ar2)
    size = _static_size(size, "setdiff1d")
    _check_concrete(size, "setdiff1d", a)
    if assume_unique:
        values, mask = a, lax.full(util.shape_of(a), True, bool)
    else:
        values, mask, _ = _sorted_unique_mask(a, False)
    keep = lax.bitwise_and(mask, _isin_flat(values, b, invert=True, method="auto"))
    return util.as_array(_compact(values, keep, size, 0 if fill_value is None else fill_value))


def setxor1d(ar1, ar2, assume_unique: bool = False, *, size: int | None = None,
             fill_value=None):
    """The sorted values found in exactly one of the arrays (both flattened).

    Follows `numpy.setxor1d`; the inputs must be concrete unless a static `size` fixes
    the result's length (padded with `fill_value`).

    Args:
        ar1: an array.
        ar2: an array.
        assume_unique: each input's values are unique (skips de-duplication).
        size: the result's length (static).
        fill_value: the padding value.

    Returns:
        A 1-D array.

    Examples:
        >>> jnp.setxor1d(jnp.array([1, 2, 3]), jnp.array([2, 3, 4]))
        Array([1, 4], dtype=int32)
    """
    a, b = _flat_pair("setxor1d", ar1, ar2)
    size = _static_size(size, "setxor1d")
    _check_concrete(size, "setxor1d", a, b)
    aux1, m1, _ = _sorted_unique_mask(a, assume_unique)
    aux2, m2, _ = _sorted_unique_mask(b, assume_unique)
    keep1 = lax.bitwise_and(m1, _isin_flat(aux1, b, invert=True, method="auto"))
    keep2 = lax.bitwise_and(m2, _isin_flat(aux2, a, invert=True, method="auto"))
    values = lax.concatenate([aux1, aux2], 0)
    keep = lax.concatenate([keep1, keep2], 0)
    if util.shape_of(values)[0]:
        # Kept values first, in ascending order.
        dropped, values = lax.sort((lax.bitwise_not(keep), values), num_keys=2)
        keep = lax.bitwise_not(dropped)
    fill = _smallest_kept if fill_value is None else fill_value
    return util.as_array(_compact(values, keep, size, fill))


def intersect1d(ar1, ar2, assume_unique: bool = False, return_indices: bool = False, *,
                size: int | None = None, fill_value=None):
    """The sorted unique values found in both arrays (both flattened); with
    `return_indices`, also where each first occurs in each array.

    Follows `numpy.intersect1d`; the inputs must be concrete unless a static `size`
    fixes the result's length (padded with `fill_value`).

    Args:
        ar1: an array.
        ar2: an array.
        assume_unique: each input's values are unique (skips de-duplication).
        return_indices: also return the indices into the flattened `ar1` and `ar2`.
        size: the result's length (static).
        fill_value: the padding value.

    Returns:
        A 1-D array, or `(values, indices_in_ar1, indices_in_ar2)`.

    Examples:
        >>> jnp.intersect1d(jnp.array([1, 3, 4, 3]), jnp.array([3, 1, 2]), return_indices=True)
        (Array([1, 3], dtype=int32), Array([0, 1], dtype=int32), Array([1, 0], dtype=int32))
    """
    a, b = _flat_pair("intersect1d", ar1, ar2)
    size = _static_size(size, "intersect1d")
    _check_concrete(size, "intersect1d", a, b)
    aux1, m1, perm1 = _sorted_unique_mask(a, assume_unique)
    aux2, _, perm2 = _sorted_unique_mask(b, assume_unique)
    keep = lax.bitwise_and(m1, _isin_flat(aux1, aux2, invert=False, method="auto"))
    fill = _smallest_kept if fill_value is None else fill_value
    values = util.as_array(_compact(aux1, keep, size, fill))
    if not return_indices:
        return values
    n1, n2 = util.shape_of(a)[0], util.shape_of(b)[0]
    index_dtype = dtypes.default_int_dtype()
    first1 = _compact(perm1, keep, size, n1)
    if n2 == 0 or n1 == 0:
        first2 = lax.full(util.shape_of(first1), n2, index_dtype)
    else:
        at2 = ufuncs.minimum(searchsorted(aux2, aux1), n2 - 1)
        first2 = _compact(util.convert(perm2[at2], index_dtype), keep, size, n2)
    return values, util.as_array(first1), util.as_array(first2)

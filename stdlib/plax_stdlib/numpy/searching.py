"""Searching sorted arrays and partial sorts: searchsorted, digitize, lexsort,
partition/argpartition, sort_complex.

Comparisons follow the order `sort` produces (NaNs last, complex numbers by real
part then imaginary part), so `searchsorted(sort(a), v)` places NaNs as NumPy
does. `searchsorted` offers JAX's four methods, which give the same answers and
differ in cost: a binary search in a loop ("scan", or unrolled: "scan_unrolled"),
one sort of the queries with the array ("sort"), and a comparison of every pair
("compare_all").
"""
from __future__ import annotations

import functools
import operator

import numpy as np

import plax
from plax.extend import dtypes
from plax_stdlib import jax_jits, lax
from plax_stdlib.numpy import ufuncs, util

_INT32_MAX = np.iinfo(np.int32).max


# --- the order of sort ------------------------------------------------------------------

def _sort_key(x):
    """Floats with -0.0 made 0.0 and every NaN the one positive NaN, so that IEEE total
    order compares them as `sort` orders them."""
    key = lax.select(lax.eq(x, lax.full_like(x, 0, shape=())), lax.full_like(x, 0), x)
    return lax.select(lax.ne(x, x), lax.full_like(key, np.nan), key)


def _sort_keys(x):
    """The keys `sort` orders `x` by, most significant first: complex numbers by real
    part, then imaginary part."""
    category = util.dtype_category(util.dtype_of(x))
    if category == "c":
        return [_sort_key(lax.real(x)), _sort_key(lax.imag(x))]
    return [_sort_key(x)] if category == "f" else [x]


def _sort_less(x, y, or_equal: bool):
    """Elementwise x < y (x <= y with `or_equal`) in the order of `lax.sort`, as JAX's
    sort comparators (`le_to`/`lt_to` on the keys, least significant first)."""
    p = None
    for xk, yk in zip(*(_sort_keys(x)[::-1], _sort_keys(y)[::-1])):
        if p is None:
            p = (lax.le_to_p if or_equal else lax.lt_to_p).bind(xk, yk)
        else:
            p = lax.bitwise_or(lax.lt_to_p.bind(xk, yk),
                               lax.bitwise_and(lax.eq_to_p.bind(xk, yk), p))
    return p


# --- searchsorted: JAX's three jitted implementations --------------------------------------

@functools.partial(plax.jit, static_argnames=("side", "dtype", "unrolled"))
def _searchsorted_scan_impl(sorted_arr, query, side: str, dtype, unrolled: bool):
    """A binary search for each query: ⌈log2(n+1)⌉ halvings of unsigned bounds (no
    overflow), as a scan; an array of queries maps the search over its axes."""
    n = sorted_arr.shape[0]
    if n == 0:
        return lax.full(query.shape, 0, dtype)
    if query.ndim > 0:
        search = functools.partial(_searchsorted_scan_impl, side=side, dtype=dtype,
                                   unrolled=unrolled)
        return plax.vmap(search, in_axes=(None, 0))(sorted_arr, query)
    goes_left = functools.partial(_sort_less, or_equal=side == "left")
    bound = np.uint64 if np.iinfo(dtype).bits == 64 else np.uint32

    def halve(bounds, _):
        low, high = bounds
        mid = low + (high - low) // 2
        left = goes_left(query, sorted_arr[mid])
        return (lax.select(left, low, mid), lax.select(left, mid, high)), ()
    levels = int(np.ceil(np.log2(n + 1)))
    (_, high), _ = lax.scan(halve, (bound(0), bound(n)), (), length=levels,
                            unroll=levels if unrolled else 1)
    return high.astype(dtype)


@functools.partial(plax.jit, static_argnames=("side", "dtype"))
def _searchsorted_sort_impl(sorted_arr, query, side: str, dtype):
    """Each query's position in one stable sort of the queries with the array, less its
    position among the queries alone."""
    n, m = sorted_arr.size, query.size
    working = np.int32 if n + m <= _INT32_MAX else np.int64

    def rank(x):  # the position of each element of x in its stable sort
        order = lax.iota(working, len(x))
        return lax.full_like(order, 0).at[lax.sort_key_val(x, order)[1]].set(order)
    if side == "left":  # queries before equal elements of the array
        index = rank(lax.concatenate([query.ravel(), sorted_arr], 0))[:m]
    else:
        index = rank(lax.concatenate([sorted_arr, query.ravel()], 0))[n:]
    return lax.reshape(lax.sub(index, rank(query.ravel())), np.shape(query)).astype(dtype)


@functools.partial(plax.jit, static_argnames=("side", "dtype"))
def _searchsorted_compare_all_impl(sorted_arr, query, side: str, dtype):
    """How many elements of the array come before each query: every pair compared."""
    before = functools.partial(_sort_less, or_equal=side == "right")
    return plax.vmap(before, in_axes=(0, None))(sorted_arr, query).sum(dtype=dtype, axis=0)


_IMPLEMENTATIONS = {
    "scan": functools.partial(_searchsorted_scan_impl, unrolled=False),
    "scan_unrolled": functools.partial(_searchsorted_scan_impl, unrolled=True),
    "sort": _searchsorted_sort_impl,
    "compare_all": _searchsorted_compare_all_impl,
}


def searchsorted(a, v, side: str = "left", sorter=None, *, method: str = "scan"):
    """Where each element of `v` would be inserted into the sorted 1-D array `a` to keep
    it sorted: before equal elements (`side="left"`) or after them (`side="right"`).

    Follows `numpy.searchsorted`, plus JAX's `method`, which picks the algorithm
    (the results are the same): "scan" (a binary search as a loop, the default),
    "scan_unrolled", "sort" (one sort of both arrays; good for large `v`) or
    "compare_all" (compares every pair; fast for small `a` on accelerators). NaNs
    sort last, as in `sort`.

    Args:
        a: a sorted 1-D array (ascending, or ascending through `sorter`).
        v: the values to place (any shape).
        side: "left" or "right".
        sorter: indices that sort `a` (e.g. from `argsort`), if `a` is not sorted.
        method: "scan", "scan_unrolled", "sort" or "compare_all".

    Returns:
        An integer array of `v`'s shape.

    Raises:
        ValueError: an unknown `side` or `method`, or `a` that is not 1-D.

    Examples:
        >>> a = jnp.array([1, 2, 2, 5])
        >>> jnp.searchsorted(a, jnp.array([2, 3, 9]))
        Array([1, 3, 4], dtype=int32)
        >>> jnp.searchsorted(a, 2, side="right")
        Array(3, dtype=int32)
    """
    if sorter is None:
        a, v = util.ensure_arraylike("searchsorted", a, v)
    else:
        a, v, sorter = util.ensure_arraylike("searchsorted", a, v, sorter)
    if a.ndim != 1:
        raise ValueError(f"searchsorted: a should be 1-dimensional, got shape {a.shape}")
    a, v = util.promote_dtypes(a, v)
    if sorter is not None:
        a = a[sorter]
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: invalid argument side={side!r}, expected 'left' or "
                         "'right'")
    if method not in _IMPLEMENTATIONS:
        raise ValueError(f"searchsorted: invalid argument method={method!r}, expected one "
                         f"of {list(_IMPLEMENTATIONS)}")
    # int32 unless the length needs more (as JAX; the result never depends on x64)
    dtype = np.dtype(np.int64 if a.shape[0] > _INT32_MAX else np.int32)
    return _IMPLEMENTATIONS[method](a, v, side=side, dtype=dtype)


def digitize(x, bins, right: bool = False, *, method: str | None = None):
    """The index of the bin each element of `x` falls in, for monotonic `bins`.

    Follows `numpy.digitize`: for increasing bins, `i` such that
    `bins[i-1] <= x < bins[i]` (`bins[i-1] < x <= bins[i]` with `right=True`); 0 below
    the first edge and `len(bins)` above the last. JAX's `method` picks the search
    algorithm, as for `searchsorted`.

    Args:
        x: an array.
        bins: a 1-D monotonic (increasing or decreasing) array of bin edges.
        right: whether bins include their right edge instead of their left (static).
        method: the `searchsorted` method.

    Returns:
        An integer array of `x`'s shape.

    Raises:
        ValueError: `bins` is not 1-D.

    Examples:
        >>> jnp.digitize(jnp.array([0.5, 1.0, 2.5, 9.0]), jnp.array([1.0, 2.0, 3.0]))
        Array([0, 1, 2, 3], dtype=int32)
    """
    x, bins = util.ensure_arraylike("digitize", x, bins)
    right = bool(util.concrete_or_error(right, "digitize: 'right' must be static"))
    if len(util.shape_of(bins)) != 1:
        raise ValueError(f"digitize: bins must be a 1-dimensional array; got shape "
                         f"{util.shape_of(bins)}")
    n = util.shape_of(bins)[0]
    if n == 0:
        return util.as_array(lax.full(util.shape_of(x), 0, np.int32))
    side = "left" if right else "right"
    options = {} if method is None else {"method": method}
    return ufuncs.where(bins[-1] >= bins[0], searchsorted(bins, x, side=side, **options),
                        n - searchsorted(bins[::-1], x, side=side, **options))  # as JAX's


# --- sorts by several keys, partial sorts -------------------------------------------------

def lexsort(keys, axis: int = -1):
    """The indices that sort by several keys: the LAST key is the primary one, earlier
    keys break its ties.

    Follows `numpy.lexsort` (a stable sort).

    Args:
        keys: a sequence of arrays of one shape (or a 2-D array, one key per row).
        axis: the axis to sort along.

    Returns:
        An integer array of indices.

    Examples:
        >>> surnames = jnp.array([2, 1, 2, 1])
        >>> first_names = jnp.array([0, 1, 1, 0])
        >>> jnp.lexsort((first_names, surnames))  # by surname, then first name
        Array([3, 1, 0, 2], dtype=int32)
    """
    if util.is_arraylike(keys) and not isinstance(keys, (list, tuple)):
        util.check_arraylike("lexsort", keys)
        keys = [lax.index_in_dim(util.operand(keys), i, keepdims=False)
                for i in range(util.shape_of(keys)[0])] if util.shape_of(keys) else [keys]
    keys = [util.ensure_arraylike("lexsort", k) for k in keys]
    if not keys:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    if len({util.shape_of(k) for k in keys}) > 1:
        raise ValueError(f"lexsort: all keys need to be the same shape, got "
                         f"{[util.shape_of(k) for k in keys]}")
    shape = util.shape_of(keys[0])
    index_dtype = dtypes.default_int_dtype()
    if not shape:
        return util.as_array(lax.full((), 0, index_dtype))
    axis = util.canonicalize_axis(axis, len(shape))
    iota = lax.broadcasted_iota(index_dtype, shape, axis)
    out = lax.sort((*keys[::-1], iota), dimension=axis, num_keys=len(keys), is_stable=True)
    return util.as_array(out[-1])


def _partition_operand(name: str, a, kth, axis):
    a = util.ensure_arraylike(name, a)
    if util.dtype_category(util.dtype_of(a)) == "c":
        raise NotImplementedError(f"plax.numpy.{name} for complex dtype is not implemented.")
    shape = util.shape_of(a)
    if not shape:
        raise ValueError(f"{name}: a 0-d array cannot be partitioned")
    axis = util.canonicalize_axis(axis, len(shape))
    kth = operator.index(util.concrete_or_error(kth, f"{name}: 'kth' must be static"))
    if not -shape[axis] <= kth < shape[axis]:
        raise ValueError(f"{name}: kth={kth} out of bounds for axis {axis} of size "
                         f"{shape[axis]}")
    return lax.transpose(a, _swap_to_last(len(shape), axis)), kth % shape[axis], axis


def _swap_to_last(ndim: int, axis: int) -> tuple[int, ...]:
    perm = list(range(ndim))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    return tuple(perm)


def _negated_for_top_k(x):
    """An order-reversing map: its largest entries are `x`'s smallest. Integers and
    bool use `~x`, which cannot overflow (unlike `-x` of the smallest integer)."""
    return lax.neg(x) if util.dtype_category(util.dtype_of(x)) == "f" else lax.bitwise_not(x)


def _zero_along_last_axis(x, indices):
    """`x` with zeros written at `indices` along the last axis (one scatter; the
    leading dimensions of `x` and `indices` match one to one)."""
    shape = util.shape_of(indices)
    batch = tuple(range(len(shape) - 1))
    dnums = lax.ScatterDimensionNumbers(
        update_window_dims=(), inserted_window_dims=(len(shape) - 1,),
        scatter_dims_to_operand_dims=(len(shape) - 1,), operand_batching_dims=batch,
        scatter_indices_batching_dims=batch)
    return lax.scatter(x, lax.reshape(indices, shape + (1,)), lax.full(shape, 0, np.int32),
                       dnums, mode="promise_in_bounds")


def partition(a, kth: int, axis: int = -1):
    """`a` with the element that would sit at position `kth` in sorted order moved there,
    and the elements before it no larger and those after it no smaller, along `axis`.

    Follows `numpy.partition`, except for the order within each side, which JAX's
    implementation sets: the `kth` smallest come first in ascending order, the rest
    follow in descending order. `kth` must be a single static int.

    Args:
        a: an array.
        kth: the sorted position to place (static; negative counts from the end).
        axis: the axis to partition along.

    Returns:
        An array of `a`'s shape.

    Raises:
        ValueError: a `kth` out of range.
        TypeError: a `kth` that is not a single int.

    Examples:
        >>> jnp.partition(jnp.array([5, 1, 4, 2, 3]), 2)
        Array([1, 2, 3, 5, 4], dtype=int32)
    """
    a, kth, axis = _partition_checked("partition", a, kth, axis)
    return _partition(a, kth=kth, axis=axis)


def _partition_checked(name: str, a, kth, axis):
    """The operand and the static `kth` and `axis`, checked."""
    a = util.ensure_arraylike(name, a)
    return a, operator.index(util.concrete_or_error(kth, f"{name}: 'kth' must be static")), axis


def _partition(a, kth: int, axis: int):
    x, kth, axis = _partition_operand("partition", a, kth, axis)
    n = util.shape_of(x)[-1]
    bottom = _negated_for_top_k(lax.top_k(_negated_for_top_k(x), kth + 1)[0])
    top = lax.top_k(x, n - kth - 1)[0]
    out = lax.concatenate([bottom, top], len(util.shape_of(x)) - 1)
    return util.as_array(lax.transpose(out, _swap_to_last(len(util.shape_of(x)), axis)))


def argpartition(a, kth: int, axis: int = -1):
    """The indices that would partition `a` (see `partition`) along `axis`: the index of
    the `kth` smallest element at position `kth`, indices of smaller-or-equal elements
    before it and of larger-or-equal ones after it.

    Follows `numpy.argpartition`, with `partition`'s order within each side.

    Args:
        a: an array.
        kth: the sorted position (static).
        axis: the axis to partition along.

    Returns:
        An integer array of `a`'s shape.

    Examples:
        >>> x = jnp.array([5, 1, 4, 2, 3])
        >>> i = jnp.argpartition(x, 2)
        >>> i[2], x[i[2]]
        (Array(4, dtype=int32), Array(3, dtype=int32))
    """
    a, kth, axis = _partition_checked("argpartition", a, kth, axis)
    return _argpartition(a, kth=kth, axis=axis)


def _argpartition(a, kth: int, axis: int):
    x, kth, axis = _partition_operand("argpartition", a, kth, axis)
    shape = util.shape_of(x)
    n, rank = shape[-1], len(shape)
    bottom = lax.top_k(_negated_for_top_k(x), kth + 1)[1]
    # The other indices, found as the largest entries of an indicator that is 0 at the
    # bottom indices: equal elements cannot be picked twice.
    rest = _zero_along_last_axis(lax.full(shape, 1, np.int32), bottom)
    top = lax.top_k(rest, n - kth - 1)[1]
    out = lax.concatenate([bottom, top], rank - 1)
    out = util.convert(out, dtypes.default_int_dtype())
    return util.as_array(lax.transpose(out, _swap_to_last(rank, axis)))


def sort_complex(a):
    """`a` sorted along its last axis (real part first, then imaginary part), returned as
    a complex array.

    Follows `numpy.sort_complex`; real inputs become complex64 (or complex128 for
    float64).

    Args:
        a: an array.

    Returns:
        A complex array of `a`'s shape.

    Examples:
        >>> jnp.sort_complex(jnp.array([3, 1, 2]))
        Array([1.+0.j, 2.+0.j, 3.+0.j], dtype=complex64)
    """
    a = util.ensure_arraylike("sort_complex", a)
    out = lax.sort(a, dimension=-1) if util.shape_of(a) else a
    return util.as_array(util.convert(out, dtypes.to_complex_dtype(util.dtype_of(a))))


jax_jits.apply(globals())  # JAX's jitted functions become jit functions

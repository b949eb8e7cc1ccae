"""Sorting and searching: sort, argsort, nonzero (and its flat/argwhere forms).

`nonzero` has a data-dependent result shape: without `size` it needs a concrete
input; with `size` it works on traced inputs too (a stable sort brings the
nonzero positions to the front).
"""
from __future__ import annotations

import math

import numpy as np

from plax.extend import dtypes
from plax.extend.core import decided
from plax_stdlib import jax_jits, lax
from plax_stdlib.numpy import ufuncs, util


def _sort_axis(name: str, a, axis):
    a = util.ensure_arraylike(name, a)
    if axis is None:
        return lax.reshape(a, (math.prod(util.shape_of(a)),)), 0
    return a, util.canonicalize_axis(axis, len(util.shape_of(a)))


def _check_sort_options(name: str, kind, order):
    if order is not None:
        raise TypeError(f"'order' argument to {name} is not supported.")
    if kind not in (None, "stable", "mergesort", "quicksort", "heapsort"):
        raise ValueError(f"{name}: unknown sort kind {kind!r}")


def sort(a, axis: int | None = -1, *, kind=None, order=None, stable: bool = True,
         descending: bool = False):
    """`a` sorted along `axis` (the flattened array if `axis` is None).

    Follows `numpy.sort`, with the array API's `stable` and `descending`: the sort is
    always stable here, so `kind` is accepted and ignored; `order` (sorting
    structured arrays by fields) is not supported. NaNs sort to the end; complex
    values sort lexicographically (real part, then imaginary part).

    Args:
        a: an array.
        axis: the axis to sort along; None sorts the flattened array.
        kind: ignored (NumPy's algorithm choice).
        order: unsupported; must be None.
        stable: accepted for the array API (the sort is stable either way).
        descending: sort from largest to smallest (equal elements keep their order).

    Returns:
        The sorted array.

    Examples:
        >>> jnp.sort(jnp.array([3.0, np.nan, 1.0, 2.0]))
        Array([ 1.,  2.,  3., nan], dtype=float32)
        >>> jnp.sort(jnp.array([[3, 1], [2, 4]]), axis=0, descending=True)
        Array([[3, 4],
               [2, 1]], dtype=int32)
    """
    _check_sort_options("sort", kind, order)
    return _sort(util.ensure_arraylike("sort", a), axis=axis, stable=stable,
                 descending=descending)


def _sort(a, axis, stable, descending):
    a, axis = _sort_axis("sort", a, axis)
    out = lax.sort(a, dimension=axis, is_stable=stable)
    return lax.rev(out, (axis,)) if descending else out


def argsort(a, axis: int | None = -1, *, kind=None, order=None, stable: bool = True,
            descending: bool = False, dtype=None):
    """The indices that sort `a` along `axis`: `take_along_axis(a, argsort(a), axis)` is
    `sort(a)`.

    Follows `numpy.argsort`, with the array API's `stable` and `descending` and JAX's
    `dtype`. The sort is stable (equal elements keep their order, also with
    `descending`, where NumPy's descending idiom `argsort(-a)` would not be), so
    `kind` is ignored; NaNs go last.

    Args:
        a: an array.
        axis: the axis to sort along; None sorts the flattened array.
        kind: ignored.
        order: unsupported; must be None.
        stable: accepted (the sort is stable either way).
        descending: order from largest to smallest.
        dtype: the indices' integer dtype (default: the default int).

    Returns:
        An integer array of `a`'s shape (1-D for `axis=None`).

    Examples:
        >>> jnp.argsort(jnp.array([3, 1, 2, 1]))
        Array([1, 3, 2, 0], dtype=int32)
        >>> jnp.argsort(jnp.array([3, 1, 2, 1]), descending=True)
        Array([0, 2, 1, 3], dtype=int32)
    """
    _check_sort_options("argsort", kind, order)
    index_dtype = util.check_user_dtype(dtype, "argsort") or dtypes.default_int_dtype()
    return _argsort(util.ensure_arraylike("argsort", a), axis=axis, stable=stable,
                    descending=descending, dtype=index_dtype)


def _argsort(a, axis, stable, descending, dtype):
    a, axis = _sort_axis("argsort", a, axis)
    iota = lax.broadcasted_iota(dtype, util.shape_of(a), axis)
    if descending:
        # Sorting the reversed array and positions keeps equal elements in their
        # original order once the result is reversed back.
        a, iota = lax.rev(a, (axis,)), lax.rev(iota, (axis,))
    _, order_ = lax.sort((a, iota), dimension=axis, is_stable=stable, num_keys=1)
    return lax.rev(order_, (axis,)) if descending else order_


def nonzero(a, *, size: int | None = None, fill_value=None):
    """The indices of the nonzero (true) elements of `a`, one index array per dimension.

    Follows `numpy.nonzero`, plus JAX's `size` and `fill_value`. The number of nonzero
    elements depends on the values, so without `size` `a` must be concrete (not
    traced under `jit`). With a static `size`, exactly `size` indices per dimension are
    returned: the first `size` found, or all of them padded with `fill_value`
    (default 0), which makes it usable inside `jit`.

    Args:
        a: an array of at least one dimension.
        size: the number of indices to return (static).
        fill_value: the padding index (a scalar, or one per dimension).

    Returns:
        A tuple of `a.ndim` integer arrays.

    Raises:
        ValueError: `a` is a scalar.
        ConcretizationTypeError: `a` is traced and `size` is not given.

    Examples:
        >>> jnp.nonzero(jnp.array([[0, 5], [7, 0]]))
        (Array([0, 1], dtype=int32), Array([1, 0], dtype=int32))
        >>> plax.jit(lambda x: jnp.nonzero(x, size=3, fill_value=-1))(jnp.array([0, 2, 0, 4]))
        (Array([ 1,  3, -1], dtype=int32),)
    """
    a = util.ensure_arraylike("nonzero", a)
    shape = util.shape_of(a)
    if not shape:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use "
                         "plax.numpy.atleast_1d(scalar).nonzero() instead.")
    index_dtype = dtypes.default_int_dtype()
    if size is None:
        value = util.concrete_or_error(
            a, "The size of the result of nonzero depends on the values of its input; pass "
            "a static size= argument to use it on traced arrays")
        if fill_value is not None:
            raise ValueError("nonzero: fill_value requires size")
        return tuple(util.as_array(np.asarray(i, index_dtype)) for i in np.nonzero(value))
    size = int(util.concrete_or_error(size, "nonzero: size must be static"))
    flat = lax.reshape(a, (math.prod(shape),))
    is_zero = lax.eq(flat, util.full_like(flat, 0))
    positions = lax.iota(index_dtype, math.prod(shape))
    _, order_ = lax.sort((is_zero, positions), dimension=0, is_stable=True, num_keys=1)
    count = lax.reduce_sum(util.convert(lax.bitwise_not(is_zero), index_dtype), (0,))
    n = math.prod(shape)
    fits = decided(lambda: size <= n, None)
    if fits is None:  # a symbolic size: pad, then cut
        order_, fits = lax.pad(order_, np.zeros((), index_dtype), ((0, size, 0),)), True
    if fits:
        order_ = lax.slice(order_, (0,), (size,))
    else:
        order_ = lax.pad(order_, np.zeros((), index_dtype), ((0, size - n, 0),))
    valid = lax.lt(lax.iota(index_dtype, size), count)
    fills = fill_value if isinstance(fill_value, (tuple, list)) else (
        (0 if fill_value is None else fill_value),) * len(shape)
    if len(fills) != len(shape):
        raise ValueError(f"nonzero: fill_value must be a scalar or a tuple of length "
                         f"{len(shape)}, got {fill_value}")
    out = []
    for axis, (dim, fill) in enumerate(zip(shape, fills)):
        # An empty `a` has no nonzero element: every index is a fill value.
        stride = math.prod(shape[axis + 1:])
        index = lax.rem(lax.div(order_, stride), dim) if dim and stride else order_
        # the fill promotes with the indices, as `where(valid, index, fill)` would
        out.append(ufuncs.where(valid, index, util.ensure_arraylike("nonzero", fill)))
    return tuple(out)


def flatnonzero(a, *, size: int | None = None, fill_value=None):
    """The indices of the nonzero elements of `a` flattened: `nonzero(ravel(a))[0]`.

    Follows `numpy.flatnonzero`; `size` and `fill_value` make the result's length
    static, as for `nonzero` (needed under `jit`).

    Args:
        a: an array.
        size: the number of indices to return (static).
        fill_value: the padding index.

    Returns:
        A 1-D integer array.

    Examples:
        >>> jnp.flatnonzero(jnp.array([[0, 5], [7, 0]]))
        Array([1, 2], dtype=int32)
        >>> jnp.flatnonzero(jnp.array([0, 3]), size=3, fill_value=9)
        Array([1, 9, 9], dtype=int32)
    """
    a = util.ensure_arraylike("flatnonzero", a)
    flat = lax.reshape(a, (math.prod(util.shape_of(a)),))
    return nonzero(flat, size=size, fill_value=fill_value)[0]


def argwhere(a, *, size: int | None = None, fill_value=None):
    """The indices of the nonzero elements of `a`, one row per element: the transpose of
    `nonzero(a)`.

    Follows `numpy.argwhere`; `size` and `fill_value` make the number of rows static,
    as for `nonzero` (needed under `jit`).

    Args:
        a: an array.
        size: the number of rows to return (static).
        fill_value: the padding index.

    Returns:
        An integer array of shape `(count, a.ndim)` (`(size, a.ndim)` with `size`).

    Examples:
        >>> jnp.argwhere(jnp.array([[0, 5], [7, 0]]))
        Array([[0, 1],
               [1, 0]], dtype=int32)
    """
    from plax_stdlib.numpy.shape_ops import atleast_1d, stack
    a = util.ensure_arraylike("argwhere", a)
    rows = stack(nonzero(atleast_1d(a), size=size, fill_value=fill_value), axis=1)
    return rows if util.shape_of(a) else rows[:, :0]  # a scalar: rows without columns


jax_jits.apply(globals())  # JAX's jitted functions become jit functions

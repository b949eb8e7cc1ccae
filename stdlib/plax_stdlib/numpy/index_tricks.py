"""Index helpers: grids (meshgrid, mgrid, ogrid, indices, ix_), the `r_`/`c_`
concatenators, `s_`/`index_exp`, conversions between flat and multi-dimensional
indices, and the index sets of diagonals and triangles.

Grid sizes and index sets are static: they come from shapes and concrete slice
bounds, never from traced values.
"""
from __future__ import annotations

import math
import operator
from typing import Callable

import numpy as np

from plax.extend import dtypes
from plax_stdlib import lax
from plax_stdlib.numpy import creation, shape_ops, ufuncs, util

s_ = np.s_
index_exp = np.index_exp


def meshgrid(*xi, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> list:
    """Coordinate arrays from 1-D coordinate vectors: for vectors of lengths `(n0, n1,
    ...)`, one array per vector holding its values broadcast over the grid.

    Follows `numpy.meshgrid`: with `indexing="xy"` (Cartesian, the default) the first
    two axes are swapped, so two vectors of lengths N and M give (M, N) arrays; with
    `"ij"` (matrix indexing) they give (N, M). `sparse` returns arrays with size-one
    axes that broadcast instead of full grids. `copy` is accepted and ignored (the
    results are new arrays).

    Args:
        *xi: 1-D arrays.
        copy: ignored.
        sparse: return broadcastable arrays instead of full grids.
        indexing: "xy" or "ij".

    Returns:
        A list of arrays, one per input.

    Raises:
        ValueError: an unknown `indexing`, or an input that is not 1-D.

    Examples:
        >>> x, y = jnp.meshgrid(jnp.array([1, 2, 3]), jnp.array([10, 20]))
        >>> x
        Array([[1, 2, 3],
               [1, 2, 3]], dtype=int32)
        >>> y
        Array([[10, 10, 10],
               [20, 20, 20]], dtype=int32)
        >>> [a.shape for a in jnp.meshgrid(jnp.arange(3), jnp.arange(2), indexing="ij")]
        [(3, 2), (3, 2)]
    """
    args = [util.ensure_arraylike("meshgrid", x) for x in xi]
    if not copy:
        raise ValueError("plax.numpy.meshgrid only supports copy=True")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Valid values for indexing are 'xy' and 'ij', got {indexing!r}")
    if any(len(util.shape_of(a)) != 1 for a in args):
        raise ValueError(f"Arguments to plax.numpy.meshgrid must be 1D, got shapes "
                         f"{[util.shape_of(a) for a in args]}")
    swap = indexing == "xy" and len(args) >= 2
    if swap:
        args[0], args[1] = args[1], args[0]
    sizes = [util.shape_of(a)[0] for a in args]
    out = []
    for i, a in enumerate(args):
        shape = tuple(sizes) if not sparse else tuple(
            n if j == i else 1 for j, n in enumerate(sizes))
        out.append(util.as_array(lax.broadcast_in_dim(a, shape, (i,))))
    if swap:
        out[0], out[1] = out[1], out[0]
    return out


def _grid_from_slice(s: slice, op_name: str):
    """One axis of a grid: `arange(start, stop, step)`, or `linspace(start, stop, n)`
    when the step is an imaginary number `nj`."""
    start, stop, step = (util.concrete_or_error(v, f"plax.numpy.{op_name}: slice bounds "
                                                "must be static") for v in
                         (s.start, s.stop, s.step))
    start, step = start or 0, step or 1
    if np.iscomplexobj(step):
        return creation.linspace(start, stop, int(abs(step)))
    return creation.arange(start, stop, step)


def _promoted_grids(key, op_name: str) -> list:
    grids = [_grid_from_slice(k, op_name) for k in key]
    return util.promote_dtypes(*grids)


class _MGrid:
    """`mgrid[a:b:s, ...]`: a dense grid, stacked along a new first axis."""

    def __getitem__(self, key):
        if isinstance(key, slice):
            return _grid_from_slice(key, "mgrid")
        grids = meshgrid(*_promoted_grids(key, "mgrid"), indexing="ij")
        if not grids:
            return creation.arange(0)
        return shape_ops.stack(grids, 0)


class _OGrid:
    """`ogrid[a:b:s, ...]`: an open grid, one array per axis with unit dimensions."""

    def __getitem__(self, key):
        if isinstance(key, slice):
            return _grid_from_slice(key, "ogrid")
        return meshgrid(*_promoted_grids(key, "ogrid"), indexing="ij", sparse=True)


mgrid = _MGrid()
ogrid = _OGrid()


class _AxisConcatenator:
    """`r_[...]`/`c_[...]`: slices become ranges, scalars and arrays are joined along
    an axis; a leading string 'axis,ndmin,trans1d' sets how (as in NumPy)."""

    def __init__(self, name: str, axis: int, ndmin: int, trans1d: int):
        self.name, self.axis, self.ndmin, self.trans1d = name, axis, ndmin, trans1d

    def _params(self, directive: str) -> list[int]:
        params = [self.axis, self.ndmin, self.trans1d, -1]
        if directive in ("r", "c"):
            params[-1] = 0 if directive == "r" else 1
            return params
        fields = directive.split(",")
        fields = fields + params[len(fields):] if len(fields) < 4 else fields[:3] + [-1]
        try:
            return [int(f) for f in fields]
        except ValueError as err:
            raise ValueError(f"{self.name}: could not understand directive "
                             f"{directive!r}") from err

    def __getitem__(self, key):
        items = key if isinstance(key, tuple) else (key,)
        params = [self.axis, self.ndmin, self.trans1d, -1]
        if items and isinstance(items[0], str):
            params, items = self._params(items[0]), items[1:]
        axis, ndmin, trans1d, matrix = params
        pieces = []
        for item in items:
            if isinstance(item, slice):
                piece, item_ndim = _grid_from_slice(item, self.name), 0
            elif isinstance(item, str):
                raise ValueError(f"{self.name}: a string directive must come first")
            else:
                piece = creation.asarray(item)
                item_ndim = len(util.shape_of(piece))
            piece = creation.array(piece, copy=False, ndmin=ndmin)
            if trans1d != -1 and ndmin - item_ndim > 0:
                order = tuple(range(ndmin))
                shift = ndmin - abs(ndmin + trans1d + 1) % ndmin
                piece = shape_ops.transpose(piece, order[shift:] + order[:shift])
            pieces.append(piece)
        out = shape_ops.concatenate(pieces, axis=axis)
        if matrix != -1 and len(util.shape_of(out)) == 1:
            out = shape_ops.expand_dims(out, matrix)
        return out

    def __len__(self) -> int:
        return 0


r_ = _AxisConcatenator("r_", axis=0, ndmin=1, trans1d=-1)
c_ = _AxisConcatenator("c_", axis=-1, ndmin=2, trans1d=0)


def ix_(*args) -> tuple:
    """An open mesh from 1-D index arrays: `a[jnp.ix_(rows, cols)]` picks the
    sub-array of every row in `rows` crossed with every column in `cols`.

    Follows `numpy.ix_`: the k-th result has the k-th input along axis k and size-one
    axes elsewhere. A concrete boolean array stands for the positions of its true
    entries.

    Args:
        *args: 1-D integer (or concrete boolean) arrays.

    Returns:
        A tuple of arrays that broadcast together.

    Raises:
        ValueError: an input that is not 1-D.

    Examples:
        >>> a = jnp.arange(12).reshape(3, 4)
        >>> a[jnp.ix_(jnp.array([0, 2]), jnp.array([1, 3]))]
        Array([[ 1,  3],
               [ 9, 11]], dtype=int32)
    """
    out = []
    for i, a in enumerate(args):
        a = util.ensure_arraylike("ix_", a)
        if len(util.shape_of(a)) != 1:
            raise ValueError(f"Arguments to plax.numpy.ix_ must be 1-dimensional, got shape "
                             f"{util.shape_of(a)}")
        if util.dtype_category(util.dtype_of(a)) == "b":
            a = np.nonzero(np.asarray(util.concrete_or_error(
                a, "ix_: boolean arguments must be concrete")))[0].astype(
                    dtypes.default_int_dtype())
        shape = [1] * len(args)
        shape[i] = util.shape_of(a)[0]
        if shape[i] == 0:  # NumPy gives empty index arrays an integer dtype
            a = np.zeros((0,), dtypes.default_int_dtype())
        out.append(util.as_array(lax.broadcast_in_dim(a, tuple(shape), (i,))))
    return tuple(out)


def indices(dimensions, dtype=None, sparse: bool = False):
    """The indices of every point of a grid of shape `dimensions`: array `k` holds, at
    each point, its index along axis `k`.

    Follows `numpy.indices`: stacked into one array of shape `(len(dimensions),
    *dimensions)`, or, with `sparse`, a tuple of broadcastable arrays.

    Args:
        dimensions: the grid's shape (concrete).
        dtype: the indices' dtype (default: the default int).
        sparse: return a tuple of arrays with size-one axes.

    Returns:
        An array, or a tuple of arrays.

    Examples:
        >>> jnp.indices((2, 3))
        Array([[[0, 0, 0],
                [1, 1, 1]],
        <BLANKLINE>
               [[0, 1, 2],
                [0, 1, 2]]], dtype=int32)
    """
    dtype = util.check_user_dtype(int if dtype is None else dtype, "indices")
    dims = util.canonicalize_shape(dimensions, "indices")
    out = []
    for i, n in enumerate(dims):
        shape = tuple(n if j == i else 1 for j in range(len(dims))) if sparse else dims
        out.append(util.as_array(lax.broadcast_in_dim(lax.iota(dtype, n), shape, (i,))))
    if sparse:
        return tuple(out)
    return shape_ops.stack(out, 0) if out else creation.zeros((0,), dtype)


# --- flat and multi-dimensional indices ----------------------------------------------------

def ravel_multi_index(multi_index, dims, mode: str = "raise", order: str = "C", *,
                      dtype=None):
    """Flat indices into an array of shape `dims` from a tuple of per-axis index arrays
    (the inverse of `unravel_index`).

    Follows `numpy.ravel_multi_index`. Out-of-range indices follow `mode`: "raise"
    (the default; possible only for concrete indices), "wrap" or "clip" (a mode per
    axis may be given as a tuple).

    Args:
        multi_index: a tuple of integer arrays, one per dimension.
        dims: the array's shape.
        mode: "raise", "wrap" or "clip", or one per dimension.
        order: "C" (row-major) or "F" (column-major).

    Returns:
        An integer array of flat indices.

    Raises:
        ValueError: out-of-range concrete indices with mode "raise", or mismatched
            lengths.

    Examples:
        >>> jnp.ravel_multi_index((jnp.array([0, 1]), jnp.array([2, 0])), (2, 3))
        Array([2, 3], dtype=int32)
    """
    if len(multi_index) != len(dims):
        raise ValueError(f"ravel_multi_index: got {len(multi_index)} index arrays for "
                         f"{len(dims)} dimensions")
    dims = tuple(operator.index(util.concrete_or_error(d, "ravel_multi_index: dims must be "
                                                       "static")) for d in dims)
    index = [util.ensure_arraylike("ravel_multi_index", i) for i in multi_index]
    if dtype is None:
        dtype = dtypes.result_type(int, *index)
    else:
        dtype = util.check_user_dtype(dtype, "ravel_multi_index")
    if util.dtype_category(dtype) not in "iu":
        raise ValueError(f"ravel_multi_index: dtype={dtype} is not an integer type.")
    if math.prod(dims) - 1 > np.iinfo(dtype).max:
        raise ValueError(f"ravel_multi_index: dtype={dtype} is not large enough to hold flat "
                         f"indices for dims={dims}; pass a wider dtype.")
    for i in index:
        if util.dtype_category(util.dtype_of(i)) not in "iu":
            raise TypeError(f"ravel_multi_index: only int indices permitted, got "
                            f"{util.dtype_of(i)}")
    if mode == "raise":
        for i, d in zip(index, dims):
            value = np.asarray(util.concrete_or_error(
                i, "ravel_multi_index with mode='raise' needs concrete indices; use "
                "mode='wrap' or mode='clip' under jit"))
            if np.any((value < 0) | (value >= d)):
                raise ValueError("ravel_multi_index: invalid entry in coordinates array")
    elif mode == "clip":
        index = [ufuncs.clip(i, 0, d - 1) for i, d in zip(index, dims)]
    elif mode == "wrap":
        index = [ufuncs.remainder(i, d) for i, d in zip(index, dims)]
    elif mode != "ignore":
        raise ValueError(f"ravel_multi_index: invalid mode={mode!r}. Expected 'raise', "
                         "'wrap', 'clip', or 'ignore'.")
    if order == "C":
        strides = np.cumprod((1,) + dims[1:][::-1])[::-1]
    elif order == "F":
        strides = np.cumprod((1,) + dims[:-1])
    else:
        raise ValueError(f"ravel_multi_index: invalid order={order!r}. Expected 'C' or 'F'")
    out = np.zeros((), dtype)
    for i, stride in zip(index, strides):
        out = ufuncs.add(out, ufuncs.multiply(util.convert(i, dtype),
                                              np.asarray(int(stride), dtype)))
    return util.as_array(out)


def unravel_index(indices, shape) -> tuple:
    """The coordinates, in an array of `shape`, of each flat index (the inverse of
    `ravel_multi_index`).

    Follows `numpy.unravel_index`, except that out-of-range indices are clamped to the
    first or last element instead of raising, as in JAX (the values may be traced).

    Args:
        indices: an integer array of flat indices.
        shape: the array's shape.

    Returns:
        A tuple of integer arrays, one per dimension, shaped like `indices`.

    Examples:
        >>> jnp.unravel_index(jnp.array([2, 3, 100]), (2, 3))
        (Array([0, 1, 1], dtype=int32), Array([2, 0, 2], dtype=int32))
    """
    indices = util.ensure_arraylike("unravel_index", indices)
    try:
        shape = list(shape)
    except TypeError:
        shape = [shape]
    if any(np.ndim(s) != 0 for s in shape):
        raise ValueError("unravel_index: shape should be a scalar or 1D sequence.")
    coordinates = [None] * len(shape)
    rest = indices
    for i in reversed(range(len(shape))):
        rest, coordinates[i] = ufuncs.divmod(rest, shape[i])
    above = lax.gt(rest, np.zeros((), util.dtype_of(rest)))
    below = (lax.full(util.shape_of(rest), False, bool)
             if util.dtype_category(util.dtype_of(rest)) == "u"
             else lax.lt(rest, np.asarray(-1, util.dtype_of(rest))))
    return tuple(util.as_array(ufuncs.where(above, s - 1, ufuncs.where(below, 0, c)))
                 for s, c in zip(shape, coordinates))


# --- diagonals and triangles --------------------------------------------------------------

def _index_arrays(*arrays) -> tuple:
    return tuple(creation.asarray(np.asarray(a, dtypes.default_int_dtype())) for a in arrays)


def diag_indices(n: int, ndim: int = 2) -> tuple:
    """The indices of the main diagonal of an `ndim`-dimensional array whose sides are
    all `n`: `a[diag_indices(n)]` is the diagonal.

    Follows `numpy.diag_indices`.

    Args:
        n: the side length.
        ndim: the number of dimensions.

    Returns:
        A tuple of `ndim` identical index arrays `arange(n)`.

    Examples:
        >>> a = jnp.zeros((3, 3), jnp.int32)
        >>> a.at[jnp.diag_indices(3)].set(1)
        Array([[1, 0, 0],
               [0, 1, 0],
               [0, 0, 1]], dtype=int32)
    """
    n = util.canonicalize_shape((n,), "diag_indices")[0]
    ndim = operator.index(ndim)
    if ndim < 0:
        raise ValueError(f"diag_indices: ndim must be non-negative, got {ndim}")
    return _index_arrays(*[np.arange(n)] * ndim)


def diag_indices_from(arr) -> tuple:
    """`diag_indices` for `arr`, which must be at least 2-D with all sides equal.

    Follows `numpy.diag_indices_from`.

    Args:
        arr: an array.

    Returns:
        A tuple of index arrays.

    Raises:
        ValueError: fewer than two dimensions, or unequal sides.

    Examples:
        >>> jnp.diag_indices_from(jnp.ones((2, 2)))
        (Array([0, 1], dtype=int32), Array([0, 1], dtype=int32))
    """
    shape = util.shape_of(util.ensure_arraylike("diag_indices_from", arr))
    if len(shape) < 2:
        raise ValueError("diag_indices_from: input array must be at least 2-d")
    if len(set(shape)) != 1:
        raise ValueError(f"diag_indices_from: all dimensions of input must be of equal "
                         f"length, got shape {shape}")
    return diag_indices(shape[0], len(shape))


def _triangle_indices(name: str, lower: bool, n, k, m) -> tuple:
    n, k = (operator.index(util.concrete_or_error(v, f"{name}: arguments must be static"))
            for v in (n, k))
    m = n if m is None else operator.index(util.concrete_or_error(m, f"{name}: m"))
    return _index_arrays(*(np.tril_indices if lower else np.triu_indices)(n, k, m))


def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple:
    """The row and column indices of the lower triangle of an `(n, m)` matrix: the `k`-th
    diagonal and everything below it.

    Follows `numpy.tril_indices`.

    Args:
        n: the number of rows.
        k: the diagonal (0 the main one, positive above it).
        m: the number of columns (default `n`).

    Returns:
        A pair `(rows, cols)` of index arrays.

    Examples:
        >>> jnp.tril_indices(3)
        (Array([0, 1, 1, 2, 2, 2], dtype=int32), Array([0, 0, 1, 0, 1, 2], dtype=int32))
    """
    return _triangle_indices("tril_indices", True, n, k, m)


def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple:
    """The row and column indices of the upper triangle of an `(n, m)` matrix: the `k`-th
    diagonal and everything above it.

    Follows `numpy.triu_indices`.

    Args:
        n: the number of rows.
        k: the diagonal (0 the main one, positive above it).
        m: the number of columns (default `n`).

    Returns:
        A pair `(rows, cols)` of index arrays.

    Examples:
        >>> rows, cols = jnp.triu_indices(3, k=1)
        >>> rows, cols
        (Array([0, 0, 1], dtype=int32), Array([1, 2, 2], dtype=int32))
    """
    return _triangle_indices("triu_indices", False, n, k, m)


def _from_2d(name: str, arr) -> tuple[int, int]:
    shape = util.shape_of(util.ensure_arraylike(name, arr))
    if len(shape) != 2:
        raise ValueError(f"{name}: input array must be 2-d, got shape {shape}")
    return shape


def tril_indices_from(arr, k: int = 0) -> tuple:
    """`tril_indices` for the 2-D array `arr` (its shape gives `n` and `m`).

    Follows `numpy.tril_indices_from`.

    Args:
        arr: a 2-D array.
        k: the diagonal.

    Returns:
        A pair `(rows, cols)`.

    Examples:
        >>> a = jnp.arange(4).reshape(2, 2)
        >>> a[jnp.tril_indices_from(a)]
        Array([0, 2, 3], dtype=int32)
    """
    n, m = _from_2d("tril_indices_from", arr)
    return tril_indices(n, k, m)


def triu_indices_from(arr, k: int = 0) -> tuple:
    """`triu_indices` for the 2-D array `arr` (its shape gives `n` and `m`).

    Follows `numpy.triu_indices_from`.

    Args:
        arr: a 2-D array.
        k: the diagonal.

    Returns:
        A pair `(rows, cols)`.

    Examples:
        >>> a = jnp.arange(4).reshape(2, 2)
        >>> a[jnp.triu_indices_from(a)]
        Array([0, 1, 3], dtype=int32)
    """
    n, m = _from_2d("triu_indices_from", arr)
    return triu_indices(n, k, m)


def mask_indices(n: int, mask_func: Callable, k: int = 0, *, size: int | None = None) -> tuple:
    """The indices where `mask_func(ones((n, n)), k)` is nonzero, e.g. with
    `mask_func=jnp.triu` the upper triangle.

    Follows `numpy.mask_indices`, plus JAX's `size` (the number of indices, for use
    under `jit`).

    Args:
        n: the side of the square mask.
        mask_func: a function like `triu` or `tril`, called as `mask_func(a, k)`.
        k: passed to `mask_func`.
        size: the number of indices to return (static).

    Returns:
        A pair `(rows, cols)` of index arrays.

    Examples:
        >>> jnp.mask_indices(2, jnp.triu)
        (Array([0, 0, 1], dtype=int32), Array([0, 1, 1], dtype=int32))
    """
    from plax_stdlib.numpy.sorting import nonzero
    return nonzero(mask_func(creation.ones((n, n)), k), size=size)

"""Functions that rearrange elements: reshape, transpose, join, split, tile, flip...

All sizes are known at trace time (shapes, split points, repeat counts: ints, or
symbolic dimensions in a shape-polymorphic export); `roll` also accepts a traced
shift.
"""
from __future__ import annotations

import builtins
import math
import operator
import warnings
from typing import Any, Sequence

import numpy as np

from plax.errors import InvalidShapeError
from plax.extend import dtypes
from plax.extend.core import SymbolicDimension, Tracer, canonical_dim, min_dim
from plax_stdlib import jax_jits, lax
from plax_stdlib.lax import shape_ops as lax_shape_ops
from plax_stdlib.lax.out_sharding import laid_out
from plax_stdlib.numpy import indexing, util


def _ndim(x) -> int:
    return len(util.shape_of(x))


# --- reshaping -----------------------------------------------------------------------

def _reshape_target(shape: tuple[int, ...], newshape: Any,
                    error: type[Exception] = TypeError) -> tuple[int, ...]:
    """`newshape` with a -1 resolved; `error` naming both shapes when it cannot fit
    (JAX's class: a TypeError, but NumPy's ValueError for NumPy inputs)."""
    dims = lax_shape_ops.shape_dims(newshape)
    size = math.prod(shape)
    unknown = [i for i, d in enumerate(dims) if d == -1]
    if len(unknown) > 1:
        raise ValueError(f"reshape: can only specify one unknown dimension, got {dims}")
    if any(d < -1 for d in dims):
        raise InvalidShapeError(f"reshape: invalid dimension in new shape {dims}")
    known = math.prod(d for d in dims if d != -1)
    if unknown:
        if known == 0 or size % known:
            raise error(f"cannot reshape array of shape {shape} (size {size}) into shape "
                        f"{dims}")
        dims = dims[:unknown[0]] + (size // known,) + dims[unknown[0] + 1:]
    elif known != size:
        raise error(f"cannot reshape array of shape {shape} (size {size}) into shape "
                    f"{dims} (size {known})")
    return dims


def _memory_order(name: str, order: str, allowed: str) -> str:
    """'C' or 'F' for NumPy's `order`: arrays are row-major, so 'A' and 'K' read as 'C'."""
    if order not in allowed:
        raise ValueError(f"{name}: order must be one of {', '.join(map(repr, allowed))}, "
                         f"got {order!r}")
    return "F" if order == "F" else "C"


def _reversed_axes(x):
    return lax.transpose(x, tuple(reversed(range(_ndim(x)))))


def reshape(a, shape, order: str = "C", *, copy: bool | None = None, out_sharding=None):
    """`a`'s elements arranged in a new `shape`, read and written in row-major ("C") or
    column-major ("F") order.

    Follows `numpy.reshape` (one entry of `shape` may be -1, inferred from the size).
    The result is a new array: there are no views in plax, so `copy` only matters for
    the array API's signature. Under `jit` the shape must be concrete (Python ints or
    shapes of other values). `out_sharding` types the result on a mesh with Explicit
    axes. NumPy's older keyword `newshape` is not accepted.

    Args:
        a: an array.
        shape: an int or tuple of ints, at most one of them -1.
        order: "C" (default), "F", or "A" (read as "C", arrays being row-major).
        copy: accepted for the array API; the result never aliases `a` observably.
        out_sharding: a Sharding or PartitionSpec for the result.

    Returns:
        An array of `shape`.

    Raises:
        TypeError: the sizes do not match (ValueError for NumPy inputs, as in JAX), or
            a shape that is not concrete.

    Examples:
        >>> jnp.reshape(jnp.arange(6), (2, -1))
        Array([[0, 1, 2],
               [3, 4, 5]], dtype=int32)
        >>> jnp.reshape(jnp.arange(6), (2, 3), order="F")
        Array([[0, 2, 4],
               [1, 3, 5]], dtype=int32)
    """
    error = ValueError if isinstance(a, (np.ndarray, np.generic)) else TypeError
    a = util.ensure_arraylike("reshape", a)
    dims = _reshape_target(util.shape_of(a), shape, error)
    if _memory_order("reshape", order, "CFA") == "C":
        return lax.reshape(a, dims, out_sharding=out_sharding)
    return _reversed_axes(lax.reshape(_reversed_axes(a), dims[::-1], out_sharding=out_sharding))


def ravel(a, order: str = "C", *, out_sharding=None):
    """`a` flattened to one dimension, in row-major ("C") or column-major ("F") order.

    Follows `numpy.ravel`, but always returns a new array (there are no views).

    Args:
        a: an array.
        order: "C" (default), "F", or "A"/"K" (read as "C").
        out_sharding: a Sharding or PartitionSpec for the result (Explicit mesh axes).

    Returns:
        A 1-D array of `a.size` elements.

    Examples:
        >>> jnp.ravel(jnp.array([[1, 2], [3, 4]]), order="F")
        Array([1, 3, 2, 4], dtype=int32)
    """
    a = util.ensure_arraylike("ravel", a)
    if _memory_order("ravel", order, "CFAK") == "F":
        a = _reversed_axes(a)
    return lax.reshape(a, (math.prod(util.shape_of(a)),), out_sharding=out_sharding)


def transpose(a, axes: Sequence[int] | None = None):
    """`a` with its axes permuted: reversed when `axes` is None, else axis `i` of the
    result is axis `axes[i]` of `a` (`permute_dims` is the same function).

    Follows `numpy.transpose`; a new array, not a view.

    Args:
        a: an array.
        axes: a permutation of `range(a.ndim)` (negative entries count from the end).

    Returns:
        The transposed array.

    Raises:
        ValueError: `axes` is not a permutation of the axes.

    Examples:
        >>> jnp.transpose(jnp.ones((2, 3, 4))).shape
        (4, 3, 2)
        >>> jnp.transpose(jnp.ones((2, 3, 4)), (1, 0, 2)).shape
        (3, 2, 4)
    """
    a = util.ensure_arraylike("transpose", a)
    ndim = _ndim(a)
    if axes is None:
        perm = tuple(reversed(range(ndim)))
    else:
        perm = tuple(util.canonicalize_axis(ax, ndim) for ax in axes)
        if sorted(perm) != list(range(ndim)):  # a TypeError, as lax's rule in JAX
            raise TypeError(f"transpose: axes {tuple(axes)} don't match array of "
                            f"dimension {ndim}")
    return lax.transpose(a, perm)


permute_dims = transpose


def swapaxes(a, axis1: int, axis2: int):
    """`a` with axes `axis1` and `axis2` interchanged.

    Follows `numpy.swapaxes`; a new array, not a view.

    Args:
        a: an array.
        axis1: one axis (negative counts from the end).
        axis2: the other.

    Returns:
        An array with the two axes swapped.

    Examples:
        >>> jnp.swapaxes(jnp.ones((2, 3, 4)), 0, 2).shape
        (4, 3, 2)
    """
    a = util.ensure_arraylike("swapaxes", a)
    ndim = _ndim(a)
    perm = list(range(ndim))
    i, j = (util.canonicalize_axis(ax, ndim, IndexError) for ax in (axis1, axis2))  # JAX's
    perm[i], perm[j] = perm[j], perm[i]
    return lax.transpose(a, tuple(perm))


def moveaxis(a, source, destination):
    """`a` with the axes `source` moved to the positions `destination`, the other axes
    keeping their order.

    Follows `numpy.moveaxis`.

    Args:
        a: an array.
        source: an axis or sequence of axes.
        destination: their positions in the result (as many as `source`).

    Returns:
        The array with its axes moved.

    Raises:
        ValueError: `source` and `destination` differ in length or repeat an axis.

    Examples:
        >>> jnp.moveaxis(jnp.ones((2, 3, 4)), 0, -1).shape
        (3, 4, 2)
    """
    a = util.ensure_arraylike("moveaxis", a)
    ndim = _ndim(a)
    src = util.canonicalize_axes(source if isinstance(source, (tuple, list)) else (source,),
                                 ndim)
    dst = util.canonicalize_axes(destination if isinstance(destination, (tuple, list))
                                 else (destination,), ndim)
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination must have the same number of "
                         f"elements, got {source} and {destination}")
    perm = [ax for ax in range(ndim) if ax not in src]
    for to, frm in sorted(zip(dst, src)):
        perm.insert(to, frm)
    return lax.transpose(a, tuple(perm))


def expand_dims(a, axis):
    """`a` with size-one axes inserted at the positions `axis` (positions in the result).

    Follows `numpy.expand_dims`.

    Args:
        a: an array.
        axis: an int or tuple of ints.

    Returns:
        An array with `len(axis)` more dimensions.

    Examples:
        >>> jnp.expand_dims(jnp.array([1, 2]), 0)
        Array([[1, 2]], dtype=int32)
        >>> jnp.expand_dims(jnp.ones((2, 3)), (0, -1)).shape
        (1, 2, 3, 1)
    """
    a = util.ensure_arraylike("expand_dims", a)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    out_ndim = _ndim(a) + len(axes)
    return lax.expand_dims(a, util.canonicalize_axes(tuple(axes), out_ndim))


def squeeze(a, axis=None):
    """`a` without its size-one axes: all of them, or those named by `axis`.

    Follows `numpy.squeeze`.

    Args:
        a: an array.
        axis: an int or tuple of ints naming size-one axes; None removes them all.

    Returns:
        An array with the same elements and fewer dimensions.

    Raises:
        ValueError: an axis of `axis` does not have size one.

    Examples:
        >>> jnp.squeeze(jnp.ones((1, 3, 1))).shape
        (3,)
        >>> jnp.squeeze(jnp.ones((1, 3, 1)), axis=0).shape
        (3, 1)
    """
    a = util.ensure_arraylike("squeeze", a)
    shape = util.shape_of(a)
    if axis is None:
        axes = tuple(i for i, d in enumerate(shape) if d == 1)
    else:
        axes = util.canonicalize_axes(axis, len(shape))
        for ax in axes:
            if shape[ax] != 1:
                raise ValueError("cannot select an axis to squeeze out which has size not "
                                 f"equal to one, got shape={shape} and dimensions={axes}")
    return lax.squeeze(a, axes)


def broadcast_to(array, shape, *, out_sharding=None):
    """`array` broadcast to `shape`, by NumPy's rules (size-one and missing leading axes
    stretch).

    Follows `numpy.broadcast_to`, but the result is a new array (NumPy's is a
    read-only view). `out_sharding` types the result on a mesh with Explicit axes.

    Args:
        array: an array or scalar.
        shape: the target shape, of no lower rank than `array`.
        out_sharding: a Sharding or PartitionSpec for the result.

    Returns:
        An array of `shape`.

    Raises:
        ValueError: the shapes are not compatible.

    Examples:
        >>> jnp.broadcast_to(jnp.array([1, 2, 3]), (2, 3))
        Array([[1, 2, 3],
               [1, 2, 3]], dtype=int32)
    """
    array = util.ensure_arraylike("broadcast_to", array)
    shape = util.canonicalize_shape(shape, "broadcast_to")
    arr_shape = util.shape_of(array)
    lead = len(shape) - len(arr_shape)
    if lead < 0 or builtins.any(d not in (1, s) for d, s in zip(arr_shape, shape[lead:])):
        raise ValueError(f"Incompatible shapes for broadcasting: {arr_shape} and requested "
                         f"shape {shape}")
    if arr_shape == shape and out_sharding is None:
        return util.as_array(array)
    return lax.broadcast_in_dim(array, shape, tuple(range(lead, len(shape))),
                                out_sharding=out_sharding)


def broadcast_arrays(*args):
    """The arguments broadcast against each other to their common shape.

    Follows `numpy.broadcast_arrays`; the results are new arrays.

    Args:
        *args: arrays or scalars.

    Returns:
        A list of arrays, all of the broadcast shape.

    Raises:
        ValueError: the shapes are not compatible.

    Examples:
        >>> a, b = jnp.broadcast_arrays(jnp.array([[1], [2]]), jnp.array([10, 20, 30]))
        >>> a.shape, b.shape
        ((2, 3), (2, 3))
    """
    util.check_arraylike("broadcast_arrays", *args)
    args = [util.operand(a) for a in args]
    shape = util.broadcast_shapes(*(util.shape_of(a) for a in args))
    return [broadcast_to(a, shape) for a in args]


broadcast_shapes = util.broadcast_shapes


def _atleast(name: str, min_ndim: int, place, example_output: str):
    def fn(*arys):
        util.check_arraylike(name, *arys)
        outs = []
        for x in map(util.operand, arys):
            ndim = _ndim(x)
            outs.append(util.as_array(x) if ndim >= min_ndim else
                        lax.expand_dims(x, place(ndim)))
        return outs[0] if len(outs) == 1 else outs
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = _ATLEAST_DOC.format(name=name, n=min_ndim, out=example_output)
    return fn


_ATLEAST_DOC = """Each argument as an array of at least {n} dimensions, size-one axes added
    where it has fewer (arrays with enough dimensions are returned as they are).

    Follows `numpy.{name}` (where the new axes go included).

    Args:
        *arys: arrays or scalars.

    Returns:
        One array for one argument, else a list of arrays.

    Examples:
        >>> [x.shape for x in jnp.{name}(1.0, jnp.ones(3), jnp.ones((2, 3)))]
        {out}
    """

atleast_1d = _atleast("atleast_1d", 1, lambda ndim: (0,), "[(1,), (3,), (2, 3)]")
atleast_2d = _atleast("atleast_2d", 2, lambda ndim: (0,) if ndim == 1 else (0, 1),
                      "[(1, 1), (1, 3), (2, 3)]")
atleast_3d = _atleast("atleast_3d", 3, lambda ndim: {0: (0, 1, 2), 1: (0, 2), 2: (2,)}[ndim],
                      "[(1, 1, 1), (1, 3, 1), (2, 3, 1)]")


# --- joining -------------------------------------------------------------------------

def _check_sequence(name: str, arrays) -> list:
    if util.is_arraylike(arrays) and not isinstance(arrays, (list, tuple)):
        if util.shape_of(arrays) == ():
            raise ValueError(f"{name}: need a sequence of arrays, got a 0-d array")
        return [arrays[i] for i in range(util.shape_of(arrays)[0])]
    arrays = list(arrays)
    if not arrays:
        raise ValueError("Need at least one array to concatenate.")
    util.check_arraylike(name, *arrays)
    return arrays


def concatenate(arrays, axis: int | None = 0, dtype=None):
    """The arrays joined along an existing `axis` (`concat` is the same function).

    Follows `numpy.concatenate`; the result dtype is the arrays' promoted dtype, by
    JAX's rules (or `dtype`). With `axis=None` the arrays are flattened first.

    Args:
        arrays: a sequence of arrays, equal in shape except along `axis`.
        axis: the axis to join along; None flattens first.
        dtype: the result's dtype.

    Returns:
        The joined array.

    Raises:
        ValueError: no arrays, arrays of different ranks, or shapes that differ
            off `axis`.

    Examples:
        >>> jnp.concatenate([jnp.array([[1, 2]]), jnp.array([[3, 4]])], axis=0)
        Array([[1, 2],
               [3, 4]], dtype=int32)
        >>> jnp.concatenate([jnp.array([1, 2]), jnp.array([0.5])])
        Array([1. , 2. , 0.5], dtype=float32)
    """
    arrays = _check_sequence("concatenate", arrays)
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    dtype = util.check_user_dtype(dtype, "concatenate")
    arrays = util.promote_dtypes(*map(util.operand, arrays))
    if dtype is not None:
        arrays = [util.convert(a, dtype) for a in arrays]
    shapes = [util.shape_of(a) for a in arrays]
    if builtins.any(len(s) == 0 for s in shapes):
        raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    # Shapes that do not fit together are a TypeError, as in JAX (lax's shape rule).
    if builtins.any(len(s) != len(shapes[0]) for s in shapes):
        raise TypeError("All input arrays must have the same number of dimensions, got "
                        f"shapes {shapes}")
    axis = util.canonicalize_axis(axis, len(shapes[0]))
    rest = {s[:axis] + s[axis + 1:] for s in shapes}
    if len(rest) > 1:
        raise TypeError(f"concatenate: all input array dimensions except for the "
                        f"concatenation axis {axis} must match exactly, got shapes {shapes}")
    if len(arrays) == 1:
        return util.as_array(arrays[0])
    return lax.concatenate(arrays, axis)


concat = concatenate


def stack(arrays, axis: int = 0, out=None, dtype=None):
    """The arrays, all of one shape, joined along a new axis `axis`.

    Follows `numpy.stack`; `out` must be None.

    Args:
        arrays: a sequence of arrays of equal shape (or an array, stacked along its
            first axis).
        axis: the position of the new axis in the result.
        out: unsupported; must be None.
        dtype: the result's dtype.

    Returns:
        An array with one more dimension, of size `len(arrays)` at `axis`.

    Raises:
        ValueError: no arrays, or arrays of different shapes.

    Examples:
        >>> jnp.stack([jnp.array([1, 2]), jnp.array([3, 4])], axis=1)
        Array([[1, 3],
               [2, 4]], dtype=int32)
    """
    if out is not None:
        raise NotImplementedError("The 'out' argument to plax.numpy.stack is not supported.")
    arrays = [util.operand(a) for a in _check_sequence("stack", arrays)]
    shapes = {util.shape_of(a) for a in arrays}
    if len(shapes) > 1:
        raise ValueError(f"All input arrays must have the same shape, got {sorted(shapes)}")
    axis = util.canonicalize_axis(axis, len(shapes.pop()) + 1)
    dtype = util.check_user_dtype(dtype, "stack")
    arrays = util.promote_dtypes(*arrays)
    if dtype is not None:
        arrays = [util.convert(a, dtype) for a in arrays]
    return lax.stack(arrays, axis)  # JAX's primitive


def unstack(x, /, *, axis: int = 0) -> tuple:
    """The slices of `x` along `axis`, as a tuple (the inverse of `stack`).

    From the array API.

    Args:
        x: an array of at least one dimension.
        axis: the axis to unstack along.

    Returns:
        A tuple of `x.shape[axis]` arrays, each without that axis.

    Examples:
        >>> jnp.unstack(jnp.array([[1, 2], [3, 4]]))
        (Array([1, 2], dtype=int32), Array([3, 4], dtype=int32))
    """
    x = util.ensure_arraylike("unstack", x)
    ndim = len(util.shape_of(x))
    if ndim == 0:
        raise ValueError("Unstack requires arrays with rank > 0, however a scalar array was "
                         "passed.")
    axis = util.canonicalize_axis(axis, ndim)
    return tuple(lax.index_in_dim(x, i, axis, keepdims=False)
                 for i in range(util.shape_of(x)[axis]))


def hstack(tup, dtype=None):
    """The arrays joined horizontally: along axis 1, or axis 0 for 1-D arrays.

    Follows `numpy.hstack`.

    Args:
        tup: a sequence of arrays.
        dtype: the result's dtype.

    Returns:
        The joined array.

    Examples:
        >>> jnp.hstack([jnp.array([1, 2]), jnp.array([3])])
        Array([1, 2, 3], dtype=int32)
    """
    arrays = [atleast_1d(a) for a in _check_sequence("hstack", tup)]  # one call each
    return concatenate(arrays, 0 if _ndim(arrays[0]) == 1 else 1, dtype=dtype)


def vstack(tup, dtype=None):
    """The arrays joined vertically, along axis 0, after making 1-D arrays rows (1, N).

    Follows `numpy.vstack`.

    Args:
        tup: a sequence of arrays.
        dtype: the result's dtype.

    Returns:
        An array of at least two dimensions.

    Examples:
        >>> jnp.vstack([jnp.array([1, 2]), jnp.array([3, 4])])
        Array([[1, 2],
               [3, 4]], dtype=int32)
    """
    arrays = [atleast_2d(a) for a in _check_sequence("vstack", tup)]  # one call each
    return concatenate(arrays, 0, dtype=dtype)


def dstack(tup, dtype=None):
    """The arrays joined along the third axis (depth), after giving each at least three
    dimensions (1-D `(N,)` becomes `(1, N, 1)`, 2-D `(M, N)` becomes `(M, N, 1)`).

    Follows `numpy.dstack`.

    Args:
        tup: a sequence of arrays.
        dtype: the result's dtype.

    Returns:
        An array of at least three dimensions.

    Examples:
        >>> jnp.dstack([jnp.array([1, 2]), jnp.array([3, 4])])
        Array([[[1, 3],
                [2, 4]]], dtype=int32)
    """
    arrays = [atleast_3d(a) for a in _check_sequence("dstack", tup)]  # one call each
    return concatenate(arrays, 2, dtype=dtype)


# --- splitting ---------------------------------------------------------------------------

def _split(name: str, ary, indices_or_sections, axis: int, equal: bool) -> list:
    ary = util.ensure_arraylike(name, ary)
    shape = util.shape_of(ary)
    axis = util.canonicalize_axis(axis, len(shape), IndexError)  # JAX's class
    size = shape[axis]
    sections = util.concrete_or_error(indices_or_sections,
                                      f"{name}: indices_or_sections must be static")
    if np.ndim(sections) == 0:
        n = operator.index(sections)
        if n < 0 and size == 0:
            return []  # as JAX's: no sections at all, which is what an empty axis holds
        if n <= 0:
            raise ValueError(f"{name}: number sections must be larger than 0, got {n}")
        if equal and size % n:
            raise ValueError("array split does not result in an equal division: "
                             f"{size} elements along axis {axis} into {n} sections")
        small, extra = divmod(size, n)
        sizes = [small + 1] * extra + [small] * (n - extra)
    else:
        # Indices are taken as given (negative ones are not counted from the end), as
        # in JAX: each section's size must come out non-negative.
        indices = [canonical_dim(i) for i in np.ravel(sections)]  # symbolic ones too
        points = [0, *indices, size]
        sizes = [stop - start for start, stop in zip(points[:-1], points[1:])]
        if builtins.any(s < 0 for s in sizes):
            raise ValueError(f"{name}: Sizes passed to split must be nonnegative, got {sizes} "
                             f"(from indices {indices} along axis {axis} of size {size})")
    # One `split` (JAX's), its sizes NumPy ints as JAX's Jaxprs print them, or symbolic
    return lax.split(ary, [n if isinstance(n, SymbolicDimension) else np.int64(n)
                           for n in sizes], axis)


def split(ary, indices_or_sections, axis: int = 0) -> list:
    """`ary` cut along `axis` into equal sections, or at the given indices.

    Follows `numpy.split`. The cut points must be concrete (they fix the pieces'
    shapes).

    Args:
        ary: an array.
        indices_or_sections: a number of equal sections, or a sorted sequence of
            indices to cut at.
        axis: the axis to cut along.

    Returns:
        A list of arrays.

    Raises:
        ValueError: a number of sections that does not divide the axis.

    Examples:
        >>> jnp.split(jnp.arange(6), 3)
        [Array([0, 1], dtype=int32), Array([2, 3], dtype=int32), Array([4, 5], dtype=int32)]
        >>> jnp.split(jnp.arange(6), [1, 4])
        [Array([0], dtype=int32), Array([1, 2, 3], dtype=int32), Array([4, 5], dtype=int32)]
    """
    return _split("split", ary, indices_or_sections, axis, equal=True)


def array_split(ary, indices_or_sections, axis: int = 0) -> list:
    """Like `split`, but a number of sections need not divide the axis: the first
    `size % sections` pieces get one element more.

    Follows `numpy.array_split`.

    Args:
        ary: an array.
        indices_or_sections: a number of sections, or a sequence of cut indices.
        axis: the axis to cut along.

    Returns:
        A list of arrays.

    Examples:
        >>> jnp.array_split(jnp.arange(5), 2)
        [Array([0, 1, 2], dtype=int32), Array([3, 4], dtype=int32)]
    """
    return _split("array_split", ary, indices_or_sections, axis, equal=False)


# --- repetition ---------------------------------------------------------------------------

def tile(A, reps):
    """`A` repeated `reps` times along each axis (as a whole, unlike `repeat`).

    Follows `numpy.tile`: when `reps` has more entries than `A` has axes, `A` gains
    leading size-one axes; fewer entries are padded with ones on the left.

    Args:
        A: an array.
        reps: an int or a sequence of ints (concrete).

    Returns:
        The tiled array.

    Examples:
        >>> jnp.tile(jnp.array([1, 2]), 2)
        Array([1, 2, 1, 2], dtype=int32)
        >>> jnp.tile(jnp.array([1, 2]), (2, 1))
        Array([[1, 2],
               [1, 2]], dtype=int32)
    """
    A = util.ensure_arraylike("tile", A)
    reps = util.concrete_or_error(reps, "tile: reps must be static")
    reps = tuple(operator.index(r) for r in (reps if np.ndim(reps) else (reps,)))
    shape = util.shape_of(A)
    ndim = builtins.max(len(shape), len(reps))
    shape = (1,) * (ndim - len(shape)) + shape
    reps = (1,) * (ndim - len(reps)) + reps
    if ndim > len(util.shape_of(A)):
        A = lax.expand_dims(A, tuple(range(ndim - len(util.shape_of(A)))))
    return lax.tile(A, reps)  # JAX's primitive


def repeat(a, repeats, axis: int | None = None, *, total_repeat_length: int | None = None,
           out_sharding=None):
    """Each element of `a` repeated `repeats` times along `axis` (of the flattened array
    if `axis` is None).

    Follows `numpy.repeat`. The output size must be known when tracing, so `repeats`
    must be concrete (an int, or one count per element) unless JAX's
    `total_repeat_length` is given: it fixes the result's length along `axis`, which is
    cut to that length, or padded by repeating the last element. With it, `repeats`
    may be traced (under `jit`). `out_sharding` lays out (and types) the result on an
    Explicit mesh.

    Args:
        a: an array.
        repeats: an int, or a sequence/array of counts, one per element along `axis`.
        axis: the axis to repeat along; None flattens `a` first.
        total_repeat_length: the result's length along `axis` (static).
        out_sharding: a Sharding or PartitionSpec for the result.

    Returns:
        The array with repeated elements.

    Examples:
        >>> jnp.repeat(jnp.array([1, 2]), 2)
        Array([1, 1, 2, 2], dtype=int32)
        >>> jnp.repeat(jnp.array([[1, 2], [3, 4]]), jnp.array([1, 2]), axis=0)
        Array([[1, 2],
               [3, 4],
               [3, 4]], dtype=int32)
        >>> jnp.repeat(jnp.array([1, 2]), jnp.array([1, 2]), total_repeat_length=4)
        Array([1, 2, 2, 2], dtype=int32)
        >>> plax.jit(lambda r: jnp.repeat(jnp.array([1, 2]), r, total_repeat_length=4))(
        ...     jnp.array([3, 1]))
        Array([1, 1, 1, 2], dtype=int32)
    """
    util.check_arraylike("repeat", a, repeats)  # a list of counts is a TypeError (JAX)
    a = util.operand(a)
    if axis is not None and _ndim(a) == 0:  # any int axis of a scalar is its own (JAX)
        operator.index(axis)
        axis = None
    if axis is None:
        a, axis = ravel(a), 0
    if (total_repeat_length is not None and isinstance(repeats, Tracer)
            and repeats.to_concrete_value() is None):
        return laid_out("plax.numpy.repeat", out_sharding, lambda r, a: _repeat_traced(
            a, r, axis, canonical_dim(total_repeat_length)), repeats, a)
    repeats = util.concrete_or_error(repeats, "repeat: repeats must be static, or "
                                     "total_repeat_length given")
    return laid_out("plax.numpy.repeat", out_sharding,
                    lambda a: _repeat(a, repeats, axis, total_repeat_length), a)


def _repeat(a, repeats, axis: int, total_repeat_length):
    shape = util.shape_of(a)
    counts = np.asarray(repeats)
    by_count = counts.ndim == 0 or counts.shape == (1,)
    axis = util.canonicalize_axis(axis, len(shape), ValueError if by_count else IndexError)
    if by_count:
        r = int(counts.reshape(()))
        if r < 0:  # a negative dimension: NumPy's ValueError and JAX's TypeError
            raise InvalidShapeError(f"repeat: repeats may not be negative, got {r}")
        expanded = shape[:axis + 1] + (r,) + shape[axis + 1:]
        out = lax.broadcast_in_dim(a, expanded, tuple(d for d in range(len(shape) + 1)
                                                      if d != axis + 1))
        out = lax.reshape(out, shape[:axis] + (shape[axis] * r,) + shape[axis + 1:])
    else:
        if counts.shape != (shape[axis],):
            raise ValueError(f"repeat: repeats of shape {counts.shape} do not match axis "
                             f"{axis} of size {shape[axis]}")
        if (counts < 0).any():
            raise InvalidShapeError(f"repeat: repeats may not be negative, got {repeats}")
        pieces = []
        for i, r in enumerate(counts.tolist()):
            if r:
                piece = lax.slice_in_dim(a, i, i + 1, axis=axis)
                pieces.append(lax.broadcast_in_dim(
                    piece, shape[:axis] + (r,) + shape[axis + 1:], tuple(range(len(shape))))
                    if r > 1 else piece)
        out = (lax.concatenate(pieces, axis) if pieces else
               lax.slice_in_dim(a, 0, 0, axis=axis))
    if total_repeat_length is not None:
        out = _fit_length(out, axis, canonical_dim(total_repeat_length), a)
    return out


def _repeat_traced(a, repeats, axis: int, length):
    """`repeat` for counts known only at run time, `length` elements long: element i
    of the result is the element whose run of counts covers i (marked by a 1 at each
    run's start and counted up), past the runs the last element, as JAX's."""
    shape = util.shape_of(a)
    axis = util.canonicalize_axis(axis, len(shape))
    if shape[axis] == 0:  # nothing to repeat: JAX gives `a` back, whatever the length
        return a
    counts = broadcast_to(ravel(repeats), (shape[axis],))
    starts = lax.sub(lax.cumsum(counts), counts)
    marks = lax.full((length,), 0, np.int32).at[starts].add(np.int32(1))
    return indexing.take(a, lax.sub(lax.cumsum(marks), np.int32(1)), axis=axis)


def _fit_length(x, axis: int, length, a):
    """`x` cut, or padded with `a`'s last element along `axis` (JAX's fill, even where
    that element's own count is zero), to `length` along `axis` (an int, or a
    symbolic size the constraints can compare with the axis's)."""
    size = util.shape_of(x)[axis]
    if length <= size:
        return lax.slice_in_dim(x, 0, length, axis=axis)
    a_size = util.shape_of(a)[axis]
    last = lax.slice_in_dim(a, a_size - 1, a_size, axis=axis)
    shape = list(util.shape_of(x))
    shape[axis] = length - size
    fill = lax.broadcast_in_dim(last, tuple(shape), tuple(range(len(shape))))
    return lax.concatenate([x, fill], axis)


# --- reversing and rolling -------------------------------------------------------------------

def flip(m, axis=None):
    """`m` with the order of its elements reversed along `axis` (along every axis if
    None).

    Follows `numpy.flip`; a new array, not a view.

    Args:
        m: an array.
        axis: an int or tuple of ints; None flips all axes.

    Returns:
        The flipped array.

    Examples:
        >>> jnp.flip(jnp.array([[1, 2], [3, 4]]), axis=1)
        Array([[2, 1],
               [4, 3]], dtype=int32)
    """
    m = util.ensure_arraylike("flip", m)
    return _flip(m, axis=tuple(axis) if isinstance(axis, (tuple, list)) else axis)


@util.compiled(static_argnames=("axis",))
def _flip(m, axis=None):
    """`flip` as one jitted call (JAX's `_flip`), `axis` static: None, an int or a
    tuple of ints."""
    ndim = _ndim(m)
    if axis is None:
        return lax.rev(m, tuple(range(ndim)))
    axes = axis if isinstance(axis, tuple) else (axis,)
    # A repeated axis is lax.rev's TypeError, as in JAX.
    return lax.rev(m, tuple(util.canonicalize_axis(a, ndim) for a in axes))


def fliplr(m):
    """`m` with its columns (axis 1) in reverse order: `flip(m, axis=1)`.

    Follows `numpy.fliplr`.

    Args:
        m: an array of at least two dimensions.

    Returns:
        The flipped array.

    Raises:
        ValueError: `m` has fewer than two dimensions.

    Examples:
        >>> jnp.fliplr(jnp.array([[1, 2, 3]]))
        Array([[3, 2, 1]], dtype=int32)
    """
    m = util.ensure_arraylike("fliplr", m)
    if _ndim(m) < 2:
        raise ValueError(f"fliplr requires an array of at least 2 dimensions, got shape "
                         f"{util.shape_of(m)}")
    return _flip(m, 1)


def flipud(m):
    """`m` with its rows (axis 0) in reverse order: `flip(m, axis=0)`.

    Follows `numpy.flipud`.

    Args:
        m: an array of at least one dimension.

    Returns:
        The flipped array.

    Raises:
        ValueError: `m` is a scalar.

    Examples:
        >>> jnp.flipud(jnp.array([1, 2, 3]))
        Array([3, 2, 1], dtype=int32)
    """
    m = util.ensure_arraylike("flipud", m)
    if _ndim(m) < 1:
        raise ValueError("flipud requires an array of at least 1 dimension, got a 0-d array")
    return _flip(m, 0)


def roll(a, shift, axis=None):
    """The elements of `a` shifted by `shift` positions along `axis`, those pushed off
    one end coming back at the other (of the flattened array if `axis` is None).

    Follows `numpy.roll`; unlike NumPy, `shift` may be traced.

    Args:
        a: an array.
        shift: an int or tuple of ints (one per axis of `axis`).
        axis: an int or tuple of ints; None rolls the flattened array.

    Returns:
        The rolled array, of `a`'s shape.

    Examples:
        >>> jnp.roll(jnp.array([1, 2, 3, 4]), 1)
        Array([4, 1, 2, 3], dtype=int32)
        >>> jnp.roll(jnp.array([[1, 2], [3, 4]]), -1, axis=1)
        Array([[2, 1],
               [4, 3]], dtype=int32)
    """
    a = util.ensure_arraylike("roll", a)
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), util.shape_of(a))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    axes = tuple(util.canonicalize_axis(ax, _ndim(a)) for ax in axes)
    shifts = shift if isinstance(shift, (tuple, list)) else (shift,)
    static = builtins.all(util.is_python_scalar(s) or isinstance(s, np.integer)
                          for s in shifts)
    if static and builtins.all(isinstance(util.shape_of(a)[ax], int) for ax in axes):
        shifts = tuple(operator.index(s) for s in shifts)
        if len(shifts) != 1 and len(axes) != 1 and len(shifts) != len(axes):
            raise ValueError(f"roll: shift {shift} and axis {axis} must have the same length")
        return _roll_static(a, shifts, axes)
    from plax_stdlib.numpy.creation import asarray
    shift = asarray(shift)
    if util.dtype_category(util.dtype_of(shift)) not in "iu":
        raise TypeError(f"roll: shift must be an integer scalar, got "
                        f"{util.dtype_of(shift)}{list(util.shape_of(shift))}")
    return _roll_dynamic(a, shift, axes)


@util.compiled(static_argnums=(1, 2))
def _roll_static(a, shift: tuple, axis: tuple):
    """`roll` by concrete shifts, one jitted call (JAX's `_roll_static`): along each
    axis, the last `shift` elements (modulo the size) are moved to the front by
    concatenating two slices."""
    for ax, s in zip(*np.broadcast_arrays(axis, shift)):
        size = util.shape_of(a)[ax]
        if size == 0:
            continue
        split = int(-s) % size
        a = lax.concatenate([lax.slice_in_dim(a, split, size, axis=int(ax)),
                             lax.slice_in_dim(a, 0, split, axis=int(ax))], int(ax))
    return a


@util.compiled(static_argnums=(2,))
def _roll_dynamic(a, shift, axis: tuple):
    """`roll` by traced shifts (broadcast against `axis`), one jitted call (JAX's
    `_roll_dynamic`): a dynamic slice of the axis's doubled array."""
    from plax_stdlib.numpy.ufuncs import remainder
    shape = util.broadcast_shapes(util.shape_of(shift), np.shape(axis))
    if len(shape) != 1:
        raise ValueError("'shift' and 'axis' arguments to roll must be scalars or 1D arrays")
    for s, ax in zip(broadcast_to(shift, shape), np.broadcast_to(axis, shape)):
        ax = int(ax)
        size = util.shape_of(a)[ax]
        n = lax.convert_element_type(lax.dimension_as_value(size), np.int32)
        s = remainder(lax.convert_element_type(s, np.int32), lax.max(n, np.int32(1)))
        doubled = lax.concatenate([a, a], ax)
        a = lax.dynamic_slice_in_dim(doubled, lax.sub(n, s), size, axis=ax)
    return a


# --- diagonals and triangles ---------------------------------------------------------------------

def diagonal(a, offset: int = 0, axis1: int = 0, axis2: int = 1):
    """The `offset`-th diagonal of the planes spanned by `axis1` and `axis2`, as the
    last axis of the result.

    Follows `numpy.diagonal`, but returns a new array (NumPy's is a read-only view).

    Args:
        a: an array of at least two dimensions.
        offset: 0 the main diagonal, positive above it, negative below.
        axis1: the rows' axis.
        axis2: the columns' axis.

    Returns:
        An array with `axis1` and `axis2` removed and the diagonal appended.

    Examples:
        >>> jnp.diagonal(jnp.arange(9).reshape(3, 3))
        Array([0, 4, 8], dtype=int32)
        >>> jnp.diagonal(jnp.arange(9).reshape(3, 3), offset=1)
        Array([1, 5], dtype=int32)
    """
    a = util.ensure_arraylike("diagonal", a)
    ndim = _ndim(a)
    if ndim < 2:
        raise ValueError(f"diagonal requires an array of at least two dimensions, got shape "
                         f"{util.shape_of(a)}")
    a1, a2 = util.canonicalize_axis(axis1, ndim), util.canonicalize_axis(axis2, ndim)
    if a1 == a2:
        raise ValueError("diagonal: axis1 and axis2 cannot be the same")
    a = moveaxis(a, (a1, a2), (-2, -1))
    offset = operator.index(offset)
    *batch, n, m = util.shape_of(a)
    row0, col0 = min_dim(builtins.max(-offset, 0), n), min_dim(builtins.max(offset, 0), m)
    if not isinstance(n, int) or not isinstance(m, int):  # shape-polymorphic export
        return _symbolic_diagonal(a, len(batch), row0, col0, min_dim(n - row0, m - col0))
    a = lax.slice(a, (0,) * len(batch) + (row0, col0), (*batch, n, m))
    n, m = n - row0, m - col0
    length = builtins.min(n, m)
    flat = lax.reshape(a, (*batch, n * m))
    # Element (i, i) sits at i * (m + 1) of the row-major flattening.
    if length == 0:
        return lax.slice_in_dim(flat, 0, 0, axis=len(batch))
    return lax.slice_in_dim(flat, 0, (length - 1) * (m + 1) + 1, stride=m + 1, axis=len(batch))


def _symbolic_diagonal(a, axis: int, row0, col0, length):
    """The elements `(row0 + i, col0 + i)` of axes `axis, axis + 1`, gathered: the
    strided slice of the flattening needs static sizes."""
    i = lax.iota(dtypes.default_int_dtype(), length)
    rows, cols = (lax.add(i, lax.dimension_as_value(start)) for start in (row0, col0))
    return indexing.gather_indexed(a, [(axis, rows), (axis + 1, cols)], axis,
                                   mode="promise_in_bounds")


def trace(a, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype=None, out=None):
    """The sum of the `offset`-th diagonal of the planes spanned by `axis1` and `axis2`.

    Follows `numpy.trace` (with `sum`'s dtype rules); `out` must be None.

    Args:
        a: an array of at least two dimensions.
        offset: the diagonal (0 the main one).
        axis1: the rows' axis.
        axis2: the columns' axis.
        dtype: the dtype to sum in.
        out: unsupported; must be None.

    Returns:
        The sums, with `axis1` and `axis2` removed.

    Examples:
        >>> jnp.trace(jnp.arange(9).reshape(3, 3))
        Array(12, dtype=int32)
    """
    from plax_stdlib.numpy.creation import eye, zeros_like
    from plax_stdlib.numpy.reductions import sum as sum_
    from plax_stdlib.numpy.ufuncs import where
    a = util.ensure_arraylike("trace", a)
    if out is not None:
        raise NotImplementedError("The 'out' argument to plax.numpy.trace is not supported.")
    shape = util.shape_of(a)
    if len(shape) < 2:
        raise ValueError(f"trace requires an array of at least two dimensions, got shape "
                         f"{shape}")
    a1, a2 = util.canonicalize_axis(axis1, len(shape)), util.canonicalize_axis(axis2, len(shape))
    if a1 == a2:
        raise ValueError("trace: axis1 and axis2 cannot be the same")
    dtype = util.check_user_dtype(dtype, "trace")
    a = moveaxis(a, (a1, a2), (-2, -1))
    on_diagonal = eye(shape[a1], shape[a2], k=offset, dtype=bool)
    return sum_(where(on_diagonal, a, zeros_like(a)), axis=(-2, -1), dtype=dtype)


def _triangle(name: str, keep_lower: bool, example_output: str):
    def fn(m, k: int = 0):
        m = util.ensure_arraylike(name, m)
        shape = util.shape_of(m)
        if len(shape) < 2:
            raise ValueError(f"Argument to plax.numpy.{name} must be at least 2-dimensional, "
                             f"got shape {shape}")
        k = operator.index(k)
        # JAX's mask, so that the program is JAX's: row + offset >= col marks the lower
        # triangle, through the k-th diagonal for tril and below it for triu.
        rows = lax.broadcasted_iota(np.int32, shape[-2:], 0)
        lower = lax.ge(lax.add(rows, np.int32(k if keep_lower else k - 1)),
                       lax.broadcasted_iota(np.int32, shape[-2:], 1))
        lower = lax.broadcast(lower, shape[:-2])
        zeros = util.full_like(m, 0)
        return util.select_n(lower, zeros, m) if keep_lower else util.select_n(lower, m, zeros)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = _TRIANGLE_DOC.format(name=name, out=example_output,
                                      zeroed="above" if keep_lower else "below")
    return fn


_TRIANGLE_DOC = """`m` with the elements {zeroed} its `k`-th diagonal set to zero (for a
    stack of matrices, in each of the matrices of its last two axes).

    Follows `numpy.{name}`.

    Args:
        m: an array of at least two dimensions.
        k: the diagonal: 0 the main one, positive above it, negative below (static).

    Returns:
        An array of `m`'s shape and dtype.

    Raises:
        ValueError: `m` has fewer than two dimensions.

    Examples:
        >>> jnp.{name}(jnp.ones((3, 3), jnp.int32))
        {out}
    """

tril = _triangle("tril", keep_lower=True, example_output="""Array([[1, 0, 0],
               [1, 1, 0],
               [1, 1, 1]], dtype=int32)""")
triu = _triangle("triu", keep_lower=False, example_output="""Array([[1, 1, 1],
               [0, 1, 1],
               [0, 0, 1]], dtype=int32)""")


# --- inspection -------------------------------------------------------------------------------

def _shape(fun_name: str, a) -> tuple:
    """The shape of an array-like; of anything else (a list) NumPy's, with JAX
    0.10.2's DeprecationWarning (these three functions still accept them). An object
    with a `shape` (an array, a tracer, a NumPy array of any dtype, a structured one
    too) answers it itself, as in JAX: nothing here reads or converts its values."""
    if hasattr(a, "shape"):
        return a.shape
    if util.is_arraylike(a) or isinstance(a, SymbolicDimension):
        return util.shape_of(util.operand(a))
    warnings.warn(f"{fun_name} requires ndarray or scalar arguments, got {type(a)} at "
                  "position 0. In a future JAX release this will be an error.",
                  DeprecationWarning, stacklevel=3)
    return np.shape(a)


def ndim(a) -> int:
    """The number of dimensions of `a` (0 for a scalar), as a Python int.

    Works on arrays, tracers (the rank is static) and scalars; lists are deprecated
    (a DeprecationWarning, as in JAX).

    Args:
        a: an array or array-like.

    Returns:
        An int.

    Examples:
        >>> jnp.ndim(jnp.ones((2, 3))), jnp.ndim(5.0)
        (2, 0)
    """
    return len(_shape("ndim", a))


def shape(a) -> tuple[int, ...]:
    """The shape of `a` as a tuple of Python ints (static, also for traced values).

    Args:
        a: an array or array-like.

    Returns:
        A tuple of ints.

    Examples:
        >>> jnp.shape(jnp.ones((2, 3))), jnp.shape(1.0)
        ((2, 3), ())
    """
    return _shape("shape", a)


def size(a, axis: int | Sequence[int] | None = None) -> int:
    """The number of elements of `a` (along `axis` if given), as a Python int.

    Args:
        a: an array or array-like.
        axis: an axis, or a tuple or list of distinct axes, whose lengths to multiply.

    Returns:
        An int.

    Raises:
        ValueError: an axis out of range, or one given twice.

    Examples:
        >>> jnp.size(jnp.ones((2, 3))), jnp.size(jnp.ones((2, 3)), axis=1)
        (6, 3)
        >>> jnp.size(jnp.ones((2, 3, 4)), axis=(0, 2))
        8
    """
    a_shape = _shape("size", a)
    return math.prod(a_shape[d] for d in util.canonicalize_axes(axis, len(a_shape)))


def isscalar(element) -> bool:
    """Whether `element` is a scalar: a Python number or a zero-dimensional array-like.

    Unlike `numpy.isscalar`, a 0-d array counts as a scalar (as in JAX), since plax
    has no separate scalar types.

    Args:
        element: any object.

    Returns:
        A bool.

    Examples:
        >>> jnp.isscalar(1.0), jnp.isscalar(jnp.array(1.0)), jnp.isscalar(jnp.ones(2))
        (True, True, False)
    """
    return util.is_arraylike(element) and not util.shape_of(util.operand(element))


jax_jits.apply(globals())  # JAX's jitted functions become jit functions

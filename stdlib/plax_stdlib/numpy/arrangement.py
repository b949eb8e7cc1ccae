"""Joining, splitting and turning arrays, beyond `shape_ops`: block, column_stack,
hsplit/vsplit/dsplit, rollaxis, rot90.
"""
from __future__ import annotations

import operator

from plax_stdlib import jax_jits, lax
from plax_stdlib.numpy import shape_ops, util


def _at_least(x, ndim: int):
    shape = util.shape_of(x)
    return lax.reshape(x, (1,) * (ndim - len(shape)) + shape) if len(shape) < ndim else x


def _block(xs) -> tuple:
    """(the joined array, the nesting depth of `xs`)."""
    if isinstance(xs, tuple):
        raise ValueError(f"plax.numpy.block does not allow tuples, got {xs!r}")
    if isinstance(xs, list):
        if not xs:
            raise ValueError("plax.numpy.block does not allow empty list arguments")
        parts, depths = zip(*(_block(x) for x in xs))
        if any(d != depths[0] for d in depths):
            raise ValueError("Mismatched list depths in plax.numpy.block")
        rank = max(depths[0], max(len(util.shape_of(p)) for p in parts))
        parts = [_at_least(p, rank) for p in parts]
        return shape_ops.concatenate(parts, axis=-depths[0]), depths[0] + 1
    return util.ensure_arraylike("block", xs), 1


def block(arrays):
    """An array assembled from nested lists of blocks: the innermost lists are joined
    along the last axis, the lists around them along the axis before, and so on.

    Follows `numpy.block`.

    Args:
        arrays: nested lists of arrays (or scalars), of consistent depth.

    Returns:
        The assembled array.

    Raises:
        ValueError: lists of inconsistent depth, or blocks whose shapes do not fit.

    Examples:
        >>> a = jnp.ones((2, 2), jnp.int32)
        >>> jnp.block([[a, 2 * a], [3 * a, jnp.zeros((2, 2), jnp.int32)]])
        Array([[1, 1, 2, 2],
               [1, 1, 2, 2],
               [3, 3, 0, 0],
               [3, 3, 0, 0]], dtype=int32)
    """
    return util.as_array(_block(arrays)[0])


def column_stack(tup):
    """1-D arrays as columns (and 2-D arrays as they are), joined along axis 1.

    Follows `numpy.column_stack`.

    Args:
        tup: a sequence of 1-D or 2-D arrays with the same number of rows.

    Returns:
        A 2-D array.

    Examples:
        >>> jnp.column_stack([jnp.array([1, 2]), jnp.array([3, 4])])
        Array([[1, 3],
               [2, 4]], dtype=int32)
    """
    if util.is_arraylike(tup) and not isinstance(tup, (list, tuple)):
        tup = [tup[i] for i in range(util.shape_of(tup)[0])]
    arrays = [util.ensure_arraylike("column_stack", a) for a in tup]
    # As JAX's: a row (atleast_2d), transposed into a column.
    arrays = [lax.transpose(shape_ops.atleast_2d(a), (1, 0)) if len(util.shape_of(a)) < 2
              else a for a in arrays]
    return shape_ops.concatenate(arrays, axis=1)


def _split_along(name: str, ary, indices_or_sections, axis: int):
    """`split` along `axis` (along axis 0 of a 1-D array for hsplit). As JAX's, and
    unlike NumPy's, the functions take any array that has the axis: an array without
    it is an IndexError (JAX's class)."""
    ary = util.ensure_arraylike(name, ary)
    if axis == 1 and len(util.shape_of(ary)) == 1:
        axis = 0
    return shape_ops.split(ary, indices_or_sections, axis=axis)


def hsplit(ary, indices_or_sections) -> list:
    """`split` along axis 1 (along axis 0 for 1-D arrays).

    Follows `numpy.hsplit`.

    Args:
        ary: an array.
        indices_or_sections: a number of equal sections, or cut indices.

    Returns:
        A list of arrays.

    Examples:
        >>> jnp.hsplit(jnp.arange(6).reshape(2, 3), [1])
        [Array([[0],
               [3]], dtype=int32), Array([[1, 2],
               [4, 5]], dtype=int32)]
    """
    return _split_along("hsplit", ary, indices_or_sections, 1)


def vsplit(ary, indices_or_sections) -> list:
    """`split` along axis 0.

    Follows `numpy.vsplit`, but (as JAX's) also splits 1-D arrays.

    Args:
        ary: an array of at least one dimension.
        indices_or_sections: a number of equal sections, or cut indices.

    Returns:
        A list of arrays.

    Raises:
        IndexError: a 0-d `ary`.

    Examples:
        >>> jnp.vsplit(jnp.arange(4).reshape(2, 2), 2)
        [Array([[0, 1]], dtype=int32), Array([[2, 3]], dtype=int32)]
        >>> jnp.vsplit(jnp.arange(4), 2)
        [Array([0, 1], dtype=int32), Array([2, 3], dtype=int32)]
    """
    return _split_along("vsplit", ary, indices_or_sections, 0)


def dsplit(ary, indices_or_sections) -> list:
    """`split` along axis 2.

    Follows `numpy.dsplit`.

    Args:
        ary: an array of at least three dimensions.
        indices_or_sections: a number of equal sections, or cut indices.

    Returns:
        A list of arrays.

    Raises:
        IndexError: `ary` has fewer than three dimensions (as JAX's).

    Examples:
        >>> [p.shape for p in jnp.dsplit(jnp.ones((1, 2, 4)), 2)]
        [(1, 2, 2), (1, 2, 2)]
    """
    return _split_along("dsplit", ary, indices_or_sections, 2)


def rollaxis(a, axis: int, start: int = 0):
    """`a` with `axis` moved to just before position `start` (NumPy's older form of
    `moveaxis`, which is clearer).

    Follows `numpy.rollaxis`.

    Args:
        a: an array.
        axis: the axis to move.
        start: the position it is moved before.

    Returns:
        The array with the axis moved.

    Examples:
        >>> jnp.rollaxis(jnp.ones((2, 3, 4)), 2).shape
        (4, 2, 3)
    """
    a = util.ensure_arraylike("rollaxis", a)
    ndim = len(util.shape_of(a))
    start = operator.index(start)
    axis = util.canonicalize_axis(axis, ndim)
    if not -ndim <= start <= ndim:
        raise ValueError(f"rollaxis: start={start} must satisfy {-ndim}<=start<={ndim}")
    start = start + ndim if start < 0 else start
    if start > axis:
        start -= 1
    return _rollaxis(a, axis=axis, start=start)


def _rollaxis(a, axis: int, start: int):
    return shape_ops.moveaxis(a, axis, start)


def rot90(m, k: int = 1, axes: tuple[int, int] = (0, 1)):
    """`m` rotated by 90 degrees `k` times in the plane of `axes` (from the first axis
    toward the second).

    Follows `numpy.rot90`.

    Args:
        m: an array of at least two dimensions.
        k: the number of quarter turns (negative turns the other way).
        axes: the two axes of the plane.

    Returns:
        The rotated array.

    Raises:
        ValueError: `axes` that are not two distinct axes.

    Examples:
        >>> jnp.rot90(jnp.array([[1, 2], [3, 4]]))
        Array([[2, 4],
               [1, 3]], dtype=int32)
    """
    m = util.ensure_arraylike("rot90", m)
    ndim = len(util.shape_of(m))
    if ndim < 2:
        raise ValueError(f"rot90 requires an array of at least two dimensions, got shape "
                         f"{util.shape_of(m)}")
    ax1, ax2 = (util.canonicalize_axis(ax, ndim) for ax in axes)
    if ax1 == ax2:
        raise ValueError("rot90: axes must be different")
    return _rot90(m, k=operator.index(k) % 4, axes=(ax1, ax2))


def _rot90(m, k: int, axes: tuple[int, int]):
    """Quarter turns as JAX makes them: flips (`_flip` calls) and a transpose."""
    ax1, ax2 = axes
    if k == 0:
        return m
    if k == 2:
        return shape_ops.flip(shape_ops.flip(m, ax1), ax2)
    perm = list(range(len(util.shape_of(m))))
    perm[ax1], perm[ax2] = perm[ax2], perm[ax1]
    if k == 1:
        return lax.transpose(shape_ops.flip(m, ax2), tuple(perm))
    return shape_ops.flip(lax.transpose(m, tuple(perm)), ax2)


jax_jits.apply(globals())  # JAX's jitted functions become jit functions

"""Functions `jax.lax` offers that are compositions of other primitives:
reciprocal, broadcast_shapes/broadcast_like/broadcast_to_rank, collapse, empty, dtype,
shape_as_value, index_take; and the typing aliases DotDimensionNumbers,
PrecisionLike, ConvGeneralDilatedDimensionNumbers."""
from __future__ import annotations

import math
from typing import Any, Sequence, Union

import numpy as np

from plax.extend import dtypes
from plax.extend.core import get_aval
from plax_stdlib.lax.convolution import ConvDimensionNumbers
from plax_stdlib.lax.creation import full
from plax_stdlib.lax.dot_algorithm import DotAlgorithm, DotAlgorithmPreset
from plax_stdlib.lax.dot_general import Precision
from plax_stdlib.lax.elementwise import integer_pow
from plax_stdlib.lax.gathers import GatherDimensionNumbers, gather
from plax_stdlib.lax.shape_ops import broadcast_in_dim, concatenate, reshape

DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]],
                            tuple[Sequence[int], Sequence[int]]]
PrecisionLike = Union[None, str, Precision, tuple[str, str], tuple[Precision, Precision],
                      DotAlgorithm, DotAlgorithmPreset]
ConvGeneralDilatedDimensionNumbers = Union[None, ConvDimensionNumbers,
                                           tuple[str, str, str]]


def reciprocal(x):
    """Elementwise `1 / x`.

    Args:
        x: an array of a floating-point or complex dtype.

    Returns:
        An array of `x`'s shape and dtype.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.reciprocal(jnp.array([2.0, 0.25]))
        Array([0.5, 4. ], dtype=float32)
    """
    return integer_pow(x, -1)


def broadcast_shapes(*shapes) -> tuple[int, ...]:
    """The shape that NumPy broadcasting gives arrays of `shapes`.

    Args:
        *shapes: tuples of ints.

    Returns:
        The broadcast shape, a tuple.

    Raises:
        ValueError: the shapes do not broadcast.

    Examples:
        >>> from plax import lax
        >>> lax.broadcast_shapes((3, 1), (1, 4), (4,))
        (3, 4)
    """
    shapes = [tuple(int(d) for d in s) for s in shapes]
    if not shapes:
        return ()
    ndim = max(len(s) for s in shapes)
    padded = [(1,) * (ndim - len(s)) + s for s in shapes]
    out = []
    for sizes in zip(*padded):
        big = {d for d in sizes if d != 1}
        if len(big) > 1:
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}")
        out.append(big.pop() if big else 1)
    return tuple(out)


def broadcast_like(arr, like_arr):
    """Broadcasts `arr` to the shape of `like_arr`, NumPy style: new leading
    dimensions, and size-1 dimensions stretched.

    Args:
        arr: an array.
        like_arr: an array (or anything with `shape`) whose shape `arr`
            broadcasts to.

    Returns:
        `arr` broadcast to `like_arr.shape`.

    Raises:
        ValueError: the shapes do not broadcast.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.broadcast_like(jnp.array([1, 2]), jnp.zeros((2, 2)))
        Array([[1, 2],
               [1, 2]], dtype=int32)
    """
    shape, target = get_aval(arr).shape, get_aval(like_arr).shape
    if broadcast_shapes(shape, target) != target:
        raise ValueError(f"broadcast_like: an array of shape {shape} does not broadcast to "
                         f"shape {target}")
    return broadcast_in_dim(arr, target, tuple(range(len(target) - len(shape), len(target))))


def broadcast_to_rank(x, rank: int):
    """Adds leading dimensions of size 1 to give `x` a rank.

    Args:
        x: an array.
        rank: the rank wanted (at least `x.ndim`).

    Returns:
        `x` reshaped to rank `rank`.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.broadcast_to_rank(jnp.ones(3), 3).shape
        (1, 1, 3)
    """
    shape = get_aval(x).shape
    if rank < len(shape):
        raise ValueError(f"broadcast_to_rank: rank {rank} is smaller than the rank of x "
                         f"({len(shape)})")
    return reshape(x, (1,) * (rank - len(shape)) + shape) if rank > len(shape) else x


def collapse(operand, start_dimension: int, stop_dimension: int | None = None):
    """Merges consecutive dimensions into one.

    Args:
        operand: an array.
        start_dimension: the first dimension to merge.
        stop_dimension: one past the last (default: the end).

    Returns:
        `operand` reshaped with those dimensions as one.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.collapse(jnp.zeros((2, 3, 4, 5)), 1, 3).shape
        (2, 12, 5)
    """
    shape = get_aval(operand).shape
    start, stop, _ = slice(start_dimension, stop_dimension).indices(len(shape))
    if start > stop:
        raise ValueError(f"collapse: start_dimension {start_dimension} must come before "
                         f"stop_dimension {stop_dimension} for a shape {shape}")
    return reshape(operand, shape[:start] + (math.prod(shape[start:stop]),) + shape[stop:])


def empty(shape, dtype, *, out_sharding=None):
    """An array of a shape and dtype whose values are not specified (plax fills it
    with zeros); for buffers that are completely overwritten.

    Args:
        shape: the shape.
        dtype: the dtype.
        out_sharding: the result's sharding.

    Returns:
        An array of `shape` and `dtype`.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.empty((2, 3), jnp.float32).shape
        (2, 3)
    """
    return full(shape, 0, dtype, sharding=out_sharding)


def dtype(x: Any) -> np.dtype:
    """The dtype that arrays of a value (or dtype-like) have in plax: Python
    scalars and 64-bit types are canonicalized (to 32 bits unless x64 is on).

    Args:
        x: a value, array, dtype, type or dtype name.

    Returns:
        A `numpy.dtype`.

    Raises:
        TypeError: `x` does not name a dtype.

    Examples:
        >>> import numpy as np
        >>> from plax import lax
        >>> lax.dtype(1.0), lax.dtype(np.int64), lax.dtype("bfloat16")
        (dtype('float32'), dtype('int32'), dtype(bfloat16))
    """
    return dtypes.dtype(x, canonicalize=True)


def shape_as_value(shape):
    """A shape as a 1-d integer array of its dimensions (symbolic ones computed at
    run time).

    Args:
        shape: a tuple of dimension sizes.

    Returns:
        A 1-d int32 array.

    Examples:
        >>> from plax import lax
        >>> lax.shape_as_value((2, 3))
        Array([2, 3], dtype=int32)
    """
    index = dtypes.default_int_dtype()
    dims = [broadcast_in_dim(full((), int(d), index), (1,), ()) for d in shape]
    return concatenate(dims, 0) if dims else full((0,), 0, index)


def index_take(src, idxs, axes: Sequence[int]):
    """Picks elements of `src` at index tuples over some of its dimensions.

    Row i of `idxs` gives the indices into `axes`; the result has one row per
    index tuple, followed by `src`'s dimensions that are not indexed.

    Args:
        src: an array.
        idxs: an integer array of shape (n, len(axes)).
        axes: the dimensions of `src` that `idxs`' columns index.

    Returns:
        An array of shape `(n, *remaining dimensions)`.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> m = jnp.arange(6).reshape(2, 3)
        >>> lax.index_take(m, jnp.array([[1, 2], [0, 0]]), (0, 1))
        Array([5, 0], dtype=int32)
    """
    axes = tuple(int(a) for a in axes)
    shape = get_aval(src).shape
    dnums = GatherDimensionNumbers(
        offset_dims=tuple(range(1, 1 + len(shape) - len(axes))), collapsed_slice_dims=axes,
        start_index_map=axes)
    sizes = tuple(1 if d in axes else n for d, n in enumerate(shape))
    return gather(src, idxs, dnums, sizes, mode="clip")

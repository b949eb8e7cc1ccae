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
    """The shape NumPy broadcasting gives `shapes` (ValueError if they do not
    broadcast)."""
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
    """`arr` broadcast (NumPy style: new leading dimensions, size-1 dimensions
    stretched) to the shape of `like_arr`."""
    shape, target = get_aval(arr).shape, get_aval(like_arr).shape
    if broadcast_shapes(shape, target) != target:
        raise ValueError(f"broadcast_like: an array of shape {shape} does not broadcast to "
                         f"shape {target}")
    return broadcast_in_dim(arr, target, tuple(range(len(target) - len(shape), len(target))))


def broadcast_to_rank(x, rank: int):
    """`x` with leading unit dimensions added to give it rank `rank`."""
    shape = get_aval(x).shape
    if rank < len(shape):
        raise ValueError(f"broadcast_to_rank: rank {rank} is smaller than the rank of x "
                         f"({len(shape)})")
    return reshape(x, (1,) * (rank - len(shape)) + shape) if rank > len(shape) else x


def collapse(operand, start_dimension: int, stop_dimension: int | None = None):
    """`operand` with dimensions start_dimension..stop_dimension-1 merged into one."""
    shape = get_aval(operand).shape
    start, stop, _ = slice(start_dimension, stop_dimension).indices(len(shape))
    if start > stop:
        raise ValueError(f"collapse: start_dimension {start_dimension} must come before "
                         f"stop_dimension {stop_dimension} for a shape {shape}")
    return reshape(operand, shape[:start] + (math.prod(shape[start:stop]),) + shape[stop:])


def empty(shape, dtype, *, out_sharding=None):
    """An array of `shape` and `dtype` whose values are unspecified (zeros here)."""
    return full(shape, 0, dtype, sharding=out_sharding)


def dtype(x: Any) -> np.dtype:
    """The dtype of a value or dtype-like, as arrays of it would have (x64-aware)."""
    return dtypes.dtype(x, canonicalize=True)


def shape_as_value(shape):
    """`shape` as a 1-D array of its dimensions."""
    index = dtypes.default_int_dtype()
    dims = [broadcast_in_dim(full((), int(d), index), (1,), ()) for d in shape]
    return concatenate(dims, 0) if dims else full((0,), 0, index)


def index_take(src, idxs, axes: Sequence[int]):
    """`src` at the index tuples (rows of `idxs`) over `axes`: one row of the result
    per index tuple, followed by the dimensions not indexed."""
    axes = tuple(int(a) for a in axes)
    shape = get_aval(src).shape
    dnums = GatherDimensionNumbers(
        offset_dims=tuple(range(1, 1 + len(shape) - len(axes))), collapsed_slice_dims=axes,
        start_index_map=axes)
    sizes = tuple(1 if d in axes else n for d, n in enumerate(shape))
    return gather(src, idxs, dnums, sizes, mode="clip")

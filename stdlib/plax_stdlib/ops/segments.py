"""Segment reductions: `segment_sum(data, segment_ids)[s]` combines the rows
`data[i]` with `segment_ids[i] == s`, by one scatter into an array of the monoid's
identity (so empty segments hold 0 for sums, 1 for products, the lowest value for
maxima and the highest for minima). Ids outside `[0, num_segments)` are dropped
(`mode="fill"`, the default) or clamped (`mode="clip"`).

With `bucket_size`, rows are combined in buckets of that many consecutive rows
first, then the buckets are reduced: smaller partial results, for accuracy.

`out_sharding` (on a mesh with Explicit axes) lays the result out as it says, the
scatter computed with those axes made Auto, as JAX does.
"""
from __future__ import annotations

import math
import operator
from typing import Any, Callable

import numpy as np

from plax.extend import dtypes
from plax_stdlib import lax
from plax_stdlib.lax import reductions
from plax_stdlib.lax.out_sharding import laid_out
from plax_stdlib.numpy import util


def _segments(name: str, scatter: Callable, identity: Callable, reduce: Callable):
    def segment_reduce(data: Any, segment_ids: Any, num_segments: int | None = None,
                       indices_are_sorted: bool = False, unique_indices: bool = False,
                       bucket_size: int | None = None, mode: Any = None,
                       out_sharding: Any = None):
        data, ids = util.ensure_arraylike(name, data, segment_ids)
        data, ids = util.as_array(data), util.as_array(ids)
        _check(name, data, ids)
        num_segments = _num_segments(name, ids, num_segments)
        if bucket_size is not None:
            bucket_size = operator.index(bucket_size)
            if bucket_size < 1:
                raise ValueError(f"{name}: bucket_size must be positive, got {bucket_size}")
        options = dict(indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                       mode=mode)
        return laid_out(name, out_sharding, lambda d, i: _reduced(
            d, i, num_segments, bucket_size, options), data, ids)

    def _reduced(data, ids, num_segments: int, bucket_size: int | None, options: dict):
        """The segments' reduction (in buckets of `bucket_size` rows first)."""
        dtype, rest = data.dtype, tuple(data.shape[1:])
        if bucket_size is None:
            out = lax.full((num_segments, *rest), identity(dtype), dtype)
            dnums = lax.ScatterDimensionNumbers(tuple(range(1, data.ndim)), (0,), (0,))
            return scatter(out, lax.expand_dims(ids, (1,)), data, dnums, **options)
        rows = ids.shape[0]
        out = lax.full((max(math.ceil(rows / bucket_size), 1), num_segments, *rest),
                       identity(dtype), dtype)
        buckets = lax.div(lax.iota(ids.dtype, rows), np.asarray(bucket_size, ids.dtype))
        indices = lax.concatenate([lax.expand_dims(buckets, (1,)), lax.expand_dims(ids, (1,))],
                                  1)
        dnums = lax.ScatterDimensionNumbers(tuple(range(1, data.ndim)), (0, 1), (0, 1))
        return reduce(scatter(out, indices, data, dnums, **options), (0,))

    segment_reduce.__name__ = segment_reduce.__qualname__ = name
    segment_reduce.__doc__ = (
        f"`{name}(data, segment_ids)[s]`: the {name.split('_')[1]} of the rows of `data` "
        "whose id in `segment_ids` (one per row) is `s`, for `s < num_segments` "
        "(default: the largest id plus one, which needs concrete ids).")
    return segment_reduce


def _check(name: str, data, ids) -> None:
    if not dtypes.issubdtype(ids.dtype, np.integer):
        raise TypeError(f"{name}: segment_ids must be integers, got dtype {ids.dtype.name}")
    if ids.ndim != 1 or data.ndim < 1 or data.shape[0] != ids.shape[0]:
        raise ValueError(f"{name}: segment_ids must hold one id per row of data (along its "
                         f"first axis), got segment_ids of shape {ids.shape} for data of "
                         f"shape {data.shape}")


def _num_segments(name: str, ids, num_segments) -> int:
    if num_segments is None:
        values = np.asarray(util.concrete_or_error(
            ids, f"{name} without num_segments (the number of segments fixes the output's "
                 "shape)"))
        if values.size == 0:
            raise ValueError(f"{name}: num_segments is needed when segment_ids is empty")
        num_segments = int(values.max()) + 1
    num_segments = operator.index(util.concrete_or_error(num_segments,
                                                         f"{name} argument num_segments"))
    if num_segments < 0:
        raise ValueError(f"{name}: num_segments must be non-negative, got {num_segments}")
    return num_segments


segment_sum = _segments("segment_sum", lax.scatter_add, lambda dt: 0, lax.reduce_sum)
segment_prod = _segments("segment_prod", lax.scatter_mul, lambda dt: 1, lax.reduce_prod)
segment_max = _segments("segment_max", lax.scatter_max, reductions.lowest_value, lax.reduce_max)
segment_min = _segments("segment_min", lax.scatter_min, reductions.highest_value,
                        lax.reduce_min)

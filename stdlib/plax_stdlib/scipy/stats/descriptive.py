"""Summaries of samples: `mode`, `rankdata` and `sem`. The first two sort each slice
and find the runs of equal values in it (NaNs count as equal, sorted last, as SciPy)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

import plax
from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.numpy import util
from plax_stdlib.scipy.stats.distribution_util import promote

_RANK_METHODS = ("average", "min", "max", "dense", "ordinal")


class ModeResult(NamedTuple):
    mode: plax.Array
    count: plax.Array


def _check_nan_policy(name, nan_policy, supported=("propagate",)):
    if nan_policy not in ("propagate", "omit", "raise"):
        raise ValueError(f"{name}: illegal nan_policy value {nan_policy!r}; expected one of "
                         "'propagate', 'omit', 'raise'")
    if nan_policy not in supported:
        raise NotImplementedError(f"{name}: nan_policy={nan_policy!r} is not supported (it "
                                  "needs the values' NaNs known while tracing)")


def _runs(sorted_x):
    """For values sorted along the last axis: the 1-based positions where each element's
    run of equal values starts and ends, and whether a new run starts at it."""
    n = sorted_x.shape[-1]
    differ = sorted_x[..., 1:] != sorted_x[..., :-1]
    differ = jnp.logical_and(differ, ~jnp.logical_and(jnp.isnan(sorted_x[..., 1:]),
                                                      jnp.isnan(sorted_x[..., :-1])))
    edge = jnp.ones(sorted_x.shape[:-1] + (1,), bool)
    starts = jnp.concatenate([edge, differ], axis=-1)
    ends = jnp.concatenate([differ, edge], axis=-1)
    position = jnp.broadcast_to(jnp.arange(1, n + 1), sorted_x.shape)
    axis = sorted_x.ndim - 1
    first = lax.cummax(jnp.where(starts, position, 0), axis=axis)
    last = lax.cummin(jnp.where(ends, position, n + 1), axis=axis, reverse=True)
    return first, last, starts


def mode(a, axis=0, nan_policy="propagate", keepdims=False):
    """The most common value along `axis` (the smallest of equally common ones) and its
    count; over the flattened array for axis=None. An empty slice has mode NaN, count 0."""
    util.check_arraylike("mode", a)
    _check_nan_policy("mode", nan_policy)
    x = jnp.atleast_1d(a)
    if axis is None:
        x, axis = jnp.ravel(x), 0
    axis = util.canonicalize_axis(axis, x.ndim)
    x = jnp.moveaxis(x, axis, -1)
    if x.shape[-1] == 0:
        modes = jnp.full(x.shape[:-1], np.nan)
        counts = jnp.zeros(x.shape[:-1], modes.dtype)
    else:
        ordered = jnp.sort(x, axis=-1)
        first, last, _ = _runs(ordered)
        run_length = last - first + 1
        best = jnp.argmax(run_length, axis=-1, keepdims=True)
        modes = jnp.take_along_axis(ordered, best, axis=-1)[..., 0]
        counts = jnp.take_along_axis(run_length, best, axis=-1)[..., 0].astype(np.int32)
    if keepdims:
        modes, counts = (jnp.expand_dims(v, axis) for v in (modes, counts))
    if np.ndim(a) == 0 and not keepdims:
        return ModeResult(modes.reshape(()), counts.reshape(()))
    return ModeResult(modes, counts)


def rankdata(a, method="average", *, axis=None, nan_policy="propagate"):
    """Ranks from 1 along `axis` (of the flattened array, 1-D, for axis=None), ties broken by
    `method`: 'average', 'min', 'max', 'dense' (consecutive ranks of distinct values) or
    'ordinal' (order of appearance). A slice holding a NaN ranks all NaN."""
    util.check_arraylike("rankdata", a)
    _check_nan_policy("rankdata", nan_policy)
    if method not in _RANK_METHODS:
        raise ValueError(f"rankdata: unknown method {method!r}; expected one of {_RANK_METHODS}")
    x = jnp.asarray(a)
    flat = axis is None
    if flat:
        x, axis = jnp.ravel(x), 0
    axis = util.canonicalize_axis(axis, max(x.ndim, 1))
    x = jnp.moveaxis(jnp.atleast_1d(x), axis, -1)
    order = jnp.argsort(x, axis=-1, stable=True)
    first, last, starts = _runs(jnp.take_along_axis(x, order, axis=-1))
    float_dtype = jnp.result_type(float)
    by_method = {"average": (first + last) / 2, "min": first, "max": last,
                 "dense": jnp.cumsum(starts, axis=-1), "ordinal": jnp.argsort(order, axis=-1) + 1}
    ranks = by_method[method].astype(float_dtype)
    if method != "ordinal":
        ranks = jnp.take_along_axis(ranks, jnp.argsort(order, axis=-1), axis=-1)
    has_nan = jnp.any(jnp.isnan(x), axis=-1, keepdims=True) if jnp.issubdtype(
        x.dtype, np.inexact) else False
    ranks = jnp.where(has_nan, np.nan, ranks)
    return ranks if flat else jnp.moveaxis(ranks, -1, axis)


def sem(a, axis=0, ddof=1, nan_policy="propagate", *, keepdims=False):
    """The standard error of the mean, std(ddof) / √n, along `axis` (all of it for None);
    nan_policy='omit' leaves NaNs out of both."""
    _check_nan_policy("sem", nan_policy, supported=("propagate", "omit"))
    b = promote("sem", a)
    if nan_policy == "omit":
        present = ~jnp.isnan(b)
        count = jnp.sum(present, axis=axis, keepdims=True).astype(b.dtype)
        mean = jnp.sum(jnp.where(present, b, 0), axis=axis, keepdims=True) / count
        squares = jnp.sum(jnp.where(present, (b - mean) ** 2, 0), axis=axis, keepdims=True)
        out = jnp.sqrt(squares / (count - ddof) / count)
        return out if keepdims else jnp.squeeze(out, axis)
    size = b.size if axis is None else b.shape[axis]
    return b.std(axis, ddof=ddof, keepdims=keepdims) / np.sqrt(size).astype(b.dtype)

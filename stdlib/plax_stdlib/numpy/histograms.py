"""Counting into bins: bincount, histogram, histogram2d, histogramdd and
histogram_bin_edges.

Results have static shapes: `bincount` needs a concrete input or a static
`length=`, and the number of bins must be static (the edges themselves may be
traced). As in JAX, counts come back in the dtype of the weights (floating point
when there are none, for histograms), `bincount` counts negative values in bin 0
and drops values past `length`, and values equal to the last edge fall in the last
bin.
"""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from plax.extend import dtypes
from plax.extend.core import canonical_dim
from plax.extend.sharding import ShardingTypeError
from plax_stdlib import lax
from plax_stdlib.lax.out_sharding import canonical_out_sharding
from plax_stdlib.numpy import creation, reductions, shape_ops, ufuncs, util
from plax_stdlib.numpy.searching import searchsorted


def bincount(x, weights=None, minlength: int = 0, *, length: int | None = None,
             out_sharding=None):
    """How often each value 0, 1, 2... occurs in the 1-D non-negative integer array `x`
    (or the sum of the matching `weights`).

    Follows `numpy.bincount`, plus JAX's `length`: the result's length is
    `max(x) + 1` (at least `minlength`), which depends on the values, so under `jit`
    give a static `length` (values at or past it are dropped). Negative values are
    ignored rather than an error. A given `out_sharding` must be fully replicated.

    Args:
        x: a 1-D array of non-negative integers (bools count as 0/1).
        weights: an array of `x`'s shape, summed per value.
        minlength: the least length of the result.
        length: the exact length of the result (static).
        out_sharding: a replicated Sharding or PartitionSpec for the result.

    Returns:
        A 1-D array of counts (default int) or of weight sums.

    Raises:
        TypeError: a non-integer `x`.
        ValueError: an `x` that is not 1-D.

    Examples:
        >>> jnp.bincount(jnp.array([0, 1, 1, 3]))
        Array([1, 2, 0, 1], dtype=int32)
        >>> plax.jit(lambda x: jnp.bincount(x, length=5))(jnp.array([0, 1, 1, 3]))
        Array([1, 2, 0, 1, 0], dtype=int32)
    """
    x = util.ensure_arraylike("bincount", x)
    out_sharding = canonical_out_sharding("plax.numpy.bincount", out_sharding)
    if out_sharding is not None and any(e is not None for e in out_sharding.spec):
        raise ShardingTypeError(f"plax.numpy.bincount: out_sharding must be fully "
                                f"replicated, got {out_sharding.spec}")
    if util.dtype_category(util.dtype_of(x)) == "b":
        x = util.convert(x, np.int32)
    if util.dtype_category(util.dtype_of(x)) not in "iu":
        raise TypeError(f"x argument to bincount must have an integer type; got "
                        f"{util.dtype_of(x)}")
    if len(util.shape_of(x)) != 1:
        raise ValueError(f"bincount: only 1-dimensional input is supported, got shape "
                         f"{util.shape_of(x)}")
    minlength = operator.index(util.concrete_or_error(
        minlength, "bincount: 'minlength' must be static"))
    if minlength < 0:
        raise ValueError(f"bincount: minlength must be non-negative, got {minlength}")
    if length is None:
        value = np.asarray(util.concrete_or_error(
            x, "bincount: the length of the result depends on the values of x; pass a "
            "static length= argument to use it under jit"))
        length = max(minlength, int(value.max()) + 1 if value.size else 0)
    else:
        length = canonical_dim(util.concrete_or_error(  # symbolic in export
            length, "bincount: 'length' must be static"))
    if weights is None:
        weights = np.ones((), dtypes.canonicalize_dtype(np.int64))
    else:
        weights = util.ensure_arraylike("bincount", weights)
        if util.shape_of(weights) != util.shape_of(x):
            raise ValueError(f"bincount: weights of shape {util.shape_of(weights)} must have "
                             f"the shape of x, {util.shape_of(x)}")
    out = creation.zeros((length,), util.dtype_of(weights), out_sharding=out_sharding)
    if not util.shape_of(x)[0]:
        return out
    return out.at[ufuncs.maximum(x, 0)].add(weights, mode="drop")


def histogram_bin_edges(a, bins=10, range=None, weights=None):  # noqa: A002
    """The edges of the bins `histogram` uses: `bins + 1` evenly spaced edges over
    `range` (the data's minimum and maximum by default), or `bins` itself if it is a
    1-D array of edges.

    Follows `numpy.histogram_bin_edges` (string `bins` such as "auto" are not
    supported).

    Args:
        a: the data (flattened).
        bins: a number of bins, or a 1-D array of edges.
        range: `(low, high)`, or None for the data's range.
        weights: accepted for NumPy's signature; unused.

    Returns:
        A 1-D array of edges.

    Examples:
        >>> jnp.histogram_bin_edges(jnp.array([0.0, 1.0, 4.0]), bins=4)
        Array([0., 1., 2., 3., 4.], dtype=float32)
    """
    del weights  # only string `bins` estimators would use them
    if isinstance(bins, str):
        raise NotImplementedError("histogram_bin_edges: string values for `bins` are not "
                                  "implemented.")
    a = util.ensure_arraylike("histogram_bin_edges", a)
    dtype = dtypes.to_inexact_dtype(util.dtype_of(a))
    if np.ndim(bins) == 1:
        return creation.asarray(bins, dtype=dtype)
    bins = operator.index(util.concrete_or_error(
        bins, "histogram_bin_edges: the number of bins must be static"))
    if bins < 1:
        raise ValueError(f"histogram_bin_edges: `bins` must be positive, got {bins}")
    if range is None:
        low, high = reductions.min(a), reductions.max(a)
    else:
        if np.shape(range) != (2,) and not (isinstance(range, (tuple, list))
                                            and len(range) == 2):
            raise ValueError(f"histogram: `range` must be None or a pair of scalars, got "
                             f"{range!r}")
        low, high = range
    low, high = util.convert(util.ensure_arraylike("histogram", low), dtype), util.convert(
        util.ensure_arraylike("histogram", high), dtype)
    empty = lax.eq(low, high)  # a degenerate range becomes one unit wide
    low = ufuncs.where(empty, lax.sub(low, np.asarray(0.5, dtype)[()]), low)
    high = ufuncs.where(empty, lax.add(high, np.asarray(0.5, dtype)[()]), high)
    return creation.linspace(low, high, bins + 1, dtype=dtype)


def _bin_index(values, edges):
    """The bin of each value: 1..len(edges)-1 inside, 0 below, len(edges) above; a
    value equal to the last edge is in the last bin."""
    n = util.shape_of(edges)[0]
    index = searchsorted(edges, values, side="right")
    return ufuncs.where(lax.eq(values, edges[n - 1]), n - 1, index)


def histogram(a, bins=10, range=None, weights=None, density: bool | None = None):  # noqa: A002
    """The number (or summed weight) of values of `a` in each bin, and the bins' edges.

    Follows `numpy.histogram`: bins are half-open `[edge_i, edge_{i+1})` except the
    last, which includes its right edge; values outside the range are not counted.
    With `density`, the counts are normalized so the histogram integrates to 1.

    Args:
        a: the data (flattened).
        bins: a number of equal bins, or a 1-D array of edges.
        range: `(low, high)`, or None for the data's range.
        weights: an array of `a`'s shape, summed per bin.
        density: normalize to a probability density.

    Returns:
        A pair `(counts, edges)`.

    Examples:
        >>> counts, edges = jnp.histogram(jnp.array([1, 2, 2, 3, 5]), bins=2)
        >>> counts, edges
        (Array([3., 2.], dtype=float32), Array([1., 3., 5.], dtype=float32))
    """
    a = util.ensure_arraylike("histogram", a)
    if weights is None:
        a, = util.promote_dtypes_inexact(a)
        weights = lax.full(util.shape_of(a), 1, util.dtype_of(a))
    else:
        weights = util.ensure_arraylike("histogram", weights)
        if util.shape_of(weights) != util.shape_of(a):
            raise ValueError(f"histogram: weights of shape {util.shape_of(weights)} should "
                             f"have the shape of a, {util.shape_of(a)}")
        a, weights = util.promote_dtypes_inexact(a, weights)
    edges = histogram_bin_edges(a, bins, range)
    n = util.shape_of(edges)[0]
    index = _bin_index(a, edges)
    counts = creation.zeros((n,), util.dtype_of(weights)).at[index].add(weights)[1:]
    if density:
        widths = lax.sub(edges[1:], edges[:-1])
        counts = lax.div(lax.div(counts, widths), reductions.sum(counts))
    return counts, edges


def histogramdd(sample, bins=10, range=None, weights=None,  # noqa: A002
                density: bool | None = None):
    """The D-dimensional histogram of the N points (rows) of `sample`, with the edges
    along each of the D dimensions.

    Follows `numpy.histogramdd` (see `histogram` for the bins).

    Args:
        sample: an `(N, D)` array of points.
        bins: a number of bins (or one per dimension), or arrays of edges.
        range: one `(low, high)` per dimension, or None.
        weights: one weight per point.
        density: normalize to a probability density.

    Returns:
        `(counts, [edges per dimension])`.

    Examples:
        >>> counts, edges = jnp.histogramdd(jnp.array([[0.0, 0.0], [1.0, 1.0]]), bins=2)
        >>> counts
        Array([[1, 0],
               [0, 1]], dtype=int32)
    """
    sample = util.ensure_arraylike("histogramdd", sample)
    if weights is None:
        sample, = util.promote_dtypes_inexact(sample)
    else:
        weights = util.ensure_arraylike("histogramdd", weights)
        if util.shape_of(weights) != util.shape_of(sample)[:1]:
            raise ValueError(f"histogramdd: should have one weight for each sample; got "
                             f"weights of shape {util.shape_of(weights)} for a sample of "
                             f"shape {util.shape_of(sample)}")
        sample, weights = util.promote_dtypes_inexact(sample, weights)
    if len(util.shape_of(sample)) != 2:
        raise ValueError(f"histogramdd: sample must be 2-D (N points of D dimensions), got "
                         f"shape {util.shape_of(sample)}")
    _, d = util.shape_of(sample)
    if range is not None and (len(range) != d or any(
            r is not None and np.shape(r)[0] != 2 for r in range)):
        raise ValueError(f"histogramdd: for a sample of shape {util.shape_of(sample)}, range "
                         f"must be a sequence of {d} pairs or Nones; got {range!r}")
    try:
        per_dim = list(bins)
    except TypeError:  # one number of bins for every dimension
        per_dim = [bins] * d
    if len(per_dim) != d:
        raise ValueError(f"histogramdd: should be a bin for each of the {d} dimensions, got "
                         f"{len(per_dim)}")
    edges, sizes, flat = [], [], None
    for i in builtins.range(d):
        column = sample[:, i]
        e = histogram_bin_edges(column, per_dim[i], None if range is None else range[i])
        # Bins 0 and n + 1 hold values below and above the edges.
        index = _bin_index(column, e)
        n = util.shape_of(e)[0] + 1
        flat = index if flat is None else ufuncs.add(ufuncs.multiply(flat, n), index)
        edges.append(e)
        sizes.append(n)
    hist = bincount(flat, weights, length=math.prod(sizes))
    hist = lax.reshape(hist, tuple(sizes))
    hist = hist[(slice(1, -1),) * d]
    if density:
        hist = util.convert(hist, util.dtype_of(sample))
        hist = lax.div(hist, reductions.sum(hist))
        for i, e in enumerate(edges):
            width = lax.sub(e[1:], e[:-1])
            shape = [1] * d
            shape[i] = util.shape_of(width)[0]
            hist = ufuncs.divide(hist, lax.reshape(width, tuple(shape)))
    return hist, edges


def histogram2d(x, y, bins=10, range=None, weights=None,  # noqa: A002
                density: bool | None = None):
    """The 2-D histogram of the points `(x[i], y[i])`, with the edges along x and along y.

    Follows `numpy.histogram2d` (see `histogram` for the bins).

    Args:
        x: the points' first coordinates.
        y: their second coordinates.
        bins: a number of bins (or a pair), or arrays of edges.
        range: `((xmin, xmax), (ymin, ymax))`, or None.
        weights: one weight per point.
        density: normalize to a probability density.

    Returns:
        `(counts, x_edges, y_edges)`.

    Examples:
        >>> x, y = jnp.array([0.0, 1.0, 1.0]), jnp.array([0.0, 0.0, 1.0])
        >>> counts, x_edges, y_edges = jnp.histogram2d(x, y, bins=2)
        >>> counts
        Array([[1, 0],
               [1, 1]], dtype=int32)
    """
    x, y = util.ensure_arraylike("histogram2d", x, y)
    try:
        count = len(bins)
    except TypeError:
        count = 1
    if count not in (1, 2):  # one array of edges, shared by both dimensions
        bins = [bins, bins]
    hist, edges = histogramdd(shape_ops.stack([x, y], axis=1), bins, range, weights, density)
    return hist, edges[0], edges[1]

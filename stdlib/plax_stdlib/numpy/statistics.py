"""Order statistics and moments: quantile/percentile/median (and their nan*
forms), average, ptp, cov, corrcoef.

Quantiles (jitted, as JAX's) sort along the reduced axis (the flattened array
for `axis=None`; a tuple of axes is merged into one last axis) and pick the
neighbouring order statistics of each `q`, combined by `method` ('linear',
'lower', 'higher', 'midpoint', 'nearest'; or 'inverted_cdf', the only one that
takes `weights`). A NaN in a slice makes its quantile NaN; the nan* forms skip
NaNs instead. Results have the (inexact) dtype of `a`, as in JAX.
"""
from __future__ import annotations

import math

import numpy as np

from plax.extend import dtypes
from plax_stdlib import jax_jits, lax
from plax_stdlib.lax.out_sharding import laid_out
from plax_stdlib.numpy import indexing, reductions, shape_ops, ufuncs, util

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")


def _one(x):
    """1 in `x`'s dtype, a constant."""
    return np.ones((), util.dtype_of(x))[()]


def _zero(x):
    """0 in `x`'s dtype, a constant."""
    return np.zeros((), util.dtype_of(x))[()]


def _checked_inputs(name: str, a, q, method: str, weights):
    """`a` (and `weights`) promoted to inexact and checked, `q` promoted."""
    if method not in _METHODS:
        raise ValueError(f"{name}: method can only be one of {', '.join(map(repr, _METHODS))}; "
                         f"got {method!r}")
    a, q = util.ensure_arraylike(name, a, q)
    if weights is not None:
        weights = util.ensure_arraylike(name, weights)
        if util.dtype_category(util.dtype_of(weights)) == "c":
            raise ValueError(f"{name}: weights cannot be complex")
        if method != "inverted_cdf":
            raise NotImplementedError(f"{name}: method {method!r} doesn't support weights; "
                                      "only method 'inverted_cdf' does")
        a, weights = util.promote_dtypes_inexact(a, weights)
    else:
        a, = util.promote_dtypes_inexact(a)
    if util.dtype_category(util.dtype_of(a)) == "c":
        raise ValueError(f"{name} does not support complex input, as the operation is poorly "
                         "defined.")
    q, = util.promote_dtypes_inexact(q)
    if len(util.shape_of(q)) > 1:
        raise ValueError(f"{name}: q must have rank <= 1, got shape {util.shape_of(q)}")
    return a, q, weights


def _quantile(name: str, a, q, axis, method: str, keepdims: bool, skip_nans: bool,
              weights=None):
    """The quantiles, as JAX computes them: the reduced axes become one (the last, for a
    tuple `axis`), sorted; NaN slices are made NaN (or NaNs sorted last and skipped);
    the neighbouring order statistics of each position `q * (n - 1)` are read and
    combined by `method`."""
    a, q, weights = _checked_inputs(name, a, q, method, weights)
    shape = util.shape_of(a)
    if weights is not None and util.shape_of(weights) != shape:
        if axis is None:
            raise ValueError(f"{name}: weights shape must match a's shape when axis is None")
        axes = util.canonicalize_axes(axis, len(shape))
        if util.shape_of(weights) != tuple(shape[d] for d in axes):
            raise ValueError(f"{name}: weights of shape {util.shape_of(weights)} must match "
                             f"the reduced axes {tuple(shape[d] for d in axes)}")
        weights = lax.broadcast_in_dim(weights, shape, axes)
    keep_shape = None  # the result's shape with the reduced axes kept, where it is reshaped
    if axis is None:
        keep_shape = (1,) * len(shape) if keepdims else None
        a = lax.reshape(a, (math.prod(shape),))
        weights = None if weights is None else lax.reshape(weights, (math.prod(shape),))
        axis = 0
    elif isinstance(axis, tuple):
        axes = util.canonicalize_axes(axis, len(shape))
        keep_shape = tuple(1 if d in axes else n for d, n in enumerate(shape))
        kept = tuple(d for d in range(len(shape)) if d not in axes)
        order = list(range(len(shape)))  # kept axes swapped to the front, in turn
        for i, d in enumerate(kept):
            order[i], order[d] = order[d], order[i]
        merged = tuple(shape[d] for d in kept) + (math.prod(shape[d] for d in axes),)
        a = lax.reshape(a, merged, tuple(order))
        weights = None if weights is None else lax.reshape(weights, merged, tuple(order))
        axis = len(merged) - 1
    else:
        axis = util.canonicalize_axis(axis, len(shape))
    q_shape = util.shape_of(q)
    q_ndim = len(q_shape)
    q_dtype = util.dtype_of(q)
    a_shape = util.shape_of(a)
    index_dtype = dtypes.default_int_dtype()
    q_given = q
    if a_shape[axis] == 0:  # an empty slice has no quantile: NumPy's NaN (JAX fails to gather)
        reduced = (a_shape[:axis] + (1,) * keepdims + a_shape[axis + 1:])
        return _kept(lax.full(q_shape + reduced, np.nan, util.dtype_of(a)), q_shape, keepdims,
                     keep_shape, util.dtype_of(a))
    if skip_nans:
        a = ufuncs.where(lax.ne(a, a), np.nan, a)  # positive NaNs, which sort last
        if weights is None:
            a = lax.sort(a, dimension=axis)
        else:
            a, weights = lax.sort_key_val(a, weights, dimension=axis)
        counts = reductions.sum(lax.bitwise_not(lax.ne(a, a)), axis=axis, dtype=q_dtype,
                                keepdims=keepdims)
        reduced_shape = util.shape_of(counts)
        q = lax.expand_dims(q, tuple(range(q_ndim, len(reduced_shape) + q_ndim)))
        counts = lax.expand_dims(counts, tuple(range(q_ndim)))
        q = lax.mul(q, lax.sub(counts, _one(q)))
        low, high = lax.floor(q), lax.ceil(q)
        high_weight = lax.sub(q, low)
        low_weight = lax.sub(_one(high_weight), high_weight)
        low = lax.max(_zero(low), lax.min(low, ufuncs.subtract(counts, 1)))
        high = lax.max(_zero(high), lax.min(high, ufuncs.subtract(counts, 1)))
        low, high = util.convert(low, index_dtype), util.convert(high, index_dtype)
        out_shape = q_shape + reduced_shape
        index = [lax.broadcasted_iota(index_dtype, out_shape, d + q_ndim)
                 for d in range(len(reduced_shape))]
        if keepdims:
            index[axis] = low
        else:
            index.insert(axis, low)
        low_value = a[tuple(index)]
        index[axis] = high
        high_value = a[tuple(index)]
    else:
        a = ufuncs.where(reductions.any(lax.ne(a, a), axis=axis, keepdims=True), np.nan, a)
        if weights is None:
            a = lax.sort(a, dimension=axis)
        else:
            a, weights = lax.sort_key_val(a, weights, dimension=axis)
        n = util.convert(a_shape[axis], q_dtype)
        q = lax.mul(q, ufuncs.subtract(n, 1))
        low, high = lax.floor(q), lax.ceil(q)
        high_weight = lax.sub(q, low)
        low_weight = lax.sub(_one(high_weight), high_weight)
        low = lax.clamp(_zero(low), low, ufuncs.subtract(n, 1))
        high = lax.clamp(_zero(high), high, ufuncs.subtract(n, 1))
        low, high = util.convert(low, index_dtype), util.convert(high, index_dtype)
        slice_sizes = list(a_shape)
        slice_sizes[axis] = 1
        numbers = lax.GatherDimensionNumbers(
            offset_dims=tuple(range(q_ndim, len(a_shape) + q_ndim - (0 if keepdims else 1))),
            collapsed_slice_dims=() if keepdims else (axis,), start_index_map=(axis,))
        # the indices were clamped: in bounds (JAX's lax.gather default)
        in_bounds = lax.GatherScatterMode.PROMISE_IN_BOUNDS
        low_value = lax.gather(a, lax.expand_dims(low, (q_ndim,)), numbers, slice_sizes,
                               mode=in_bounds)
        high_value = lax.gather(a, lax.expand_dims(high, (q_ndim,)), numbers, slice_sizes,
                                mode=in_bounds)
        if q_ndim == 1:
            low_weight = lax.broadcast_in_dim(low_weight, util.shape_of(low_value), (0,))
            high_weight = lax.broadcast_in_dim(high_weight, util.shape_of(high_value), (0,))
    if method == "linear":
        result = lax.add(lax.mul(util.convert(low_value, q_dtype), low_weight),
                         lax.mul(util.convert(high_value, q_dtype), high_weight))
    elif method == "lower":
        result = low_value
    elif method == "higher":
        result = high_value
    elif method == "nearest":
        result = lax.select(lax.le(high_weight, np.asarray(0.5, util.dtype_of(high_weight))[()]),
                            low_value, high_value)
    elif method == "midpoint":
        result = lax.mul(lax.add(low_value, high_value),
                         np.asarray(0.5, util.dtype_of(low_value))[()])
    else:
        result = _inverted_cdf(a, weights, q_given, axis, keepdims, skip_nans)
    return _kept(result, q_shape, keepdims, keep_shape, util.dtype_of(a))


def _kept(result, q_shape, keepdims: bool, keep_shape, dtype):
    """The quantiles in `dtype`, reshaped to keep the reduced axes (for `axis` None or a
    tuple, where they were merged into one)."""
    if keepdims and keep_shape:
        result = lax.reshape(result, q_shape + keep_shape)
    return util.convert(result, dtype)


def _inverted_cdf(a, weights, q, axis: int, keepdims: bool, skip_nans: bool):
    """The smallest sorted value whose cumulative weight reaches q of the total, along
    `axis` of the sorted `a`; negative or NaN weights, or NaN data (for the plain
    forms; all-NaN slices for the nan* forms) make the result NaN."""
    q_ndim = len(util.shape_of(q))
    a_shape = util.shape_of(a)
    if weights is None:
        weights = lax.full_like(a, 1.0)
    zeros = lax.full_like(weights, 0)
    bad_weights = lax.bitwise_or(lax.lt(weights, zeros), lax.ne(weights, weights))
    nan_data = lax.ne(a, a)
    clean_weights = lax.select(lax.bitwise_or(bad_weights, nan_data), zeros, weights)
    cumulative = reductions.cumsum(clean_weights, axis=axis)
    total = lax.index_in_dim(cumulative, -1, axis=axis, keepdims=keepdims)
    total_q = lax.expand_dims(total, tuple(range(q_ndim)))
    q_total = lax.reshape(q, util.shape_of(q) + (1,) * len(util.shape_of(total)))
    target = lax.mul(q_total, total_q)
    if not keepdims:
        target = lax.expand_dims(target, (axis + q_ndim,))
    below = lax.lt(lax.expand_dims(cumulative, tuple(range(q_ndim))), target)
    index = reductions.sum(util.convert(below, dtypes.default_int_dtype()), axis=axis + q_ndim,
                           keepdims=keepdims)
    q_dtype = util.dtype_of(q)
    if skip_nans:
        counts = reductions.sum(lax.bitwise_not(nan_data), axis=axis, dtype=q_dtype,
                                keepdims=keepdims)
    else:
        counts = lax.full_like(total, a_shape[axis], dtype=q_dtype)
    limit = util.convert(lax.sub(counts, _one(counts)), dtypes.default_int_dtype())
    limit = util.convert(lax.expand_dims(limit, tuple(range(q_ndim))), util.dtype_of(index))
    index = lax.max(_zero(index), lax.min(index, limit))
    if keepdims:
        index = lax.squeeze(index, (q_ndim + axis,))
    if q_ndim == 0:
        result = lax.squeeze(indexing.take_along_axis(a, lax.expand_dims(index, (axis,)),
                                                      axis=axis), (axis,))
    else:
        ndim = len(util.shape_of(index))
        perm = [*range(q_ndim, q_ndim + axis), *range(q_ndim), *range(q_ndim + axis, ndim)]
        result = indexing.take_along_axis(a, lax.transpose(index, perm), axis=axis)
        result = lax.transpose(result, [perm.index(i) for i in range(len(perm))])
    if keepdims:
        result = lax.expand_dims(result, (q_ndim + axis,))
    all_nan = lax.eq(counts, lax.full_like(counts, 0))
    any_bad_weight = reductions.any(bad_weights, axis=axis, keepdims=keepdims)
    force_nan = lax.bitwise_or(any_bad_weight, all_nan if skip_nans else
                               reductions.any(nan_data, axis=axis, keepdims=keepdims))
    force_nan = lax.expand_dims(force_nan, tuple(range(q_ndim)))
    return ufuncs.where(force_nan, lax.full_like(result, np.nan), result)


def _check_options(name: str, out, overwrite_input):
    if overwrite_input or out is not None:
        raise ValueError(f"plax.numpy.{name} does not support overwrite_input=True or "
                         "out != None")


def quantile(a, q, axis=None, out=None, overwrite_input: bool = False, method: str = "linear",
             keepdims: bool = False, *, weights=None):
    """The `q`-th quantiles of `a` over `axis`, `q` in [0, 1].

    Follows `numpy.quantile` (NumPy 2's interface: `method`, and `weights` for the
    "inverted_cdf" method); `out` and `overwrite_input=True` are not supported (arrays
    are immutable). `q` may be traced. Integer inputs give the default float type.

    Args:
        a: an array.
        q: a scalar or array of probabilities in [0, 1].
        axis: an int or tuple of ints; None uses the flattened array.
        out: unsupported; must be None.
        overwrite_input: must be False.
        method: "linear" (default), "lower", "higher", "midpoint", "nearest", or
            "inverted_cdf" (with `weights`).
        keepdims: keep the reduced axes with size 1.
        weights: one weight per element, with `method="inverted_cdf"`.

    Returns:
        The quantiles: `q`'s shape followed by the remaining axes of `a`.

    Raises:
        ValueError: an unknown `method`, or `out`/`overwrite_input` given.

    Examples:
        >>> x = jnp.array([1.0, 2.0, 3.0, 4.0])
        >>> jnp.quantile(x, 0.5), jnp.quantile(x, jnp.array([0.0, 1.0]))
        (Array(2.5, dtype=float32), Array([1., 4.], dtype=float32))
        >>> jnp.quantile(x, 0.5, method="lower")
        Array(2., dtype=float32)
    """
    _check_options("quantile", out, overwrite_input)
    return _quantile("quantile", a, q, axis, method, keepdims, False, weights)


def nanquantile(a, q, axis=None, out=None, overwrite_input: bool = False,
                method: str = "linear", keepdims: bool = False, *, weights=None):
    """`quantile`, ignoring NaNs (NaN where a slice holds only NaNs).

    Follows `numpy.nanquantile`.

    Args:
        a: an array.
        q: a scalar or array of probabilities in [0, 1].
        axis: an int or tuple of ints; None uses the flattened array.
        out: unsupported; must be None.
        overwrite_input: must be False.
        method: as for `quantile`.
        keepdims: keep the reduced axes with size 1.
        weights: as for `quantile`.

    Returns:
        The quantiles.

    Examples:
        >>> jnp.nanquantile(jnp.array([1.0, np.nan, 3.0]), 0.5)
        Array(2., dtype=float32)
    """
    _check_options("nanquantile", out, overwrite_input)
    return _quantile("nanquantile", a, q, axis, method, keepdims, True, weights)


def _as_fraction(name: str, a, q):
    """`a`, and the percentages `q` as fractions; both checked together, so that a
    TypeError names the position of the one that is not array-like."""
    a, q = util.ensure_arraylike(name, a, q)
    q, = util.promote_dtypes_inexact(q)
    return a, lax.div(q, np.asarray(100, util.dtype_of(q))[()])


def percentile(a, q, axis=None, out=None, overwrite_input: bool = False,
               method: str = "linear", keepdims: bool = False, *, weights=None,
               out_sharding=None):
    """The `q`-th percentiles of `a` over `axis`, `q` in [0, 100]: `quantile(a, q / 100)`.

    Follows `numpy.percentile` (see `quantile` for `method` and `weights`). With
    `out_sharding`, computed on the mesh's axes made Auto, then laid out (and typed) as
    it, as JAX does.

    Args:
        a: an array.
        q: a scalar or array of percentages in [0, 100].
        axis: an int or tuple of ints; None uses the flattened array.
        out: unsupported; must be None.
        overwrite_input: must be False.
        method: as for `quantile`.
        keepdims: keep the reduced axes with size 1.
        weights: as for `quantile`.
        out_sharding: a Sharding or PartitionSpec for the result.

    Returns:
        The percentiles.

    Examples:
        >>> jnp.percentile(jnp.arange(11.0), jnp.array([10, 50]))
        Array([0.99999994, 4.9999995 ], dtype=float32)
    """
    _check_options("percentile", out, overwrite_input)
    return laid_out("plax.numpy.percentile", out_sharding, lambda a, q: quantile(
        a, q, axis=axis, method=method, keepdims=keepdims, weights=weights),
        *_as_fraction("percentile", a, q))


def nanpercentile(a, q, axis=None, out=None, overwrite_input: bool = False,
                  method: str = "linear", keepdims: bool = False, *, weights=None):
    """`percentile`, ignoring NaNs (NaN where a slice holds only NaNs).

    Follows `numpy.nanpercentile`.

    Args:
        a: an array.
        q: a scalar or array of percentages in [0, 100].
        axis: an int or tuple of ints; None uses the flattened array.
        out: unsupported; must be None.
        overwrite_input: must be False.
        method: as for `quantile`.
        keepdims: keep the reduced axes with size 1.
        weights: as for `quantile`.

    Returns:
        The percentiles.

    Examples:
        >>> jnp.nanpercentile(jnp.array([1.0, np.nan, 3.0]), 50)
        Array(2., dtype=float32)
    """
    _check_options("nanpercentile", out, overwrite_input)
    return nanquantile(*_as_fraction("nanpercentile", a, q), axis=axis, method=method,
                       keepdims=keepdims, weights=weights)


def median(a, axis=None, out=None, overwrite_input: bool = False, keepdims: bool = False):
    """The median over `axis`: the middle value, or the mean of the two middle values
    for an even count.

    Follows `numpy.median`; `out` and `overwrite_input=True` are not supported.

    Args:
        a: an array.
        axis: an int or tuple of ints; None uses the flattened array.
        out: unsupported; must be None.
        overwrite_input: must be False.
        keepdims: keep the reduced axes with size 1.

    Returns:
        The medians, of an inexact dtype.

    Examples:
        >>> jnp.median(jnp.array([[3, 1, 2], [4, 6, 5]]), axis=1)
        Array([2., 5.], dtype=float32)
        >>> jnp.median(jnp.array([1, 2, 3, 10]))
        Array(2.5, dtype=float32)
    """
    _check_options("median", out, overwrite_input)
    a = util.ensure_arraylike("median", a)
    return quantile(a, 0.5, axis=axis, keepdims=keepdims, method="midpoint")


def nanmedian(a, axis=None, out=None, overwrite_input: bool = False, keepdims: bool = False):
    """`median`, ignoring NaNs (NaN where a slice holds only NaNs).

    Follows `numpy.nanmedian`.

    Args:
        a: an array.
        axis: an int or tuple of ints; None uses the flattened array.
        out: unsupported; must be None.
        overwrite_input: must be False.
        keepdims: keep the reduced axes with size 1.

    Returns:
        The medians.

    Examples:
        >>> jnp.nanmedian(jnp.array([1.0, np.nan, 3.0, 10.0]))
        Array(3., dtype=float32)
    """
    _check_options("nanmedian", out, overwrite_input)
    a = util.ensure_arraylike("nanmedian", a)
    return nanquantile(a, 0.5, axis=axis, keepdims=keepdims, method="midpoint")


# --- moments -----------------------------------------------------------------------------

def average(a, axis=None, weights=None, returned: bool = False, keepdims: bool = False):
    """The (weighted) mean over `axis`; with `returned`, also the sum of the weights.

    Follows `numpy.average`: `weights` has `a`'s shape, or is 1-D along a single
    `axis`. A zero sum of weights gives NaN/inf rather than an error (it cannot be
    checked under `jit`).

    Args:
        a: an array.
        axis: an int or tuple of ints; None averages all.
        weights: the weights, or None for a plain mean.
        returned: also return the sum of the weights (broadcast to the result's shape).
        keepdims: keep the reduced axes with size 1.

    Returns:
        The averages, or `(averages, weight_sums)`.

    Raises:
        ValueError: weights whose shape fits neither `a` nor the axis.

    Examples:
        >>> jnp.average(jnp.array([1.0, 2.0, 4.0]), weights=jnp.array([3.0, 1.0, 0.0]))
        Array(1.25, dtype=float32)
        >>> jnp.average(jnp.array([1.0, 3.0]), returned=True)
        (Array(2., dtype=float32), Array(2., dtype=float32))
    """
    a = util.ensure_arraylike("average", a)
    shape = util.shape_of(a)
    axes = util.canonicalize_axes(axis, len(shape))
    if weights is None:
        a, = util.promote_dtypes_inexact(a)
        avg = reductions.mean(a, axis=axis, keepdims=keepdims)
        total = lax.full((), math.prod(shape[d] for d in axes), util.dtype_of(avg))
    else:
        weights = util.ensure_arraylike("average", weights)
        a, weights = util.promote_dtypes_inexact(a, weights)
        if util.shape_of(weights) != shape:
            if axis is None:
                raise ValueError("average: axis must be specified when the shapes of a and "
                                 "weights differ.")
            if util.shape_of(weights) != tuple(shape[d] for d in axes):
                raise ValueError(f"average: shape of weights {util.shape_of(weights)} must be "
                                 f"consistent with the shape of a {shape} along axis {axis}")
            weights = lax.broadcast_in_dim(weights, shape, tuple(axes))
        total = reductions.sum(weights, axis=axis, keepdims=keepdims)
        avg = lax.div(reductions.sum(lax.mul(a, weights), axis=axis, keepdims=keepdims), total)
    if returned:
        return avg, shape_ops.broadcast_to(total, util.shape_of(avg))
    return avg


def ptp(a, axis=None, out=None, keepdims: bool = False):
    """The range of values (peak to peak: maximum minus minimum) over `axis`.

    Follows `numpy.ptp`.

    Args:
        a: an array.
        axis: an int or tuple of ints; None reduces all.
        out: unsupported; must be None.
        keepdims: keep the reduced axes with size 1.

    Returns:
        The ranges, of `a`'s dtype.

    Examples:
        >>> jnp.ptp(jnp.array([[4, 9, 2], [1, 1, 1]]), axis=1)
        Array([7, 0], dtype=int32)
    """
    if out is not None:
        raise NotImplementedError("The 'out' argument to plax.numpy.ptp is not supported.")
    a = util.ensure_arraylike("ptp", a)
    return _ptp(a, reductions.static_axes(axis), keepdims)


@util.compiled(static_argnames=("axis", "keepdims"))
def _ptp(a, axis, keepdims):
    """`ptp`'s computation, one jitted call (JAX's `_ptp`)."""
    return lax.sub(reductions.max(a, axis=axis, keepdims=keepdims),
                   reductions.min(a, axis=axis, keepdims=keepdims))


def cov(m, y=None, rowvar: bool = True, bias: bool = False, ddof: int | None = None,
        fweights=None, aweights=None, dtype=None):
    """The covariance matrix of a set of variables: each row of `m` is one variable and
    each column one observation (the reverse with `rowvar=False`).

    Follows `numpy.cov`, with frequency weights (`fweights`, integer counts of each
    observation) and analytic weights (`aweights`). The default normalization is
    `N - 1` (unbiased); `bias=True` uses `N`, and `ddof` overrides both.

    Args:
        m: a 1-D or 2-D array of variables.
        y: more variables, stacked under `m`'s.
        rowvar: rows are variables (True) or columns are (False).
        bias: normalize by N instead of N - 1.
        ddof: the normalization is `N - ddof`.
        fweights: integer repeat counts of the observations.
        aweights: relative importance weights of the observations.
        dtype: the result's dtype.

    Returns:
        A `(variables, variables)` array (0-d for a single variable).

    Examples:
        >>> x = jnp.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]])
        >>> jnp.cov(x)
        Array([[ 1., -1.],
               [-1.,  1.]], dtype=float32)
    """
    if y is not None:
        m, y = util.promote_args_inexact("cov", m, y)
        if len(util.shape_of(y)) > 2:
            raise ValueError(f"cov: y has more than 2 dimensions (shape {util.shape_of(y)})")
    else:
        m, = util.promote_args_inexact("cov", m)
    if len(util.shape_of(m)) > 2:
        raise ValueError(f"cov: m has more than 2 dimensions (shape {util.shape_of(m)})")
    if dtype is not None and not dtypes.issubdtype(dtype, np.inexact):
        raise ValueError(f"cov: dtype must be a subclass of float or complex; got {dtype}")
    x = shape_ops.atleast_2d(m)
    if not rowvar and len(util.shape_of(m)) != 1:
        x = lax.transpose(x, (1, 0))
    if util.shape_of(x)[0] == 0:
        return lax.full((0, 0), 0, util.dtype_of(x))
    if y is not None:
        yy = shape_ops.atleast_2d(y)
        if not rowvar and util.shape_of(yy)[0] != 1:
            yy = lax.transpose(yy, (1, 0))
        x = shape_ops.concatenate([x, yy], axis=0)
    variables, observations = util.shape_of(x)
    if observations == 0:
        return lax.full(() if variables == 1 else (variables, variables), np.nan,
                        util.dtype_of(x))
    if ddof is None:
        ddof = 0 if bias else 1
    w = None
    if fweights is not None:
        fweights = util.ensure_arraylike("cov", fweights)
        if len(util.shape_of(fweights)) > 1:
            raise RuntimeError("cov: cannot handle multidimensional fweights")
        if util.shape_of(fweights)[0] != observations:
            raise RuntimeError("cov: incompatible numbers of samples and fweights")
        if util.dtype_category(util.dtype_of(fweights)) not in "iu":
            raise TypeError("cov: fweights must be integer.")
        w = ufuncs.absolute(fweights)
    if aweights is not None:
        aweights = util.ensure_arraylike("cov", aweights)
        if len(util.shape_of(aweights)) > 1:
            raise RuntimeError("cov: cannot handle multidimensional aweights")
        if util.shape_of(aweights)[0] != observations:
            raise RuntimeError("cov: incompatible numbers of samples and aweights")
        aweights = ufuncs.absolute(aweights)
        w = aweights if w is None else ufuncs.multiply(w, aweights)
    if dtype is not None:
        x = util.convert(x, util.check_user_dtype(dtype, "cov"))
        w = None if w is None else util.convert(w, util.dtype_of(x))
    avg, w_sum = average(x, axis=1, weights=w, returned=True)
    w_sum = w_sum[0]
    if w is None:
        factor = observations - ddof
    elif ddof == 0:
        factor = w_sum
    elif aweights is None:
        factor = ufuncs.subtract(w_sum, ddof)
    else:
        factor = ufuncs.subtract(w_sum, ufuncs.divide(
            ufuncs.multiply(ddof, reductions.sum(ufuncs.multiply(w, aweights))), w_sum))
    x = ufuncs.subtract(x, lax.expand_dims(avg, (1,)))
    xw = x if w is None else ufuncs.multiply(x, w)
    product = lax.dot_general(xw, lax.conj(x) if util.dtype_category(util.dtype_of(x)) == "c"
                              else x, (((1,), (1,)), ((), ())))
    out = ufuncs.true_divide(product, factor)
    return lax.squeeze(out, (0, 1)) if variables == 1 else out


def corrcoef(x, y=None, rowvar: bool = True, dtype=None):
    """The Pearson correlation coefficients of a set of variables: their covariance
    matrix (see `cov`) divided by the product of their standard deviations, clipped to
    [-1, 1].

    Follows `numpy.corrcoef`.

    Args:
        x: a 1-D or 2-D array of variables.
        y: more variables.
        rowvar: rows are variables (True) or columns are (False).
        dtype: the result's dtype.

    Returns:
        A `(variables, variables)` array.

    Examples:
        >>> jnp.corrcoef(jnp.array([[1.0, 2.0, 3.0], [2.0, 4.0, 7.0]]))
        Array([[1.    , 0.9933...],
               [0.9933..., 1.    ]], dtype=float32)
    """
    util.check_arraylike("corrcoef", x)
    if dtype is not None and not dtypes.issubdtype(dtype, np.inexact):
        raise ValueError(f"corrcoef: dtype must be a subclass of float or complex; got {dtype}")
    c = cov(x, y, rowvar, dtype=dtype)
    if not util.shape_of(c):
        return ufuncs.divide(c, c)  # NaN for 0/0 and inf/inf, else 1
    d = shape_ops.diagonal(c)
    std = util.convert(ufuncs.sqrt(ufuncs.real(d)), util.dtype_of(c))
    c = ufuncs.divide(ufuncs.divide(c, lax.expand_dims(std, (1,))), lax.expand_dims(std, (0,)))
    real = ufuncs.clip(ufuncs.real(c), -1, 1)
    if util.dtype_category(util.dtype_of(c)) == "c":
        return lax.complex(real, ufuncs.clip(ufuncs.imag(c), -1, 1))
    return real


jax_jits.apply(globals())  # JAX's jitted functions become jit functions

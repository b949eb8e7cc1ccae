"""Order statistics and moments: quantile/percentile/median (and their nan*
forms), average, ptp, cov, corrcoef.

Quantiles sort the reduced axes (moved last and flattened into one) and pick
the neighbouring order statistics of each `q`, combined by `method` ('linear',
'lower', 'higher', 'midpoint', 'nearest'; or 'inverted_cdf', the only one that
takes `weights`). A NaN in a slice makes its quantile NaN; the nan* forms skip
NaNs instead. Results have the (inexact) dtype of `a`, as in JAX.
"""
from __future__ import annotations

import math

import numpy as np

from plax.extend import dtypes
from plax_stdlib import lax
from plax_stdlib.lax.out_sharding import laid_out
from plax_stdlib.numpy import indexing, reductions, shape_ops, ufuncs, util

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")


def _reduced_last(x, axes: tuple[int, ...]):
    """`x` with `axes` moved last and merged into one axis."""
    shape = util.shape_of(x)
    kept = tuple(d for d in range(len(shape)) if d not in axes)
    x = lax.transpose(x, kept + tuple(axes))
    return lax.reshape(x, tuple(shape[d] for d in kept) + (math.prod(shape[d] for d in axes),))


def _take_last(sorted_, index, q_ndim: int):
    """`sorted_[..., index]` for an `index` of shape q_shape + rest."""
    shape = util.shape_of(index)
    target = shape + (util.shape_of(sorted_)[-1],)
    source = lax.broadcast_in_dim(sorted_, target, tuple(range(q_ndim, len(target))))
    return lax.squeeze(indexing.take_along_axis(source, lax.expand_dims(index, (len(shape),)), -1,
                                       mode="clip"), (len(shape),))


def _quantile(name: str, a, q, axis, method: str, keepdims: bool, skip_nans: bool,
              weights=None):
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
    q_shape = util.shape_of(q)
    if len(q_shape) > 1:
        raise ValueError(f"{name}: q must have rank <= 1, got shape {q_shape}")
    shape = util.shape_of(a)
    axes = util.canonicalize_axes(axis, len(shape))
    keep_shape = tuple(1 if d in axes else n for d, n in enumerate(shape))
    if weights is not None and util.shape_of(weights) != shape:
        if axis is None:
            raise ValueError(f"{name}: weights shape must match a's shape when axis is None")
        if util.shape_of(weights) != tuple(shape[d] for d in axes):
            raise ValueError(f"{name}: weights of shape {util.shape_of(weights)} must match "
                             f"the reduced axes {tuple(shape[d] for d in axes)}")
        weights = lax.broadcast_in_dim(weights, shape, axes)
    x = _reduced_last(a, axes)
    w = None if weights is None else _reduced_last(weights, axes)
    n = util.shape_of(x)[-1]
    last = len(util.shape_of(x)) - 1
    is_nan = ufuncs.isnan(x)
    if skip_nans:
        x = ufuncs.where(is_nan, np.nan, x)  # positive NaNs, which sort last
    else:
        x = ufuncs.where(reductions.any(is_nan, axis=-1, keepdims=True), np.nan, x)
    if w is None:
        x = lax.sort(x, dimension=last)
    else:
        x, w = lax.sort_key_val(x, w, dimension=last)
    q_dtype = util.dtype_of(q)
    if skip_nans:
        count = reductions.sum(lax.bitwise_not(is_nan), axis=-1, dtype=q_dtype)
    else:
        count = lax.full(util.shape_of(x)[:-1], n, q_dtype)
    rest = util.shape_of(count)
    out_shape = q_shape + rest
    qb = lax.broadcast_in_dim(q, out_shape, tuple(range(len(q_shape))))
    countb = lax.broadcast_in_dim(count, out_shape, tuple(range(len(q_shape), len(out_shape))))
    index_dtype = dtypes.default_int_dtype()
    if method == "inverted_cdf":
        result = _inverted_cdf(x, w, qb, countb, is_nan, skip_nans, len(q_shape))
    else:
        position = lax.mul(qb, lax.sub(countb, np.ones((), q_dtype)[()]))
        top = lax.sub(countb, np.ones((), q_dtype)[()])
        low = lax.max(lax.min(lax.floor(position), top), np.zeros((), q_dtype)[()])
        high = lax.max(lax.min(lax.ceil(position), top), np.zeros((), q_dtype)[()])
        high_weight = lax.sub(position, lax.floor(position))
        low_value = _take_last(x, util.convert(low, index_dtype), len(q_shape))
        high_value = _take_last(x, util.convert(high, index_dtype), len(q_shape))
        if method == "linear":
            result = lax.add(lax.mul(util.convert(low_value, q_dtype),
                                     lax.sub(np.ones((), q_dtype)[()], high_weight)),
                             lax.mul(util.convert(high_value, q_dtype), high_weight))
        elif method == "lower":
            result = low_value
        elif method == "higher":
            result = high_value
        elif method == "nearest":
            result = lax.select(lax.le(high_weight, np.asarray(0.5, q_dtype)[()]), low_value,
                                high_value)
        else:
            result = lax.mul(lax.add(low_value, high_value),
                             np.asarray(0.5, util.dtype_of(low_value))[()])
    if n == 0:  # an empty slice has no quantile: NumPy's NaN (JAX fails to gather)
        result = lax.full(util.shape_of(result), np.nan, util.dtype_of(result))
    if keepdims:
        result = lax.reshape(result, q_shape + keep_shape)
    return util.as_array(util.convert(result, util.dtype_of(a)))


def _inverted_cdf(x, w, q, count, is_nan, skip_nans: bool, q_ndim: int):
    """The smallest sorted value whose cumulative weight reaches q of the total;
    negative or NaN weights make the result NaN."""
    if w is None:
        w = lax.full(util.shape_of(x), 1, util.dtype_of(x))
    nan_data = ufuncs.isnan(x)
    bad = lax.bitwise_or(lax.lt(w, np.zeros((), util.dtype_of(w))[()]), ufuncs.isnan(w))
    clean = ufuncs.where(lax.bitwise_or(bad, nan_data), np.zeros((), util.dtype_of(w))[()], w)
    cumulative = reductions.cumsum(clean, axis=-1)
    total = cumulative[..., -1] if util.shape_of(cumulative)[-1] else \
        lax.full(util.shape_of(cumulative)[:-1], 0, util.dtype_of(cumulative))
    out_shape = util.shape_of(q)
    lead = tuple(range(q_ndim, len(out_shape)))
    target = lax.mul(util.convert(q, util.dtype_of(total)),
                     lax.broadcast_in_dim(total, out_shape, lead))
    full = out_shape + (util.shape_of(x)[-1],)
    below = lax.lt(lax.broadcast_in_dim(cumulative, full, tuple(range(q_ndim, len(full)))),
                   lax.expand_dims(target, (len(out_shape),)))
    index_dtype = dtypes.default_int_dtype()
    index = reductions.sum(below, axis=-1, dtype=index_dtype)
    limit = util.convert(lax.sub(count, np.ones((), util.dtype_of(count))[()]), index_dtype)
    index = lax.max(lax.min(index, limit), np.zeros((), index_dtype)[()])
    result = _take_last(x, index, q_ndim)
    nan_slices = (lax.eq(count, np.zeros((), util.dtype_of(count))[()]) if skip_nans
                  else lax.broadcast_in_dim(reductions.any(is_nan, axis=-1), out_shape, lead))
    force_nan = lax.bitwise_or(nan_slices, lax.broadcast_in_dim(reductions.any(bad, axis=-1),
                                                                out_shape, lead))
    return ufuncs.where(force_nan, np.nan, result)


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
        Array([0.9999..., 5.    ], dtype=float32)
    """
    _check_options("percentile", out, overwrite_input)
    return laid_out("plax.numpy.percentile", out_sharding, lambda a, q: _quantile(
        "percentile", a, q, axis, method, keepdims, False, weights),
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
    return _quantile("nanpercentile", *_as_fraction("nanpercentile", a, q), axis, method,
                     keepdims, True, weights)


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
    return _quantile("median", a, 0.5, axis, "midpoint", keepdims, False)


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
    return _quantile("nanmedian", a, 0.5, axis, "midpoint", keepdims, True)


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

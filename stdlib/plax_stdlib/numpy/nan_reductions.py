"""Reductions that ignore NaNs: nansum, nanprod, nanmax, nanmin, nanmean, nanvar,
nanstd, nanargmax, nanargmin, nancumsum, nancumprod (nanmedian and the nan
quantiles live with the other order statistics).

NaNs are replaced by the reduction's identity before reducing. As in JAX,
nanmax/nanmin of an all-NaN slice is NaN, nanmean/nanvar of one is NaN, and
nanargmax/nanargmin of one is -1 (NumPy raises). Integer and bool inputs have no
NaNs: they reduce as the plain functions do.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from plax.extend import dtypes
from plax_stdlib import jax_jits, lax
from plax_stdlib.numpy import reductions, ufuncs, util


def _is_inexact(x) -> bool:
    return util.dtype_category(util.dtype_of(x)) in "fc"


def _without_nans(x, value):
    return ufuncs.where(ufuncs.isnan(x), value, x) if _is_inexact(x) else x


def _fill_value(a, value):
    """`value` as a 0-d array of `a`'s dtype (an infinity becomes the largest finite
    value of a float type without infinities)."""
    dtype = util.dtype_of(a)
    if util.dtype_category(dtype) == "b":
        return np.asarray(value > 0, dtype)
    if np.isinf(value) and util.dtype_category(dtype) == "f" and \
            not np.isinf(np.asarray(value, dtype)):
        value = dtypes.finfo(dtype).min if value < 0 else dtypes.finfo(dtype).max
    return np.asarray(value, dtype)


def _nan_reduction(name: str, reduce: Callable, fill, nan_if_all_nan: bool, a, axis, keepdims,
                   where, **options):
    """`reduce` with the NaNs of `a` replaced by `fill` (JAX's order); where a slice
    holds only NaNs, NaN if `nan_if_all_nan`. Integer and bool `a` reduce as they are."""
    a = util.ensure_arraylike(name, a)
    if not _is_inexact(a):
        return reduce(a, axis=axis, keepdims=keepdims, where=where, **options)
    out = reduce(ufuncs.where(lax.ne(a, a), _fill_value(a, fill), a), axis=axis,
                 keepdims=keepdims, where=where, **options)
    if not nan_if_all_nan:
        return out
    return ufuncs.where(reductions.all(lax.ne(a, a), axis=axis, keepdims=keepdims),
                        np.asarray(np.nan, util.dtype_of(a))[()], out)


def _nan_extremum(name: str, reduce: Callable, largest: bool, example_output: str):
    def fn(a, axis=None, out=None, keepdims=False, initial=None, where=None):
        return _nan_reduction(name, reduce, -np.inf if largest else np.inf, initial is None, a,
                              axis, keepdims, where, out=out, initial=initial)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = _NAN_EXTREMUM_DOC.format(name=name, plain=name[3:], out=example_output)
    return fn


_NAN_EXTREMUM_DOC = """The {plain}imum of `a` over `axis`, ignoring NaNs.

    Follows `numpy.{name}`, except that a slice holding only NaNs gives NaN without a
    warning (NumPy warns), or `initial` if it is given. Integer and bool inputs have no
    NaNs: they reduce as `{plain}`.

    Args:
        a: an array.
        axis: an int or tuple of ints; None reduces all.
        out: unsupported; must be None.
        keepdims: keep the reduced axes with size 1.
        initial: a value included in every reduction.
        where: a boolean mask: only selected elements count.

    Returns:
        The reduced array.

    Examples:
        >>> x = jnp.array([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan]])
        >>> jnp.{name}(x, axis=1)
        {out}
    """

nanmax = _nan_extremum("nanmax", reductions.max, largest=True,
                       example_output="Array([ 3., nan], dtype=float32)")
nanmin = _nan_extremum("nanmin", reductions.min, largest=False,
                       example_output="Array([ 1., nan], dtype=float32)")


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """The sum over `axis`, counting NaNs as zero.

    Follows `numpy.nansum`, with the dtype rules of `sum`.

    Args:
        a: an array.
        axis: an int or tuple of ints; None sums all.
        dtype: the dtype to accumulate in and return.
        out: unsupported; must be None.
        keepdims: keep the reduced axes with size 1.
        initial: a starting value.
        where: a boolean mask: only selected elements count.

    Returns:
        The sums.

    Examples:
        >>> jnp.nansum(jnp.array([1.0, np.nan, 2.0]))
        Array(3., dtype=float32)
    """
    return _nan_reduction("nansum", reductions.sum, 0, False, a, axis, keepdims, where,
                          dtype=dtype, out=out, initial=initial)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """The product over `axis`, counting NaNs as one.

    Follows `numpy.nanprod`, with the dtype rules of `prod`.

    Args:
        a: an array.
        axis: an int or tuple of ints; None multiplies all.
        dtype: the dtype to accumulate in and return.
        out: unsupported; must be None.
        keepdims: keep the reduced axes with size 1.
        initial: a starting value.
        where: a boolean mask: only selected elements count.

    Returns:
        The products.

    Examples:
        >>> jnp.nanprod(jnp.array([2.0, np.nan, 3.0]))
        Array(6., dtype=float32)
    """
    return _nan_reduction("nanprod", reductions.prod, 1, False, a, axis, keepdims, where,
                          dtype=dtype, out=out, initial=initial)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    """The mean over `axis` of the elements that are not NaN (NaN, without a warning,
    where none is left).

    Follows `numpy.nanmean`, with the dtype rules of `mean`.

    Args:
        a: an array.
        axis: an int or tuple of ints; None averages all.
        dtype: the result's dtype.
        out: unsupported; must be None.
        keepdims: keep the reduced axes with size 1.
        where: a boolean mask: only selected elements count.

    Returns:
        The means.

    Examples:
        >>> jnp.nanmean(jnp.array([[1.0, np.nan], [np.nan, np.nan]]), axis=1)
        Array([ 1., nan], dtype=float32)
    """
    a = util.ensure_arraylike("nanmean", a)
    if out is not None:
        raise NotImplementedError("The 'out' argument to plax.numpy.nanmean is not supported.")
    if not _is_inexact(a):
        return reductions.mean(a, axis, dtype, out, keepdims, where=where)
    dtype = util.check_user_dtype(dtype, "nanmean") or util.dtype_of(a)
    count = reductions.sum(lax.bitwise_not(lax.ne(a, a)), axis=axis, dtype=dtype,
                           keepdims=keepdims, where=where)
    return lax.div(nansum(a, axis, dtype=dtype, keepdims=keepdims, where=where), count)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
    """The variance over `axis` of the elements that are not NaN, divided by `N - ddof`
    (NaN where fewer than `ddof + 1` remain).

    Follows `numpy.nanvar`; `mean` may be given precomputed (with the reduced axes
    kept).

    Args:
        a: an array.
        axis: an int or tuple of ints; None reduces all.
        dtype: the result's dtype.
        out: unsupported; must be None.
        ddof: the divisor is `N - ddof`.
        keepdims: keep the reduced axes with size 1.
        where: a boolean mask: only selected elements count.
        mean: the NaN-ignoring mean over `axis`, with `keepdims=True`.

    Returns:
        The variances.

    Examples:
        >>> jnp.nanvar(jnp.array([1.0, np.nan, 3.0]))
        Array(1., dtype=float32)
    """
    if out is not None:
        raise NotImplementedError("The 'out' argument to plax.numpy.nanvar is not supported.")
    a = util.ensure_arraylike("nanvar", a)
    compute, result_dtype = reductions._var_dtypes(util.dtype_of(a), dtype)
    a = util.convert(a, compute)
    if mean is None:
        center = nanmean(a, axis, dtype=compute, keepdims=True, where=where)
    else:
        center = util.convert(util.ensure_arraylike("nanvar", mean), compute)
    centered = ufuncs.where(lax.ne(a, a), 0, lax.sub(a, center))  # zero, not NaN, gradients
    if util.dtype_category(util.dtype_of(centered)) == "c":
        centered = lax.real(lax.mul(centered, lax.conj(centered)))
    else:
        centered = lax.square(centered)
    count = reductions.sum(lax.bitwise_not(lax.ne(a, a)), axis=axis, keepdims=keepdims,
                           where=where)
    count = ufuncs.subtract(count, ddof)
    too_few = lax.le(count, np.zeros((), util.dtype_of(count))[()])
    total = reductions.sum(centered, axis, keepdims=keepdims, where=where)
    total = ufuncs.where(too_few, np.nan, total)
    divisor = ufuncs.where(too_few, 1, count)
    return util.convert(lax.div(total, util.convert(divisor, util.dtype_of(total))),
                        result_dtype)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
    """The standard deviation over `axis` of the elements that are not NaN: the square
    root of `nanvar`.

    Follows `numpy.nanstd`.

    Args:
        a: an array.
        axis: an int or tuple of ints; None reduces all.
        dtype: the result's dtype.
        out: unsupported; must be None.
        ddof: the divisor is `N - ddof`.
        keepdims: keep the reduced axes with size 1.
        where: a boolean mask: only selected elements count.
        mean: the NaN-ignoring mean over `axis`, with `keepdims=True`.

    Returns:
        The standard deviations.

    Examples:
        >>> jnp.nanstd(jnp.array([1.0, np.nan, 3.0]))
        Array(1., dtype=float32)
    """
    return lax.sqrt(nanvar(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims,
                           where=where, mean=mean))


def _nan_arg_extremum(name: str, arg_fn: Callable, largest: bool, example_output: str):
    def fn(a, axis=None, out=None, keepdims=None):
        if out is not None:
            raise NotImplementedError(f"The 'out' argument to plax.numpy.{name} is not "
                                      "supported.")
        a = util.ensure_arraylike(name, a)
        if not _is_inexact(a):
            return arg_fn(a, axis=axis, keepdims=keepdims)
        is_nan = ufuncs.isnan(a)
        filled = _without_nans(a, -np.inf if largest else np.inf)
        index = arg_fn(filled, axis=axis, keepdims=keepdims)
        return ufuncs.where(reductions.all(is_nan, axis=axis, keepdims=bool(keepdims)), -1,
                            index)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = _NAN_ARG_DOC.format(name=name, what=name[6:], out=example_output)
    return fn


_NAN_ARG_DOC = """The index of the {what}imum of `a` along `axis`, ignoring NaNs.

    Follows `numpy.{name}`, except that a slice holding only NaNs gives -1 (as in JAX;
    NumPy raises), since a traced program cannot raise on values.

    Args:
        a: an array.
        axis: the axis to search; None searches the flattened array.
        out: unsupported; must be None.
        keepdims: keep the reduced axis with size 1.

    Returns:
        An integer array of indices.

    Examples:
        >>> x = jnp.array([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan]])
        >>> jnp.{name}(x, axis=1)
        {out}
    """

nanargmax = _nan_arg_extremum("nanargmax", reductions.argmax, largest=True,
                              example_output="Array([ 2, -1], dtype=int32)")
nanargmin = _nan_arg_extremum("nanargmin", reductions.argmin, largest=False,
                              example_output="Array([ 0, -1], dtype=int32)")


def _nan_cumulative(name: str, accumulate: Callable, identity: int, example_output: str):
    def fn(a, axis=None, dtype=None, out=None):
        return reductions.accumulate(name, accumulate, a, axis, dtype, out, fill_nan=True,
                                     fill_value=identity)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = _NAN_CUMULATIVE_DOC.format(name=name, plain=name[3:], identity=identity,
                                            what=name[6:], out=example_output)
    return fn


_NAN_CUMULATIVE_DOC = """The running {what} of `a` along `axis`, with NaNs counted as {identity}.

    Follows `numpy.{name}`, with the dtype rules of `{plain}`.

    Args:
        a: an array.
        axis: the axis to accumulate along; None flattens `a` first.
        dtype: the dtype to accumulate in and return.
        out: unsupported; must be None.

    Returns:
        An array of `a`'s shape (flattened if `axis` is None).

    Examples:
        >>> jnp.{name}(jnp.array([2.0, np.nan, 3.0]))
        {out}
    """

nancumsum = _nan_cumulative("nancumsum", lax.cumsum, 0,
                            "Array([2., 2., 5.], dtype=float32)")
nancumprod = _nan_cumulative("nancumprod", lax.cumprod, 1,
                             "Array([2., 2., 6.], dtype=float32)")


jax_jits.apply(globals())  # JAX's jitted functions become jit functions

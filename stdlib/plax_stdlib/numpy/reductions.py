"""Reductions: sum, prod, max, min, all, any, mean, var, std, argmax/argmin, cumsum.

All reductions share `_reduce`: `axis` (None, int, tuple, negative), `keepdims`,
`dtype`, `where` (masked elements count as the identity, or as -inf/+inf (the
extreme value) for max/min, which need `initial` with `where`) and `initial`.
Dtypes follow JAX: sums and products of bool and narrow integers give the default
integer; means of integers give the default float; float16/bfloat16 accumulate in
float32 (unless a dtype is asked for).
"""
from __future__ import annotations

import builtins
import dataclasses
import math
import operator
from typing import Any, Callable

import numpy as np

from plax.extend import dtypes
from plax_stdlib import jax_jits, lax
from plax_stdlib.lax.dimensions import dimension_as_value
from plax_stdlib.numpy import ufuncs, util
from plax_stdlib.numpy.ufuncs import _as_bool


@dataclasses.dataclass(frozen=True)
class _Monoid:
    name: str
    reduce: Callable  # lax reduction (operand, axes)
    combine: Callable  # lax binary op, to fold in `initial`
    identity: Any  # None where there is none (max, min)
    bool_is_or: bool | None  # on bool operands the monoid is logical or, and, or itself (None)
    fill: Any  # what masked-out elements become (the identity, or an infinity), or a
    # function of the computation dtype giving it
    numeric: bool = False  # bools are made integers first (sum, prod)
    truth: bool = False  # operands are converted to bool first (all, any)


_SUM = _Monoid("sum", lax.reduce_sum, lax.add, 0, True, 0, numeric=True)
_PROD = _Monoid("prod", lax.reduce_prod, lax.mul, 1, False, 1, numeric=True)
_MAX = _Monoid("max", lax.reduce_max, lax.max, None, True, -np.inf)
_MIN = _Monoid("min", lax.reduce_min, lax.min, None, False, np.inf)
_ALL = _Monoid("all", lax.reduce_and, lax.bitwise_and, True, False, True, truth=True)
_ANY = _Monoid("any", lax.reduce_or, lax.bitwise_or, False, True, False, truth=True)
# The reductions of the bitwise and logical ufuncs (`jnp.bitwise_and.reduce`...), with
# JAX's names; bitwise and starts from all bits set, in whatever dtype it computes.
_BITWISE_AND = _Monoid("reduce_bitwise_and", lax.reduce_and, lax.bitwise_and, -1, None,
                       lambda dtype: np.invert(np.zeros((), dtype)))
_BITWISE_OR = _Monoid("reduce_bitwise_or", lax.reduce_or, lax.bitwise_or, 0, None, 0)
_BITWISE_XOR = _Monoid("reduce_bitwise_xor", lax.reduce_xor, lax.bitwise_xor, 0, None, 0)
_LOGICAL_AND = dataclasses.replace(_ALL, name="reduce_logical_and")
_LOGICAL_OR = dataclasses.replace(_ANY, name="reduce_logical_or")
_LOGICAL_XOR = dataclasses.replace(_BITWISE_XOR, name="reduce_logical_xor", identity=False,
                                   fill=False)


def fill_value(dtype, value) -> np.ndarray:
    """`value` as a 0-d array of `dtype`, for an element a reduction must ignore: a
    bool is `value > 0`; an infinity becomes the extreme value of an integer type, or
    the largest finite one of a float type without infinities."""
    dtype = np.dtype(dtype)
    category = util.dtype_category(dtype)
    if category == "b":
        return np.asarray(value > 0, dtype)
    if np.isinf(value) and category in "iu":
        info = np.iinfo(dtype)
        return np.asarray(info.min if value < 0 else info.max, dtype)
    if np.isinf(value) and category == "f":
        with np.errstate(invalid="ignore", over="ignore"):
            if not np.isinf(np.asarray(value, dtype)):
                info = dtypes.finfo(dtype)
                value = info.min if value < 0 else info.max
    return np.asarray(value, dtype)


def summed_dtype(dtype: np.dtype) -> np.dtype:
    """bool and integers narrower than the default become the default (u)int."""
    category = util.dtype_category(dtype)
    if category == "b":
        return dtypes.default_int_dtype()
    for cat, default in (("i", dtypes.default_int_dtype()), ("u", dtypes.default_uint_dtype())):
        if category == cat and dtypes.itemsize_bits(dtype) < dtypes.itemsize_bits(default):
            return default
    return dtype


def _upcast_f16(dtype: np.dtype) -> np.dtype:
    if np.dtype(dtype) in (np.dtype(np.float16), np.dtype(dtypes.bfloat16)):
        return np.dtype(np.float32)
    return np.dtype(dtype)


def _where_mask(where, shape, fun_name):
    """The checked `where` mask, broadcast to `shape`."""
    return util.broadcast_to_shape(_as_bool(_checked_where(where, shape, fun_name)), shape)


def _checked_where(where, shape, fun_name):
    """`where` as an array, checked: boolean, and broadcastable to `shape`."""
    where = util.ensure_arraylike(fun_name, where)
    if util.dtype_of(where) != np.dtype(bool):
        raise ValueError(f"{fun_name}: where must be None or a boolean array; got "
                         f"where.dtype={util.dtype_of(where)}")
    if util.broadcast_shapes(util.shape_of(where), shape) != shape:
        raise ValueError(f"{fun_name}: the where mask of shape {util.shape_of(where)} does "
                         f"not broadcast to the array's shape {shape}")
    return where


def _keep_dims(out, axes):
    return lax.expand_dims(out, tuple(sorted(axes))) if axes else out


def _reduce(m: _Monoid, a, axis, dtype, keepdims, initial, where, *,
            promote_integers: bool, upcast_f16: bool):
    """The reduction `m` as one jitted call that a trace inlines, as JAX's `_reduce_sum`
    and its kind are: an eager call takes the jit's C++ fast path (its options are
    static arguments) instead of binding each step on its own."""
    return _JITTED_REDUCTIONS[m.name](a, static_axes(axis), dtype, keepdims, initial, where,
                                 promote_integers, upcast_f16)


def _jitted_reduction(m: _Monoid) -> Callable:
    """`_reduction(m, ...)` jitted under JAX's name for it (`_reduce_sum`...)."""
    def reduction(a, axis, dtype, keepdims, initial, where, promote_integers, upcast_f16):
        return _reduction(m, a, axis, dtype, keepdims, initial, where,
                          promote_integers=promote_integers, upcast_f16=upcast_f16)
    name = m.name if m.name.startswith("reduce_") else f"reduce_{m.name}"
    return util.compiled(f"_{name}", static_argnums=(1, 2, 3, 6, 7), inline=True)(reduction)


def _reduction(m: _Monoid, a, axis, dtype, keepdims, initial, where, *,
               promote_integers: bool, upcast_f16: bool):
    """A reduction in JAX's order: bools made numeric (sum, prod), converted to the
    computation dtype, masked-out elements set to `m.fill`, reduced, `initial` folded
    in, the reduced axes kept, converted to the result dtype."""
    a = util.ensure_arraylike(m.name, a)
    if m.numeric:
        a, = util.promote_dtypes_numeric(a)
    if m.truth and util.dtype_of(a) != np.dtype(bool):  # JAX's: a complex number's real part
        a = util.convert(lax.real(a) if util.dtype_category(util.dtype_of(a)) == "c" else a,
                         bool)
    result_dtype = util.check_user_dtype(dtype, m.name)
    if result_dtype is None:
        in_dtype = util.dtype_of(a)
        result_dtype = summed_dtype(in_dtype) if promote_integers else in_dtype
    compute_dtype = _upcast_f16(result_dtype) if upcast_f16 else result_dtype
    shape = util.shape_of(a)
    axes = util.canonicalize_axes(axis, len(shape))
    if initial is not None:
        util.check_arraylike(m.name, initial)
        if util.shape_of(initial):
            raise ValueError(f"{m.name}: initial must be a scalar, got shape "
                             f"{util.shape_of(initial)}")
    if m.identity is None and initial is None:
        if where is not None:
            raise ValueError(f"reduction operation '{m.name}' does not have an identity, so "
                             "to use a where mask one has to specify 'initial'")
        if builtins.any(shape[ax] == 0 for ax in axes):
            raise ValueError(f"zero-size array to reduction operation {m.name} which has no "
                             "identity")
    if where is not None:
        where = _checked_where(where, shape, m.name)
    a = util.convert(a, compute_dtype)
    reduce, combine = m.reduce, m.combine
    if compute_dtype == np.dtype(bool) and m.bool_is_or is not None:
        reduce, combine = ((lax.reduce_or, lax.bitwise_or) if m.bool_is_or
                           else (lax.reduce_and, lax.bitwise_and))
    if where is not None:
        fill = m.fill(compute_dtype) if callable(m.fill) else fill_value(compute_dtype, m.fill)
        a = ufuncs.where(where, a, fill)
    out = reduce(a, axes)
    if initial is not None:
        out = combine(util.convert(util.operand(initial), compute_dtype), out)
    if keepdims:
        out = _keep_dims(out, axes)
    return util.convert(out, result_dtype)  # strongly typed, even of weak operands (as JAX)


_JITTED_REDUCTIONS = {m.name: _jitted_reduction(m) for m in (
    _SUM, _PROD, _MAX, _MIN, _ALL, _ANY, _BITWISE_AND, _BITWISE_OR, _BITWISE_XOR,
    _LOGICAL_AND, _LOGICAL_OR, _LOGICAL_XOR)}


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
        promote_integers=True):  # noqa: A001 - NumPy's name
    """The sum of the elements of `a` over `axis`.

    Follows `numpy.sum`, with JAX's dtype rules: bools and integers narrower than the
    default int are summed as the default int (int32 unless `jax_enable_x64`; NumPy
    uses int64), unless `promote_integers=False`; without `dtype`, float16/bfloat16 are
    accumulated in float32 and the result cast back. `out` must be None (arrays are
    immutable).

    Args:
        a: an array.
        axis: an int or tuple of ints (negative counts from the end); None sums all.
        dtype: the dtype to accumulate in and return.
        out: unsupported; must be None.
        keepdims: keep the reduced axes with size 1.
        initial: a starting value added to the sum.
        where: a boolean mask broadcastable to `a`: only selected elements are summed.
        promote_integers: widen narrow integers and bools to the default int.

    Returns:
        The sums, an array of `a`'s shape without the reduced axes.

    Raises:
        ValueError: an `axis` out of range, a non-boolean `where`, or an `out`.

    Examples:
        >>> x = jnp.array([[1, 2, 3], [4, 5, 6]], dtype=jnp.int8)
        >>> jnp.sum(x, axis=0)  # int8 accumulates as int32
        Array([5, 7, 9], dtype=int32)
        >>> jnp.sum(x, where=x > 2, keepdims=True)
        Array([[18]], dtype=int32)
    """
    _check_out(out, "sum")
    return _reduce(_SUM, a, axis, dtype, keepdims, initial, where,
                   promote_integers=promote_integers, upcast_f16=dtype is None)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
         promote_integers=True):
    """The product of the elements of `a` over `axis`.

    Follows `numpy.prod`, with the dtype rules of `sum` (narrow integers and bools
    multiply as the default int; float16/bfloat16 in float32 unless `dtype` is given).

    Args:
        a: an array.
        axis: an int or tuple of ints; None multiplies all elements.
        dtype: the dtype to accumulate in and return.
        out: unsupported; must be None.
        keepdims: keep the reduced axes with size 1.
        initial: a starting value the product is multiplied by.
        where: a boolean mask broadcastable to `a`: only selected elements count.
        promote_integers: widen narrow integers and bools to the default int.

    Returns:
        The products.

    Examples:
        >>> jnp.prod(jnp.array([[1, 2], [3, 4]]), axis=1)
        Array([ 2, 12], dtype=int32)
    """
    _check_out(out, "prod")
    return _reduce(_PROD, a, axis, dtype, keepdims, initial, where,
                   promote_integers=promote_integers, upcast_f16=dtype is None)


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    """The largest element of `a` over `axis` (`amax` is the same function).

    Follows `numpy.max`: NaN if any element compared is NaN (use `nanmax` to skip
    them). An empty reduction needs `initial` (NumPy raises too); with `where`, so
    that no selection is empty, give `initial` as well.

    Args:
        a: an array.
        axis: an int or tuple of ints; None reduces all.
        out: unsupported; must be None.
        keepdims: keep the reduced axes with size 1.
        initial: a value included in every maximum.
        where: a boolean mask broadcastable to `a`: only selected elements count.

    Returns:
        The maxima, of `a`'s dtype.

    Raises:
        ValueError: a reduction over zero elements without `initial`.

    Examples:
        >>> x = jnp.array([[1.0, 5.0], [7.0, np.nan]])
        >>> jnp.max(x, axis=1)
        Array([ 5., nan], dtype=float32)
        >>> jnp.max(x, axis=1, where=~jnp.isnan(x), initial=-np.inf)
        Array([5., 7.], dtype=float32)
    """
    _check_out(out, "max")
    return _reduce(_MAX, a, axis, None, keepdims, initial, where,
                   promote_integers=False, upcast_f16=False)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    """The smallest element of `a` over `axis` (`amin` is the same function).

    Follows `numpy.min`: NaN if any element compared is NaN (`nanmin` skips them);
    an empty reduction, or a `where` that may select nothing, needs `initial`.

    Args:
        a: an array.
        axis: an int or tuple of ints; None reduces all.
        out: unsupported; must be None.
        keepdims: keep the reduced axes with size 1.
        initial: a value included in every minimum.
        where: a boolean mask broadcastable to `a`: only selected elements count.

    Returns:
        The minima, of `a`'s dtype.

    Raises:
        ValueError: a reduction over zero elements without `initial`.

    Examples:
        >>> jnp.min(jnp.array([[3, 1], [2, 8]]), axis=0)
        Array([2, 1], dtype=int32)
    """
    _check_out(out, "min")
    return _reduce(_MIN, a, axis, None, keepdims, initial, where,
                   promote_integers=False, upcast_f16=False)


amax, amin = max, min


def all(a, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001
    """Whether every element of `a` over `axis` is true (nonzero).

    Follows `numpy.all`; `out` must be None. Under `jit` the result is a traced bool,
    so use it with `jnp.where` or `lax.cond`, not Python's `if`.

    Args:
        a: an array (any dtype; nonzero is true).
        axis: an int or tuple of ints; None reduces all.
        out: unsupported; must be None.
        keepdims: keep the reduced axes with size 1.
        where: a boolean mask: only selected elements are tested (True if none are).

    Returns:
        A bool array.

    Examples:
        >>> jnp.all(jnp.array([[1, 0], [2, 3]]), axis=1)
        Array([False,  True], dtype=bool)
    """
    _check_out(out, "all")
    return _reduce(_ALL, a, axis, None, keepdims, None, where,
                   promote_integers=False, upcast_f16=False)


def any(a, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001
    """Whether any element of `a` over `axis` is true (nonzero).

    Follows `numpy.any`; `out` must be None.

    Args:
        a: an array (any dtype; nonzero is true).
        axis: an int or tuple of ints; None reduces all.
        out: unsupported; must be None.
        keepdims: keep the reduced axes with size 1.
        where: a boolean mask: only selected elements are tested (False if none are).

    Returns:
        A bool array.

    Examples:
        >>> jnp.any(jnp.array([[0, 0], [0, 3]]), axis=1)
        Array([False,  True], dtype=bool)
    """
    _check_out(out, "any")
    return _reduce(_ANY, a, axis, None, keepdims, None, where,
                   promote_integers=False, upcast_f16=False)


def count_nonzero(a, axis=None, keepdims=False):
    """The number of nonzero (true) elements of `a` over `axis`.

    Follows `numpy.count_nonzero`; the count has the default int dtype (int32 unless
    `jax_enable_x64`).

    Args:
        a: an array.
        axis: an int or tuple of ints; None counts over all.
        keepdims: keep the reduced axes with size 1.

    Returns:
        An integer array of counts.

    Examples:
        >>> jnp.count_nonzero(jnp.array([[0, 1, 2], [0, 0, 3]]), axis=1)
        Array([2, 1], dtype=int32)
    """
    a = util.ensure_arraylike("count_nonzero", a)
    return sum(lax.ne(a, np.zeros((), util.dtype_of(a))[()]), axis,
               dtype=dtypes.default_int_dtype(), keepdims=keepdims)


def _check_out(out, fun_name):
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to plax.numpy.{fun_name} is not "
                                  "supported (plax arrays are immutable).")


# --- statistics ----------------------------------------------------------------------

def _count(shape, axes, where, keepdims, dtype, fun_name):
    """How many elements each reduction sees: a float without `where` (or, for a
    symbolic size in export, its value), else the masked count."""
    if where is None:
        count = math.prod(shape[ax] for ax in axes)
        return (float(count) if isinstance(count, int)  # symbolic (export): its value
                else util.convert(dimension_as_value(count), dtype))
    mask = _where_mask(where, shape, fun_name)
    return sum(mask, tuple(axes), dtype=dtype, keepdims=keepdims)


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """The arithmetic mean of the elements of `a` over `axis`.

    Follows `numpy.mean`, except for dtypes: integers and bools are averaged in the
    default float type (float32 unless `jax_enable_x64`; NumPy gives float64), unless
    `dtype` is an integer type: then, as in JAX, the values are summed and divided
    (truncating) in that type; without `dtype`, float16/bfloat16 are accumulated in
    float32. With
    `where`, only selected elements are averaged (NaN where none is).

    Args:
        a: an array.
        axis: an int or tuple of ints; None averages all.
        dtype: the dtype of the result (and of the accumulation).
        out: unsupported; must be None.
        keepdims: keep the reduced axes with size 1.
        where: a boolean mask broadcastable to `a`.

    Returns:
        The means, of an inexact dtype.

    Examples:
        >>> jnp.mean(jnp.array([[1, 2], [3, 5]]), axis=0)
        Array([2. , 3.5], dtype=float32)
        >>> jnp.mean(jnp.array([1.0, 100.0, 3.0]), where=jnp.array([True, False, True]))
        Array(2., dtype=float32)
    """
    _check_out(out, "mean")
    a = util.ensure_arraylike("mean", a)
    return _mean_jitted(a, static_axes(axis), dtype, keepdims, where)


@util.compiled(static_argnums=(1, 2, 3), inline=True)
def _mean_jitted(a, axis, dtype, keepdims, where):
    """`mean`'s computation as one jitted call that a trace inlines (JAX's `_mean`):
    an eager call then divides by the count as a compiled one does, by its reciprocal."""
    result_dtype = (util.check_user_dtype(dtype, "mean")
                    or dtypes.to_inexact_dtype(util.dtype_of(a)))
    if result_dtype == np.bool_:  # JAX divides in the requested dtype: bool cannot
        raise TypeError(f"mean: dtype bool is not supported for the mean of {util.dtype_of(a)} "
                        "values (it divides in that dtype)")
    compute_dtype = (_upcast_f16(result_dtype)
                     if dtype is None and dtypes.issubdtype(result_dtype, np.inexact)
                     else result_dtype)
    shape = util.shape_of(a)
    axes = util.canonicalize_axes(axis, len(shape), IndexError)  # JAX's class here
    count = _count(shape, axes, where, keepdims, compute_dtype, "mean")
    total = sum(a, axes, dtype=compute_dtype, keepdims=keepdims, where=where)
    if dtypes.issubdtype(compute_dtype, np.inexact):
        return util.convert(lax.div(total, count), result_dtype)
    # an integer mean: never divided by zero (JAX's program folds 0 // 0 and the process
    # dies of SIGFPE); an empty or fully masked mean is the empty sum, 0
    count = (util.convert(builtins.max(count, 1.0), compute_dtype) if isinstance(count, float)
             else lax.max(count, util.convert(np.ones((), compute_dtype), compute_dtype)))
    return lax.div(total, count)


_mean = mean  # for `var`, whose parameter `mean` (JAX's name) hides it


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        mean=None, correction=None):
    """The variance of the elements of `a` over `axis`: the mean squared deviation from
    their mean, divided by `N - ddof`.

    Follows `numpy.var`, with `mean` (a precomputed mean, with the reduced axes kept)
    and `correction` (the array API's name for `ddof`) as in recent NumPy. Integer
    inputs give the default float type; complex inputs give a real variance.

    Args:
        a: an array.
        axis: an int or tuple of ints; None reduces all.
        dtype: the result's dtype.
        out: unsupported; must be None.
        ddof: "delta degrees of freedom": the divisor is `N - ddof` (1 for the unbiased
            sample variance).
        keepdims: keep the reduced axes with size 1.
        where: a boolean mask: only selected elements count.
        mean: the mean of `a` over `axis` with `keepdims=True`, if already known.
        correction: the same as `ddof` (give one of them).

    Returns:
        The variances.

    Raises:
        ValueError: both `ddof` and `correction` given.

    Examples:
        >>> x = jnp.array([1.0, 2.0, 3.0, 4.0])
        >>> jnp.var(x), jnp.var(x, ddof=1)
        (Array(1.25, dtype=float32), Array(1.666..., dtype=float32))
    """
    _check_out(out, "var")
    correction = _correction(ddof, correction)
    a = util.ensure_arraylike("var", a)
    return _var(a, axis=static_axes(axis), dtype=dtype, correction=correction,
                keepdims=keepdims, where=where, a_mean=mean)


def _correction(ddof, correction):
    """The divisor's correction: `correction`, else `ddof` (not both)."""
    if correction is None:
        return ddof
    if ddof != 0:
        raise ValueError("ddof and correction can't be provided simultaneously.")
    return correction


def static_axes(axis):
    """`axis` as a static argument of a jitted helper: a sequence becomes a tuple, and a
    traced axis JAX's ConcretizationTypeError (not the jit's unhashable-static error)."""
    def static(a):
        return util.concrete_or_error(a, "axis arguments must be static") if isinstance(
            a, util.Tracer) else a
    return tuple(map(static, axis)) if isinstance(axis, (list, tuple)) else static(axis)


@util.compiled(static_argnames=("axis", "dtype", "keepdims"))
def _var(a, *, axis, dtype, correction, keepdims, where, a_mean):
    """`var`'s computation, one jitted call (JAX's `_var`); `correction` is traced, so
    a slice left without degrees of freedom (N <= correction) is NaN by a select."""
    compute_dtype, result_dtype = _var_dtypes(util.dtype_of(a), dtype)
    a = util.convert(a, compute_dtype)
    shape = util.shape_of(a)
    axes = util.canonicalize_axes(axis, len(shape), IndexError)  # JAX's class here
    if a_mean is None:
        a_mean = _mean(a, axes, dtype=compute_dtype, keepdims=True, where=where)
    else:
        a_mean = util.convert(util.ensure_arraylike("var", a_mean), compute_dtype)
    centered = lax.sub(a, a_mean)
    if util.dtype_category(compute_dtype) == "c":
        centered = lax.real(lax.mul(centered, lax.conj(centered)))
        compute_dtype = util.dtype_of(centered)
    else:
        centered = lax.square(centered)
    normalizer = _count(shape, axes, where, keepdims, compute_dtype, "var")
    normalizer = lax.sub(normalizer, util.convert(correction, compute_dtype))
    total = sum(centered, axes, dtype=compute_dtype, keepdims=keepdims, where=where)
    variance = util.convert(lax.div(total, normalizer), result_dtype)
    return ufuncs.where(lax.gt(normalizer, util.convert(0, util.dtype_of(normalizer))),
                        variance, np.nan)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        mean=None, correction=None):
    """The standard deviation over `axis`: the square root of `var` (see there for
    `ddof`, `correction`, `mean` and the dtypes).

    Args:
        a: an array.
        axis: an int or tuple of ints; None reduces all.
        dtype: the result's dtype.
        out: unsupported; must be None.
        ddof: the divisor is `N - ddof`.
        keepdims: keep the reduced axes with size 1.
        where: a boolean mask: only selected elements count.
        mean: the mean of `a` over `axis` with `keepdims=True`, if already known.
        correction: the same as `ddof`.

    Returns:
        The standard deviations.

    Examples:
        >>> jnp.std(jnp.array([[1.0, 3.0], [2.0, 2.0]]), axis=1)
        Array([1., 0.], dtype=float32)
    """
    _check_out(out, "std")
    correction = _correction(ddof, correction)
    a = util.ensure_arraylike("std", a)
    return _std(a, axis=static_axes(axis), dtype=dtype, correction=correction,
                keepdims=keepdims, where=where, mean=mean)


@util.compiled(static_argnames=("axis", "dtype", "keepdims"))
def _std(a, *, axis, dtype, correction, keepdims, where, mean):
    """`std`'s computation, one jitted call around `var`'s (JAX's `_std`)."""
    return lax.sqrt(var(a, axis=axis, dtype=dtype, correction=correction,
                        keepdims=keepdims, where=where, mean=mean))


def _var_dtypes(a_dtype, dtype) -> tuple[np.dtype, np.dtype]:
    """(computation dtype, result dtype): complex input gives a real variance."""
    if dtype is not None:
        result = util.check_user_dtype(dtype, "var")
        if util.dtype_category(a_dtype) == "c" and util.dtype_category(result) != "c":
            compute = a_dtype
        else:
            compute = dtypes.to_inexact_dtype(result)
        return _upcast_f16(compute), result
    if util.dtype_category(a_dtype) in "biu":
        result = dtypes.default_float_dtype()
        return result, result
    if util.dtype_category(a_dtype) == "c":
        real = np.dtype(np.float64 if a_dtype == np.complex128 else np.float32)
        return a_dtype, real
    return _upcast_f16(a_dtype), np.dtype(a_dtype)


# --- argmax / argmin -------------------------------------------------------------------

def _arg_extremum(name: str, lax_fn: Callable, example_output: str):
    def fn(a, axis=None, out=None, keepdims=None):
        _check_out(out, name)
        a = util.ensure_arraylike(name, a)
        return jitted(a, None if axis is None else operator.index(axis), bool(keepdims))

    @util.compiled(f"_{name}", static_argnums=(1, 2), inline=True)
    def jitted(a, axis, keepdims):
        """The search as one jitted call that a trace inlines (JAX's `_argmax`)."""
        shape = util.shape_of(a)
        if axis is None:
            flat_axis, a = 0, lax.reshape(a, (math.prod(shape),))
        else:
            flat_axis = util.canonicalize_axis(axis, len(shape), IndexError)  # JAX's class
        if util.shape_of(a)[flat_axis] == 0:
            raise ValueError(f"attempt to get {name} of an empty sequence")
        result = lax_fn(a, flat_axis, dtypes.default_int_dtype())
        if keepdims:
            dims = tuple(range(len(shape))) if axis is None else (flat_axis,)
            result = lax.expand_dims(result, dims)
        return result
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = _ARG_EXTREMUM_DOC.format(name=name, what=name[3:], out=example_output)
    return fn


_ARG_EXTREMUM_DOC = """The index of the {what}imum of `a` along `axis` (in the flattened array
    if `axis` is None).

    Follows `numpy.{name}`: the first index on ties, and a NaN counts as the
    {what}imum (its index is returned). The indices have the default int dtype (int32
    unless `jax_enable_x64`).

    Args:
        a: an array.
        axis: the axis to search; None searches the flattened array.
        out: unsupported; must be None.
        keepdims: keep the reduced axis with size 1.

    Returns:
        An integer array of indices.

    Raises:
        ValueError: the axis searched is empty.

    Examples:
        >>> jnp.{name}(jnp.array([[1, 5], [7, 0]]), axis=1)
        {out}
    """

argmax = _arg_extremum("argmax", lax.argmax, "Array([1, 0], dtype=int32)")
argmin = _arg_extremum("argmin", lax.argmin, "Array([0, 1], dtype=int32)")


# --- the reductions of ufuncs (`jnp.bitwise_or.reduce`, `jnp.logaddexp.reduce`...) ---------

def _ufunc_reduction(m: _Monoid, logical: bool) -> Callable:
    """The `reduce` method of a bitwise ufunc (integer or bool operands only: a float is
    a ValueError, as in JAX) or, `logical`, of a logical one (the operands' truth values,
    a complex number's from its real part, as JAX's)."""
    def reduce(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
        _check_out(out, m.name)
        a = util.ensure_arraylike(m.name, a)
        category = util.dtype_category(util.dtype_of(a))
        if logical:
            a = util.convert(lax.real(a) if category == "c" else a, bool)
        elif category not in "biu":
            raise ValueError(f"{m.name}: integer argument required; got "
                             f"dtype={util.dtype_of(a)}")
        return _reduce(m, a, axis, dtype, keepdims, initial, where, promote_integers=False,
                       upcast_f16=False)
    reduce.__name__ = reduce.__qualname__ = m.name
    return reduce


reduce_bitwise_and = _ufunc_reduction(_BITWISE_AND, logical=False)
reduce_bitwise_or = _ufunc_reduction(_BITWISE_OR, logical=False)
reduce_bitwise_xor = _ufunc_reduction(_BITWISE_XOR, logical=False)
reduce_logical_and = _ufunc_reduction(_LOGICAL_AND, logical=True)
reduce_logical_or = _ufunc_reduction(_LOGICAL_OR, logical=True)
reduce_logical_xor = _ufunc_reduction(_LOGICAL_XOR, logical=True)


def reduce_maximum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None,
                   where=None):
    """`jnp.maximum.reduce`: `max`. A `dtype` is a TypeError, as in JAX (whose jitted
    maximum cannot take one as an argument; its minimum takes one statically)."""
    if dtype is not None:
        raise TypeError(f"maximum.reduce takes no dtype, got dtype={dtype!r}")
    return max(a, axis, out, keepdims, initial, where)


def reduce_minimum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None,
                   where=None):
    """`jnp.minimum.reduce`: `min`, computed in and returning `dtype` if one is given."""
    _check_out(out, "min")
    return _reduce(_MIN, a, axis, dtype, keepdims, initial, where, promote_integers=False,
                   upcast_f16=False)


def reduce_logaddexp(a, axis=None, dtype=None, out=None, keepdims=False, initial=None,
                     where=None):
    """`jnp.logaddexp.reduce`: log(sum(exp(a))) over `axis`, computed from a - max(a)
    (the masked maximum where it is finite, else 0, held constant for derivatives), then
    folded with `initial` by `logaddexp`. A `dtype` is checked and, as by JAX, unused."""
    _check_out(out, "logaddexp.reduce")
    util.check_user_dtype(dtype, "logaddexp.reduce")
    a, = util.promote_dtypes_inexact(util.ensure_arraylike("logsumexp", a))
    axes = util.canonicalize_axes(axis, len(util.shape_of(a)))
    if where is not None:
        where = _checked_where(where, util.shape_of(a), "logsumexp")
    amax = max(ufuncs.real(a), axis=axes, keepdims=keepdims, where=where, initial=-np.inf)
    amax = lax.stop_gradient(lax.select(lax.is_finite(amax), amax, lax.full_like(amax, 0)))
    shift = util.convert(amax if keepdims else lax.expand_dims(amax, axes), util.dtype_of(a))
    total = sum(lax.exp(lax.sub(a, shift)), axis=axes, keepdims=keepdims, where=where)
    out = lax.add(lax.log(total), util.convert(amax, util.dtype_of(total)))
    return out if initial is None else ufuncs.logaddexp(initial, out)


def reduce_logaddexp2(a, axis=None, dtype=None, out=None, keepdims=False, initial=None,
                      where=None):
    """`jnp.logaddexp2.reduce`: log2(sum(2 ** a)), as JAX computes it: `reduce_logaddexp`
    of `a` (and `initial`) times ln 2, over ln 2."""
    _check_out(out, "logaddexp2.reduce")
    util.check_user_dtype(dtype, "logaddexp2.reduce")
    ln2 = float(np.log(2))
    a = util.ensure_arraylike("logsumexp2", a)
    initial = None if initial is None else ufuncs.multiply(initial, ln2)
    out = reduce_logaddexp(ufuncs.multiply(a, ln2), axis=axis, keepdims=keepdims,
                           initial=initial, where=where)
    return ufuncs.true_divide(out, ln2)


# --- cumulative reductions ---------------------------------------------------------------

def accumulate(name: str, lax_fn: Callable, a, axis, dtype, out, fill_nan: bool = False,
               fill_value=0):
    """The body of cumsum/cumprod and of their nan forms (`fill_nan`: NaNs count as
    `fill_value`), in JAX's order: flatten (for `axis=None`), fill, convert, accumulate,
    convert back."""
    _check_out(out, name)
    a = util.ensure_arraylike(name, a)
    if axis is None:
        a, axis = lax.reshape(a, (math.prod(util.shape_of(a)),)), 0
    axis = util.canonicalize_axis(axis, len(util.shape_of(a)))
    if fill_nan:
        a = ufuncs.where(lax.ne(a, a), np.asarray(fill_value, util.dtype_of(a))[()], a)
    dtype = util.check_user_dtype(dtype, name)
    if dtype == np.dtype(bool):  # the truth values accumulate (as integers), bools come back
        result_dtype = dtype
        if util.dtype_of(a) != result_dtype:
            a = lax.ne(a, util.convert(0, util.dtype_of(a), util.is_weak(a)))
        compute_dtype = summed_dtype(result_dtype)
    else:
        if dtype is None:
            dtype = summed_dtype(util.dtype_of(a)) if util.dtype_of(a) == np.dtype(bool) \
                else util.dtype_of(a)
        result_dtype = compute_dtype = dtype
    out = lax_fn(util.convert(a, compute_dtype), axis=axis)
    return util.convert(out, result_dtype)


def _cumulative(name: str, lax_fn: Callable, example_output: str):
    def fn(a, axis=None, dtype=None, out=None):
        return accumulate(name, lax_fn, a, axis, dtype, out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = _CUMULATIVE_DOC.format(name=name, what=name[3:], out=example_output)
    return fn


_CUMULATIVE_DOC = """The running {what} of `a` along `axis` (over the flattened array if `axis` is
    None): element i is the {what} of elements 0..i.

    Follows `numpy.{name}`, except for dtypes: integers keep their dtype (as in JAX;
    NumPy widens narrow ones to int64) and bools accumulate as the default int; with
    `dtype=bool`, the truth values of `a` accumulate and the result is bool (as in JAX).

    Args:
        a: an array.
        axis: the axis to accumulate along; None flattens `a` first.
        dtype: the dtype to accumulate in and return.
        out: unsupported; must be None.

    Returns:
        An array of `a`'s shape (flattened if `axis` is None).

    Examples:
        >>> jnp.{name}(jnp.array([[1, 2], [3, 4]]), axis=1)
        {out}
    """

cumsum = _cumulative("cumsum", lax.cumsum, """Array([[1, 3],
               [3, 7]], dtype=int32)""")
cumprod = _cumulative("cumprod", lax.cumprod, """Array([[ 1,  2],
               [ 3, 12]], dtype=int32)""")


jax_jits.apply(globals())  # JAX's jitted functions become jit functions

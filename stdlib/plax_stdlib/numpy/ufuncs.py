"""Elementwise functions: arithmetic, transcendental, rounding, comparison, logic, bits.

Each function promotes its arguments (`util.promote_args*`) and binds lax
primitives. Where NumPy's semantics differ from the primitive's (floor division
and remainder of signed values, comparisons of complex numbers, bool arithmetic),
the difference is spelled out here with a few more primitives.
"""
from __future__ import annotations

import functools
import operator
from typing import Callable

import numpy as np

import plax
from plax.extend import dtypes
from plax.extend.core import SymbolicDimension, Tracer
from plax_stdlib import jax_jits, lax
from plax_stdlib.numpy import util


def _named(name: str, doc: str, fn: Callable) -> Callable:
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def _category(x) -> str:
    return util.dtype_category(util.dtype_of(x))


def _zeros_like(x, dtype=None):
    return util.full_like(x, 0, dtype)


def _ones_like(x, dtype=None):
    return util.full_like(x, 1, dtype)


def _filled_like(x, value):
    """`x`'s shape, dtype and weak type filled with `value`, as JAX's internal `_ones`
    and `_zeros` make it: of a 0-d `x`, the constant itself (a literal in a Jaxpr, not
    a broadcast). Only for operands of further operations: it may be a NumPy or Python
    scalar."""
    if util.shape_of(x):
        return util.full_like(x, value)
    return util.convert(value, util.dtype_of(x), util.is_weak(x))


def _constant_like(x, value) -> np.ndarray:
    """`value` as a NumPy scalar of x's dtype: rounded once, on the host, as JAX does."""
    return np.asarray(value, util.dtype_of(x))


def _lax_const(x, value):
    """A constant for an operation with `x`, as JAX's `lax._const` makes it: a Python
    scalar (weakly typed, as `x`) for a weakly typed 0-d `x` of a Python scalar's
    dtype, else `_constant_like` (strongly typed)."""
    if util.is_weak(x) and not util.shape_of(x):
        scalar = util.convert(value, util.dtype_of(x), True)
        if util.is_python_scalar(scalar):
            return scalar
    return _constant_like(x, value)


# --- families ------------------------------------------------------------------------

def _inexact_unary(name: str, lax_fn: Callable, real_only: bool = False) -> Callable:
    """A unary function computed in floating point (integers become the default float;
    jax_jits.py makes it a `jit(inline=True)` function, as JAX's is)."""
    def fn(x, /):
        x, = util.promote_args_inexact(name, x)
        if real_only and _category(x) == "c":
            raise TypeError(f"{name} does not support complex input, got dtype "
                            f"{util.dtype_of(x)}")
        return lax_fn(x)
    fn = _named(name, f"Elementwise {name}; integer and bool inputs are converted to the "
                "default float dtype first.", fn)
    return fn


def _binary(name: str, lax_fn: Callable, promote: Callable = util.promote_args) -> Callable:
    def fn(x1, x2, /):
        return lax_fn(*promote(name, x1, x2))
    return _named(name, f"Elementwise {name} of `x1` and `x2` (with NumPy broadcasting "
                  "and JAX type promotion).", fn)


def _rounding(name: str, lax_fn: Callable) -> Callable:
    """floor/ceil/trunc: integer and bool inputs come back unchanged, as in JAX."""
    def fn(x, /):
        x = util.ensure_arraylike(name, x)
        category = _category(x)
        if category in "biu":
            return util.as_array(x)
        if category == "c":
            raise TypeError(f"{name} does not support complex input, got dtype "
                            f"{util.dtype_of(x)}")
        return lax_fn(util.operand(x))  # a Python float as a (weak) array
    return _named(name, f"Elementwise {name}; integer inputs are returned unchanged.", fn)


# --- arithmetic ----------------------------------------------------------------------

def add(x1, x2, /):
    """Elementwise x1 + x2; for bool arrays, logical or."""
    x1, x2 = util.promote_args("add", x1, x2)
    return lax.bitwise_or(x1, x2) if _category(x1) == "b" else lax.add(x1, x2)


def subtract(x1, x2, /):
    """Elementwise x1 - x2 (not defined for bool, as in NumPy)."""
    x1, x2 = util.promote_args("subtract", x1, x2)
    if _category(x1) == "b":
        raise TypeError("subtract does not support bool inputs; use logical_xor or "
                        "bitwise_xor instead")
    return lax.sub(x1, x2)


def multiply(x1, x2, /):
    """Elementwise x1 * x2; for bool arrays, logical and. A boolean factor selects, as in
    JAX (`False * nan` is 0, not NaN)."""
    util.check_arraylike("multiply", x1, x2)
    flags = [util.dtype_category(util.dtype_of(util.operand(x))) == "b" for x in (x1, x2)]
    y1, y2 = util.promote_args("multiply", x1, x2)
    if _category(y1) == "b":
        return lax.bitwise_and(y1, y2)
    if flags[0] != flags[1]:
        mask, other = (x1, y2) if flags[0] else (x2, y1)
        return where(mask, other, _zeros_like(other))
    return lax.mul(y1, y2)


true_divide = _binary("true_divide", lax.div, util.promote_args_inexact)
divide = _named("divide", "Alias of `true_divide`.", lambda x1, x2, /: true_divide(x1, x2))


def floor_divide(x1, x2, /):
    """Elementwise x1 // x2, rounding toward negative infinity (NumPy/Python semantics;
    an integer division by zero gives XLA's answer, as in JAX: -1, or all ones
    unsigned)."""
    x1, x2 = util.promote_args_numeric("floor_divide", x1, x2)
    category = _category(x1)
    if category == "u":
        return lax.div(x1, x2)
    if category == "i":
        quotient = lax.div(x1, x2)  # one less where the signs differ and a rest remains
        correct = logical_and(lax.sign(x1) != lax.sign(x2), lax.rem(x1, x2) != 0)
        return _where(correct, quotient - 1, quotient)
    if category == "c":
        raise TypeError("floor_divide does not support complex inputs")
    return _float_divmod(x1, x2)[0]


def remainder(x1, x2, /):
    """Elementwise remainder with the sign of the divisor (NumPy's `mod`, Python's `%`;
    an integer remainder by zero is 0, as in NumPy: the division is by 1 there)."""
    x1, x2 = util.promote_args_numeric("remainder", x1, x2)
    if _category(x1) == "c":
        raise TypeError("remainder does not support complex inputs")
    zero = _constant_like(x1, 0)
    if _category(x2) in "iu":
        x2 = _where(x2 == 0, _filled_like(x2, 1), x2)
    rest = lax.rem(x1, x2)
    # the truncated remainder moves by one divisor where its sign is not the divisor's
    nonzero = lax.ne(rest, zero)
    move = lax.bitwise_and(lax.ne(lax.lt(rest, zero), lax.lt(x2, zero)), nonzero)
    return lax.select(move, lax.add(rest, x2), rest)


mod = _named("mod", "Alias of `remainder`.", lambda x1, x2, /: remainder(x1, x2))


def divmod(x1, x2, /):  # noqa: A001 - NumPy's name
    """`(floor_divide(x1, x2), remainder(x1, x2))` (for floats, both from one
    floating-point division, as JAX's)."""
    x1, x2 = util.promote_args_numeric("divmod", x1, x2)
    if _category(x1) in "iu":
        return floor_divide(x1, x2), remainder(x1, x2)
    if _category(x1) == "c":
        raise TypeError("divmod does not support complex inputs")
    return _float_divmod(x1, x2)


def _float_divmod(a, b):
    """Floating-point divmod as JAX computes it (CPython's float_divmod): the quotient
    from the dividend less the C remainder, both corrected where the remainder's sign
    differs from the divisor's, the quotient then rounded half away from zero."""
    rest = lax.rem(a, b)
    quotient = lax.div(_where(b == 0, a, lax.sub(a, rest)), b)
    move = lax.bitwise_and(rest != 0, lax.sign(b) != lax.sign(rest))
    rest = lax.select(move, rest + b, rest)
    quotient = lax.select(move, quotient - 1.0, quotient)
    return lax.round(quotient), rest


def fmod(x1, x2, /):
    """Elementwise remainder with the sign of the dividend (C's fmod; an integer
    remainder by zero is 0: the division is by 1 there)."""
    x1, x2 = util.ensure_arraylike("fmod", x1, x2)
    if _category(x1) == "c" or _category(x2) == "c":
        raise TypeError("fmod does not support complex inputs")
    if util.dtype_category(dtypes.lattice_result_type(x1, x2)[0]) in "biu":
        x2 = _where(x2 == 0, _filled_like(x2, 1), x2)
    return lax.rem(*util.promote_args_numeric("fmod", x1, x2))


def power(x1, x2, /):
    """Elementwise x1 ** x2. A static Python int exponent uses repeated multiplication
    (`lax.integer_pow`) and keeps `x1`'s dtype."""
    util.check_arraylike("power", x1, x2)
    exponent = _concrete_int(x2)
    if exponent is not None:  # as JAX: x1 promoted alone, the exponent taken as it is
        x1, = util.promote_dtypes_numeric(util.operand(x1))
        if exponent < 0 and _category(x1) in "iu":
            raise ValueError("Integers to negative integer powers are not allowed.")
        return lax.integer_pow(x1, exponent)
    x1, x2 = util.promote_args_numeric("power", x1, x2)
    if _category(x1) in "iu":
        return _integer_power(x1, x2)
    return lax.pow(x1, x2)


pow = power  # noqa: A001 - the array API's name


def _concrete_int(x) -> int | None:
    """`x` as a Python int when it is a concrete integer scalar (a Python int or bool,
    a NumPy integer, a 0-d integer array outside tracing); else None (also for a
    symbolic size of export, whose value is known only when the module runs)."""
    if isinstance(x, (Tracer, SymbolicDimension)):
        return None
    try:
        return operator.index(x)
    except TypeError:
        return None


def _integer_power(base, exponent):
    """Integer ** integer by square-and-multiply over every bit of the exponent.
    A negative exponent gives 0, except for bases 1 (giving 1) and -1 (giving ±1)."""
    bits = dtypes.itemsize_bits(util.dtype_of(exponent))
    one = _ones_like(base)
    acc, x, n = one, base, exponent
    for i in range(bits):
        acc = util.select_n(lax.ne(lax.bitwise_and(n, 1), 0), acc, lax.mul(acc, x))
        if i + 1 < bits:
            x, n = lax.mul(x, x), lax.shift_right_logical(n, 1)
    if _category(exponent) == "i":
        odd = lax.ne(lax.bitwise_and(exponent, 1), 0)
        of_minus_one = util.select_n(odd, one, lax.neg(one))
        negative = util.select_n(lax.eq(base, -1), _zeros_like(base), of_minus_one)
        negative = util.select_n(lax.eq(base, 1), negative, one)
        acc = util.select_n(lax.lt(exponent, 0), acc, negative)
    return acc


def float_power(x1, x2, /):
    """Elementwise x1 ** x2 computed in floating point."""
    x1, x2 = util.promote_args_inexact("float_power", x1, x2)
    return lax.pow(x1, x2)


def negative(x, /):
    """Elementwise -x (not defined for bool, as in NumPy)."""
    x = util.ensure_arraylike("negative", x)
    if _category(x) == "b":
        raise TypeError("negative does not support bool inputs; use logical_not or "
                        "bitwise_not instead")
    return lax.neg(x)


def positive(x, /):
    """Elementwise +x: `x` as an array."""
    return util.as_array(util.ensure_arraylike("positive", x))


def absolute(x, /):
    """Elementwise |x|; the magnitude (a real value) for complex inputs."""
    x = util.ensure_arraylike("absolute", x)
    return util.as_array(x) if _category(x) in "bu" else lax.abs(x)


def abs(x, /):  # noqa: A001 - NumPy's name
    """Elementwise |x| (`absolute`): a function of its own, as JAX's, so that a `jit` of
    it is named `abs`.

    Examples:
        >>> jnp.abs(jnp.array([-2, 3]))
        Array([2, 3], dtype=int32)
    """
    return absolute(x)


def sign(x, /):
    """Elementwise sign: -1, 0 or 1 (`x / |x|` for complex inputs)."""
    x = util.ensure_arraylike("sign", x)
    if _category(x) == "b":
        raise TypeError("sign does not support bool inputs")
    return lax.sign(x)


def reciprocal(x, /):
    """Elementwise 1 / x, in floating point."""
    x, = util.promote_args_inexact("reciprocal", x)
    return lax.integer_pow(x, -1)


def square(x, /):
    """Elementwise x * x, keeping integer dtypes."""
    x, = util.promote_args_numeric("square", x)
    return lax.square(x)


sqrt = _inexact_unary("sqrt", lax.sqrt)
cbrt = _inexact_unary("cbrt", lax.cbrt, real_only=True)
exp = _inexact_unary("exp", lax.exp)
exp2 = _inexact_unary("exp2", lax.exp2)
expm1 = _inexact_unary("expm1", lax.expm1)
log = _inexact_unary("log", lax.log)
log1p = _inexact_unary("log1p", lax.log1p)
log2 = _inexact_unary(  # JAX's formulation: over log(2) computed in x's dtype
    "log2", lambda x: lax.div(lax.log(x), lax.log(_constant_like(x, 2))))


def _log10(x):
    """JAX's formulation: log(x) times 1/log(10) (complex: over log(10))."""
    if _category(x) == "c":
        return lax.div(lax.log(x), lax.log(_constant_like(x, 10)))
    return lax.mul(lax.log(x), _constant_like(x, 0.4342944819032518))


log10 = _inexact_unary("log10", _log10)
sin = _inexact_unary("sin", lax.sin)
cos = _inexact_unary("cos", lax.cos)
tan = _inexact_unary("tan", lax.tan)
arcsin = _inexact_unary("arcsin", lax.asin)
arccos = _inexact_unary("arccos", lax.acos)
arctan = _inexact_unary("arctan", lax.atan)
sinh = _inexact_unary("sinh", lax.sinh)
cosh = _inexact_unary("cosh", lax.cosh)
tanh = _inexact_unary("tanh", lax.tanh)
arcsinh = _inexact_unary("arcsinh", lax.asinh)
arccosh = _inexact_unary("arccosh", lax.acosh)
arctanh = _inexact_unary("arctanh", lax.atanh)
deg2rad = _inexact_unary("deg2rad", lambda x: lax.mul(x, _lax_const(x, np.pi / 180)),
                         real_only=True)
rad2deg = _inexact_unary("rad2deg", lambda x: lax.mul(x, _lax_const(x, 180 / np.pi)),
                         real_only=True)
radians = _named("radians", "Alias of `deg2rad`.", lambda x, /: deg2rad(x))
degrees = _named("degrees", "Alias of `rad2deg`.", lambda x, /: rad2deg(x))
acos = _named("acos", "Alias of `arccos`.", lambda x, /: arccos(x))
asin = _named("asin", "Alias of `arcsin`.", lambda x, /: arcsin(x))
atan = _named("atan", "Alias of `arctan`.", lambda x, /: arctan(x))
acosh = _named("acosh", "Alias of `arccosh`.", lambda x, /: arccosh(x))
asinh = _named("asinh", "Alias of `arcsinh`.", lambda x, /: arcsinh(x))
atanh = _named("atanh", "Alias of `arctanh`.", lambda x, /: arctanh(x))


arctan2 = _binary("arctan2", lax.atan2, util.promote_args_inexact)
atan2 = _named("atan2", "Alias of `arctan2`.", lambda x1, x2, /: arctan2(x1, x2))


def logaddexp(x1, x2, /):
    """Elementwise log(exp(x1) + exp(x2)), without overflow."""
    x1, x2 = util.promote_args_inexact("logaddexp", x1, x2)
    if _category(x1) == "c":
        raise TypeError("logaddexp does not support complex inputs")
    return _logaddexp_with_rule()(x1, x2)


@functools.cache
def _logaddexp_with_rule():
    """JAX's `lax` logaddexp: a custom_jvp named `logaddexp`, differentiated as
    t1 e^(x1 - out) + t2 e^(x2 - out) with +inf read as 0 (made on first use:
    `custom_jvp` is reached through the facade)."""
    def logaddexp(x1, x2):  # the larger plus log1p(e^-|x1 - x2|)
        larger = lax.max(x1, x2)
        delta = lax.sub(x1, x2)
        return lax.select(lax.ne(delta, delta),  # inf - inf (or a NaN): the plain sum
                          lax.add(x1, x2),
                          lax.add(larger, lax.log1p(lax.exp(lax.neg(lax.abs(delta))))))

    fn = plax.custom_jvp(logaddexp)

    @fn.defjvp
    def _logaddexp_jvp(primals, tangents):
        (x1, x2), (t1, t2) = primals, tangents
        out = fn(x1, x2)
        return out, lax.add(lax.mul(t1, lax.exp(lax.sub(_finite_above(x1), _finite_above(out)))),
                            lax.mul(t2, lax.exp(lax.sub(_finite_above(x2), _finite_above(out)))))
    return fn


def _finite_above(x):
    """`x` with +inf replaced by 0."""
    return lax.select(lax.eq(x, _lax_const(x, np.inf)), _filled_like(x, 0), x)


def hypot(x1, x2, /):
    """Elementwise sqrt(x1**2 + x2**2), without overflow: the larger magnitude times
    sqrt(1 + (smaller / larger)**2) (JAX's formulation), inf where either is inf."""
    x1, x2 = util.promote_args_inexact("hypot", x1, x2)
    if _category(x1) == "c":
        raise ValueError("hypot is not well defined for complex inputs")  # JAX's class
    x1, x2 = lax.abs(x1), lax.abs(x2)
    infinite = lax.bitwise_or(_is_plus_inf(x1), _is_plus_inf(x2))
    big, small = maximum(x1, x2), minimum(x1, x2)
    # (JAX tests `big == 0` twice: the two tests print as its Jaxpr does)
    out = _where(big == 0, big, big * lax.sqrt(1 + lax.square(lax.div(
        small, _where(big == 0, _filled_like(big, 1), big)))))
    return _where(infinite, _lax_const(out, np.inf), out)


def _is_plus_inf(x):
    return lax.eq(x, _constant_like(x, np.inf))


# --- rounding ------------------------------------------------------------------------

floor = _rounding("floor", lax.floor)
ceil = _rounding("ceil", lax.ceil)


def _toward_zero(x):
    """JAX's formulation: `where(x < 0, ceil(x), floor(x))`."""
    return where(lax.lt(x, _lax_const(x, 0)), ceil(x), floor(x))


trunc = _rounding("trunc", _toward_zero)
fix = _rounding("fix", _toward_zero)


def rint(x, /):
    """Elementwise rounding to the nearest integer, ties to even (a float result; of
    integers and booleans, their value as the default float type, not weak, as JAX's)."""
    x = util.ensure_arraylike("rint", x)
    if _category(x) in "biu":
        return lax.convert_element_type(x, dtypes.default_float_dtype())
    x, = util.promote_args_inexact("rint", x)
    if _category(x) == "c":
        return lax.complex(rint(lax.real(x)), rint(lax.imag(x)))
    return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)


def round(a, decimals: int = 0, out=None):  # noqa: A001 - NumPy's name
    """Round to `decimals` decimal places, ties to even, keeping the dtype."""
    if out is not None:
        raise NotImplementedError("round: the 'out' argument is not supported")
    a = util.ensure_arraylike("round", a)
    decimals = int(util.concrete_or_error(decimals, "round: 'decimals' must be static"))
    category = _category(a)
    if category == "b":  # JAX's class; NumPy refuses bools too
        raise ValueError(f"round: data type {util.dtype_of(a)} is not inexact (nor an "
                         "integer); convert the booleans first")
    if category in "iu" and decimals >= 0:
        return util.as_array(a)
    if category in "iu":
        return _round_int(a, 10 ** -decimals)
    if category == "c":
        return lax.complex(round(lax.real(a), decimals), round(lax.imag(a), decimals))
    dtype = util.dtype_of(a)
    x = util.convert(a, np.float32) if dtypes.itemsize_bits(dtype) < 32 else a
    if decimals == 0:
        rounded = lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)
    else:
        factor = 10.0 ** decimals
        rounded = lax.div(lax.round(lax.mul(x, factor), lax.RoundingMethod.TO_NEAREST_EVEN),
                          factor)
    return util.convert(rounded, dtype, util.is_weak(a))


def around(a, decimals: int = 0, out=None):
    """Alias of `round`."""
    return round(a, decimals, out)


def _round_int(x, factor: int):
    """Integers rounded to a multiple of `factor`, ties to the even multiple. The
    multiple below may wrap (-125 -> -130 in int8) and the answer with it, into the
    dtype as NumPy's does for 8 and 16 bits; the rounding is decided by the remainder
    and the quotient, which cannot wrap."""
    if factor > dtypes.iinfo(util.dtype_of(x)).max:
        return _zeros_like(x)
    rest = remainder(x, factor)
    down = lax.sub(x, rest)
    above = lax.sub(np.asarray(factor, util.dtype_of(x))[()], rest)  # factor - rest
    up = lax.bitwise_or(lax.gt(rest, above),
                        lax.bitwise_and(lax.eq(rest, above),
                                        lax.ne(remainder(floor_divide(x, factor), 2), 0)))
    return util.select_n(up, down, lax.add(down, factor))


# --- extrema -------------------------------------------------------------------------

maximum = _binary("maximum", lax.max)
minimum = _binary("minimum", lax.min)


def fmax(x1, x2, /):
    """Elementwise maximum, ignoring NaNs (NaN only if both are NaN)."""
    util.check_arraylike("fmax", x1, x2)
    return where(greater(x1, x2) | isnan(x2), x1, x2)


def fmin(x1, x2, /):
    """Elementwise minimum, ignoring NaNs (NaN only if both are NaN)."""
    util.check_arraylike("fmin", x1, x2)
    return where(less(x1, x2) | isnan(x2), x1, x2)


def clip(arr, /, min=None, max=None):  # noqa: A002 - NumPy's names
    """`arr` limited to `[min, max]` (either bound may be None)."""
    util.check_arraylike("clip", arr, *(b for b in (min, max) if b is not None))
    if any(_category(util.operand(v)) == "c" for v in (arr, min, max) if v is not None):
        raise ValueError("Clip received a complex value either through the input or the "
                         "min/max keywords. Complex values have no ordering and cannot be "
                         "clipped.")
    if min is not None:
        arr = maximum(min, arr)
    if max is not None:
        arr = minimum(max, arr)
    return util.as_array(util.operand(arr))


# --- where ----------------------------------------------------------------------------

def _as_bool(x):
    """`x != 0`, as JAX's: the zero is weak beside a weak scalar (`logical_not(2.5)` is a
    weak bool) and strong beside an array (`logical_and(2, bool_array)` is strong)."""
    if _category(x) == "b":
        return x
    weak_scalar = util.is_weak(x) and not util.shape_of(x)
    return lax.ne(x, util.convert(0, util.dtype_of(x), weak_scalar))


def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
    """Selects elementwise from `x` where `condition` holds, else from `y`.

    With only `condition`, it is `nonzero(condition)`: then, as in JAX, `size`
    (and `fill_value`) make the result's shape static, which `jit` needs.

    Args:
        condition: a boolean array (or anything truthy elementwise).
        x: the values where `condition` is true.
        y: the values elsewhere; `condition`, `x` and `y` broadcast together.
        size: with `condition` alone, the number of indices to return.
        fill_value: with `size`, the index that pads the result.

    Returns:
        An array of the broadcast shape and the promoted dtype of `x` and `y`; or,
        with `condition` alone, a tuple of index arrays (one per dimension).

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> jnp.where(jnp.array([1.0, -2.0, 3.0]) > 0, 1.0, 0.0)
        Array([1., 0., 1.], dtype=float32, weak_type=True)
        >>> plax.jit(lambda x: jnp.where(x > 0, size=3, fill_value=-1))(jnp.array([0., 2., 0., 5.]))
        (Array([ 1,  3, -1], dtype=int32),)
    """
    if x is None and y is None:
        from plax_stdlib.numpy.sorting import nonzero
        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise ValueError("Either both or neither of the x and y arguments should be provided "
                         f"to plax.numpy.where, got {x} and {y}.")
    if size is not None or fill_value is not None:
        raise ValueError("plax.numpy.where: size and fill_value apply only to the "
                         "one-argument form")
    util.check_arraylike("where", condition, x, y)
    return _where(condition, x, y)


@util.compiled()
def _where(condition, x, y):
    """The three-argument `where` as one jitted call (JAX's `_where`): eagerly, scalar
    `x` or `y` broadcast on the device, not on the host."""
    condition = _as_bool(util.operand(condition))
    x, y = util.promote_dtypes(util.operand(x), util.operand(y))
    # Broadcast explicitly, as `broadcast_arrays` does: no rank-promotion check (JAX's).
    shape = util.broadcast_shapes(*(util.shape_of(a) for a in (condition, x, y)))
    if util.shape_of(condition):
        condition = util.broadcast_to_shape(condition, shape)
    x, y = util.broadcast_to_shape(x, shape), util.broadcast_to_shape(y, shape)
    return x if 0 in shape else lax.select_n(condition, y, x)


# --- floating-point classification ------------------------------------------------------

def isnan(x, /):
    x = util.ensure_arraylike("isnan", x)
    return lax.ne(x, x)  # (JAX's for every dtype: printed so, and weak as x is)


def isinf(x, /):
    x = util.ensure_arraylike("isinf", x)
    category = _category(x)
    if category in "biu":
        return util.full_like(x, False, bool)
    if category == "c":
        return lax.bitwise_or(isinf(lax.real(x)), isinf(lax.imag(x)))
    # A strong inf, so that the result is strongly typed, as JAX's is.
    return lax.eq(lax.abs(x), util.convert(np.inf, util.dtype_of(x)))


def isfinite(x, /):
    x = util.ensure_arraylike("isfinite", x)
    category = _category(x)
    if category in "biu":
        return util.full_like(x, True, bool)
    if category == "c":
        return lax.bitwise_and(lax.is_finite(lax.real(x)), lax.is_finite(lax.imag(x)))
    return lax.is_finite(x)


_UINT_OF_BITS = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


_INT_OF_BITS = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}


def signbit(x, /):
    """Elementwise test of the sign bit (true for -0.0 and negative NaNs too): the bits
    as a signed integer, shifted arithmetically down to the sign (JAX's formulation)."""
    x, = util.promote_args("signbit", x)
    category = _category(x)
    if category in "iu":  # against a typed zero: the result is not weak (as in JAX)
        return lax.lt(x, _constant_like(x, 0))
    if category == "b":
        return util.full_like(x, False, bool)
    if category == "c":
        raise ValueError("signbit is not well defined for complex inputs")  # JAX's class
    info = dtypes.finfo(util.dtype_of(x))
    as_int = lax.bitcast_convert_type(x, _INT_OF_BITS[info.bits])
    return lax.convert_element_type(as_int >> (info.nexp + info.nmant), bool)


def copysign(x1, x2, /):
    """Elementwise |x1| with the sign (bit) of x2."""
    x1, x2 = util.promote_args_inexact("copysign", x1, x2)
    if _category(x1) == "c":
        raise TypeError("copysign does not support complex inputs")
    return _where(signbit(x2), -lax.abs(x1), lax.abs(x1))


def heaviside(x1, x2, /):
    """0 where x1 < 0, x2 where x1 == 0, 1 where x1 > 0 (NaN where x1 is NaN); as
    JAX's, the dtypes are promoted and the shapes broadcast by `where`."""
    x1, x2 = util.promote_dtypes_inexact(*util.ensure_arraylike("heaviside", x1, x2))
    zero = _lax_const(x1, 0)
    return _where(lax.lt(x1, zero), zero,
                  _where(lax.gt(x1, zero), _lax_const(x1, 1),
                         _where(lax.ne(x1, x1), x1, x2)))


def sinc(x, /):
    """Elementwise sin(pi x) / (pi x), with sinc(0) = 1. At 0 the value (and each
    derivative) comes from the Maclaurin series of sin(y)/y, so that `grad` of it is
    defined there (0), as JAX's."""
    x, = util.promote_dtypes_inexact(util.ensure_arraylike("sinc", x))
    is_zero = lax.eq(x, _lax_const(x, 0))
    pi_x = lax.mul(_lax_const(x, np.pi), x)
    safe = _where(is_zero, _lax_const(x, 1), pi_x)
    return _where(is_zero, _sinc_maclaurin()(0, pi_x), lax.div(lax.sin(safe), safe))


@functools.cache
def _sinc_maclaurin():
    """The k-th derivative of sin(y)/y at y = 0, as a function of y of that constant
    value (`y * 0 + c`), whose derivative is the next term's, times the tangent: JAX's
    custom_jvp of `k` and `y` (made on first use, as custom_jvp is reached through the
    facade)."""
    def _sinc_maclaurin(k, x):
        if k % 2:  # the odd derivatives vanish at 0
            return x * 0
        return x * 0 + _lax_const(x, (-1) ** (k // 2) / (k + 1))

    fn = plax.custom_jvp(_sinc_maclaurin, nondiff_argnums=(0,))

    @fn.defjvp
    def _sinc_maclaurin_jvp(k, primals, tangents):
        (x,), (t,) = primals, tangents
        return fn(k, x), fn(k + 1, x) * t
    return fn


# --- complex numbers ----------------------------------------------------------------------

def real(val, /):
    """The real part (the value itself for real inputs)."""
    val = util.ensure_arraylike("real", val)
    return lax.real(val) if _category(val) == "c" else util.as_array(val)


def imag(val, /):
    """The imaginary part (zeros for real inputs)."""
    val = util.ensure_arraylike("imag", val)
    return lax.imag(val) if _category(val) == "c" else _zeros_like(val)


def conjugate(x, /):
    """The complex conjugate (the value itself for real inputs)."""
    x = util.ensure_arraylike("conjugate", x)
    return lax.conj(x) if _category(x) == "c" else util.as_array(x)


conj = _named("conj", "Alias of `conjugate`.", lambda x, /: conjugate(x))


def angle(z, deg: bool = False):
    """The argument of complex `z` (radians, or degrees if `deg`)."""
    z = util.ensure_arraylike("angle", z)
    re, im = real(z), imag(z)
    # JAX's rule: integers and bools, and real floating scalars (0-d), give the
    # default float dtype; other floating arrays keep theirs.
    if util.dtype_category(util.dtype_of(re)) not in "fc" or (
            util.dtype_category(util.dtype_of(z)) == "f" and not util.shape_of(z)):
        re, im = (lax.convert_element_type(v, dtypes.default_float_dtype()) for v in (re, im))
    out = lax.atan2(im, re)
    return rad2deg(out) if deg else out


# --- comparisons -----------------------------------------------------------------------------

def _comparison(name: str, lax_fn: Callable, strict_fn: Callable | None = None) -> Callable:
    """With `strict_fn`, an ordering: complex values compare lexicographically (real
    parts by `strict_fn`, then imaginary parts by `lax_fn`), as in NumPy."""
    def fn(x1, x2, /):
        x1, x2 = util.promote_args(name, x1, x2)
        if strict_fn is None or _category(x1) != "c":
            return lax_fn(x1, x2)
        r1, r2, i1, i2 = lax.real(x1), lax.real(x2), lax.imag(x1), lax.imag(x2)
        return lax.bitwise_or(strict_fn(r1, r2),
                              lax.bitwise_and(lax.eq(r1, r2), lax_fn(i1, i2)))
    return _named(name, f"Elementwise {name} (a bool array).", fn)


equal = _comparison("equal", lax.eq)
not_equal = _comparison("not_equal", lax.ne)
less = _comparison("less", lax.lt, lax.lt)
less_equal = _comparison("less_equal", lax.le, lax.lt)
greater = _comparison("greater", lax.gt, lax.gt)
greater_equal = _comparison("greater_equal", lax.ge, lax.gt)


# --- logic and bits ---------------------------------------------------------------------------

def _logical(name: str, lax_fn: Callable) -> Callable:
    def fn(x1, x2, /):  # promoted first, as JAX's: a weak bool becomes a strong one
        return lax_fn(*map(_as_bool, util.promote_args(name, x1, x2)))
    return _named(name, f"Elementwise {name} of the truth values of `x1` and `x2`.", fn)


logical_and = _logical("logical_and", lax.bitwise_and)
logical_or = _logical("logical_or", lax.bitwise_or)
logical_xor = _logical("logical_xor", lax.bitwise_xor)


def logical_not(x, /):
    x = util.ensure_arraylike("logical_not", x)
    return lax.bitwise_not(_as_bool(x))


bitwise_and = _binary("bitwise_and", lax.bitwise_and)
bitwise_or = _binary("bitwise_or", lax.bitwise_or)
bitwise_xor = _binary("bitwise_xor", lax.bitwise_xor)


def bitwise_not(x, /):
    """Elementwise bit inversion (logical not for bool)."""
    return lax.bitwise_not(util.ensure_arraylike("bitwise_not", x))


invert = _named("invert", "Alias of `bitwise_not`.", lambda x, /: bitwise_not(x))
bitwise_invert = _named("bitwise_invert", "Alias of `bitwise_not`.", lambda x, /: bitwise_not(x))
left_shift = _binary("left_shift", lax.shift_left, util.promote_args_numeric)


def right_shift(x1, x2, /):
    """Elementwise x1 >> x2: arithmetic for signed integers, logical for unsigned."""
    x1, x2 = util.promote_args_numeric("right_shift", x1, x2)
    if _category(x1) == "i":
        return lax.shift_right_arithmetic(x1, x2)
    return lax.shift_right_logical(x1, x2)


bitwise_left_shift = _named("bitwise_left_shift", "Alias of `left_shift`.",
                            lambda x1, x2, /: left_shift(x1, x2))
bitwise_right_shift = _named("bitwise_right_shift", "Alias of `right_shift`.",
                             lambda x1, x2, /: right_shift(x1, x2))


def matrix_transpose(x, /):
    """`x` with its last two axes swapped."""
    x = util.ensure_arraylike("matrix_transpose", x)
    ndim = len(util.shape_of(x))
    if ndim < 2:
        raise ValueError(f"x must be at least two-dimensional for matrix_transpose; got "
                         f"ndim={ndim}")
    return lax.transpose(x, (*range(ndim - 2), ndim - 1, ndim - 2))


# The public docstrings (summary, NumPy differences, arguments, an example) come from
# one table; the short docstrings above are notes for readers of this file. Then the
# functions JAX jits become jit functions (jax_jits.py).
from plax_stdlib.numpy import ufunc_docs  # noqa: E402

ufunc_docs.teach(globals())
jax_jits.apply(globals())

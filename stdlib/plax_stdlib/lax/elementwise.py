"""Elementwise arithmetic and transcendental primitives, with their `lax` functions.

Each primitive is one `unary(...)`/`binary(...)` statement followed by its public
function. Operands of binary functions must share a dtype; Python scalars take the
other operand's dtype (`lax.mul(x, 2.0)`). Shapes must match, except that rank-0
operands and size-1 dimensions broadcast, as in JAX's lax.
"""
from __future__ import annotations

import enum

import numpy as np

from plax.extend.ad import Zero, defjvp, is_undefined_primal, linear_jvp, unbroadcast
from plax.extend.batching import broadcasting_batcher, unary_batcher
from plax.extend.constructors import (
    ANY,
    COMPLEX,
    F32_OR_F64,
    FLOAT,
    INEXACT,
    INT,
    NUMBER,
    SIGNED,
    binary,
    broadcasting_shape,
    check_dtype,
    check_same_dtypes,
    chlo_rule,
    complex_dtype,
    describe,
    elementwise_lowering,
    hlo_rule,
    kind_of,
    real_dtype,
    standard_primitive,
    to_bool,
    unary,
    weak_result,
)
from plax.extend.core import ShapedArray, get_aval
from plax.extend.mlir import hlo, mu
from plax_stdlib.lax.conversion import match_python_scalars

# --- arithmetic -------------------------------------------------------------------------

add_p = binary("lax.add", dtypes=NUMBER, lower=hlo_rule("add"),
               jvp=defjvp(lambda g, ans, x, y: g, lambda g, ans, x, y: g),
               transpose=lambda ct, x, y: [_unbroadcast_if(ct, x), _unbroadcast_if(ct, y)])
def add(x, y):
    """Elementwise addition: x + y."""
    return add_p.bind(*match_python_scalars("add", x, y))


sub_p = binary("lax.sub", dtypes=NUMBER, lower=hlo_rule("subtract"),
               jvp=defjvp(lambda g, ans, x, y: g, lambda g, ans, x, y: neg(g)),
               transpose=lambda ct, x, y: [_unbroadcast_if(ct, x),
                                          _unbroadcast_if(_neg_ct(ct), y)])
def sub(x, y):
    """Elementwise subtraction: x - y."""
    return sub_p.bind(*match_python_scalars("sub", x, y))


mul_p = binary("lax.mul", dtypes=NUMBER, lower=hlo_rule("multiply"),
               jvp=defjvp(lambda g, ans, x, y: mul(g, y), lambda g, ans, x, y: mul(x, g)),
               transpose=lambda ct, x, y: [_unbroadcast_if(_scale(ct, y), x),
                                          _unbroadcast_if(_scale(ct, x), y)])
def mul(x, y):
    """Elementwise multiplication: x * y."""
    return mul_p.bind(*match_python_scalars("mul", x, y))


div_p = binary("lax.div", dtypes=NUMBER, lower=hlo_rule("divide"),
               jvp=defjvp(lambda g, ans, x, y: div(g, y),
                          lambda g, ans, x, y: neg(mul(g, div(ans, y)))),
               transpose=lambda ct, x, y: [_unbroadcast_if(div(ct, y), x), None])
def div(x, y):
    """Elementwise division: x / y; integer division rounds toward zero."""
    return div_p.bind(*match_python_scalars("div", x, y))


rem_p = binary("lax.rem", dtypes=INT | FLOAT, lower=hlo_rule("remainder"),
               jvp=defjvp(lambda g, ans, x, y: g,
                          lambda g, ans, x, y: mul(neg(g), _trunc(div(x, y)))))
def rem(x, y):
    """Elementwise remainder of division rounding toward zero (sign of `x`, as C's fmod)."""
    return rem_p.bind(*match_python_scalars("rem", x, y))


def _minmax_lowering(op_name: str, direction: str):
    """max/min; complex numbers order by real part, then imaginary part."""
    @elementwise_lowering
    def lower(ctx, x, y):
        dtype = ctx.avals_in[0].dtype
        if kind_of(dtype) != "complex":
            return getattr(hlo, op_name)(x, y)
        part = real_dtype(dtype)
        rx, ry, ix, iy = hlo.real(x), hlo.real(y), hlo.imag(x), hlo.imag(y)
        real_wins = mu.compare(rx, ry, direction, part)
        imag_wins = hlo.and_(mu.compare(rx, ry, "EQ", part), mu.compare(ix, iy, direction, part))
        return hlo.select(hlo.or_(real_wins, imag_wins), x, y)
    return lower


max_p = binary("lax.max", dtypes=ANY, lower=_minmax_lowering("maximum", "GT"),
               jvp=defjvp(lambda g, ans, x, y: mul(g, picked(x, y, ans)),
                          lambda g, ans, x, y: mul(g, picked(y, x, ans))))
def max(x, y):  # noqa: A001 - lax's name
    """Elementwise maximum; NaN if either is NaN. Complex numbers compare
    lexicographically."""
    return max_p.bind(*match_python_scalars("max", x, y))


min_p = binary("lax.min", dtypes=ANY, lower=_minmax_lowering("minimum", "LT"),
               jvp=defjvp(lambda g, ans, x, y: mul(g, picked(x, y, ans)),
                          lambda g, ans, x, y: mul(g, picked(y, x, ans))))
def min(x, y):  # noqa: A001 - lax's name
    """Elementwise minimum; NaN if either is NaN. Complex numbers compare
    lexicographically."""
    return min_p.bind(*match_python_scalars("min", x, y))


neg_p = unary("lax.neg", dtypes=NUMBER, lower=hlo_rule("negate"), jvp=linear_jvp(),
              transpose=lambda ct, x: [neg(ct)])
def neg(x):
    """Elementwise negation: -x."""
    return neg_p.bind(x)


@elementwise_lowering
def _sign_lower(ctx, x):
    aval = ctx.avals_in[0]
    if kind_of(aval.dtype) == "unsigned":
        nonzero = mu.compare(x, mu.splat(0, aval), "NE", aval.dtype)
        return hlo.select(nonzero, mu.splat(1, aval), mu.splat(0, aval))
    return hlo.sign(x)


sign_p = unary("lax.sign", dtypes=NUMBER, lower=_sign_lower, jvp=defjvp(None))
def sign(x):
    """Elementwise sign: -1, 0 or 1 (x / |x| for complex x)."""
    return sign_p.bind(x)


abs_p = unary("lax.abs", dtypes=SIGNED | INEXACT, lower=hlo_rule("abs"), result_dtype=real_dtype,
              jvp=defjvp(lambda g, ans, x: _abs_tangent(g, ans, x)))
def abs(x):  # noqa: A001 - lax's name
    """Elementwise absolute value; the magnitude, of real dtype, for complex x."""
    return abs_p.bind(x)


square_p = unary("lax.square", dtypes=NUMBER,
                 lower=elementwise_lowering(lambda ctx, x: hlo.multiply(x, x)),
                 jvp=defjvp(lambda g, ans, x: mul(g, mul(x, 2))))
def square(x):
    """Elementwise square: x * x."""
    return square_p.bind(x)


def _integer_pow_abstract_eval(x, *, y):
    check_dtype("integer_pow", x, NUMBER)
    if y < 0 and kind_of(x.dtype) in ("signed", "unsigned"):
        raise TypeError(f"integer_pow: integers cannot be raised to the negative power {y} "
                        f"(got operand {describe(x)})")
    return x


def _integer_pow_lower(ctx, x, *, y):
    """Square-and-multiply: about log2(|y|) multiplications, exact for integers."""
    result, base, n = None, x, int(np.abs(y))
    while n:
        if n & 1:
            result = base if result is None else hlo.multiply(result, base)
        n >>= 1
        if n:
            base = hlo.multiply(base, base)
    if result is None:
        return mu.splat(1, ctx.avals_out[0])
    return hlo.divide(mu.splat(1, ctx.avals_out[0]), result) if y < 0 else result


integer_pow_p = standard_primitive(
    "lax.integer_pow", _integer_pow_abstract_eval, _integer_pow_lower,
    jvp=defjvp(lambda g, ans, x, *, y: mul(g, 0) if y == 0 else
               mul(g, mul(integer_pow(x, y - 1), y))),
    batching=unary_batcher())
def integer_pow(x, y: int):
    """Elementwise x ** y for a static Python int `y`."""
    if not isinstance(y, (int, np.integer)) or isinstance(y, bool):
        raise TypeError(f"integer_pow requires a Python int exponent, got {y!r}")
    return integer_pow_p.bind(x, y=int(y))


def _pow_abstract_eval(x, y):
    check_dtype("pow", x, INEXACT)
    check_dtype("pow", y, INT | INEXACT, what="exponent")
    if kind_of(y.dtype) not in ("signed", "unsigned"):
        check_same_dtypes("pow", x, y)
    return ShapedArray(broadcasting_shape("pow", x, y), x.dtype, weak_result((x, y), x.dtype))


@elementwise_lowering
def _pow_lower(ctx, x, y):
    x_aval, y_aval = ctx.avals_in
    if y_aval.dtype != x_aval.dtype:  # an integer exponent
        y = mu.convert(y, y_aval.update(shape=ctx.avals_out[0].shape),
                       ctx.avals_out[0])
    return hlo.power(x, y)


pow_p = standard_primitive(
    "lax.pow", _pow_abstract_eval, _pow_lower,
    jvp=defjvp(lambda g, ans, x, y: mul(g, _pow_dx(x, y)),
               lambda g, ans, x, y: mul(g, mul(log(x), ans))),
    batching=broadcasting_batcher())
def pow(x, y):  # noqa: A001 - lax's name
    """Elementwise x ** y: `x` floating or complex, `y` of `x`'s dtype or an integer."""
    if type(y) is not int:
        x, y = match_python_scalars("pow", x, y)
    return pow_p.bind(x, y)


# --- rounding ----------------------------------------------------------------------------

floor_p = unary("lax.floor", dtypes=FLOAT, lower=hlo_rule("floor"), jvp=defjvp(None))
def floor(x):
    """Elementwise floor."""
    return floor_p.bind(x)


ceil_p = unary("lax.ceil", dtypes=FLOAT, lower=hlo_rule("ceil"), jvp=defjvp(None))
def ceil(x):
    """Elementwise ceiling."""
    return ceil_p.bind(x)


class RoundingMethod(enum.IntEnum):
    """How `round` breaks ties: away from zero (0.5 → 1) or to even (0.5 → 0)."""
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


@elementwise_lowering
def _round_lower(ctx, x, *, rounding_method):
    if rounding_method == RoundingMethod.TO_NEAREST_EVEN:
        return hlo.round_nearest_even(x)
    return hlo.round_nearest_afz(x)


round_p = unary("lax.round", dtypes=FLOAT, lower=_round_lower, jvp=defjvp(None))
def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO):  # noqa: A001 - lax's name
    """Elementwise rounding to the nearest integer, ties broken by `rounding_method`."""
    return round_p.bind(x, rounding_method=RoundingMethod(rounding_method))


is_finite_p = unary("lax.is_finite", dtypes=FLOAT, lower=hlo_rule("is_finite"),
                    result_dtype=to_bool)
def is_finite(x):
    """Elementwise test for neither infinite nor NaN."""
    return is_finite_p.bind(x)


# --- exponentials, logarithms, powers ----------------------------------------------------

exp_p = unary("lax.exp", dtypes=INEXACT, lower=hlo_rule("exponential"),
              jvp=defjvp(lambda g, ans, x: mul(g, ans)))
def exp(x):
    """Elementwise exponential: e ** x."""
    return exp_p.bind(x)


@elementwise_lowering
def _exp2_lower(ctx, x):
    return hlo.exponential(hlo.multiply(mu.splat(np.log(2), ctx.avals_out[0]), x))


exp2_p = unary("lax.exp2", dtypes=INEXACT, lower=_exp2_lower,
               jvp=defjvp(lambda g, ans, x: mul(g, mul(ans, float(np.log(2))))))
def exp2(x):
    """Elementwise base-2 exponential: 2 ** x."""
    return exp2_p.bind(x)


log_p = unary("lax.log", dtypes=INEXACT, lower=hlo_rule("log"),
              jvp=defjvp(lambda g, ans, x: div(g, x)))
def log(x):
    """Elementwise natural logarithm."""
    return log_p.bind(x)


log1p_p = unary("lax.log1p", dtypes=INEXACT, lower=hlo_rule("log_plus_one"),
                jvp=defjvp(lambda g, ans, x: div(g, add(x, 1))))
def log1p(x):
    """Elementwise log(1 + x), accurate for small x."""
    return log1p_p.bind(x)


expm1_p = unary("lax.expm1", dtypes=INEXACT, lower=hlo_rule("exponential_minus_one"),
                jvp=defjvp(lambda g, ans, x: mul(g, add(ans, 1))))
def expm1(x):
    """Elementwise e ** x - 1, accurate for small x."""
    return expm1_p.bind(x)


logistic_p = unary("lax.logistic", dtypes=INEXACT, lower=hlo_rule("logistic"),
                   jvp=defjvp(lambda g, ans, x: mul(g, mul(ans, sub(1, ans)))))
def logistic(x):
    """Elementwise logistic sigmoid: 1 / (1 + e ** -x)."""
    return logistic_p.bind(x)


sqrt_p = unary("lax.sqrt", dtypes=INEXACT, lower=hlo_rule("sqrt"),
               jvp=defjvp(lambda g, ans, x: div(g, mul(ans, 2))))
def sqrt(x):
    """Elementwise square root."""
    return sqrt_p.bind(x)


rsqrt_p = unary("lax.rsqrt", dtypes=INEXACT, lower=hlo_rule("rsqrt"),
                jvp=defjvp(lambda g, ans, x: mul(g, mul(div(ans, x), -0.5))))
def rsqrt(x):
    """Elementwise reciprocal square root: 1 / sqrt(x)."""
    return rsqrt_p.bind(x)


cbrt_p = unary("lax.cbrt", dtypes=FLOAT, lower=hlo_rule("cbrt"),
               jvp=defjvp(lambda g, ans, x: mul(g, div(ans, mul(x, 3)))))
def cbrt(x):
    """Elementwise cube root."""
    return cbrt_p.bind(x)


# --- trigonometric and hyperbolic functions -------------------------------------------------

sin_p = unary("lax.sin", dtypes=INEXACT, lower=hlo_rule("sine"),
              jvp=defjvp(lambda g, ans, x: mul(g, cos(x))))
def sin(x):
    """Elementwise sine."""
    return sin_p.bind(x)


cos_p = unary("lax.cos", dtypes=INEXACT, lower=hlo_rule("cosine"),
              jvp=defjvp(lambda g, ans, x: neg(mul(g, sin(x)))))
def cos(x):
    """Elementwise cosine."""
    return cos_p.bind(x)


tan_p = unary("lax.tan", dtypes=INEXACT, lower=hlo_rule("tan"),
              jvp=defjvp(lambda g, ans, x: mul(g, add(mul(ans, ans), 1))))
def tan(x):
    """Elementwise tangent."""
    return tan_p.bind(x)


asin_p = unary("lax.asin", dtypes=INEXACT, lower=chlo_rule("asin"),
               jvp=defjvp(lambda g, ans, x: mul(g, rsqrt(sub(1, mul(x, x))))))
def asin(x):
    """Elementwise arc sine."""
    return asin_p.bind(x)


acos_p = unary("lax.acos", dtypes=INEXACT, lower=chlo_rule("acos"),
               jvp=defjvp(lambda g, ans, x: neg(mul(g, rsqrt(sub(1, mul(x, x)))))))
def acos(x):
    """Elementwise arc cosine."""
    return acos_p.bind(x)


atan_p = unary("lax.atan", dtypes=INEXACT, lower=chlo_rule("atan"),
               jvp=defjvp(lambda g, ans, x: div(g, add(mul(x, x), 1))))
def atan(x):
    """Elementwise arc tangent."""
    return atan_p.bind(x)


atan2_p = binary("lax.atan2", dtypes=FLOAT, lower=hlo_rule("atan2"),
                 jvp=defjvp(lambda g, ans, x, y: mul(g, div(y, add(mul(x, x), mul(y, y)))),
                            lambda g, ans, x, y: mul(g, div(neg(x),
                                                            add(mul(x, x), mul(y, y))))))
def atan2(x, y):
    """Elementwise arc tangent of x / y, in the quadrant of the point (y, x)."""
    return atan2_p.bind(*match_python_scalars("atan2", x, y))


tanh_p = unary("lax.tanh", dtypes=INEXACT, lower=hlo_rule("tanh"),
               jvp=defjvp(lambda g, ans, x: mul(g, sub(1, mul(ans, ans)))))
def tanh(x):
    """Elementwise hyperbolic tangent."""
    return tanh_p.bind(x)


sinh_p = unary("lax.sinh", dtypes=INEXACT, lower=chlo_rule("sinh"),
               jvp=defjvp(lambda g, ans, x: mul(g, cosh(x))))
def sinh(x):
    """Elementwise hyperbolic sine."""
    return sinh_p.bind(x)


cosh_p = unary("lax.cosh", dtypes=INEXACT, lower=chlo_rule("cosh"),
               jvp=defjvp(lambda g, ans, x: mul(g, sinh(x))))
def cosh(x):
    """Elementwise hyperbolic cosine."""
    return cosh_p.bind(x)


asinh_p = unary("lax.asinh", dtypes=INEXACT, lower=chlo_rule("asinh"),
                jvp=defjvp(lambda g, ans, x: mul(g, rsqrt(add(mul(x, x), 1)))))
def asinh(x):
    """Elementwise inverse hyperbolic sine."""
    return asinh_p.bind(x)


acosh_p = unary("lax.acosh", dtypes=INEXACT, lower=chlo_rule("acosh"),
                jvp=defjvp(lambda g, ans, x: mul(g, rsqrt(mul(sub(x, 1), add(x, 1))))))
def acosh(x):
    """Elementwise inverse hyperbolic cosine."""
    return acosh_p.bind(x)


atanh_p = unary("lax.atanh", dtypes=INEXACT, lower=chlo_rule("atanh"),
                jvp=defjvp(lambda g, ans, x: div(g, sub(1, mul(x, x)))))
def atanh(x):
    """Elementwise inverse hyperbolic tangent."""
    return atanh_p.bind(x)


# --- special functions ---------------------------------------------------------------------

erf_p = unary("lax.erf", dtypes=FLOAT, lower=chlo_rule("erf"),
              jvp=defjvp(lambda g, ans, x: mul(g, mul(exp(neg(mul(x, x))), _TWO_OVER_SQRT_PI))))
def erf(x):
    """Elementwise error function."""
    return erf_p.bind(x)


erfc_p = unary("lax.erfc", dtypes=FLOAT, lower=chlo_rule("erfc"),
               jvp=defjvp(lambda g, ans, x: mul(g, mul(exp(neg(mul(x, x))),
                                                      -_TWO_OVER_SQRT_PI))))
def erfc(x):
    """Elementwise complementary error function: 1 - erf(x), accurate for large x."""
    return erfc_p.bind(x)


erf_inv_p = unary("lax.erf_inv", dtypes=FLOAT, lower=chlo_rule("erf_inv"),
                  jvp=defjvp(lambda g, ans, x: mul(g, div(exp(mul(ans, ans)),
                                                          _TWO_OVER_SQRT_PI))))
def erf_inv(x):
    """Elementwise inverse of the error function."""
    return erf_inv_p.bind(x)


lgamma_p = unary("lax.lgamma", dtypes=FLOAT, lower=chlo_rule("lgamma"),
                 jvp=defjvp(lambda g, ans, x: mul(g, digamma(x))))
def lgamma(x):
    """Elementwise log of the absolute value of the gamma function."""
    return lgamma_p.bind(x)


digamma_p = unary("lax.digamma", dtypes=FLOAT, lower=chlo_rule("digamma"),
                  jvp=defjvp(lambda g, ans, x: mul(g, polygamma(1, x))))
def digamma(x):
    """Elementwise digamma function: the derivative of lgamma."""
    return digamma_p.bind(x)


polygamma_p = binary("lax.polygamma", dtypes=FLOAT, lower=chlo_rule("polygamma"),
                     jvp=defjvp(None, lambda g, ans, m, x: mul(g, polygamma(_next_order(m, x), x))))
def polygamma(m, x):
    """Elementwise m-th derivative of digamma, for integer-valued `m` ≥ 0 (given in
    `x`'s dtype); differentiable in `x` only."""
    return polygamma_p.bind(*match_python_scalars("polygamma", m, x))


def _next_order(m, x):
    """m + 1 in x's dtype (`m` may have stayed a Python scalar)."""
    from plax_stdlib.lax.conversion import convert_element_type
    return add(convert_element_type(m, get_aval(x).dtype), 1)


nextafter_p = binary("lax.nextafter", dtypes=FLOAT, lower=chlo_rule("next_after"),
                     jvp=defjvp(None, None))
def nextafter(x1, x2):
    """Elementwise next representable value after `x1` in the direction of `x2`."""
    return nextafter_p.bind(*match_python_scalars("nextafter", x1, x2))


# --- complex numbers ------------------------------------------------------------------------

real_p = unary("lax.real", dtypes=COMPLEX, lower=hlo_rule("real"), result_dtype=real_dtype,
               jvp=linear_jvp(), transpose=lambda ct, x: [complex(ct, 0)])
def real(x):
    """Elementwise real part of a complex array."""
    return real_p.bind(x)


imag_p = unary("lax.imag", dtypes=COMPLEX, lower=hlo_rule("imag"), result_dtype=real_dtype,
               jvp=linear_jvp(), transpose=lambda ct, x: [complex(0, neg(ct))])
def imag(x):
    """Elementwise imaginary part of a complex array."""
    return imag_p.bind(x)


complex_p = binary("lax.complex", dtypes=F32_OR_F64, lower=hlo_rule("complex"),
                   result_dtype=complex_dtype, jvp=linear_jvp(),
                   transpose=lambda ct, x, y: [real(ct), imag(neg(ct))])
def complex(x, y):  # noqa: A001 - lax's name
    """Elementwise x + i*y from float32 (or float64) parts."""
    return complex_p.bind(*match_python_scalars("complex", x, y))


@elementwise_lowering
def _conj_lower(ctx, x, *, input_dtype):
    if kind_of(input_dtype) == "complex":
        return hlo.complex(hlo.real(x), hlo.negate(hlo.imag(x)))
    out = ctx.avals_out[0]
    part = out.update(dtype=real_dtype(out.dtype))
    x = mu.convert(x, out.update(dtype=input_dtype), part)
    return hlo.complex(x, mu.splat(0, part))


conj_p = unary("lax.conj", dtypes=INEXACT, lower=_conj_lower, result_dtype=complex_dtype,
               jvp=linear_jvp(),
               transpose=lambda ct, x, *, input_dtype: [
                   conj(ct) if kind_of(input_dtype) == "complex" else real(ct)])
def conj(x):
    """Elementwise complex conjugate; a real operand gives a complex result."""
    return conj_p.bind(x, input_dtype=get_aval(x).dtype)


# --- helpers of the differentiation rules -------------------------------------------------

_TWO_OVER_SQRT_PI = float(2 / np.sqrt(np.pi))


def _unbroadcast_if(ct, operand):
    """The cotangent of a linear operand of a broadcasting binary op; None otherwise."""
    return unbroadcast(ct, operand.aval) if is_undefined_primal(operand) else None


def _neg_ct(ct):
    return ct if isinstance(ct, Zero) else neg(ct)


def _scale(ct, factor):
    """`ct * factor` when `factor` is a known value (the other operand is linear)."""
    return None if is_undefined_primal(factor) else mul(ct, factor)


def _trunc(x):
    return mul(sign(x), floor(abs(x)))


def picked(x, y, ans):
    """1 where max/min picked `x` alone, 0.5 on ties, else 0 (JAX's convention)."""
    from plax_stdlib.lax.comparison import eq
    from plax_stdlib.lax.conversion import convert_element_type
    x_attains = convert_element_type(eq(x, ans), ans.dtype)
    return div(x_attains, add(convert_element_type(eq(y, ans), ans.dtype), 1))


def _abs_tangent(g, ans, x):
    if kind_of(get_aval(x).dtype) == "complex":  # x may be a Python scalar
        return div(real(mul(conj(x), g)), ans)
    return mul(g, sign(x))


def _pow_dx(x, y):
    from plax_stdlib.lax.conversion import convert_with_weak_type
    # In x's dtype, and an array even when y is a Python scalar, so that y - 1 is too.
    y = convert_with_weak_type(y, get_aval(x).dtype, weak_type=get_aval(y).weak_type)
    return mul(y, pow(x, sub(y, 1)))

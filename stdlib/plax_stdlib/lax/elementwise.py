"""Elementwise arithmetic and transcendental primitives, with their `lax` functions.

Most primitives are rows of a table (`unary_op`/`binary_op`, see `op_table`): name,
accepted dtype kinds, lowering, the public function's docstring, and the
derivative as partials (`g` is the operand's tangent, `ans` the result). The few
with parameters or unusual operands (`integer_pow`, `pow`, `round`, `polygamma`,
`nextafter`, `conj`) are written out in full.

Operands of binary functions must share a dtype; Python scalars take the
other operand's dtype (`lax.mul(x, 2.0)`). Shapes must match, except that rank-0
operands and size-1 dimensions broadcast, as in JAX's lax.
"""
from __future__ import annotations

import enum

import numpy as np

from plax.extend.ad import (Zero, broadcast_to, defjvp, is_undefined_primal, linear_jvp,
                             tangent_aval, unbroadcast)
from plax.extend.batching import broadcasting_batcher, move_to, not_mapped, unary_batcher
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
from plax.extend.core import ABSTRACT_EVAL, ShapedArray, get_aval, stage_flat
from plax.extend.mlir import chlo, hlo, mu
from plax_stdlib.lax.accuracy import AccuracyMode
from plax_stdlib.lax.conversion import constant_like as _like
from plax_stdlib.lax.conversion import convert_element_type, match_python_scalars
from plax_stdlib.lax.op_table import LINEAR, PIECEWISE_CONSTANT, binary_op, unary_op


# --- arithmetic -------------------------------------------------------------------------

def complex_extremum(x, y, direction: str, dtype):
    """The MLIR value of whichever of complex `x`, `y` wins under `direction` ("GT" for
    max, "LT" for min) ordering by real part, then imaginary part; `y` unless `x` wins."""
    part = real_dtype(dtype)
    rx, ry, ix, iy = hlo.real(x), hlo.real(y), hlo.imag(x), hlo.imag(y)
    real_wins = mu.compare(rx, ry, direction, part)
    imag_wins = hlo.and_(mu.compare(rx, ry, "EQ", part), mu.compare(ix, iy, direction, part))
    return hlo.select(hlo.or_(real_wins, imag_wins), x, y)


def extremum(x, y, direction: str, dtype):
    """The MLIR value of max ("GT") or min ("LT") of `x` and `y` of `dtype`: XLA's, or
    for complex numbers by real part, then imaginary part (which XLA has not)."""
    if kind_of(dtype) == "complex":
        return complex_extremum(x, y, direction, dtype)
    return (hlo.maximum if direction == "GT" else hlo.minimum)(x, y)


def _minmax_lowering(direction: str):
    """max ("GT") or min ("LT"), elementwise (`extremum`)."""
    @elementwise_lowering
    def lower(ctx, x, y):
        return extremum(x, y, direction, ctx.avals_in[0].dtype)
    return lower


# The tangent of max/min follows the operand it picked, split evenly on ties.
_MINMAX_PARTIALS = (lambda g, ans, x, y: mul(g, picked(x, y, ans)),
                    lambda g, ans, x, y: mul(g, picked(y, x, ans)))


@elementwise_lowering
def _sign_lower(ctx, x):
    aval = ctx.avals_in[0]
    if kind_of(aval.dtype) == "unsigned":
        nonzero = mu.compare(x, mu.splat(0, aval), "NE", aval.dtype)
        return hlo.select(nonzero, mu.splat(1, aval), mu.splat(0, aval))
    return hlo.sign(x)


def _sum_jvp(negate_y: bool):
    """JAX's jvp of add/sub: the same operation on both tangents; one tangent alone
    (negated for sub's y) broadcast to the result's shape."""
    def jvp(primals, tangents):
        prim = sub_p if negate_y else add_p
        ans = prim.bind(*primals)
        (xdot, ydot), shape = tangents, get_aval(ans).shape
        if isinstance(xdot, Zero) and isinstance(ydot, Zero):
            return ans, Zero(tangent_aval(get_aval(ans)))
        if isinstance(xdot, Zero):
            return ans, broadcast_to(neg(ydot) if negate_y else ydot, shape)
        if isinstance(ydot, Zero):
            return ans, broadcast_to(xdot, shape)
        return ans, prim.bind(xdot, ydot)
    return jvp


add_p, add = binary_op(
    "add", NUMBER, hlo_rule("add"), "Elementwise addition: x + y.", jvp=_sum_jvp(False),
    transpose=lambda ct, x, y: [_unbroadcast_if(ct, x), _unbroadcast_if(ct, y)],
    example=("lax.add(jnp.array([1.0, 2.0]), 10.0)",
             "Array([11., 12.], dtype=float32)"))


def _add_any_batching(axis_data, args, dims):
    """As JAX's add_jaxvals: both operands at one batch dim (y's, where it has one), an
    unbatched one broadcast to the batched shape (the sum's operands have one shape)."""
    out_dim = dims[0] if dims[1] is not_mapped else dims[1]
    x, y = (move_to(v, d, out_dim, axis_data.size) for v, d in zip(args, dims))
    return add_any_p.bind(x, y), out_dim


add_any_p, add_any = binary_op(  # JAX's add_jaxvals: its Jaxprs show sums of tangents so
    "add_any", NUMBER, hlo_rule("add"),
    "The sum of two tangents or cotangents of one shape: what differentiation adds with.",
    jvp=(lambda g, ans, x, y: g, lambda g, ans, x, y: g), transpose=lambda ct, x, y: [ct, ct],
    batching=_add_any_batching,
    example=("lax.add_any(jnp.array([1.0, 2.0]), jnp.array([3.0, 4.0]))",
             "Array([4., 6.], dtype=float32)"))
_elementwise_sum_aval = add_any_p.get_rule(ABSTRACT_EVAL)


def _add_any_abstract_eval(x, y):
    """The first operand's weak type, as JAX's traced add_jaxvals: a weak cotangent
    plus a strong one stays weak (a vjp's weak cotangent reaching two uses of a
    strong primal). Evaluated eagerly it is `add`, weak only if both are, as JAX's."""
    return _elementwise_sum_aval(x, y).update(weak_type=x.weak_type)


add_any_p.define_rule(ABSTRACT_EVAL, _add_any_abstract_eval, override=True)
add_any_p.def_impl(lambda x, y: add_p.bind(x, y))
sub_p, sub = binary_op(
    "sub", NUMBER, hlo_rule("subtract"), "Elementwise subtraction: x - y.", jvp=_sum_jvp(True),
    transpose=lambda ct, x, y: [_unbroadcast_if(ct, x), _unbroadcast_if(_neg_ct(ct), y)],
    example=("lax.sub(jnp.array([5, 7]), jnp.array([1, 2]))",
             "Array([4, 5], dtype=int32)"))
mul_p, _mul = binary_op(
    "mul", NUMBER, hlo_rule("multiply"), "Elementwise multiplication: x * y.",
    jvp=(lambda g, ans, x, y: mul(g, y), lambda g, ans, x, y: mul(x, g)),
    transpose=lambda ct, x, y: [
        _unbroadcast_if(None if is_undefined_primal(y) else mul(ct, y), x),
        _unbroadcast_if(None if is_undefined_primal(x) else mul(x, ct), y)],
    example=("lax.mul(jnp.array([1.0, 2.0]), jnp.array([3.0, 4.0]))",
             "Array([3., 8.], dtype=float32)"))


def mul(x, y, *, out_dtype=None):
    """Elementwise multiplication: x * y.

    Args:
        x: an array (or scalar) of a numeric dtype.
        y: an array of `x`'s dtype, of `x`'s shape (either may be a scalar); a
            Python scalar takes the other operand's dtype.
        out_dtype: the product's dtype, when it should differ from the
            operands' (e.g. int32 products of int8 operands): the operands are
            converted to it and then multiplied, as JAX does where no backend
            kernel fuses the two.

    Returns:
        An array of the operands' dtype (or `out_dtype`), of their broadcast
        shape.

    Raises:
        TypeError: the operands' dtypes differ (lax does not promote), or a
            non-numeric dtype.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.mul(jnp.array([1.0, 2.0]), jnp.array([3.0, 4.0]))
        Array([3., 8.], dtype=float32)
        >>> lax.mul(jnp.array([100], jnp.int8), jnp.array([3], jnp.int8), out_dtype=jnp.int32)
        Array([300], dtype=int32)
    """
    if out_dtype is not None:
        x, y = convert_element_type(x, out_dtype), convert_element_type(y, out_dtype)
    return _mul(x, y)
div_p, div = binary_op(
    "div", NUMBER, hlo_rule("divide"),
    "Elementwise division: x / y; integer division rounds toward zero.",
    jvp=(lambda g, ans, x, y: div(g, y),
         lambda g, ans, x, y: mul(mul(neg(g), x), integer_pow(y, -2))),
    transpose=lambda ct, x, y: [_unbroadcast_if(div(ct, y), x), None],
    example=("lax.div(jnp.array([7, -7]), 2)",
             "Array([ 3, -3], dtype=int32)"))
rem_p, rem = binary_op(
    "rem", INT | FLOAT, hlo_rule("remainder"),
    "Elementwise remainder of division rounding toward zero (sign of `x`, as C's fmod).",
    jvp=(lambda g, ans, x, y: g, lambda g, ans, x, y: mul(neg(g), _trunc(div(x, y)))),
    example=("lax.rem(jnp.array([7, -7]), 3)",
             "Array([ 1, -1], dtype=int32)"))
max_p, max = binary_op(  # noqa: A001 - lax's name
    "max", ANY, _minmax_lowering("GT"),
    "Elementwise maximum; NaN if either is NaN. Complex numbers compare lexicographically.",
    jvp=_MINMAX_PARTIALS,
    example=("lax.max(jnp.array([1.0, jnp.nan]), jnp.array([2.0, 0.0]))",
             "Array([ 2., nan], dtype=float32)"))
min_p, min = binary_op(  # noqa: A001 - lax's name
    "min", ANY, _minmax_lowering("LT"),
    "Elementwise minimum; NaN if either is NaN. Complex numbers compare lexicographically.",
    jvp=_MINMAX_PARTIALS,
    example=("lax.min(jnp.array([1, 5]), jnp.array([3, 2]))",
             "Array([1, 2], dtype=int32)"))
neg_p, neg = unary_op(
    "neg", NUMBER, hlo_rule("negate"), "Elementwise negation: -x.",
    jvp=LINEAR, transpose=lambda ct, x: [neg(ct)],
    example=("lax.neg(jnp.array([1, -2]))",
             "Array([-1, 2], dtype=int32)"))
sign_p, sign = unary_op(
    "sign", NUMBER, _sign_lower, "Elementwise sign: -1, 0 or 1 (x / |x| for complex x).",
    jvp=PIECEWISE_CONSTANT,
    example=("lax.sign(jnp.array([-3.0, 0.0, 2.0]))",
             "Array([-1., 0., 1.], dtype=float32)"))
abs_p, abs = unary_op(  # noqa: A001 - lax's name
    "abs", SIGNED | INEXACT, hlo_rule("abs"),
    "Elementwise absolute value; the magnitude, of real dtype, for complex x.",
    result_dtype=real_dtype, jvp=lambda g, ans, x: _abs_tangent(g, ans, x),
    example=("lax.abs(jnp.array([-1.5, 2.0]))",
             "Array([1.5, 2. ], dtype=float32)"))
square_p, square = unary_op(
    "square", NUMBER, elementwise_lowering(  # CHLO's for inexact values, as JAX lowers it
        lambda ctx, x: hlo.multiply(x, x) if kind_of(ctx.avals_in[0].dtype) in (
            "signed", "unsigned") else chlo.square(x)),
    "Elementwise square: x * x.", jvp=lambda g, ans, x: mul(g, mul(_like(x, 2), x)),
    example=("lax.square(jnp.array([2, -3]))",
             "Array([4, 9], dtype=int32)"))


def _integer_pow_abstract_eval(x, *, y):
    check_dtype("integer_pow", x, NUMBER)
    if y < 0 and kind_of(x.dtype) in ("signed", "unsigned"):
        raise TypeError(f"integer_pow: integers cannot be raised to the negative power {y} "
                        f"(got operand {describe(x)})")
    return x


def _integer_pow_lower(ctx, x, *, y):
    """Square-and-multiply: about log2(|y|) multiplications, exact for integers (a cube
    as (x * x) * x, JAX's order)."""
    if y == 3:
        return hlo.multiply(hlo.multiply(x, x), x)
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
               mul(g, mul(_like(x, y), x if y == 2 else integer_pow(x, y - 1)))),
    batching=unary_batcher())
def integer_pow(x, y: int):
    """Raises each element to a static integer power, by repeated multiplication.

    Exact for integers, and differentiable; `x ** 3` on arrays uses it.

    Args:
        x: an array of a numeric dtype.
        y: a Python int exponent (negative only for floating-point or complex
            `x`).

    Returns:
        An array of `x`'s shape and dtype.

    Raises:
        TypeError: `y` is not an int, or a negative power of an integer array.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.integer_pow(jnp.array([2, 3]), 3)
        Array([ 8, 27], dtype=int32)
    """
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


def _nonzero(x):
    """`x` with its zeros replaced by ones (JAX's `_replace_zero`)."""
    from plax_stdlib.lax.comparison import eq, select
    from plax_stdlib.lax.creation import full_like
    return select(eq(x, _like(x, 0)), full_like(x, 1), x)


def _pow_dx(x, y):
    """d(x**y)/dx as JAX's: both operands converted to x's dtype and strongly typed (the
    derivative at a weak x is strong), and 0 where an integer exponent is 0 (not
    0 * x**-1, which is NaN at x = 0)."""
    from plax_stdlib.lax.comparison import eq, select
    from plax_stdlib.lax.creation import full_like
    integer = kind_of(get_aval(y).dtype) in ("signed", "unsigned")
    dtype = get_aval(x).dtype
    x, y = convert_element_type(x, dtype), convert_element_type(y, dtype)
    if not integer:
        return mul(y, pow(x, sub(y, full_like(y, 1))))
    shape = broadcasting_shape("pow", get_aval(x), get_aval(y))
    x, y = broadcast_to(x, shape), broadcast_to(y, shape)
    return select(eq(y, _like(y, 0)), full_like(y, 0),
                  mul(_nonzero(y), pow(x, sub(y, full_like(y, 1)))))


def _pow_dy(g, ans, x, y):
    """As JAX's: log(x) with x = 0 replaced by 1 (the derivative of 0**y is 0, not
    NaN), the result strongly typed."""
    return convert_element_type(mul(g, mul(log(_nonzero(x)), ans)), get_aval(y).dtype)


pow_p = standard_primitive(
    "lax.pow", _pow_abstract_eval, _pow_lower,
    jvp=defjvp(lambda g, ans, x, y: mul(g, _pow_dx(x, y)), _pow_dy),
    batching=broadcasting_batcher())
def pow(x, y):  # noqa: A001 - lax's name
    """Raises `x` to the power `y`, elementwise.

    Args:
        x: an array of a floating-point or complex dtype.
        y: an array of `x`'s dtype, or of an integer dtype (then each power is
            computed from an integer exponent); a Python scalar takes `x`'s
            dtype.

    Returns:
        An array of `x`'s dtype.

    Raises:
        TypeError: `x` is an integer array, or `y`'s dtype is neither `x`'s nor
            an integer.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.pow(jnp.array([4.0, 9.0]), 0.5)
        Array([2., 3.], dtype=float32)
    """
    if type(y) is not int:
        x, y = match_python_scalars("pow", x, y, strict=True)
    return pow_p.bind(x, y)


# --- rounding ----------------------------------------------------------------------------

floor_p, floor = unary_op("floor", FLOAT, hlo_rule("floor"), "Elementwise floor.",
                          jvp=PIECEWISE_CONSTANT,
    example=("lax.floor(jnp.array([-1.5, 1.5]))",
             "Array([-2., 1.], dtype=float32)"))
ceil_p, ceil = unary_op("ceil", FLOAT, hlo_rule("ceil"), "Elementwise ceiling.",
                        jvp=PIECEWISE_CONSTANT,
    example=("lax.ceil(jnp.array([-1.5, 1.5]))",
             "Array([-1., 2.], dtype=float32)"))
is_finite_p, is_finite = unary_op("is_finite", FLOAT, hlo_rule("is_finite"),
                                  "Elementwise test for neither infinite nor NaN.",
                                  result_dtype=to_bool, jvp=PIECEWISE_CONSTANT,
    example=("lax.is_finite(jnp.array([1.0, jnp.inf, jnp.nan]))",
             "Array([ True, False, False], dtype=bool)"))


class RoundingMethod(enum.IntEnum):
    """How `lax.round` breaks ties between two integers: `AWAY_FROM_ZERO` (0.5
    gives 1, -0.5 gives -1) or `TO_NEAREST_EVEN` (banker's rounding, as NumPy:
    0.5 gives 0, 1.5 gives 2).

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.round(jnp.array([0.5, 1.5]), lax.RoundingMethod.TO_NEAREST_EVEN)
        Array([0., 2.], dtype=float32)
    """
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


@elementwise_lowering
def _round_lower(ctx, x, *, rounding_method):
    if rounding_method == RoundingMethod.TO_NEAREST_EVEN:
        return hlo.round_nearest_even(x)
    return hlo.round_nearest_afz(x)


round_p = unary("lax.round", dtypes=FLOAT, lower=_round_lower, jvp=defjvp(None))
def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO):  # noqa: A001 - lax's name
    """Rounds each element to the nearest integer (as a float).

    Args:
        x: an array of a floating-point dtype.
        rounding_method: how ties (x.5) are broken:
            `lax.RoundingMethod.AWAY_FROM_ZERO` (the default) or `TO_NEAREST_EVEN`
            (as NumPy's `round`).

    Returns:
        An array of `x`'s shape and dtype.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> x = jnp.array([0.5, 1.5, 2.5, -0.5])
        >>> lax.round(x)
        Array([ 1., 2., 3., -1.], dtype=float32)
        >>> lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)
        Array([ 0., 2., 2., -0.], dtype=float32)
    """
    return round_p.bind(x, rounding_method=RoundingMethod(rounding_method))


# --- exponentials, logarithms, roots -------------------------------------------------------

@elementwise_lowering
def _exp2_lower(ctx, x):
    return hlo.exponential(hlo.multiply(mu.splat(np.log(2), ctx.avals_out[0]), x))


exp_p, exp = unary_op(
    "exp", INEXACT, hlo_rule("exponential"), "Elementwise exponential: e ** x.",
    jvp=lambda g, ans, x, accuracy=None: mul(g, ans), accuracy=True,
    example=("lax.exp(jnp.array([0.0, 1.0]))",
             "Array([1. , 2.7182...], dtype=float32)"))
exp2_p, exp2 = unary_op(
    "exp2", INEXACT, _exp2_lower, "Elementwise base-2 exponential: 2 ** x.",
    jvp=lambda g, ans, x, accuracy=None: mul(log(_like(x, 2)), mul(g, ans)), accuracy=True,
    example=("lax.exp2(jnp.array([3.0, -1.0]))",
             "Array([8. , 0.5], dtype=float32)"))
log_p, log = unary_op(
    "log", INEXACT, hlo_rule("log"), "Elementwise natural logarithm.",
    jvp=lambda g, ans, x, accuracy=None: div(g, x), accuracy=True,
    example=("lax.log(jnp.array([1.0, 100.0]))",
             "Array([0. , 4.6051...], dtype=float32)"))
log1p_p, log1p = unary_op(
    "log1p", INEXACT, hlo_rule("log_plus_one"), "Elementwise log(1 + x), accurate for small x.",
    jvp=lambda g, ans, x, accuracy=None: div(g, add(x, 1.0)), accuracy=True,
    example=("lax.log1p(jnp.array([1e-3, 1.0]))",
             "Array([0.0009995, 0.6931...], dtype=float32)"))
expm1_p, expm1 = unary_op(
    "expm1", INEXACT, hlo_rule("exponential_minus_one"),
    "Elementwise e ** x - 1, accurate for small x.",
    jvp=lambda g, ans, x, accuracy=None: mul(g, exp(x, accuracy=accuracy))
    if accuracy is AccuracyMode.HIGHEST else mul(g, add(ans, _like(ans, 1))), accuracy=True,
    example=("lax.expm1(jnp.array([1e-3, 1.0]))",
             "Array([1.0005...e-03, 1.7182...e+00], dtype=float32)"))
logistic_p, logistic = unary_op(
    "logistic", INEXACT, hlo_rule("logistic"),
    "Elementwise logistic sigmoid: 1 / (1 + e ** -x).",
    jvp=lambda g, ans, x, accuracy=None: mul(g, mul(ans, logistic(neg(x), accuracy=accuracy)))
    if accuracy is AccuracyMode.HIGHEST else mul(g, mul(ans, sub(_like(ans, 1), ans))),
    accuracy=True,
    example=("lax.logistic(jnp.array([0.0, 2.0]))",
             "Array([0.5 , 0.8807...], dtype=float32)"))
sqrt_p, sqrt = unary_op(
    "sqrt", INEXACT, hlo_rule("sqrt"), "Elementwise square root.",
    jvp=lambda g, ans, x, accuracy=None: mul(g, div(_like(x, 0.5), ans)), accuracy=True,
    example=("lax.sqrt(jnp.array([4.0, 2.0]))",
             "Array([2. , 1.4142...], dtype=float32)"))
rsqrt_p, rsqrt = unary_op(
    "rsqrt", INEXACT, hlo_rule("rsqrt"), "Elementwise reciprocal square root: 1 / sqrt(x).",
    jvp=lambda g, ans, x, accuracy=None: mul(g, mul(_like(x, -0.5), div(ans, x))),
    accuracy=True,
    example=("lax.rsqrt(jnp.array([4.0, 0.25]))",
             "Array([0.5, 2. ], dtype=float32)"))
cbrt_p, cbrt = unary_op(
    "cbrt", FLOAT, hlo_rule("cbrt"), "Elementwise cube root.",
    jvp=lambda g, ans, x, accuracy=None: mul(g, mul(_like(x, 1 / 3), integer_pow(ans, -2))),
    accuracy=True,
    example=("lax.cbrt(jnp.array([27.0, -8.0]))",
             "Array([ 3., -2.], dtype=float32)"))


# --- trigonometric and hyperbolic functions -------------------------------------------------

def _complex_sin_cos(x, which: str):
    """sin or cos of a complex `x` from real sin, cos and expm1, as JAX lowers them
    (2 sinh(b) = expm1(b) - expm1(-b), 2 cosh(b) = expm1(b) + expm1(-b) + 2, which
    avoids cancellation for small |b|); the result's other part is exactly 0 where
    the real part is 0 (no NaN from inf * 0)."""
    from plax_stdlib.lax.comparison import eq, select
    a, b = real(x), imag(x)
    zero, two = np.zeros((), a.dtype), np.asarray(2, a.dtype)
    sn, cs = sin(a), cos(a)
    e1m, e2m = expm1(b), expm1(neg(b))
    snh, csh = div(sub(e1m, e2m), two), div(add(add(e1m, e2m), two), two)
    if which == "sin":
        re, im = mul(sn, csh), mul(cs, snh)
        return select(eq(a, zero), complex(zero, im), complex(re, im))
    re, im = mul(cs, csh), mul(neg(sn), snh)
    return select(eq(a, zero), complex(re, zero), complex(re, im))


def _trig_rule(op_name: str, which: str):
    real_rule = hlo_rule(op_name)

    def rule(ctx, x, **params):
        if kind_of(ctx.avals_in[0].dtype) != "complex":
            return real_rule(ctx, x, **params)
        closed = stage_flat(lambda v: [_complex_sin_cos(v, which)], list(ctx.avals_in))
        return ctx.lower_subjaxpr(closed, x, name=which)[0]
    return rule


sin_p, sin = unary_op(
    "sin", INEXACT, _trig_rule("sine", "sin"), "Elementwise sine.",
    jvp=lambda g, ans, x, accuracy=None: mul(g, cos(x)), accuracy=True,
    example=("lax.sin(jnp.array([0.0, 1.0]))",
             "Array([0. , 0.8414...], dtype=float32)"))
cos_p, cos = unary_op(
    "cos", INEXACT, _trig_rule("cosine", "cos"), "Elementwise cosine.",
    jvp=lambda g, ans, x, accuracy=None: neg(mul(g, sin(x, accuracy=accuracy))), accuracy=True,
    example=("lax.cos(jnp.array([0.0, 1.0]))",
             "Array([1. , 0.5403...], dtype=float32)"))
tan_p, tan = unary_op(
    "tan", INEXACT, hlo_rule("tan"), "Elementwise tangent.",
    jvp=lambda g, ans, x, accuracy=None: mul(g, add(_like(x, 1), square(ans))), accuracy=True,
    example=("lax.tan(jnp.array([0.0, 1.0]))",
             "Array([0. , 1.5574...], dtype=float32)"))
asin_p, asin = unary_op(
    "asin", INEXACT, chlo_rule("asin"), "Elementwise arc sine.",
    jvp=lambda g, ans, x: mul(g, rsqrt(sub(_like(x, 1), square(x)))),
    example=("lax.asin(jnp.array([0.0, 1.0]))",
             "Array([0. , 1.5707...], dtype=float32)"))
acos_p, acos = unary_op(
    "acos", INEXACT, chlo_rule("acos"), "Elementwise arc cosine.",
    jvp=lambda g, ans, x: mul(g, neg(rsqrt(sub(_like(x, 1), square(x))))),
    example=("lax.acos(jnp.array([0.0, 1.0]))",
             "Array([1.5707..., 0. ], dtype=float32)"))
atan_p, atan = unary_op(
    "atan", INEXACT, chlo_rule("atan"), "Elementwise arc tangent.",
    jvp=lambda g, ans, x: div(g, add(_like(x, 1), square(x))),
    example=("lax.atan(jnp.array([0.0, 1.0]))",
             "Array([0. , 0.7853...], dtype=float32)"))
atan2_p, atan2 = binary_op(
    "atan2", INEXACT, hlo_rule("atan2"),
    "Elementwise arc tangent of x / y, in the quadrant of the point (y, x).",
    jvp=(lambda g, ans, x, y: mul(g, div(y, add(square(x), square(y)))),
         lambda g, ans, x, y: mul(g, div(neg(x), add(square(x), square(y))))),
    example=("lax.atan2(jnp.array([1.0, 1.0]), jnp.array([1.0, -1.0]))",
             "Array([0.7853..., 2.3561...], dtype=float32)"))
tanh_p, tanh = unary_op(
    "tanh", INEXACT, hlo_rule("tanh"), "Elementwise hyperbolic tangent.",
    jvp=lambda g, ans, x, accuracy=None: mul(g, mul(_like(x, 4), mul(
        logistic(mul(_like(x, 2), x), accuracy=accuracy),
        logistic(mul(_like(x, -2), x), accuracy=accuracy))))
    if accuracy is AccuracyMode.HIGHEST else mul(add(g, mul(g, ans)), sub(_like(x, 1), ans)),
    accuracy=True,
    example=("lax.tanh(jnp.array([0.0, 1.0]))",
             "Array([0. , 0.7615...], dtype=float32)"))
sinh_p, sinh = unary_op(
    "sinh", INEXACT, chlo_rule("sinh"), "Elementwise hyperbolic sine.",
    jvp=lambda g, ans, x: mul(g, cosh(x)),
    example=("lax.sinh(jnp.array([0.0, 1.0]))",
             "Array([0. , 1.1752...], dtype=float32)"))
cosh_p, cosh = unary_op(
    "cosh", INEXACT, chlo_rule("cosh"), "Elementwise hyperbolic cosine.",
    jvp=lambda g, ans, x: mul(g, sinh(x)),
    example=("lax.cosh(jnp.array([0.0, 1.0]))",
             "Array([1. , 1.5430...], dtype=float32)"))
asinh_p, asinh = unary_op(
    "asinh", INEXACT, chlo_rule("asinh"), "Elementwise inverse hyperbolic sine.",
    jvp=lambda g, ans, x: mul(g, rsqrt(add(square(x), _like(x, 1)))),
    example=("lax.asinh(jnp.array([0.0, 1.0]))",
             "Array([0. , 0.8813...], dtype=float32)"))
acosh_p, acosh = unary_op(
    "acosh", INEXACT, chlo_rule("acosh"), "Elementwise inverse hyperbolic cosine.",
    jvp=lambda g, ans, x: mul(g, rsqrt(sub(square(x), _like(x, 1)))),
    example=("lax.acosh(jnp.array([1.0, 2.0]))",
             "Array([0. , 1.3169...], dtype=float32)"))
atanh_p, atanh = unary_op(
    "atanh", INEXACT, chlo_rule("atanh"), "Elementwise inverse hyperbolic tangent.",
    jvp=lambda g, ans, x: mul(integer_pow(add(_like(x, 1), x), -1),
                              div(g, sub(_like(x, 1), x))),
    example=("lax.atanh(jnp.array([0.0, 0.5]))",
             "Array([0. , 0.5493...], dtype=float32)"))


# --- special functions ---------------------------------------------------------------------

_TWO_OVER_SQRT_PI = float(2 / np.sqrt(np.pi))

erf_p, erf = unary_op(
    "erf", FLOAT, chlo_rule("erf"), "Elementwise error function.",
    jvp=lambda g, ans, x: mul(_like(x, _TWO_OVER_SQRT_PI), mul(g, exp(neg(square(x))))),
    example=("lax.erf(jnp.array([0.0, 1.0]))",
             "Array([0. , 0.8427...], dtype=float32)"))
erfc_p, erfc = unary_op(
    "erfc", FLOAT, chlo_rule("erfc"),
    "Elementwise complementary error function: 1 - erf(x), accurate for large x.",
    jvp=lambda g, ans, x: mul(_like(x, -_TWO_OVER_SQRT_PI), mul(g, exp(neg(square(x))))),
    example=("lax.erfc(jnp.array([0.0, 3.0]))",
             "Array([1.0000...e+00, 2.2090...e-05], dtype=float32)"))
erf_inv_p, erf_inv = unary_op(
    "erf_inv", FLOAT, chlo_rule("erf_inv"), "Elementwise inverse of the error function.",
    jvp=lambda g, ans, x: mul(_like(x, 1 / _TWO_OVER_SQRT_PI), mul(g, exp(square(ans)))),
    example=("lax.erf_inv(jnp.array([0.0, 0.5]))",
             "Array([0. , 0.4769...], dtype=float32)"))
lgamma_p, lgamma = unary_op(
    "lgamma", FLOAT, chlo_rule("lgamma"),
    "Elementwise log of the absolute value of the gamma function.",
    jvp=lambda g, ans, x: mul(g, digamma(x)),
    example=("lax.lgamma(jnp.array([0.5, 4.0]))",
             "Array([0.5723..., 1.7917...], dtype=float32)"))
digamma_p, digamma = unary_op(
    "digamma", FLOAT, chlo_rule("digamma"),
    "Elementwise digamma function: the derivative of lgamma.",
    jvp=lambda g, ans, x: mul(g, polygamma(1.0, x)),
    example=("lax.digamma(jnp.array([1.0, 2.0]))",
             "Array([-0.5772... , 0.4227...], dtype=float32)"))


polygamma_p = binary("lax.polygamma", dtypes=FLOAT, lower=chlo_rule("polygamma"),
                     jvp=defjvp(None, lambda g, ans, m, x: mul(g, polygamma(_next_order(m, x), x))))
def polygamma(m, x):
    """The m-th derivative of the digamma function, elementwise.

    Args:
        m: the order, integer-valued and non-negative, given in `x`'s dtype (a
            Python scalar takes it).
        x: an array of a floating-point dtype.

    Returns:
        An array of `x`'s dtype (differentiable in `x` only).

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.polygamma(1.0, jnp.array([1.0, 2.0]))  # pi**2 / 6, pi**2 / 6 - 1
        Array([1.6449... , 0.6449...], dtype=float32)
    """
    return polygamma_p.bind(*match_python_scalars("polygamma", m, x))


def _next_order(m, x):
    """m + 1 in x's dtype (`m` may have stayed a Python scalar)."""
    from plax_stdlib.lax.conversion import convert_element_type
    return add(convert_element_type(m, get_aval(x).dtype), 1)


nextafter_p = binary("lax.nextafter", dtypes=FLOAT, lower=chlo_rule("next_after"),
                     jvp=defjvp(None, None))
def nextafter(x1, x2):
    """The next representable floating-point value after `x1` in the direction of
    `x2`, elementwise.

    Args:
        x1: an array of a floating-point dtype.
        x2: an array of `x1`'s dtype (a Python scalar takes it).

    Returns:
        An array of `x1`'s dtype.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.nextafter(jnp.float32(1.0), jnp.float32(2.0)) - 1.0  # float32's epsilon
        Array(1.1920...e-07, dtype=float32)
    """
    return nextafter_p.bind(*match_python_scalars("nextafter", x1, x2, strict=True))


# --- complex numbers ------------------------------------------------------------------------

real_p, real = unary_op(
    "real", COMPLEX, hlo_rule("real"), "Elementwise real part of a complex array.",
    result_dtype=real_dtype, jvp=LINEAR, transpose=lambda ct, x: [complex(ct, _zero_of(ct))],
    example=("lax.real(jnp.array([1 + 2j, 3 - 1j]))",
             "Array([1., 3.], dtype=float32)"))
imag_p, imag = unary_op(
    "imag", COMPLEX, hlo_rule("imag"), "Elementwise imaginary part of a complex array.",
    result_dtype=real_dtype, jvp=LINEAR, transpose=lambda ct, x: [complex(_zero_of(ct), neg(ct))],
    example=("lax.imag(jnp.array([1 + 2j, 3 - 1j]))",
             "Array([ 2., -1.], dtype=float32)"))
complex_p, complex = binary_op(  # noqa: A001 - lax's name
    "complex", F32_OR_F64, hlo_rule("complex"),
    "Elementwise x + i*y from float32 (or float64) parts.",
    result_dtype=complex_dtype, jvp=LINEAR, transpose=lambda ct, x, y: [real(ct), imag(neg(ct))],
    example=("lax.complex(jnp.array([1.0, 2.0]), jnp.array([0.5, -1.0]))",
             "Array([1.+0.5j, 2.-1.j ], dtype=complex64)"))


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
    """The complex conjugate, elementwise.

    Args:
        x: an array; a real one gives a complex result (complex64 for float32).

    Returns:
        A complex array of `x`'s shape.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.conj(jnp.array([1 + 2j, 3 - 1j]))
        Array([1.-2.j, 3.+1.j], dtype=complex64)
    """
    return conj_p.bind(x, input_dtype=get_aval(x).dtype)


# --- helpers of the differentiation rules -------------------------------------------------

def _zero_of(ct):
    """A strongly typed zero of `ct`'s dtype: the other part of the complex cotangent of
    `real` or `imag`, as JAX's, so that cotangent is strong whatever `ct` is."""
    return np.zeros((), get_aval(ct).dtype)[()]


def _unbroadcast_if(ct, operand):
    """The cotangent of a linear operand of a broadcasting binary op; None otherwise."""
    return unbroadcast(ct, operand.aval) if is_undefined_primal(operand) else None


def _neg_ct(ct):
    return ct if isinstance(ct, Zero) else neg(ct)


def _trunc(x):
    return mul(sign(x), floor(abs(x)))


def picked(x, y, ans):
    """1 where max/min picked `x` alone, 0.5 on ties, else 0 (JAX's convention)."""
    from plax_stdlib.lax.comparison import eq, select_n
    from plax_stdlib.lax.creation import full_like
    # Selected constants (not converted booleans), made in this order, so that the
    # derivative is JAX's bit for bit and compiles to JAX's HLO.
    x_attains = eq(x, ans)
    numerator = select_n(x_attains, *reversed((full_like(ans, 1), full_like(ans, 0))))
    y_attains = eq(y, ans)
    return div(numerator, select_n(y_attains, *reversed((full_like(ans, 2),
                                                         full_like(ans, 1)))))


def _abs_tangent(g, ans, x):
    """JAX's rule, op for op: a select on the sign for reals; for complex x,
    g·conj(x)/|x| with |x| = 0 replaced by 1 (the derivative at 0 is 0, not NaN)."""
    from plax_stdlib.lax.comparison import eq, ge, select_n
    from plax_stdlib.lax.conversion import convert_element_type
    from plax_stdlib.lax.creation import full_like
    if kind_of(get_aval(x).dtype) == "complex":  # x may be a Python scalar
        magnitude = convert_element_type(ans, get_aval(x).dtype)
        safe = select_n(eq(magnitude, _like(magnitude, 0)), magnitude,
                        full_like(magnitude, 1))
        return real(mul(g, div(conj(x), safe)))
    return select_n(ge(x, _like(x, 0)), neg(g), g)

"""The regularized incomplete gamma functions P(a, x) (`igamma`), Q(a, x) (`igammac`),
dP/da (`igamma_grad_a`) and d x / d a of a Gamma(a, 1) sample (`random_gamma_grad`).

XLA has no op for them: as JAX 0.10.2 does (after XLA's math library, itself after
Cephes' `igam`/`igamc`), P comes from its power series where x <= max(1, a) and Q
from its continued fraction elsewhere, each iteration carrying the derivative in `a`
along; an element stops when its term (or, for the derivatives, the derivative's
term) falls below machine epsilon. The same primitives in the same order as JAX's
give JAX's bits. The first three are primitives lowered through these programs;
`random_gamma_grad` is a plain function, as in JAX, so its Jaxpr shows the program.

Half-precision operands are computed in float32.
"""
from __future__ import annotations

import functools

import numpy as np

from plax.extend.ad import defjvp
from plax.extend.core import get_aval, is_python_scalar
from plax.extend.constructors import FLOAT, binary
from plax.extend.dtypes import finfo
from plax_stdlib.lax.bitwise import bitwise_and, bitwise_not, bitwise_or
from plax_stdlib.lax.comparison import eq, ge, gt, le, lt, ne, select
from plax_stdlib.lax.compositions import broadcast_shapes, reciprocal
from plax_stdlib.lax.control_flow import while_loop
from plax_stdlib.lax.conversion import convert_element_type, match_python_scalars
from plax_stdlib.lax.creation import full_like
from plax_stdlib.lax.elementwise import add, digamma, div, exp, lgamma, log, mul, neg, sub
from plax_stdlib.lax.reductions import reduce_or
from plax_stdlib.lax.shape_ops import broadcast_in_dim
from plax_stdlib.lax.special import (
    computed_in_float32, lowered_from, not_differentiable, public_binding)

# What an iteration computes, and so what decides when it stops.
_VALUE, _DERIVATIVE, _SAMPLE_DERIVATIVE = "value", "derivative", "sample derivative"


def _const(x, value):
    return np.asarray(value, x.dtype)[()]


def _isnan(x):
    return ne(x, x)


def _any(predicates):
    return reduce_or(predicates, tuple(range(predicates.ndim)))


def _series(ax, x, a, enabled, mode):
    """P(a, x) (or its derivative) by the power series
    ax/a * sum_n x^n / ((a+1)...(a+n)), ax = x^a e^-x / Γ(a)."""
    eps = finfo(a.dtype).eps

    def body(vals):
        enabled, r, c, ans, x, dc_da, dans_da = vals
        r = r + _const(r, 1.0)
        dc_da = dc_da * (x / r) - (c * x) / (r * r)
        dans_da = dans_da + dc_da
        c = c * (x / r)
        ans = ans + c
        watched = c / ans if mode == _VALUE else abs(dc_da / dans_da)
        new = (r, c, ans, x, dc_da, dans_da)
        return (bitwise_and(enabled, watched > eps),
                *(select(enabled, v, old) for v, old in zip(new, vals[1:])))

    init = (enabled, a, full_like(a, 1), full_like(a, 1), x, full_like(a, 0), full_like(a, 0))
    vals = while_loop(lambda vals: _any(vals[0]), body, init)
    ans, dans_da = vals[3], vals[6]
    if mode == _VALUE:
        return (ans * ax) / a
    dlogax_da = log(x) - digamma(a + _const(a, 1))
    if mode == _DERIVATIVE:
        return ax * (ans * dlogax_da + dans_da) / a
    return -(dans_da + ans * dlogax_da) * x / a


def _continued_fraction(ax, x, a, enabled, mode):
    """Q(a, x) (or its derivative) by its continued fraction (convergents pk/qk, rescaled
    by eps when they grow past 1/eps), at most 2000 steps."""
    eps = finfo(a.dtype).eps

    def cond(vals):
        return bitwise_and(vals[5] < _const(vals[5], 2000), _any(vals[0]))

    def body(vals):
        (enabled, ans, t, y, z, c, pkm1, qkm1, pkm2, qkm2,
         dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da, dans_da) = vals
        c = c + _const(c, 1)
        y = y + _const(y, 1)
        z = z + _const(z, 2)
        yc = y * c
        pk = pkm1 * z - pkm2 * yc
        qk = qkm1 * z - qkm2 * yc
        qk_is_nonzero = ne(qk, _const(qk, 0))
        r = pk / qk
        t = select(qk_is_nonzero, abs(div(sub(ans, r), r)), full_like(r, 1))
        ans = select(qk_is_nonzero, r, ans)
        dpk_da = dpkm1_da * z - pkm1 - dpkm2_da * yc + pkm2 * c
        dqk_da = dqkm1_da * z - qkm1 - dqkm2_da * yc + qkm2 * c
        dans_da_new = select(qk_is_nonzero, div(dpk_da - ans * dqk_da, qk), dans_da)
        grad_conditional = select(qk_is_nonzero, abs(dans_da_new - dans_da),
                                  full_like(dans_da, 1))
        rescale = gt(abs(pk), reciprocal(_const(pk, eps)))

        def rescaled(v):
            return select(rescale, mul(v, _const(v, eps)), v)
        pkm2, pkm1, qkm2, qkm1 = map(rescaled, (pkm1, pk, qkm1, qk))
        dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da = map(
            rescaled, (dpkm1_da, dqkm1_da, dpk_da, dqk_da))
        if mode == _VALUE:
            keep_going = bitwise_and(enabled, t > eps)
        else:
            keep_going = bitwise_and(enabled, grad_conditional > _const(grad_conditional, eps))
        new = (ans, t, y, z, c, pkm1, qkm1, pkm2, qkm2, dpkm2_da, dqkm2_da, dpkm1_da,
               dqkm1_da, dans_da_new)
        # (the step count `c` is shared by all elements)
        return (keep_going, *(v if i == 4 else select(enabled, v, vals[i + 1])
                              for i, v in enumerate(new)))

    y = _const(a, 1) - a
    z = x + y + _const(x, 1)
    pkm2 = full_like(x, 1)
    pkm1 = x + _const(x, 1)
    qkm1 = z * x
    ans = pkm1 / qkm1
    t = full_like(x, 1)
    dpkm2_da, dqkm2_da, dpkm1_da = full_like(x, 0), full_like(x, 0), full_like(x, 0)
    dqkm1_da = -x
    dans_da = (dpkm1_da - ans * dqkm1_da) / qkm1
    init = (enabled, ans, t, y, z, _const(x, 0), pkm1, qkm1, pkm2, x,
            dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da, dans_da)
    vals = while_loop(cond, body, init)
    ans = vals[1]
    if mode == _VALUE:
        return ans * ax
    dans_da = vals[14]
    dlogax_da = log(x) - digamma(a)
    if mode == _DERIVATIVE:
        return mul(ax, add(mul(ans, dlogax_da), dans_da))
    return neg(add(dans_da, mul(ans, dlogax_da)) * x)


def _log_ax(a, x):
    """log(x^a e^-x / Γ(a)), and where it underflows (below -log(max))."""
    log_ax = a * log(x) - x - lgamma(a)
    return log_ax, lt(log_ax, -log(finfo(a.dtype).max))


def _domain_error(a, x, a_is_zero, x_is_zero):
    return functools.reduce(bitwise_or, [lt(x, _const(x, 0)), lt(a, _const(a, 0)),
                                         bitwise_and(a_is_zero, x_is_zero),
                                         bitwise_or(_isnan(a), _isnan(x))])


@computed_in_float32
def _igamma(a, x):
    x_is_infinity = eq(x, _const(x, np.inf))
    a_is_zero, x_is_zero = eq(a, _const(a, 0)), eq(x, _const(x, 0))
    domain_error = _domain_error(a, x, a_is_zero, x_is_zero)
    use_igammac = bitwise_and(ge(x, _const(x, 1)), gt(x, a))
    log_ax, underflow = _log_ax(a, x)
    ax = exp(log_ax)
    enabled = bitwise_not(functools.reduce(
        bitwise_or, [x_is_zero, domain_error, underflow, x_is_infinity]))
    output = select(
        use_igammac,
        _const(a, 1) - _continued_fraction(ax, x, a, bitwise_and(enabled, use_igammac),
                                           _VALUE),
        _series(ax, x, a, bitwise_and(enabled, bitwise_not(use_igammac)), _VALUE))
    output = select(x_is_zero, full_like(a, 0), output)
    output = select(x_is_infinity, full_like(a, 1), output)
    return select(domain_error, full_like(a, np.nan), output)


@computed_in_float32
def _igammac(a, x):
    a_is_zero, x_is_zero = eq(a, _const(a, 0)), eq(x, _const(x, 0))
    x_is_infinity = eq(x, _const(x, np.inf))
    domain_error = _domain_error(a, x, a_is_zero, x_is_zero)
    use_igamma = bitwise_or(lt(x, _const(x, 1)), lt(x, a))
    log_ax, underflow = _log_ax(a, x)
    enabled = bitwise_not(functools.reduce(
        bitwise_or, [domain_error, underflow, x_is_infinity, a_is_zero]))
    ax = exp(log_ax)
    series = _series(ax, x, a, bitwise_and(enabled, use_igamma), _VALUE)
    fraction = _continued_fraction(ax, x, a, bitwise_and(enabled, bitwise_not(use_igamma)),
                                   _VALUE)
    output = select(use_igamma, _const(a, 1) - series, fraction)
    output = select(bitwise_or(x_is_infinity, a_is_zero), full_like(output, 0), output)
    return select(domain_error, full_like(a, np.nan), output)


def _derivative_in_a(a, x, mode):
    """dP/da (`_DERIVATIVE`) or d x / d a at fixed P (`_SAMPLE_DERIVATIVE`)."""
    is_nan = bitwise_or(_isnan(a), _isnan(x))
    x_is_zero = eq(x, full_like(x, 0))
    domain_error = bitwise_or(lt(x, full_like(x, 0)), le(a, full_like(a, 0)))
    use_igammac = bitwise_and(gt(x, full_like(x, 1)), gt(x, a))
    log_ax, underflow = _log_ax(a, x)
    ax = exp(log_ax)
    enabled = bitwise_not(bitwise_or(bitwise_or(bitwise_or(
        x_is_zero, domain_error), underflow), is_nan))
    output = select(
        use_igammac,
        -_continued_fraction(ax, x, a, bitwise_and(enabled, use_igammac), mode),
        _series(ax, x, a, bitwise_and(enabled, bitwise_not(use_igammac)), mode))
    output = select(x_is_zero, full_like(output, 0), output)
    return select(bitwise_or(domain_error, is_nan), full_like(a, np.nan), output)


@computed_in_float32
def _igamma_grad_a(a, x):
    return _derivative_in_a(a, x, _DERIVATIVE)


def _density(a, x):
    """dP/dx = x^(a-1) e^-x / Γ(a)."""
    return exp(-x + (a - full_like(a, 1)) * log(x) - lgamma(a))


def _igamma_partial_a(g, ans, a, x):
    return g * igamma_grad_a(a, x)


def _igamma_partial_x(g, ans, a, x):
    return g * _density(a, x)


def _igamma_grad_a_partial_x(g, ans, a, x):
    """d²P/dadx = dP/dx (log x - digamma(a)) (JAX 0.10.2 has no rule: a plax addition)."""
    return mul(g, mul(_density(a, x), sub(log(x), digamma(a))))


igamma_p = binary("lax.igamma", dtypes=FLOAT, lower=lowered_from(_igamma),
                  jvp=defjvp(_igamma_partial_a, _igamma_partial_x))
igammac_p = binary("lax.igammac", dtypes=FLOAT, lower=lowered_from(_igammac),
                   jvp=defjvp(lambda g, ans, a, x: -_igamma_partial_a(g, ans, a, x),
                              lambda g, ans, a, x: -_igamma_partial_x(g, ans, a, x)))
igamma_grad_a_p = binary(
    "lax.igamma_grad_a", dtypes=FLOAT, lower=lowered_from(_igamma_grad_a),
    jvp=defjvp(not_differentiable("igamma_grad_a", "a"), _igamma_grad_a_partial_x))


def _doc(summary: str, returns: str, example: str) -> str:
    return f"""{summary}

Args:
    a: an array of a floating-point dtype (positive).
    x: an array of `a`'s dtype (non-negative).

Returns:
    {returns}

Examples:
{example}"""


igamma = public_binding(igamma_p, "igamma", "a x", _doc(
    "The regularized lower incomplete gamma function P(a, x), elementwise: the\n"
    "CDF at `x` of a gamma distribution of shape `a`.", "An array of values in [0, 1].",
    """    >>> import plax.numpy as jnp
    >>> from plax import lax
    >>> lax.igamma(jnp.array([1.0, 2.0]), jnp.array([1.0, 1.0]))  # 1 - 1/e, 1 - 2/e
    Array([0.6321... , 0.2642...], dtype=float32)
"""))
igammac = public_binding(igammac_p, "igammac", "a x", _doc(
    "The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x),\n"
    "elementwise, accurate where P is close to 1.", "An array of values in [0, 1].",
    """    >>> import plax.numpy as jnp
    >>> from plax import lax
    >>> lax.igammac(jnp.array([1.0, 1.0]), jnp.array([1.0, 20.0]))  # exp(-x)
    Array([3.6787...e-01, 2.0611...e-09], dtype=float32)
"""))
igamma_grad_a = public_binding(igamma_grad_a_p, "igamma_grad_a", "a x", _doc(
    "The derivative of the regularized lower incomplete gamma function\n"
    "`igamma(a, x)` with respect to `a`, elementwise.", "An array of `a`'s dtype.",
    """    >>> import plax
    >>> from plax import lax
    >>> d = lax.igamma_grad_a(2.0, 1.0)
    >>> bool(abs(d - plax.grad(lambda a: lax.igamma(a, 1.0))(2.0)) < 1e-4)
    True
"""))


def random_gamma_grad(a, x):
    """The derivative of a Gamma(a, 1) sample `x` with respect to `a`, elementwise:
    the implicit reparameterization gradient that makes `random.gamma`
    differentiable in `a`.

    Args:
        a: the shape parameter, a floating-point array.
        x: the samples, of `a`'s dtype.

    Returns:
        An array of the derivatives, of the broadcast shape.

    Examples:
        >>> import plax
        >>> from plax import lax
        >>> key = plax.random.key(0)
        >>> g = plax.grad(lambda a: plax.random.gamma(key, a))(2.0)
        >>> x = plax.random.gamma(key, 2.0)
        >>> bool(abs(lax.random_gamma_grad(2.0, x) - g) < 1e-5)
        True
    """
    a, x = (convert_element_type(v, get_aval(v).dtype) if is_python_scalar(v) else v
            for v in match_python_scalars("random_gamma_grad", a, x))
    shape = broadcast_shapes(np.shape(a), np.shape(x))
    a, x = (broadcast_in_dim(v, shape, tuple(range(np.ndim(v)))) for v in (a, x))
    return computed_in_float32(
        lambda a, x: _derivative_in_a(a, x, _SAMPLE_DERIVATIVE))(a, x)


__all__ = ["igamma", "igamma_grad_a", "igamma_grad_a_p", "igamma_p", "igammac", "igammac_p",
           "random_gamma_grad"]

"""`betainc`: the regularized incomplete beta function I_x(a, b).

XLA has no op for it: as JAX 0.10.2 does (after XLA's math library), it is the
continued fraction of DLMF 8.17.22, evaluated by the Lentz-Thompson-Barnett
algorithm where x < (a + 1) / (a + b + 2) and through I_x(a, b) = 1 - I_{1-x}(b, a)
elsewhere; every element runs until the slowest converges (at most 200 steps in
float32, 600 in float64). The same primitives in the same order as JAX's give JAX's
bits. Half-precision operands are computed in float32.
"""
from __future__ import annotations

import numpy as np

from plax.extend.ad import defjvp
from plax.extend.constructors import FLOAT, elementwise
from plax.extend.dtypes import finfo
from plax_stdlib.lax.bitwise import bitwise_and, bitwise_not, bitwise_or
from plax_stdlib.lax.comparison import eq, ge, gt, lt, ne, select
from plax_stdlib.lax.compositions import reciprocal
from plax_stdlib.lax.control_flow import while_loop
from plax_stdlib.lax.conversion import convert_element_type
from plax_stdlib.lax.creation import full_like
from plax_stdlib.lax.elementwise import (
    abs, add, div, exp, lgamma, log, log1p, mul, rem, sub)
from plax_stdlib.lax.reductions import reduce_or
from plax_stdlib.lax.shape_ops import broadcast_in_dim
from plax_stdlib.lax.special import computed_in_float32, lowered_from, public_binding


def _lentz(num_iterations, small, threshold, numerator, denominator):
    """The continued fraction b0 + a1/(b1 + a2/(b2 + ...)), its n-th partial numerator
    and denominator given by `numerator(n)` and `denominator(n)`, until every
    element's last factor is within `threshold` of 1."""
    def cond(values):
        iteration, unconverged = values[0], values[1]
        return bitwise_and(lt(iteration, num_iterations), unconverged)

    def body(values):
        iteration, _, c, d, h = values
        partial_numerator = numerator(iteration)
        partial_denominator = denominator(iteration)
        c = add(partial_denominator, div(partial_numerator, c))
        small_constant = full_like(c, small)
        c = select(lt(abs(c), small_constant), small_constant, c)
        d = add(partial_denominator, mul(partial_numerator, d))
        d = select(lt(abs(d), small_constant), small_constant, d)
        d = reciprocal(d)
        delta = mul(c, d)
        h = mul(h, delta)
        unconverged = ge(abs(sub(delta, np.asarray(1.0, delta.dtype)[()])), threshold)
        return [iteration + 1, reduce_or(unconverged, tuple(range(unconverged.ndim))),
                c, d, h]

    first = denominator(0)
    h = select(lt(abs(first), small), broadcast_in_dim(small, first.shape, ()), first)
    return while_loop(cond, body, [1, True, h, full_like(h, 0), h])[4]


def _betainc_fraction(a, b, x):
    """The continued fraction of I_x(a, b) x^-a (1-x)^-b a B(a, b) (DLMF 8.17.22)."""
    dtype = np.dtype(a.dtype)
    shape = a.shape
    one, two = full_like(a, 1), full_like(a, 2.0)

    def numerator(iteration):
        iteration = broadcast_in_dim(iteration, shape, ())
        is_even = eq(rem(iteration, full_like(iteration, 2)), full_like(iteration, 0))
        is_one = eq(iteration, full_like(iteration, 1))
        m_int = div(sub(iteration, full_like(iteration, 1)), full_like(iteration, 2))
        m_is_zero = eq(m_int, full_like(m_int, 0))
        m = convert_element_type(m_int, dtype)
        # (m = 0 has its own form: accurate for a near zero with denormals flushed)
        zero_numerator = -(a + b) * x / (a + one)
        even_numerator = select(m_is_zero, zero_numerator,
                                -(a + m) * (a + b + m) * x / (
                                    (a + two * m) * (a + two * m + one)))
        odd_numerator = m * (b - m) * x / ((a + two * m - one) * (a + two * m))
        numerator = select(is_even, even_numerator, odd_numerator)
        return select(is_one, full_like(x, 1.0), numerator)

    def denominator(iteration):
        iteration = broadcast_in_dim(iteration, shape, ())
        return select(eq(iteration, full_like(iteration, 0)), full_like(x, 0), full_like(x, 1))

    half_eps = (finfo(dtype).eps / 2).astype(dtype)
    return _lentz(200 if dtype == np.float32 else 600, half_eps, half_eps, numerator,
                  denominator)


@computed_in_float32
def _betainc(a, b, x):
    a_is_zero = bitwise_or(eq(a, full_like(a, 0)), eq(b, full_like(b, np.inf)))
    b_is_zero = bitwise_or(eq(b, full_like(b, 0)), eq(a, full_like(a, np.inf)))
    x_is_zero, x_is_one = eq(x, full_like(x, 0)), eq(x, full_like(x, 1))
    x_is_not_zero, x_is_not_one = bitwise_not(x_is_zero), bitwise_not(x_is_one)
    is_nan = bitwise_or(bitwise_or(ne(a, a), ne(b, b)), ne(x, x))
    result_is_zero = bitwise_or(bitwise_and(b_is_zero, x_is_not_one),
                                bitwise_and(a_is_zero, x_is_zero))
    result_is_one = bitwise_or(bitwise_and(a_is_zero, x_is_not_zero),
                               bitwise_and(b_is_zero, x_is_one))
    result_is_nan = bitwise_or(bitwise_or(bitwise_or(
        lt(a, full_like(a, 0)), lt(b, full_like(b, 0))), lt(x, full_like(x, 0))),
        gt(x, full_like(x, 1)))
    result_is_nan = bitwise_or(result_is_nan,
                               bitwise_or(bitwise_and(a_is_zero, b_is_zero), is_nan))
    # The fraction converges fast below x = (a + 1) / (a + b + 2); above, by symmetry.
    converges_rapidly = lt(x, (a + full_like(a, 1)) / (a + b + full_like(b, 2.0)))
    a, b = select(converges_rapidly, a, b), select(converges_rapidly, b, a)
    x = select(converges_rapidly, x, sub(full_like(x, 1), x))
    fraction = _betainc_fraction(a, b, x)
    # a Γ(a) = Γ(a + 1) -> 1 as a -> 0+: no division by a tiny a
    very_small = (finfo(a.dtype).tiny * 2).astype(a.dtype)
    lbeta_ab_small_a = lgamma(b) - lgamma(a + b)
    lbeta_ab = lgamma(a) + lbeta_ab_small_a
    factor = select(lt(a, full_like(a, very_small)),
                    exp(log1p(-x) * b - lbeta_ab_small_a),
                    exp(log(x) * a + log1p(-x) * b - lbeta_ab) / a)
    result = fraction * factor
    result = select(converges_rapidly, result, sub(full_like(result, 1), result))
    result = select(result_is_zero, full_like(a, 0), result)
    result = select(result_is_one, full_like(a, 1), result)
    return select(result_is_nan, full_like(a, np.nan), result)


def _partial_x(g, ans, a, b, x):
    lbeta = lgamma(a) + lgamma(b) - lgamma(a + b)
    return exp((b - 1) * log1p(-x) + (a - 1) * log(x) - lbeta) * g


def _no_partial(g, ans, a, b, x):
    raise ValueError("Betainc gradient with respect to a and b not supported.")


regularized_incomplete_beta_p = elementwise(
    "lax.regularized_incomplete_beta", 3, dtypes=FLOAT, lower=lowered_from(_betainc),
    jvp=defjvp(_no_partial, _no_partial, _partial_x))
_BETAINC_DOC = """The regularized incomplete beta function I_x(a, b), elementwise: the CDF at
`x` of a Beta(a, b) distribution.

Args:
    a: an array of a floating-point dtype (positive).
    b: an array of `a`'s dtype (positive).
    x: an array of `a`'s dtype, in [0, 1].

Returns:
    An array of values in [0, 1].

Examples:
    >>> import plax.numpy as jnp
    >>> from plax import lax
    >>> jnp.round(lax.betainc(1.0, 1.0, jnp.array([0.25, 0.5])), 4)  # Beta(1, 1): uniform
    Array([0.25, 0.5 ], dtype=float32)
"""
betainc = public_binding(regularized_incomplete_beta_p, "betainc", "a b x", _BETAINC_DOC)

__all__ = ["betainc", "regularized_incomplete_beta_p"]

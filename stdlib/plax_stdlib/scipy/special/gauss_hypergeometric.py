"""Gauss's hypergeometric function 2F1(a, b; c; x) = Σ (a)_k (b)_k / (c)_k x^k / k! for
real arguments: the series where it converges fast, Pfaff's transformation for x < 0,
and the connection formulas at 1 - x (with their logarithmic limit when c - a - b is an
integer) for x near 1."""
from __future__ import annotations

import plax
from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.lax.special import computed_in_float32
from plax_stdlib.numpy import util
from plax_stdlib.scipy.special.hypergeometric_series import (
    epsilon, gamma_ratio, hypergeometric_jvp, is_nonpositive_integer, is_odd, sum_series)

_MAX_TERMS = 2000
_SERIES_REACH = 0.75  # the series at z, connection formulas at 1 - z, above this


def _series(a, b, c, z):
    """The power series, for stacked parameter sets at once (one loop for them all)."""
    return sum_series(jnp.ones_like(z), lambda k: (a + k) * (b + k) / ((c + k) * (k + 1)) * z,
                      _MAX_TERMS)


def _logarithmic_connection(a, b, m, w):
    """2F1(a, b; a + b + m; 1 - w) for an integer m ≥ 0 (Abramowitz & Stegun 15.3.10-11):
    a finite sum of m terms and a series whose terms carry log w and digammas."""
    c = a + b + m
    finite = sum_series(jnp.ones_like(w),
                        lambda n: jnp.where(n + 1 < m, (a + n) * (b + n) / ((n + 1) * (1 - m + n)),
                                            0) * w, _MAX_TERMS)
    finite = jnp.where(m > 0, finite * gamma_ratio([jnp.maximum(m, 1), c], [a + m, b + m]), 0)

    eps = epsilon(w)
    log_w = jnp.log(w)

    def cond(state):
        return jnp.any(state[-1])

    def body(state):
        n, term, psi_n, psi_nm, psi_a, psi_b, total, _ = state
        total = total + term * (log_w - psi_n - psi_nm + psi_a + psi_b)
        nf = n.astype(w.dtype)
        term = term * (a + m + nf) * (b + m + nf) * w / ((nf + 1) * (nf + m + 1))
        going = (jnp.abs(term) * (jnp.abs(log_w) + 1) > eps * jnp.abs(total)) & (n < _MAX_TERMS)
        return (n + 1, term, psi_n + 1 / (nf + 1), psi_nm + 1 / (nf + m + 1),
                psi_a + 1 / (a + m + nf), psi_b + 1 / (b + m + nf), total, going)

    init = (jnp.int32(0), jnp.exp(-lax.lgamma(m + 1)), lax.digamma(jnp.ones_like(w)),
            lax.digamma(m + 1), lax.digamma(a + m), lax.digamma(b + m), jnp.zeros_like(w),
            jnp.ones(w.shape, bool))
    series = lax.while_loop(cond, body, init)[6]
    sign = jnp.where(is_odd(m), -1.0, 1.0)
    return finite - sign * w ** m * gamma_ratio([c], [a, b]) * series


@plax.jit
@computed_in_float32
def _hyp2f1(a, b, c, x):
    terminating = is_nonpositive_integer(a) | is_nonpositive_integer(b)
    degree = jnp.maximum(jnp.where(is_nonpositive_integer(a), a, -jnp.inf),
                         jnp.where(is_nonpositive_integer(b), b, -jnp.inf))
    # Euler's (1 - x)^(c-a-b) 2F1(c - a, c - b; c; x) terminates when c - a or c - b does.
    euler_terminating = ~terminating & (is_nonpositive_integer(c - a) |
                                        is_nonpositive_integer(c - b)) & (x < 1)
    pole = is_nonpositive_integer(c) & ~(terminating & (degree > c))
    pole = pole | (is_nonpositive_integer(c) & euler_terminating)
    general = ~(terminating | euler_terminating | pole) & (x < 1)

    # Pfaff: 2F1(a, b; c; x) = (1 - x)^(-a) 2F1(a, c - b; c; x / (x - 1)) maps x < 0 into
    # [0, 1); there the series up to the reach, the connection formulas at w = 1 - z past it.
    safe_x = jnp.where(general & jnp.isfinite(x), x, 0)
    pfaff = safe_x < 0
    z = jnp.where(pfaff, safe_x / (safe_x - 1), safe_x)
    b_z = jnp.where(pfaff, c - b, b)
    near = z <= _SERIES_REACH
    w = jnp.where(near, 0.5, 1 - z)
    d = c - a - b_z
    m = jnp.round(d)
    integral = ~near & (jnp.abs(d - m) < jnp.sqrt(epsilon(z)))
    generic = ~near & ~integral

    def where_generic(value, default):
        return jnp.where(generic, value, default)
    d_g = where_generic(d, 0.5)
    parameter_sets = [
        (a, b, c, jnp.where(terminating, x, 0)),  # a terminating series, at any x
        (c - a, c - b, c, jnp.where(euler_terminating, x, 0)),  # Euler's, terminating
        (a, b_z, c, jnp.where(near, z, 0)),  # the series at z
        (where_generic(a, 0.5), where_generic(b_z, 0.5), 1 - d_g, where_generic(w, 0)),
        (where_generic(c - a, 0.5), where_generic(c - b_z, 0.5), 1 + d_g, where_generic(w, 0)),
    ]
    sums = _series(*(jnp.stack(group) for group in zip(*parameter_sets)))
    polynomial, euler_polynomial, series, near_sum, far_sum = (sums[i] for i in range(5))
    connection = (gamma_ratio([c, d_g], [c - a, c - b_z]) * near_sum +
                  gamma_ratio([c, -d_g], [a, b_z]) * w ** d_g * far_sum)

    # c - (a, b) - m with an integer m < 0 first goes through Euler's transformation.
    flip = m < 0
    logarithmic = _logarithmic_connection(
        jnp.where(integral, jnp.where(flip, c - a, a), 0.5),
        jnp.where(integral, jnp.where(flip, c - b_z, b_z), 0.5),
        jnp.where(integral, jnp.abs(m), 0), jnp.where(integral, w, 0.5))
    logarithmic = jnp.where(flip, w ** m * logarithmic, logarithmic)
    inner = jnp.where(near, series, jnp.where(integral, logarithmic, connection))
    inner = jnp.where(pfaff, (1 - safe_x) ** (-a) * inner, inner)

    at_one = jnp.where(d > 0, gamma_ratio([c, jnp.where(d > 0, d, 1)], [c - a, c - b]), jnp.inf)
    value = jnp.where(terminating, polynomial,
                      jnp.where(euler_terminating, (1 - x) ** (c - a - b) * euler_polynomial,
                                inner))
    value = jnp.where(general | terminating | euler_terminating, value, jnp.inf)  # x > 1
    value = jnp.where((x == 1) & ~terminating, at_one, value)
    value = jnp.where(pole, jnp.inf, value)
    value = jnp.where(x == 0, 1.0, value)
    value = jnp.where(x == -jnp.inf, jnp.nan, value)
    nan = jnp.isnan(a) | jnp.isnan(b) | jnp.isnan(c) | jnp.isnan(x)
    return jnp.where(nan, jnp.nan, value)


@plax.custom_jvp
def _hyp2f1_differentiable(a, b, c, x):
    return _hyp2f1(a, b, c, x)


def _hyp2f1_jvp(primals, tangents):
    # d/dx 2F1(a, b; c; x) = ab/c 2F1(a+1, b+1; c+1; x)
    return hypergeometric_jvp(_hyp2f1, primals, tangents, lambda a, b, c, x: a * b / c *
                              _hyp2f1_differentiable(a + 1, b + 1, c + 1, x))


_hyp2f1_differentiable.defjvp(_hyp2f1_jvp, symbolic_zeros=True)


def hyp2f1(a, b, c, x):
    """Gauss's hypergeometric function 2F1(a, b; c; x) of real arguments, broadcast
    together; inf beyond the branch point x = 1 unless the series terminates."""
    a, b, c, x = util.promote_args_inexact("hyp2f1", a, b, c, x)
    if jnp.iscomplexobj(x):
        raise TypeError(f"hyp2f1 does not support complex arguments, got {util.dtype_of(x)}")
    return _hyp2f1_differentiable(*jnp.broadcast_arrays(a, b, c, x))

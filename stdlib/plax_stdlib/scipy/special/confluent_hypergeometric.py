"""Kummer's confluent hypergeometric function 1F1(a; b; x) = Σ (a)_k / (b)_k x^k / k!
for real arguments."""
from __future__ import annotations

import numpy as np

import plax
from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.lax.special import computed_in_float32
from plax_stdlib.numpy import util
from plax_stdlib.scipy.special.hypergeometric_series import (
    gamma_sign, hypergeometric_jvp, is_nonpositive_integer, sum_series)

_MAX_TERMS = 4000
# Past this y the asymptotic expansion (which leaves out the recessive term, of relative
# size about e^-y) is used, unless its terms decrease too slowly; below it the series,
# whose terms in float32 over- or underflow beyond about 88.
_ASYMPTOTIC_FROM = {4: 60.0, 8: 200.0}


def _nonnegative_x(a, b, y, log_prefactor):
    """exp(log_prefactor) 1F1(a; b; y) for y ≥ 0: the power series (its terms scaled by
    half the prefactor, so that neither they nor it over- or underflow alone), or for
    large y the asymptotic Γ(b)/Γ(a) e^y y^(a-b) Σ (b-a)_k (1-a)_k / k! y^(-k)."""
    terminates = is_nonpositive_integer(a)
    reach = _ASYMPTOTIC_FROM[np.dtype(y.dtype).itemsize]
    asymptotic = (y > jnp.maximum(reach, 4 * (jnp.abs(b - a) + jnp.abs(1 - a)))) & ~terminates
    y_series = jnp.where(asymptotic, 0, y)
    half_prefactor = jnp.exp(log_prefactor / 2)
    series = sum_series(half_prefactor, lambda k: (a + k) / (b + k) * y_series / (k + 1),
                        _MAX_TERMS) * half_prefactor
    y_large = jnp.where(asymptotic, y, 1e3)
    # The asymptotic terms shrink until k ≈ y - |b - a| - |1 - a|, then grow.
    smallest_term = jnp.minimum(y_large - jnp.abs(b - a) - jnp.abs(1 - a), _MAX_TERMS)
    tail = sum_series(jnp.ones_like(y),
                      lambda k: (b - a + k) * (1 - a + k) / ((k + 1) * y_large),
                      smallest_term)
    sign = gamma_sign(b) * gamma_sign(a)
    log_scale = lax.lgamma(b) - lax.lgamma(a) + y_large + (a - b) * jnp.log(y_large)
    return jnp.where(asymptotic, sign * tail * jnp.exp(log_scale + log_prefactor), series)


@plax.jit
@computed_in_float32
def _hyp1f1(a, b, x):
    # Kummer's transformation 1F1(a; b; x) = e^x 1F1(b - a; b; -x) turns negative x
    # (whose series cancels) into positive, unless the series at x terminates.
    kummer = (x < 0) & ~is_nonpositive_integer(a)
    value = _nonnegative_x(jnp.where(kummer, b - a, a), b, jnp.where(kummer, -x, x),
                           jnp.where(kummer & jnp.isfinite(x), x, 0))
    # A pole of (b)_k reached before the series terminates makes it infinite; a = 0
    # gives 1 (also for b = 0, JAX's convention).
    pole = is_nonpositive_integer(b) & ~(is_nonpositive_integer(a) & (a > b))
    value = jnp.where(pole, jnp.inf, value)
    value = jnp.where((a == 0) | (x == 0), 1.0, value)
    value = jnp.where(x == -jnp.inf, jnp.where(kummer, 0.0, value), value)
    growth = gamma_sign(a) * gamma_sign(b) * jnp.inf
    value = jnp.where(x == jnp.inf, jnp.where(is_nonpositive_integer(a), jnp.nan, growth),
                      value)
    return jnp.where(jnp.isnan(a) | jnp.isnan(b) | jnp.isnan(x), jnp.nan, value)


@plax.custom_jvp
def _hyp1f1_differentiable(a, b, x):
    return _hyp1f1(a, b, x)


def _hyp1f1_jvp(primals, tangents):
    # d/dx 1F1(a; b; x) = a/b 1F1(a+1; b+1; x)
    return hypergeometric_jvp(_hyp1f1, primals, tangents,
                              lambda a, b, x: a / b * _hyp1f1_differentiable(a + 1, b + 1, x))


_hyp1f1_differentiable.defjvp(_hyp1f1_jvp, symbolic_zeros=True)


def hyp1f1(a, b, x):
    """The confluent hypergeometric function 1F1(a; b; x) of real arguments, broadcast
    together."""
    a, b, x = util.promote_args_inexact("hyp1f1", a, b, x)
    if jnp.iscomplexobj(x):
        raise ValueError("hyp1f1 does not support complex-valued inputs.")
    return _hyp1f1_differentiable(*jnp.broadcast_arrays(a, b, x))

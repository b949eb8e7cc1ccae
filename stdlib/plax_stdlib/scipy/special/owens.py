"""Owen's T function T(h, a) = 1/(2π) ∫_0^a exp(-h²(1+x²)/2) / (1+x²) dx, the
probability of the bivariate normal wedge, with its closed-form partial derivatives."""
from __future__ import annotations

import math

import numpy as np

import plax
from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.lax.special import computed_in_float32
from plax_stdlib.numpy import util

# Gauss-Legendre on [0, 1]: the integrand is smooth there (poles at ±i, or for large h a
# Gaussian bump of width 1/h, which the cut-off below keeps a few nodes wide).
_NODES, _WEIGHTS = (v / 2 for v in np.polynomial.legendre.leggauss(40))
_NODES = _NODES + 0.5
_GAUSSIAN_REACH = 10.0  # exp(-reach²/2) is below float64's epsilon


def _wedge(h, a):
    """T(h, a) for h ≥ 0, 0 ≤ a ≤ 1 by quadrature over [0, min(a, reach/h)], beyond
    which exp(-h²x²/2) is negligible."""
    upper = jnp.minimum(a, _GAUSSIAN_REACH / h)[..., None]
    x = upper * np.asarray(_NODES, h.dtype)
    integrand = jnp.exp(-0.5 * jnp.square(h[..., None] * x)) / (1 + x * x)
    integral = upper[..., 0] * jnp.sum(integrand * np.asarray(_WEIGHTS, h.dtype), axis=-1)
    return jnp.exp(-0.5 * h * h) * integral / (2 * math.pi)


def _upper_tail(x):
    """Q(x) = 1 - Φ(x)."""
    return 0.5 * lax.erfc(x / math.sqrt(2))


@plax.custom_jvp
@plax.jit
@computed_in_float32
def _owens_t(h, a):
    # T is even in h and odd in a; for |a| > 1 the reciprocal identity
    # T(h, a) = Q(h)/2 + Q(ah)/2 - Q(h) Q(ah) - T(ah, 1/a) brings a into [0, 1].
    h, abs_a = jnp.abs(h), jnp.abs(a)
    large = abs_a > 1
    reduced_a = jnp.where(large, 1 / abs_a, abs_a)
    reduced_h = jnp.where(large, abs_a * h, h)
    inner = _wedge(reduced_h, reduced_a)
    inner = jnp.where(reduced_h == 0, jnp.arctan(reduced_a) / (2 * math.pi), inner)
    q_h, q_ah = _upper_tail(h), _upper_tail(reduced_h)
    outer = 0.5 * q_h + 0.5 * q_ah - q_h * q_ah - inner
    # a = ±inf: T(h, ∞) = Q(|h|)/2 (1/4 at h = 0), which the reduction reaches as 0·inf.
    outer = jnp.where(jnp.isinf(abs_a), jnp.where(h == 0, 0.25, 0.5 * q_h), outer)
    t = jnp.where(large, outer, inner)
    return jnp.sign(a) * jnp.where(jnp.isinf(h) & ~jnp.isnan(a), 0, t)  # T(±inf, a) = 0


@_owens_t.defjvp
def _owens_t_jvp(primals, tangents):
    (h, a), (dh, da) = primals, tangents
    d_h = -jnp.exp(-0.5 * h * h) * lax.erf(a * h / math.sqrt(2)) / (2 * math.sqrt(2 * math.pi))
    d_a = jnp.exp(-0.5 * h * h * (1 + a * a)) / (2 * math.pi * (1 + a * a))
    return _owens_t(h, a), d_h * dh + d_a * da


def owens_t(h, a):
    """Owen's T function, real arguments broadcast together."""
    h, a = util.promote_args_inexact("owens_t", h, a)
    if jnp.iscomplexobj(h):
        raise TypeError(f"owens_t does not support complex arguments, got {util.dtype_of(h)}")
    return _owens_t(h, a)

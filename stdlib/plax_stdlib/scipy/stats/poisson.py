"""The Poisson distribution with mean mu (on the integers k ≥ loc)."""
from __future__ import annotations

import numpy as np

from plax_stdlib import numpy as jnp
from plax_stdlib.scipy import special
from plax_stdlib.scipy.stats.distribution_util import on_integers, on_support, promote


def logpmf(k, mu, loc=0):
    """log P(X = k): k log(mu) - log(k!) - mu at non-negative integers, -inf elsewhere."""
    k, mu, loc = promote("poisson.logpmf", k, mu, loc)
    j = k - loc
    log_mass = special.xlogy(j, mu) - special.gammaln(j + 1) - mu
    return on_support(on_integers(j, 0), log_mass, j, mu)


def pmf(k, mu, loc=0):
    """P(X = k)."""
    return jnp.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
    """P(X ≤ k) = Q(floor(k) + 1, mu), 0 below loc."""
    k, mu, loc = promote("poisson.cdf", k, mu, loc)
    j = jnp.floor(k - loc)
    return jnp.where(j < 0, 0.0, special.gammaincc(jnp.maximum(j, 0) + 1, mu))


def sf(k, mu, loc=0):
    """P(X > k) = P(floor(k) + 1, mu), 1 below loc."""
    k, mu, loc = promote("poisson.sf", k, mu, loc)
    j = jnp.floor(k - loc)
    return jnp.where(j < 0, 1.0, special.gammainc(jnp.maximum(j, 0) + 1, mu))


def logcdf(k, mu, loc=0):
    """log P(X ≤ k)."""
    return jnp.log(cdf(k, mu, loc))


def logsf(k, mu, loc=0):
    """log P(X > k)."""
    return jnp.log(sf(k, mu, loc))


# Terms summed for the entropy below the asymptotic regime: the mass beyond them is
# below 1e-40 for every mean under _ASYMPTOTIC.
_TERMS, _ASYMPTOTIC = 256, 100.0


def entropy(mu, loc=0):
    """-Σ p log p: summed over k < 256 for mu < 100, and from the asymptotic series
    ½ log(2πeμ) - 1/(12μ) - 1/(24μ²) - 19/(360μ³) above it; NaN for mu ≤ 0. (loc shifts
    the support, so it leaves the entropy alone.)"""
    mu, loc = (jnp.asarray(a) for a in promote("poisson.entropy", mu, loc))
    small = jnp.minimum(mu, _ASYMPTOTIC)[..., None]
    k = jnp.arange(_TERMS, dtype=mu.dtype)
    log_p = special.xlogy(k, small) - special.gammaln(k + 1) - small
    summed = -jnp.sum(jnp.where(log_p > -np.inf, jnp.exp(log_p) * log_p, 0), axis=-1)
    big = jnp.maximum(mu, _ASYMPTOTIC)
    series = (0.5 * jnp.log(2 * np.pi * np.e * big) - 1 / (12 * big) - 1 / (24 * big ** 2)
              - 19 / (360 * big ** 3))
    value = jnp.where(mu < _ASYMPTOTIC, summed, series)
    return jnp.broadcast_to(jnp.where(mu > 0, value, np.nan), jnp.broadcast_shapes(
        mu.shape, loc.shape))

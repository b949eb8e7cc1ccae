"""The Poisson distribution with mean mu (on the integers k ≥ loc)."""
from __future__ import annotations

import numpy as np

from plax_stdlib import numpy as jnp
from plax_stdlib.numpy import util
from plax_stdlib.scipy import special
from plax_stdlib.scipy.stats.distribution_util import (on_integers, on_support, promote,
                                                          promote_dtypes)


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


def _summed_entropy(mu, terms: int, bound):
    """-Σ p log p over k < min(terms, ceil(bound(mu))) for each mean of `mu` (1-D): the
    terms are summed, as JAX sums them, over a static range masked per mean."""
    k = jnp.arange(terms, dtype=mu.dtype)[:, None]
    p = pmf(k, mu, 0)
    inside = k < jnp.ceil(bound(mu)).astype(k.dtype)[None, :]
    return jnp.sum(special.entr(jnp.where(inside, p, 0.0)), axis=0)


@util.compiled(name="entropy")
def entropy(mu, loc=0):
    """-Σ p log p, as JAX computes it: summed over k < mu + 20 (at most 35 terms) for
    mu < 10, over k < mu + 10 √mu + 20 (at most 250) for mu < 100, and from
    ½ log(2πeμ) - 1/(12μ) above; 0 at mu = 0. (loc shifts the support, so it leaves
    the entropy alone.)"""
    mu, loc = promote_dtypes("poisson.entropy", mu, loc)
    means = jnp.ravel(mu)
    zero = jnp.zeros_like(means)
    small = _summed_entropy(means, 35, lambda m: m + 20)
    medium = _summed_entropy(means, 250, lambda m: m + 10 * jnp.sqrt(m) + 20)
    large = 0.5 * jnp.log(2 * np.pi * np.e * means) - 1.0 / (12 * means)
    value = jnp.where(means == 0, zero, jnp.where(
        means < 10, small, jnp.where(means < 100, medium, large)))
    return jnp.broadcast_to(jnp.reshape(value, mu.shape),
                            jnp.broadcast_shapes(mu.shape, loc.shape))

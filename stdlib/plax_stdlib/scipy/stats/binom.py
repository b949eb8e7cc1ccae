"""The binomial distribution: successes in n trials of probability p."""
from __future__ import annotations


from plax_stdlib import numpy as jnp
from plax_stdlib.scipy import special
from plax_stdlib.scipy.stats.distribution_util import (
    nan_where_any_nan,
    on_integers,
    on_support,
    promote,
)


def logpmf(k, n, p, loc=0):
    """log of C(n, k) p^k (1 - p)^(n - k) at the integers 0 ≤ k - loc ≤ n, -inf elsewhere."""
    k, n, p, loc = promote("binom.logpmf", k, n, p, loc)
    j = k - loc
    # (JAX's arithmetic, so that the bits are JAX's on the support)
    log_comb = special.gammaln(n + 1) - (special.gammaln(j + 1) + special.gammaln(n - j + 1))
    log_linear = special.xlogy(j, p) + special.xlog1py(n - j, -p)
    certain = jnp.logical_or(jnp.logical_and(j == 0, n == 0), log_linear == 0)
    log_mass = jnp.where(certain, 0.0, log_comb + log_linear)
    support = jnp.logical_and(on_integers(j, 0), j <= n)
    return on_support(support, log_mass, j, n, p)


def pmf(k, n, p, loc=0):
    """P(X = k)."""
    return jnp.exp(logpmf(k, n, p, loc))


def cdf(k, n, p, loc=0):
    """P(X ≤ k) = I_(1-p)(n - j, j + 1) for j = floor(k - loc) in [0, n)."""
    k, n, p, loc = promote("binom.cdf", k, n, p, loc)
    j = jnp.floor(k - loc)
    inside = jnp.logical_and(j >= 0, j < n)
    safe_j = jnp.where(inside, j, 0.0)
    value = special.betainc(jnp.where(inside, n - safe_j, 1.0), safe_j + 1, 1 - p)
    return nan_where_any_nan(jnp.where(inside, value, jnp.where(j < 0, 0.0, 1.0)), j, n, p)


def sf(k, n, p, loc=0):
    """P(X > k) = I_p(j + 1, n - j), accurate in the upper tail."""
    k, n, p, loc = promote("binom.sf", k, n, p, loc)
    j = jnp.floor(k - loc)
    inside = jnp.logical_and(j >= 0, j < n)
    safe_j = jnp.where(inside, j, 0.0)
    value = special.betainc(safe_j + 1, jnp.where(inside, n - safe_j, 1.0), p)
    return nan_where_any_nan(jnp.where(inside, value, jnp.where(j < 0, 1.0, 0.0)), j, n, p)

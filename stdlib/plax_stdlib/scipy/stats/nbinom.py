"""The negative binomial distribution: failures before the n-th success of
probability p."""
from __future__ import annotations


from plax_stdlib import numpy as jnp
from plax_stdlib.scipy import special
from plax_stdlib.scipy.stats.distribution_util import on_integers, on_support, promote


def logpmf(k, n, p, loc=0):
    """log of C(k + n - 1, k) pⁿ (1 - p)^k at the integers k - loc ≥ 0, -inf elsewhere."""
    k, n, p, loc = promote("nbinom.logpmf", k, n, p, loc)
    j = k - loc
    # (JAX's arithmetic, so that the bits are JAX's on the support)
    log_comb = special.gammaln(j + n) - special.gammaln(n) - special.gammaln(j + 1)
    log_mass = log_comb + (special.xlogy(n, p) + special.xlogy(j, 1 - p))
    return on_support(on_integers(j, 0), log_mass, j, n, p)


def pmf(k, n, p, loc=0):
    """P(X = k)."""
    return jnp.exp(logpmf(k, n, p, loc))

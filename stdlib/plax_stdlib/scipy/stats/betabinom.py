"""The beta-binomial distribution: binomial trials whose p is Beta(a, b)."""
from __future__ import annotations

import plax
from plax_stdlib import numpy as jnp
from plax_stdlib.scipy import special
from plax_stdlib.scipy.stats.distribution_util import on_integers, on_support, promote


@plax.jit  # (as JAX's: its operands are arguments, not constants, where XLA folds)
def logpmf(k, n, a, b, loc=0):
    """log of C(n, k) B(k + a, n - k + b) / B(a, b) at the integers 0 ≤ k - loc ≤ n,
    -inf elsewhere."""
    k, n, a, b, loc = promote("betabinom.logpmf", k, n, a, b, loc)
    j = k - loc
    # (JAX's arithmetic, so that the bits are JAX's on the support)
    log_comb = -(jnp.log1p(n) + special.betaln(n - j + 1, j + 1))
    log_mass = log_comb + (special.betaln(j + a, n - j + b) - special.betaln(a, b))
    log_mass = jnp.where(jnp.logical_and(j == 0, n == 0), 0.0, log_mass)
    return on_support(jnp.logical_and(on_integers(j, 0), j <= n), log_mass, j, n, a, b)


def pmf(k, n, a, b, loc=0):
    """P(X = k)."""
    return jnp.exp(logpmf(k, n, a, b, loc))

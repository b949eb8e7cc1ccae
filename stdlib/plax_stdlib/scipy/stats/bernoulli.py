"""The Bernoulli distribution: 1 with probability p, else 0."""
from __future__ import annotations

import numpy as np

from plax_stdlib import numpy as jnp
from plax_stdlib.scipy import special
from plax_stdlib.scipy.stats.distribution_util import nan_where_any_nan, on_support, promote


def logpmf(k, p, loc=0):
    """log p at k = loc + 1, log(1 - p) at k = loc, -inf elsewhere."""
    k, p, loc = promote("bernoulli.logpmf", k, p, loc)
    j = k - loc
    log_mass = jnp.where(j == 1, special.xlogy(j, p), special.xlog1py(1 - j, -p))
    return on_support(jnp.logical_or(j == 0, j == 1), log_mass, j, p)


def pmf(k, p, loc=0):
    """P(X = k)."""
    return jnp.exp(logpmf(k, p, loc))


def cdf(k, p):
    """P(X ≤ k): 0 below 0, 1 - p on [0, 1), 1 from 1; NaN for p outside [0, 1]."""
    k, p = promote("bernoulli.cdf", k, p)
    value = jnp.where(k < 0, 0.0, jnp.where(k < 1, 1 - p, 1.0))
    return nan_where_any_nan(jnp.where(jnp.logical_and(p >= 0, p <= 1), value, np.nan), k)


def sf(k, p):
    """P(X > k)."""
    k, p = promote("bernoulli.sf", k, p)
    value = jnp.where(k < 0, 1.0, jnp.where(k < 1, p, 0.0))
    return nan_where_any_nan(jnp.where(jnp.logical_and(p >= 0, p <= 1), value, np.nan), k)


def ppf(q, p):
    """The smallest k in {0, 1} with P(X ≤ k) ≥ q, and SciPy's ends of the support:
    -1 at q = 0 and 1 at q = 1 (where JAX gives 0 for both)."""
    q, p = promote("bernoulli.ppf", q, p)
    value = jnp.where(jnp.logical_and(q <= 1 - p, q < 1), 0.0, 1.0)
    value = jnp.where(q == 0, -1.0, value)
    valid = jnp.logical_and(jnp.logical_and(q >= 0, q <= 1),
                            jnp.logical_and(p >= 0, p <= 1))
    return jnp.where(valid, value, np.nan)

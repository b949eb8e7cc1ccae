"""The geometric distribution: the trial of the first success, each of probability p."""
from __future__ import annotations


from plax_stdlib import numpy as jnp
from plax_stdlib.scipy import special
from plax_stdlib.scipy.stats.distribution_util import on_integers, on_support, promote


def logpmf(k, p, loc=0):
    """(k - 1) log(1 - p) + log p at the integers k - loc ≥ 1, -inf elsewhere."""
    k, p, loc = promote("geom.logpmf", k, p, loc)
    j = k - loc
    log_mass = special.xlog1py(j - 1, -p) + jnp.log(p)
    return on_support(on_integers(j, 1), log_mass, j, p)


def pmf(k, p, loc=0):
    """P(X = k)."""
    return jnp.exp(logpmf(k, p, loc))

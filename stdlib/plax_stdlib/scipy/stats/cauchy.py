"""The Cauchy distribution."""
from __future__ import annotations

import math

import numpy as np

from plax_stdlib import numpy as jnp
from plax_stdlib.scipy.stats.distribution_util import promote, standardized


def logpdf(x, loc=0, scale=1):
    """log of the density at x."""
    x, loc, scale = promote("cauchy.logpdf", x, loc, scale)
    z, log_scale = standardized(x, loc, scale)
    return -math.log(math.pi) - log_scale - jnp.log1p(z * z)


def pdf(x, loc=0, scale=1):
    """The density at x."""
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """P(X ≤ x) = atan2(1, -z) / π, accurate in both tails."""
    x, loc, scale = promote("cauchy.cdf", x, loc, scale)
    return jnp.arctan2(1.0, (loc - x) / scale) / np.pi


def logcdf(x, loc=0, scale=1):
    """log P(X ≤ x)."""
    return jnp.log(cdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    """P(X > x) = atan2(1, z) / π."""
    x, loc, scale = promote("cauchy.sf", x, loc, scale)
    return jnp.arctan2(1.0, (x - loc) / scale) / np.pi


def logsf(x, loc=0, scale=1):
    """log P(X > x)."""
    return jnp.log(sf(x, loc, scale))


def _standard_quantile(q):
    """tan(π (q - 1/2)), as -1/tan(π q) below 1/2 and 1/tan(π (1 - q)) above it (1 - q
    is exact there, where q - 1/2 would lose the digits of a tail probability): ±inf
    at q = 1 and 0, NaN outside [0, 1]."""
    inside = jnp.logical_and(q >= 0, q <= 1)
    value = jnp.where(q < 0.5, -1 / jnp.tan(np.pi * q), 1 / jnp.tan(np.pi * (1 - q)))
    value = jnp.where(q == 0, -np.inf, jnp.where(q == 1, np.inf, value))
    return jnp.where(inside, value, np.nan)


def ppf(q, loc=0, scale=1):
    """The quantile function loc + scale tan(π (q - 1/2))."""
    q, loc, scale = promote("cauchy.ppf", q, loc, scale)
    return loc + scale * _standard_quantile(q)


def isf(q, loc=0, scale=1):
    """The inverse survival function loc - scale tan(π (q - 1/2))."""
    q, loc, scale = promote("cauchy.isf", q, loc, scale)
    return loc - scale * _standard_quantile(q)

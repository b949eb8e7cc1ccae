"""The Laplace (double exponential) distribution."""
from __future__ import annotations

import math

import numpy as np

from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.scipy.stats.distribution_util import const_like, promote


def logpdf(x, loc=0, scale=1):
    """log of the density at x."""
    x, loc, scale = promote("laplace.logpdf", x, loc, scale)
    linear_term = lax.div(lax.abs(lax.sub(x, loc)), scale)
    return lax.neg(lax.add(linear_term, lax.log(lax.mul(const_like(x, 2), scale))))


def pdf(x, loc=0, scale=1):
    """The density at x."""
    return lax.exp(logpdf(x, loc, scale))


def _lower(z):
    """P(Z ≤ z) for the standard Laplace distribution, each half computed directly."""
    return jnp.where(z < 0, 0.5 * jnp.exp(jnp.minimum(z, 0)),
                     1 - 0.5 * jnp.exp(-jnp.maximum(z, 0)))


def cdf(x, loc=0, scale=1):
    """P(X ≤ x)."""
    x, loc, scale = promote("laplace.cdf", x, loc, scale)
    return _lower((x - loc) / scale)


def sf(x, loc=0, scale=1):
    """P(X > x)."""
    x, loc, scale = promote("laplace.sf", x, loc, scale)
    return _lower((loc - x) / scale)


def _log_lower(z):
    """log P(Z ≤ z), exact (z - log 2) in the lower half."""
    return jnp.where(z < 0, z - math.log(2), jnp.log1p(-0.5 * jnp.exp(-jnp.maximum(z, 0))))


def logcdf(x, loc=0, scale=1):
    """log P(X ≤ x)."""
    x, loc, scale = promote("laplace.logcdf", x, loc, scale)
    return _log_lower((x - loc) / scale)


def logsf(x, loc=0, scale=1):
    """log P(X > x)."""
    x, loc, scale = promote("laplace.logsf", x, loc, scale)
    return _log_lower((loc - x) / scale)


def ppf(q, loc=0, scale=1):
    """The quantile function: loc + scale log(2q) below 1/2, loc - scale log(2 (1 - q))
    above (1 - q is exact there; q - 1/2 would lose the digits of a tail probability)."""
    q, loc, scale = promote("laplace.ppf", q, loc, scale)
    value = loc + scale * jnp.where(q < 0.5, jnp.log(2 * q), -jnp.log(2 * (1 - q)))
    return jnp.where(jnp.logical_and(q >= 0, q <= 1), value, np.nan)

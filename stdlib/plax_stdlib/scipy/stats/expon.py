"""The exponential distribution with rate 1/scale, starting at loc."""
from __future__ import annotations

import numpy as np

from plax_stdlib import numpy as jnp
from plax_stdlib.nn import activations
from plax_stdlib.scipy.stats.distribution_util import promote, standardized


def logpdf(x, loc=0, scale=1):
    """-z - log(scale) on the support, -inf below loc."""
    x, loc, scale = promote("expon.logpdf", x, loc, scale)
    z, log_scale = standardized(x, loc, scale)
    return jnp.where(z < 0, -np.inf, -z - log_scale)


def pdf(x, loc=0, scale=1):
    """The density at x."""
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """P(X ≤ x) = 1 - e^-z, accurate for small z."""
    x, loc, scale = promote("expon.cdf", x, loc, scale)
    return -jnp.expm1(-jnp.maximum((x - loc) / scale, 0))


def logcdf(x, loc=0, scale=1):
    """log P(X ≤ x) = log(1 - e^-z)."""
    x, loc, scale = promote("expon.logcdf", x, loc, scale)
    z = (x - loc) / scale
    return jnp.where(z < 0, -np.inf, activations.log1mexp(jnp.maximum(z, 0)))


def sf(x, loc=0, scale=1):
    """P(X > x) = e^-z."""
    x, loc, scale = promote("expon.sf", x, loc, scale)
    return jnp.exp(-jnp.maximum((x - loc) / scale, 0))


def logsf(x, loc=0, scale=1):
    """log P(X > x) = -z (0 below loc)."""
    x, loc, scale = promote("expon.logsf", x, loc, scale)
    return -jnp.maximum((x - loc) / scale, 0)


def ppf(q, loc=0, scale=1):
    """The quantile function loc - scale log(1 - q)."""
    q, loc, scale = promote("expon.ppf", q, loc, scale)
    value = loc - scale * jnp.log1p(-q)
    return jnp.where(jnp.logical_and(q >= 0, q <= 1), value, np.nan)


def isf(q, loc=0, scale=1):
    """The inverse survival function loc - scale log(q)."""
    q, loc, scale = promote("expon.isf", q, loc, scale)
    return jnp.where(jnp.logical_and(q >= 0, q <= 1), loc - scale * jnp.log(q), np.nan)

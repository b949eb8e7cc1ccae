"""The exponential distribution with rate 1/scale, starting at loc."""
from __future__ import annotations

import numpy as np

from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.scipy.stats.distribution_util import promote


def logpdf(x, loc=0, scale=1):
    """-(z + log(scale)) on the support, -inf below loc."""
    x, loc, scale = promote("expon.logpdf", x, loc, scale)
    log_probs = lax.neg(lax.add(lax.div(lax.sub(x, loc), scale), lax.log(scale)))
    return jnp.where(lax.lt(x, loc), -np.inf, log_probs)


def pdf(x, loc=0, scale=1):
    """The density at x."""
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """P(X ≤ x) = 1 - e^-z, accurate for small z."""
    x, loc, scale = promote("expon.cdf", x, loc, scale)
    neg_z = lax.div(lax.sub(loc, x), scale)
    return jnp.where(lax.lt(x, loc), jnp.zeros_like(neg_z), lax.neg(lax.expm1(neg_z)))


def logcdf(x, loc=0, scale=1):
    """log P(X ≤ x) = log1p(-sf)."""
    return lax.log1p(lax.neg(sf(x, loc, scale)))


def sf(x, loc=0, scale=1):
    """P(X > x) = e^-z."""
    return lax.exp(logsf(x, loc, scale))


def logsf(x, loc=0, scale=1):
    """log P(X > x) = -z (0 below loc)."""
    x, loc, scale = promote("expon.logsf", x, loc, scale)
    neg_z = lax.div(lax.sub(loc, x), scale)
    return jnp.where(lax.lt(x, loc), jnp.zeros_like(neg_z), neg_z)


def ppf(q, loc=0, scale=1):
    """The quantile function loc - scale log(1 - q)."""
    q, loc, scale = promote("expon.ppf", q, loc, scale)
    value = loc - scale * jnp.log1p(-q)
    return jnp.where(jnp.logical_and(q >= 0, q <= 1), value, np.nan)


def isf(q, loc=0, scale=1):
    """The inverse survival function loc - scale log(q)."""
    q, loc, scale = promote("expon.isf", q, loc, scale)
    return jnp.where(jnp.logical_and(q >= 0, q <= 1), loc - scale * jnp.log(q), np.nan)

"""The normal distribution N(loc, scale²)."""
from __future__ import annotations

import math

from plax_stdlib import numpy as jnp
from plax_stdlib.scipy import special
from plax_stdlib.scipy.stats.distribution_util import promote, standardized

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def logpdf(x, loc=0, scale=1):
    """log of the density at x."""
    x, loc, scale = promote("norm.logpdf", x, loc, scale)
    z, log_scale = standardized(x, loc, scale)
    return -0.5 * z * z - _LOG_SQRT_2PI - log_scale


def pdf(x, loc=0, scale=1):
    """The density at x."""
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """P(X ≤ x)."""
    x, loc, scale = promote("norm.cdf", x, loc, scale)
    return special.ndtr((x - loc) / scale)


def logcdf(x, loc=0, scale=1):
    """log P(X ≤ x), accurate far into the lower tail."""
    x, loc, scale = promote("norm.logcdf", x, loc, scale)
    return special.log_ndtr((x - loc) / scale)


def sf(x, loc=0, scale=1):
    """P(X > x), accurate in the upper tail."""
    x, loc, scale = promote("norm.sf", x, loc, scale)
    return special.ndtr((loc - x) / scale)


def logsf(x, loc=0, scale=1):
    """log P(X > x)."""
    x, loc, scale = promote("norm.logsf", x, loc, scale)
    return special.log_ndtr((loc - x) / scale)


def ppf(q, loc=0, scale=1):
    """The quantile function: the x with P(X ≤ x) = q."""
    q, loc, scale = promote("norm.ppf", q, loc, scale)
    return special.ndtri(q) * scale + loc


def isf(q, loc=0, scale=1):
    """The inverse survival function: the x with P(X > x) = q."""
    q, loc, scale = promote("norm.isf", q, loc, scale)
    return loc - special.ndtri(q) * scale

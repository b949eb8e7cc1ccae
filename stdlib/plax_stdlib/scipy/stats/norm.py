"""The normal distribution N(loc, scale²), in JAX's formulation (its sequence of
primitives), so that results match JAX's to the bit."""
from __future__ import annotations

import math

from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.scipy import special
from plax_stdlib.scipy.stats.distribution_util import const_like as _const, promote


def logpdf(x, loc=0, scale=1):
    """log of the density at x: -(log(2π scale²) + (x - loc)² / scale²) / 2."""
    x, loc, scale = promote("norm.logpdf", x, loc, scale)
    scale_sqrd = lax.square(scale)
    log_normalizer = lax.log(lax.mul(_const(x, 2 * math.pi), scale_sqrd))
    quadratic = lax.div(lax.square(lax.sub(x, loc)), scale_sqrd)
    return lax.div(lax.add(log_normalizer, quadratic), _const(x, -2))


def pdf(x, loc=0, scale=1):
    """The density at x."""
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """P(X ≤ x)."""
    x, loc, scale = promote("norm.cdf", x, loc, scale)
    return special.ndtr(lax.div(lax.sub(x, loc), scale))


def logcdf(x, loc=0, scale=1):
    """log P(X ≤ x), accurate far into the lower tail."""
    x, loc, scale = promote("norm.logcdf", x, loc, scale)
    return special.log_ndtr(lax.div(lax.sub(x, loc), scale))


def sf(x, loc=0, scale=1):
    """P(X > x) = P(-X ≤ -x), accurate in the upper tail."""
    x, loc, scale = promote("norm.sf", x, loc, scale)
    return cdf(-x, -loc, scale)


def logsf(x, loc=0, scale=1):
    """log P(X > x)."""
    x, loc, scale = promote("norm.logsf", x, loc, scale)
    return logcdf(-x, -loc, scale)


def ppf(q, loc=0, scale=1):
    """The quantile function: the x with P(X ≤ x) = q."""
    return jnp.asarray(special.ndtri(q) * scale + loc, float)


def isf(q, loc=0, scale=1):
    """The inverse survival function: the x with P(X > x) = q."""
    return ppf(lax.sub(_const(q, 1), q), loc, scale)

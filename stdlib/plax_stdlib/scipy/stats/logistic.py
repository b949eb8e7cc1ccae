"""The logistic distribution."""
from __future__ import annotations

from plax_stdlib import numpy as jnp
from plax_stdlib.nn import activations
from plax_stdlib.scipy import special
from plax_stdlib.scipy.stats.distribution_util import promote, standardized


def logpdf(x, loc=0, scale=1):
    """log of the density at x: -|z| - 2 log(1 + e^-|z|) - log(scale)."""
    x, loc, scale = promote("logistic.logpdf", x, loc, scale)
    z, log_scale = standardized(x, loc, scale)
    a = jnp.abs(z)
    return -a - 2 * jnp.log1p(jnp.exp(-a)) - log_scale


def pdf(x, loc=0, scale=1):
    """The density at x."""
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """P(X ≤ x) = expit(z)."""
    x, loc, scale = promote("logistic.cdf", x, loc, scale)
    return special.expit((x - loc) / scale)


def sf(x, loc=0, scale=1):
    """P(X > x) = expit(-z)."""
    x, loc, scale = promote("logistic.sf", x, loc, scale)
    return special.expit((loc - x) / scale)


def logcdf(x, loc=0, scale=1):
    """log P(X ≤ x) = log_sigmoid(z)."""
    x, loc, scale = promote("logistic.logcdf", x, loc, scale)
    return activations.log_sigmoid((x - loc) / scale)


def logsf(x, loc=0, scale=1):
    """log P(X > x) = log_sigmoid(-z)."""
    x, loc, scale = promote("logistic.logsf", x, loc, scale)
    return activations.log_sigmoid((loc - x) / scale)


def ppf(q, loc=0, scale=1):
    """The quantile function loc + scale logit(q)."""
    q, loc, scale = promote("logistic.ppf", q, loc, scale)
    return loc + scale * special.logit(q)


def isf(q, loc=0, scale=1):
    """The inverse survival function loc - scale logit(q)."""
    q, loc, scale = promote("logistic.isf", q, loc, scale)
    return loc - scale * special.logit(q)

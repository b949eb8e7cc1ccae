"""The logistic distribution."""
from __future__ import annotations

from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.nn import activations
from plax_stdlib.scipy import special
from plax_stdlib.scipy.stats.distribution_util import const_like, promote


def logpdf(x, loc=0, scale=1):
    """log of the density at x: -2 logaddexp(z/2, -z/2) - log(scale) (JAX's form)."""
    x, loc, scale = promote("logistic.logpdf", x, loc, scale)
    z = lax.div(lax.sub(x, loc), scale)
    two = const_like(z, 2)
    half_z = lax.div(z, two)
    return lax.sub(lax.mul(lax.neg(two), jnp.logaddexp(half_z, lax.neg(half_z))),
                   lax.log(scale))


def pdf(x, loc=0, scale=1):
    """The density at x."""
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """P(X ≤ x) = expit(z)."""
    x, loc, scale = promote("logistic.cdf", x, loc, scale)
    return special.expit((x - loc) / scale)


def sf(x, loc=0, scale=1):
    """P(X > x) = expit(-z)."""
    x, loc, scale = promote("logistic.sf", x, loc, scale)
    return special.expit(lax.neg(lax.div(lax.sub(x, loc), scale)))


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

"""The left-skewed Gumbel distribution (of minima), the mirror image of gumbel_r:
cdf 1 - exp(-e^z)."""
from __future__ import annotations

from plax_stdlib import numpy as jnp
from plax_stdlib.nn import activations
from plax_stdlib.scipy.stats.distribution_util import promote, standardized


def logpdf(x, loc=0, scale=1):
    """z - e^z - log(scale)."""
    x, loc, scale = promote("gumbel_l.logpdf", x, loc, scale)
    z, log_scale = standardized(x, loc, scale)
    return z - jnp.exp(z) - log_scale


def pdf(x, loc=0, scale=1):
    """The density at x."""
    return jnp.exp(logpdf(x, loc, scale))


def logsf(x, loc=0, scale=1):
    """log P(X > x) = -e^z."""
    x, loc, scale = promote("gumbel_l.logsf", x, loc, scale)
    return -jnp.exp((x - loc) / scale)


def sf(x, loc=0, scale=1):
    """P(X > x) = exp(-e^z)."""
    return jnp.exp(logsf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """P(X ≤ x) = 1 - exp(-e^z), accurate in the lower tail."""
    x, loc, scale = promote("gumbel_l.cdf", x, loc, scale)
    return -jnp.expm1(-jnp.exp((x - loc) / scale))


def logcdf(x, loc=0, scale=1):
    """log P(X ≤ x) = log(1 - exp(-e^z))."""
    x, loc, scale = promote("gumbel_l.logcdf", x, loc, scale)
    return activations.log1mexp(jnp.exp((x - loc) / scale))


def ppf(p, loc=0, scale=1):
    """The quantile function loc + scale log(-log(1 - p)); NaN outside [0, 1]."""
    p, loc, scale = promote("gumbel_l.ppf", p, loc, scale)
    value = loc + scale * jnp.log(-jnp.log1p(-p))
    return jnp.where(jnp.logical_and(p >= 0, p <= 1), value, jnp.nan)

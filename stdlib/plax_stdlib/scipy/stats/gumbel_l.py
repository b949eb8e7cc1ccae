"""The left-skewed Gumbel distribution (of minima): X is -Y for Y gumbel_r(-loc,
scale), so each function is gumbel_r's mirror image (cdf 1 - exp(-e^z))."""
from __future__ import annotations

from plax_stdlib import numpy as jnp
from plax_stdlib.scipy.stats import gumbel_r
from plax_stdlib.scipy.stats.distribution_util import promote


def _mirrored(name, x, loc, scale):
    x, loc, scale = promote(name, x, loc, scale)
    return -x, -loc, scale


def logpdf(x, loc=0, scale=1):
    """z - e^z - log(scale)."""
    return gumbel_r.logpdf(*_mirrored("gumbel_l.logpdf", x, loc, scale))


def pdf(x, loc=0, scale=1):
    """The density at x."""
    return gumbel_r.pdf(*_mirrored("gumbel_l.pdf", x, loc, scale))


def cdf(x, loc=0, scale=1):
    """P(X ≤ x) = 1 - exp(-e^z), accurate in the lower tail."""
    return gumbel_r.sf(*_mirrored("gumbel_l.cdf", x, loc, scale))


def logcdf(x, loc=0, scale=1):
    """log P(X ≤ x) = log(1 - exp(-e^z))."""
    return gumbel_r.logsf(*_mirrored("gumbel_l.logcdf", x, loc, scale))


def sf(x, loc=0, scale=1):
    """P(X > x) = exp(-e^z)."""
    return gumbel_r.cdf(*_mirrored("gumbel_l.sf", x, loc, scale))


def logsf(x, loc=0, scale=1):
    """log P(X > x) = -e^z."""
    return gumbel_r.logcdf(*_mirrored("gumbel_l.logsf", x, loc, scale))


def ppf(p, loc=0, scale=1):
    """The quantile function loc + scale log(-log(1 - p)) (log1p keeps small p's
    digits, which gumbel_r's quantile at 1 - p would lose); NaN outside [0, 1]."""
    p, loc, scale = promote("gumbel_l.ppf", p, loc, scale)
    value = loc + scale * jnp.log(-jnp.log1p(-p))
    return jnp.where(jnp.logical_and(p >= 0, p <= 1), value, jnp.nan)

"""The chi-squared distribution with df degrees of freedom: a gamma distribution of
shape df/2 and scale 2 (so every function is the gamma one's)."""
from __future__ import annotations

from plax_stdlib.scipy.stats import gamma
from plax_stdlib.scipy.stats.distribution_util import promote


def _as_gamma(name, x, df, loc, scale):
    x, df, loc, scale = promote(name, x, df, loc, scale)
    return x, df / 2, loc, 2 * scale


def logpdf(x, df, loc=0, scale=1):
    """log of the density at x; -inf below loc."""
    return gamma.logpdf(*_as_gamma("chi2.logpdf", x, df, loc, scale))


def pdf(x, df, loc=0, scale=1):
    """The density at x."""
    return gamma.pdf(*_as_gamma("chi2.pdf", x, df, loc, scale))


def cdf(x, df, loc=0, scale=1):
    """P(X ≤ x)."""
    return gamma.cdf(*_as_gamma("chi2.cdf", x, df, loc, scale))


def logcdf(x, df, loc=0, scale=1):
    """log P(X ≤ x)."""
    return gamma.logcdf(*_as_gamma("chi2.logcdf", x, df, loc, scale))


def sf(x, df, loc=0, scale=1):
    """P(X > x)."""
    return gamma.sf(*_as_gamma("chi2.sf", x, df, loc, scale))


def logsf(x, df, loc=0, scale=1):
    """log P(X > x)."""
    return gamma.logsf(*_as_gamma("chi2.logsf", x, df, loc, scale))

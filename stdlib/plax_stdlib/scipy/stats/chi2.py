"""The chi-squared distribution with df degrees of freedom: a gamma distribution of
shape df/2 and scale 2, in JAX's formulas (so that the bits are JAX's)."""
from __future__ import annotations

import numpy as np

from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.scipy import special
from plax_stdlib.scipy.stats.distribution_util import const_like, promote


def logpdf(x, df, loc=0, scale=1):
    """log of the density at x; -inf below loc (NaN at loc for df = 2, as JAX's
    0 * log 0)."""
    x, df, loc, scale = promote("chi2.logpdf", x, df, loc, scale)
    one, two = const_like(x, 1), const_like(x, 2)
    y = lax.div(lax.sub(x, loc), scale)
    df_on_two = lax.div(df, two)
    kernel = lax.sub(lax.mul(lax.sub(df_on_two, one), lax.log(y)), lax.div(y, two))
    normalizer = lax.neg(lax.add(lax.lgamma(df_on_two), lax.div(lax.mul(lax.log(two), df), two)))
    log_density = lax.add(lax.sub(normalizer, lax.log(scale)), kernel)
    return jnp.where(lax.lt(x, loc), -np.inf, log_density)


def pdf(x, df, loc=0, scale=1):
    """The density at x."""
    return lax.exp(logpdf(x, df, loc, scale))


def _standardized_halved(x, loc, scale):
    """(x - loc) / (2 scale), clamped at 0."""
    return lax.clamp(const_like(x, 0), lax.div(lax.sub(x, loc), lax.mul(scale, const_like(
        scale, 2))), const_like(x, np.inf))


def cdf(x, df, loc=0, scale=1):
    """P(X ≤ x)."""
    x, df, loc, scale = promote("chi2.cdf", x, df, loc, scale)
    return special.gammainc(lax.div(df, const_like(scale, 2)),
                            _standardized_halved(x, loc, scale))


def logcdf(x, df, loc=0, scale=1):
    """log P(X ≤ x)."""
    return lax.log(cdf(x, df, loc, scale))


def sf(x, df, loc=0, scale=1):
    """P(X > x)."""
    x, df, loc, scale = promote("chi2.sf", x, df, loc, scale)
    return special.gammaincc(lax.div(df, const_like(scale, 2)),
                             _standardized_halved(x, loc, scale))


def logsf(x, df, loc=0, scale=1):
    """log P(X > x)."""
    return lax.log(sf(x, df, loc, scale))

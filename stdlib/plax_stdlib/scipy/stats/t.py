"""Student's t distribution with df degrees of freedom."""
from __future__ import annotations

import math

from plax_stdlib import numpy as jnp
from plax_stdlib.scipy import special
from plax_stdlib.scipy.stats.distribution_util import promote, standardized


def logpdf(x, df, loc=0, scale=1):
    """log of the density at x."""
    x, df, loc, scale = promote("t.logpdf", x, df, loc, scale)
    z, log_scale = standardized(x, loc, scale)
    half = 0.5 * (df + 1)
    return (special.gammaln(half) - special.gammaln(0.5 * df) - 0.5 * jnp.log(df * math.pi)
            - half * jnp.log1p(z * z / df) - log_scale)


def pdf(x, df, loc=0, scale=1):
    """The density at x."""
    return jnp.exp(logpdf(x, df, loc, scale))


def _lower_tail(z, df):
    """P(T ≤ -|z|) = I_(df/(df+z²))(df/2, 1/2) / 2."""
    return 0.5 * special.betainc(0.5 * df, 0.5, df / (df + z * z))


def cdf(x, df, loc=0, scale=1):
    """P(X ≤ x), through the incomplete beta function (each tail computed directly)."""
    x, df, loc, scale = promote("t.cdf", x, df, loc, scale)
    z = (x - loc) / scale
    tail = _lower_tail(z, df)
    return jnp.where(z < 0, tail, 1 - tail)


def sf(x, df, loc=0, scale=1):
    """P(X > x)."""
    x, df, loc, scale = promote("t.sf", x, df, loc, scale)
    z = (x - loc) / scale
    tail = _lower_tail(z, df)
    return jnp.where(z > 0, tail, 1 - tail)


def logcdf(x, df, loc=0, scale=1):
    """log P(X ≤ x)."""
    return jnp.log(cdf(x, df, loc, scale))


def logsf(x, df, loc=0, scale=1):
    """log P(X > x)."""
    return jnp.log(sf(x, df, loc, scale))

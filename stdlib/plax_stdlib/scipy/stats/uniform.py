"""The uniform distribution on [loc, loc + scale]."""
from __future__ import annotations

import numpy as np

from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.scipy.stats.distribution_util import on_support, promote


def logpdf(x, loc=0, scale=1):
    """-log(scale) on the support, -inf off it."""
    x, loc, scale = promote("uniform.logpdf", x, loc, scale)
    inside = jnp.logical_and(x >= loc, x <= loc + scale)
    return on_support(inside, -jnp.log(scale), x, loc, scale)


def pdf(x, loc=0, scale=1):
    """The density at x."""
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """P(X ≤ x)."""
    x, loc, scale = promote("uniform.cdf", x, loc, scale)
    return jnp.clip((x - loc) / scale, 0, 1)


def logcdf(x, loc=0, scale=1):
    """log P(X ≤ x)."""
    return jnp.log(cdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    """P(X > x)."""
    x, loc, scale = promote("uniform.sf", x, loc, scale)
    return jnp.clip((loc + scale - x) / scale, 0, 1)


def logsf(x, loc=0, scale=1):
    """log P(X > x)."""
    return jnp.log(sf(x, loc, scale))


def ppf(q, loc=0, scale=1):
    """loc + q scale for q in [0, 1], NaN outside."""
    q, loc, scale = promote("uniform.ppf", q, loc, scale)
    return jnp.where(jnp.isnan(q) | (q < 0) | (q > 1), np.nan, lax.add(loc, lax.mul(scale, q)))

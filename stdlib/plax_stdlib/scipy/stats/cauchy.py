"""The Cauchy distribution, in JAX's formulation (its sequence of primitives), so
that results match JAX's to the bit."""
from __future__ import annotations

import numpy as np

from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.scipy.stats.distribution_util import const_like, promote


def logpdf(x, loc=0, scale=1):
    """-log(π scale) - log1p(z²)."""
    x, loc, scale = promote("cauchy.logpdf", x, loc, scale)
    z = lax.div(lax.sub(x, loc), scale)
    normalize_term = lax.log(lax.mul(const_like(x, np.pi), scale))
    return lax.neg(lax.add(normalize_term, lax.log1p(lax.mul(z, z))))


def pdf(x, loc=0, scale=1):
    """The density at x."""
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """P(X ≤ x) = 1/2 + atan(z) / π."""
    x, loc, scale = promote("cauchy.cdf", x, loc, scale)
    z = lax.div(lax.sub(x, loc), scale)
    return lax.add(const_like(x, 0.5), lax.mul(lax.div(const_like(x, 1.0),
                                                       const_like(x, np.pi)), jnp.arctan(z)))


def sf(x, loc=0, scale=1):
    """P(X > x) = P(-X ≤ -x)."""
    x, loc, scale = promote("cauchy.sf", x, loc, scale)
    return cdf(-x, -loc, scale)


def logcdf(x, loc=0, scale=1):
    """log P(X ≤ x) from atan2(1, -z) / π, accurate in the lower tail (JAX's
    log(cdf) loses it in float32: test_bits_vs_jax.py lists the difference)."""
    x, loc, scale = promote("cauchy.logcdf", x, loc, scale)
    return jnp.log(jnp.arctan2(1.0, (loc - x) / scale) / np.pi)


def logsf(x, loc=0, scale=1):
    """log P(X > x), from atan2(1, z) / π."""
    x, loc, scale = promote("cauchy.logsf", x, loc, scale)
    return jnp.log(jnp.arctan2(1.0, (x - loc) / scale) / np.pi)


def _standard_quantile(q):
    """tan(π (q - 1/2)), as -1/tan(π q) below 1/2 and 1/tan(π (1 - q)) above it (1 - q
    is exact there, where q - 1/2 would lose the digits of a tail probability): ±inf
    at q = 1 and 0, NaN outside [0, 1]."""
    inside = jnp.logical_and(q >= 0, q <= 1)
    value = jnp.where(q < 0.5, -1 / jnp.tan(np.pi * q), 1 / jnp.tan(np.pi * (1 - q)))
    value = jnp.where(q == 0, -np.inf, jnp.where(q == 1, np.inf, value))
    return jnp.where(inside, value, np.nan)


def ppf(q, loc=0, scale=1):
    """The quantile function loc + scale tan(π (q - 1/2))."""
    q, loc, scale = promote("cauchy.ppf", q, loc, scale)
    return loc + scale * _standard_quantile(q)


def isf(q, loc=0, scale=1):
    """The inverse survival function loc - scale tan(π (q - 1/2))."""
    q, loc, scale = promote("cauchy.isf", q, loc, scale)
    return loc - scale * _standard_quantile(q)

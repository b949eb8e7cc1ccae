"""The gamma distribution with shape a, located at loc and scaled by scale."""
from __future__ import annotations

import numpy as np

from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.scipy import special
from plax_stdlib.scipy.stats.distribution_util import const_like, promote, standardized


def logpdf(x, a, loc=0, scale=1):
    """log of the density at x; -inf below loc."""
    x, a, loc, scale = promote("gamma.logpdf", x, a, loc, scale)
    y, log_scale = standardized(x, loc, scale)
    log_density = special.xlogy(a - 1, y) - y - special.gammaln(a) - log_scale
    return jnp.where(y < 0, -np.inf, log_density)


def pdf(x, a, loc=0, scale=1):
    """The density at x."""
    return jnp.exp(logpdf(x, a, loc, scale))


def cdf(x, a, loc=0, scale=1):
    """P(X ≤ x), the regularized lower incomplete gamma function."""
    x, a, loc, scale = promote("gamma.cdf", x, a, loc, scale)
    return special.gammainc(a, lax.clamp(const_like(x, 0), (x - loc) / scale,
                                               const_like(x, np.inf)))


def logcdf(x, a, loc=0, scale=1):
    """log P(X ≤ x)."""
    return lax.log(cdf(x, a, loc, scale))


def sf(x, a, loc=0, scale=1):
    """P(X > x), the regularized upper incomplete gamma function."""
    x, a, loc, scale = promote("gamma.sf", x, a, loc, scale)
    y = (x - loc) / scale
    return jnp.where(y < 0, 1, special.gammaincc(a, y))


def logsf(x, a, loc=0, scale=1):
    """log P(X > x)."""
    return lax.log(sf(x, a, loc, scale))

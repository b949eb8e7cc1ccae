"""The beta distribution on [loc, loc + scale] with shape parameters a, b."""
from __future__ import annotations


from plax_stdlib import numpy as jnp
from plax_stdlib.scipy import special
from plax_stdlib.scipy.stats.distribution_util import on_support, promote, standardized


def logpdf(x, a, b, loc=0, scale=1):
    """log of the density at x; -inf outside the support."""
    x, a, b, loc, scale = promote("beta.logpdf", x, a, b, loc, scale)
    y, log_scale = standardized(x, loc, scale)
    inside = jnp.logical_and(y >= 0, y <= 1)
    log_density = (special.xlogy(a - 1, y) + special.xlog1py(b - 1, -y)
                   - special.betaln(a, b) - log_scale)
    return on_support(inside, log_density, x, a, b, loc, scale)


def pdf(x, a, b, loc=0, scale=1):
    """The density at x."""
    return jnp.exp(logpdf(x, a, b, loc, scale))


def cdf(x, a, b, loc=0, scale=1):
    """P(X ≤ x), the regularized incomplete beta function of the standardized x."""
    x, a, b, loc, scale = promote("beta.cdf", x, a, b, loc, scale)
    return special.betainc(a, b, jnp.clip((x - loc) / scale, 0, 1))


def logcdf(x, a, b, loc=0, scale=1):
    """log P(X ≤ x)."""
    return jnp.log(cdf(x, a, b, loc, scale))


def sf(x, a, b, loc=0, scale=1):
    """P(X > x) = I_(1-y)(b, a), accurate where the cdf is near 1."""
    x, a, b, loc, scale = promote("beta.sf", x, a, b, loc, scale)
    return special.betainc(b, a, 1 - jnp.clip((x - loc) / scale, 0, 1))


def logsf(x, a, b, loc=0, scale=1):
    """log P(X > x)."""
    return jnp.log(sf(x, a, b, loc, scale))

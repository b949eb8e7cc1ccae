"""The right-skewed Gumbel distribution (of maxima): cdf exp(-e^-z)."""
from __future__ import annotations

import numpy as np

from plax_stdlib import numpy as jnp
from plax_stdlib.nn import activations
from plax_stdlib.scipy.stats.distribution_util import promote, standardized


def logpdf(x, loc=0, scale=1):
    """-z - e^-z - log(scale); -inf at z = -inf (the limit, where the formula is
    inf - inf: NaN in SciPy)."""
    x, loc, scale = promote("gumbel_r.logpdf", x, loc, scale)
    z, log_scale = standardized(x, loc, scale)
    return jnp.where(z == -np.inf, -np.inf, -z - jnp.exp(-z) - log_scale)


def pdf(x, loc=0, scale=1):
    """The density at x."""
    return jnp.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    """log P(X ≤ x) = -e^-z."""
    x, loc, scale = promote("gumbel_r.logcdf", x, loc, scale)
    return -jnp.exp((loc - x) / scale)


def cdf(x, loc=0, scale=1):
    """P(X ≤ x) = exp(-e^-z)."""
    return jnp.exp(logcdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    """P(X > x) = 1 - exp(-e^-z), accurate in the upper tail."""
    x, loc, scale = promote("gumbel_r.sf", x, loc, scale)
    return -jnp.expm1(-jnp.exp((loc - x) / scale))


def logsf(x, loc=0, scale=1):
    """log P(X > x) = log(1 - exp(-e^-z))."""
    x, loc, scale = promote("gumbel_r.logsf", x, loc, scale)
    return activations.log1mexp(jnp.exp((loc - x) / scale))


def ppf(p, loc=0, scale=1):
    """The quantile function loc - scale log(-log p); NaN outside [0, 1]."""
    p, loc, scale = promote("gumbel_r.ppf", p, loc, scale)
    value = loc - scale * jnp.log(-jnp.log(p))
    return jnp.where(jnp.logical_and(p >= 0, p <= 1), value, jnp.nan)

"""The right-skewed Gumbel distribution (of maxima): cdf exp(-e^-z)."""
from __future__ import annotations

import numpy as np

from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.nn import activations
from plax_stdlib.scipy.stats.distribution_util import const_like, promote, standardized


def _scale_ok(scale):
    return lax.gt(scale, const_like(scale, 0))


def logpdf(x, loc=0, scale=1):
    """-z - e^-z - log(scale); -inf at z = -inf (the limit, where JAX's and SciPy's
    formula is inf - inf: NaN)."""
    x, loc, scale = promote("gumbel_r.logpdf", x, loc, scale)
    z, log_scale = standardized(x, loc, scale)
    return jnp.where(z == -np.inf, -np.inf, -z - jnp.exp(-z) - log_scale)


def pdf(x, loc=0, scale=1):
    """The density at x."""
    return jnp.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    """log P(X ≤ x) = -e^-z."""
    x, loc, scale = promote("gumbel_r.logcdf", x, loc, scale)
    z = lax.div(lax.sub(x, loc), scale)
    return jnp.where(_scale_ok(scale), lax.neg(lax.exp(lax.neg(z))), np.nan)


def cdf(x, loc=0, scale=1):
    """P(X ≤ x) = exp(-e^-z)."""
    return lax.exp(logcdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    """P(X > x) = 1 - exp(-e^-z), accurate in the upper tail."""
    x, loc, scale = promote("gumbel_r.sf", x, loc, scale)
    neg_z = lax.div(lax.sub(loc, x), scale)
    sf_ = lax.sub(const_like(x, 1), lax.exp(lax.neg(lax.exp(neg_z))))
    return jnp.where(_scale_ok(scale), sf_, np.nan)


def logsf(x, loc=0, scale=1):
    """log P(X > x) = log(1 - exp(-e^-z))."""
    x, loc, scale = promote("gumbel_r.logsf", x, loc, scale)
    return activations.log1mexp(jnp.exp((loc - x) / scale))


def ppf(p, loc=0, scale=1):
    """The quantile function loc - scale log(-log p); NaN outside [0, 1]."""
    p, loc, scale = promote("gumbel_r.ppf", p, loc, scale)
    value = loc - scale * jnp.log(-jnp.log(p))
    return jnp.where(jnp.logical_and(p >= 0, p <= 1), value, jnp.nan)

"""The left-skewed Gumbel distribution (of minima): cdf 1 - exp(-e^z), in JAX's
formulation (its sequence of primitives), so that results match JAX's to the bit."""
from __future__ import annotations

import numpy as np

from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.scipy.stats import gumbel_r
from plax_stdlib.scipy.stats.distribution_util import promote


def logpdf(x, loc=0, scale=1):
    """z - e^z - log(scale): gumbel_r's at -x (its -inf limit at z = +inf kept)."""
    x, loc, scale = promote("gumbel_l.logpdf", x, loc, scale)
    return gumbel_r.logpdf(-x, -loc, scale)


def pdf(x, loc=0, scale=1):
    """The density at x."""
    return jnp.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    """log P(X ≤ x) = log(-expm1(-e^z))."""
    x, loc, scale = promote("gumbel_l.logcdf", x, loc, scale)
    z = lax.div(lax.sub(x, loc), scale)
    log_cdf = lax.log(lax.neg(lax.expm1(lax.neg(lax.exp(z)))))
    return jnp.where(gumbel_r._scale_ok(scale), log_cdf, np.nan)


def cdf(x, loc=0, scale=1):
    """P(X ≤ x) = 1 - exp(-e^z)."""
    return lax.exp(logcdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    """P(X > x) = exp(-e^z)."""
    return lax.exp(logsf(x, loc, scale))


def logsf(x, loc=0, scale=1):
    """log P(X > x) = -e^z."""
    x, loc, scale = promote("gumbel_l.logsf", x, loc, scale)
    z = lax.div(lax.sub(x, loc), scale)
    return jnp.where(gumbel_r._scale_ok(scale), lax.neg(lax.exp(z)), np.nan)


def ppf(p, loc=0, scale=1):
    """The quantile function loc + scale log(-log(1 - p)) (log1p keeps small p's
    digits, which gumbel_r's quantile at 1 - p would lose); NaN outside [0, 1]."""
    p, loc, scale = promote("gumbel_l.ppf", p, loc, scale)
    value = loc + scale * jnp.log(-jnp.log1p(-p))
    return jnp.where(jnp.logical_and(p >= 0, p <= 1), value, jnp.nan)

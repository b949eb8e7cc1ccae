"""The Pareto distribution with shape b on [loc + scale, ∞)."""
from __future__ import annotations

import numpy as np

from plax_stdlib import numpy as jnp
from plax_stdlib.nn import activations
from plax_stdlib.scipy.stats.distribution_util import promote, standardized


def logpdf(x, b, loc=0, scale=1):
    """log b - (b + 1) log y - log(scale) for y = (x - loc) / scale ≥ 1, -inf below."""
    x, b, loc, scale = promote("pareto.logpdf", x, b, loc, scale)
    y, log_scale = standardized(x, loc, scale)
    log_density = jnp.log(b) - (b + 1) * jnp.log(jnp.maximum(y, 1)) - log_scale
    return jnp.where(y < 1, -np.inf, log_density)


def pdf(x, b, loc=0, scale=1):
    """The density at x."""
    return jnp.exp(logpdf(x, b, loc, scale))


def _log_tail(name, x, b, loc, scale):
    """-b log y, the log survival function (0 below the support), with b."""
    x, b, loc, scale = promote(name, x, b, loc, scale)
    return -b * jnp.log(jnp.maximum((x - loc) / scale, 1))


def logsf(x, b, loc=0, scale=1):
    """log P(X > x) = -b log y."""
    return _log_tail("pareto.logsf", x, b, loc, scale)


def sf(x, b, loc=0, scale=1):
    """P(X > x) = y^-b."""
    return jnp.exp(_log_tail("pareto.sf", x, b, loc, scale))


def cdf(x, b, loc=0, scale=1):
    """P(X ≤ x) = 1 - y^-b, accurate near the start of the support."""
    return -jnp.expm1(_log_tail("pareto.cdf", x, b, loc, scale))


def logcdf(x, b, loc=0, scale=1):
    """log P(X ≤ x) = log(1 - y^-b); -inf at and below the start of the support."""
    return activations.log1mexp(-_log_tail("pareto.logcdf", x, b, loc, scale))


def ppf(q, b, loc=0, scale=1):
    """The quantile function loc + scale (1 - q)^(-1/b); NaN outside [0, 1]."""
    q, b, loc, scale = promote("pareto.ppf", q, b, loc, scale)
    value = loc + scale * jnp.exp(-jnp.log1p(-q) / b)
    return jnp.where(jnp.logical_and(q >= 0, q <= 1), value, np.nan)

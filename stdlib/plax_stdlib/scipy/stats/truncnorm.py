"""The normal distribution N(loc, scale²) truncated to the standardized interval
[a, b]. Every function is a ratio of Gaussian masses, computed in log space from the
tail nearer each interval so that intervals far out in a tail keep their digits."""
from __future__ import annotations

import numpy as np

from plax_stdlib import numpy as jnp
from plax_stdlib.scipy import special
from plax_stdlib.scipy.stats import norm
from plax_stdlib.scipy.stats.distribution_util import on_support, promote


def _log_diff(log_big, log_small):
    """log(e^log_big - e^log_small) for log_big ≥ log_small."""
    return log_big + jnp.log1p(-jnp.exp(log_small - log_big))


def _log_mass(lo, hi):
    """log(Φ(hi) - Φ(lo)) for lo ≤ hi: from the left tail when the interval lies left of
    0, from the right one when it lies right of it, and as 1 minus both tails across 0."""
    left = _log_diff(special.log_ndtr(hi), special.log_ndtr(lo))
    right = _log_diff(special.log_ndtr(-lo), special.log_ndtr(-hi))
    middle = jnp.log1p(-special.ndtr(lo) - special.ndtr(-hi))
    return jnp.where(hi <= 0, left, jnp.where(lo >= 0, right, middle))


def _standardized(name, x, a, b, loc, scale):
    x, a, b, loc, scale = promote(name, x, a, b, loc, scale)
    return (x - loc) / scale, a, b, scale


def logpdf(x, a, b, loc=0, scale=1):
    """log of the density at x: the normal one over the interval's mass; -inf outside."""
    z, a, b, scale = _standardized("truncnorm.logpdf", x, a, b, loc, scale)
    log_density = norm.logpdf(z) - _log_mass(a, b) - jnp.log(scale)
    return on_support(jnp.logical_and(z >= a, z <= b), log_density, z, a, b)


def pdf(x, a, b, loc=0, scale=1):
    """The density at x."""
    return jnp.exp(logpdf(x, a, b, loc, scale))


def logcdf(x, a, b, loc=0, scale=1):
    """log P(X ≤ x) = log(Φ(z) - Φ(a)) - log(Φ(b) - Φ(a))."""
    z, a, b, _ = _standardized("truncnorm.logcdf", x, a, b, loc, scale)
    value = _log_mass(a, jnp.clip(z, a, b)) - _log_mass(a, b)
    return jnp.where(z >= b, 0.0, jnp.where(z <= a, -np.inf, value))


def cdf(x, a, b, loc=0, scale=1):
    """P(X ≤ x)."""
    return jnp.exp(logcdf(x, a, b, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
    """log P(X > x) = log(Φ(b) - Φ(z)) - log(Φ(b) - Φ(a))."""
    z, a, b, _ = _standardized("truncnorm.logsf", x, a, b, loc, scale)
    value = _log_mass(jnp.clip(z, a, b), b) - _log_mass(a, b)
    return jnp.where(z <= a, 0.0, jnp.where(z >= b, -np.inf, value))


def sf(x, a, b, loc=0, scale=1):
    """P(X > x)."""
    return jnp.exp(logsf(x, a, b, loc, scale))

"""The wrapped Cauchy distribution on [0, 2π] with shape 0 < c < 1."""
from __future__ import annotations

import math

import numpy as np

from plax_stdlib import numpy as jnp
from plax_stdlib.scipy.stats.distribution_util import on_support, promote


def logpdf(x, c):
    """log((1 - c²) / (2π (1 + c² - 2c cos x))) on [0, 2π], -inf off it; NaN unless
    0 < c < 1."""
    x, c = promote("wrapcauchy.logpdf", x, c)
    log_density = (jnp.log1p(-c * c) - math.log(2 * math.pi)
                   - jnp.log(1 + c * c - 2 * c * jnp.cos(x)))
    inside = jnp.logical_and(x >= 0, x <= 2 * np.pi)
    valid = jnp.logical_and(c > 0, c < 1)
    return jnp.where(valid, on_support(inside, log_density, x), np.nan)


def pdf(x, c):
    """The density at x."""
    return jnp.exp(logpdf(x, c))

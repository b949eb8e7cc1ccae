"""The von Mises distribution on the circle with concentration kappa, normalized on
[-π, π] and evaluated at any x (periodic, as in JAX)."""
from __future__ import annotations

import numpy as np

from plax_stdlib import numpy as jnp
from plax_stdlib.scipy import special
from plax_stdlib.scipy.stats.distribution_util import promote


def logpdf(x, kappa):
    """kappa (cos x - 1) - log(2π i0e(kappa)) (the exponentially scaled Bessel function
    keeps large kappa finite), rounded as JAX's; NaN for kappa ≤ 0."""
    x, kappa = promote("vonmises.logpdf", x, kappa)
    log_density = kappa * (jnp.cos(x) - 1) - jnp.log(2 * np.pi * special.i0e(kappa))
    return jnp.where(kappa > 0, log_density, np.nan)


def pdf(x, kappa):
    """The density at x."""
    return jnp.exp(logpdf(x, kappa))

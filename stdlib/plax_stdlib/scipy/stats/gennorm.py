"""The generalized normal distribution with shape beta: density ∝ exp(-|x|^beta)
(beta = 2 is a normal distribution, beta = 1 a Laplace one)."""
from __future__ import annotations

from plax_stdlib import numpy as jnp
from plax_stdlib.scipy import special
from plax_stdlib.scipy.stats.distribution_util import promote


def logpdf(x, beta):
    """log(beta / 2) - log Γ(1/beta) - |x|^beta."""
    x, beta = promote("gennorm.logpdf", x, beta)
    return jnp.log(0.5 * beta) - special.gammaln(1 / beta) - jnp.abs(x) ** beta


def pdf(x, beta):
    """The density at x."""
    return jnp.exp(logpdf(x, beta))


def cdf(x, beta):
    """P(X ≤ x) = (1 + sign(x) P(1/beta, |x|^beta)) / 2, P the regularized lower
    incomplete gamma function."""
    x, beta = promote("gennorm.cdf", x, beta)
    return 0.5 * (1 + jnp.sign(x) * special.gammainc(1 / beta, jnp.abs(x) ** beta))

"""The Dirichlet distribution on the probability simplex."""
from __future__ import annotations

import numpy as np

from plax_stdlib import numpy as jnp
from plax_stdlib.scipy import special
from plax_stdlib.scipy.stats.distribution_util import promote_dtypes


def _on_simplex(x):
    return jnp.logical_and(jnp.all(x > 0, axis=0), jnp.abs(jnp.sum(x, axis=0) - 1) < 1e-6)


def logpdf(x, alpha):
    """log of the density at the points x (the K coordinates on the first axis, or
    the first K - 1, the last being 1 minus their sum); -inf off the simplex."""
    x, alpha = promote_dtypes("dirichlet.logpdf", x, alpha)
    if alpha.ndim != 1:
        raise ValueError(f"`alpha` must be one-dimensional; got alpha.shape={alpha.shape}")
    K = alpha.shape[0]
    if x.ndim == 0 or x.shape[0] not in (K, K - 1):
        raise ValueError("`x` must have either the same number of entries as `alpha` or "
                         f"one entry fewer; got x.shape={x.shape}, alpha.shape={alpha.shape}")
    if x.shape[0] != K:
        x = jnp.concatenate([x, 1 - jnp.sum(x, 0, keepdims=True)], axis=0)
    a = jnp.reshape(alpha, (K,) + (1,) * (x.ndim - 1))
    normalizer = jnp.sum(special.gammaln(alpha)) - special.gammaln(jnp.sum(alpha))
    log_density = jnp.sum(special.xlogy(a - 1, x), axis=0) - normalizer
    return jnp.where(_on_simplex(x), log_density, -np.inf)


def pdf(x, alpha):
    """The density at x."""
    return jnp.exp(logpdf(x, alpha))

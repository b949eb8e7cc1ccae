"""The multivariate normal distribution N(mean, cov)."""
from __future__ import annotations

import math

from plax_stdlib import numpy as jnp
from plax_stdlib.lax import linalg
from plax_stdlib.scipy.stats.distribution_util import promote_dtypes

_LOG_2PI = math.log(2 * math.pi)


def logpdf(x, mean, cov, allow_singular=None):
    """log of the density at x (..., n): `mean` (..., n) and `cov` (..., n, n) (or a
    scalar variance shared by all coordinates), batch dimensions broadcasting. The
    covariance is factored by Cholesky, so it must be positive definite."""
    if allow_singular is not None:
        raise NotImplementedError("allow_singular argument of multivariate_normal.logpdf")
    x, mean, cov = promote_dtypes("multivariate_normal.logpdf", x, mean, cov)
    if not mean.shape:
        return -0.5 * jnp.square(x - mean) / cov - 0.5 * (_LOG_2PI + jnp.log(cov))
    n = mean.shape[-1]
    y = x - mean
    if not cov.shape:
        return (-0.5 * jnp.einsum("...i,...i->...", y, y) / cov
                - 0.5 * n * (_LOG_2PI + jnp.log(cov)))
    if cov.ndim < 2 or cov.shape[-2:] != (n, n):
        raise ValueError("multivariate_normal.logpdf got incompatible shapes: mean "
                         f"{mean.shape} and cov {cov.shape} (cov must be (..., {n}, {n}))")
    factor = linalg.cholesky(cov)
    batch = jnp.broadcast_shapes(y.shape[:-1], cov.shape[:-2])
    factor = jnp.broadcast_to(factor, batch + (n, n))
    y = jnp.broadcast_to(y, batch + (n,))
    # L z = y, so |z|² = yᵀ cov⁻¹ y; log det cov = 2 Σ log diag L.
    z = linalg.triangular_solve(factor, y[..., None], left_side=True, lower=True)[..., 0]
    log_det = jnp.sum(jnp.log(jnp.diagonal(factor, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * jnp.einsum("...i,...i->...", z, z) - 0.5 * n * _LOG_2PI - log_det


def pdf(x, mean, cov):
    """The density at x."""
    return jnp.exp(logpdf(x, mean, cov))

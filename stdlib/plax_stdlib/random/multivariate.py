"""Vector- and matrix-valued samples: `multivariate_normal`, `orthogonal`, `maxwell`,
`double_sided_maxwell` and `ball`.

`multivariate_normal` factors the covariance (Cholesky, eigh or SVD) and
`orthogonal` takes the QR decomposition of a normal matrix, with `plax.numpy.linalg`.
"""
from __future__ import annotations

import functools
import operator

import numpy as np

import plax
from plax.extend import config, dtypes
from plax_stdlib import numpy as jnp
from plax_stdlib.lax.out_sharding import laid_out
from plax_stdlib.numpy import linalg
from plax_stdlib.numpy.util import broadcast_shapes, concrete_or_error, promote_dtypes_inexact
from plax_stdlib.random.continuous import _exponential, prepare
from plax_stdlib.random.discrete import _rademacher
from plax_stdlib.random.gamma_samplers import _generalized_normal
from plax_stdlib.random.keys import check_prng_key, split_typed
from plax_stdlib.random.sampling import canonicalize_shape, check_shape, sampled
from plax_stdlib.random.uniform_normal import _normal


def _vector_norm(x):
    """The 2-norm over the last axis, as jnp.linalg.norm computes it for real x."""
    return jnp.sqrt(jnp.sum(x * x, axis=-1))


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method: str = "cholesky",
                        *, out_sharding=None):
    """Samples the multivariate normal distribution of a mean vector and a
    covariance matrix.

    Args:
        key: a PRNG key.
        mean: the mean, of shape (..., n).
        cov: the covariance, of shape (..., n, n), symmetric positive
            (semi-)definite.
        shape: the shape of the result (the batch shape; default: `mean` and
            `cov`'s batch shapes broadcast).
        dtype: a floating-point dtype (default: float32, float64 with x64).
        method: how `cov` is factored: `"cholesky"` (fastest), `"eigh"` or
            `"svd"` (for semi-definite matrices).
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        An array of shape `(*shape, n)`.

    Raises:
        ValueError: `mean` and `cov` have incompatible shapes, or an unknown
            `method`.

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> import plax.numpy as jnp
        >>> cov = jnp.array([[1.0, 0.8], [0.8, 1.0]])
        >>> x = plax.random.multivariate_normal(key, jnp.zeros(2), cov, (10000,))
        >>> bool(jnp.allclose(jnp.cov(x.T), cov, atol=0.05))
        True
    """
    key, _ = check_prng_key("multivariate_normal", key)
    mean, cov = promote_dtypes_inexact(mean, cov)
    if method not in {"svd", "eigh", "cholesky"}:
        raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
    if dtype is None:
        dtype = mean.dtype
    else:
        dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "multivariate_normal")
    if not dtypes.issubdtype(dtype, np.floating):
        raise ValueError(f"dtype argument to `multivariate_normal` must be a float dtype, "
                         f"got {dtype}")
    if shape is not None:
        shape = canonicalize_shape(shape, "multivariate_normal")
    return sampled("multivariate_normal", out_sharding, shape, lambda k, mean, cov:
                   _multivariate_normal(k, mean, cov, shape, dtype, method), key, mean, cov)


@functools.partial(plax.jit, static_argnums=(3, 4, 5))
def _multivariate_normal(key, mean, cov, shape, dtype, method):
    if not np.ndim(mean) >= 1:
        raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == "
                         f"{np.ndim(mean)}")
    if not np.ndim(cov) >= 2:
        raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == "
                         f"{np.ndim(cov)}")
    n = mean.shape[-1]
    if np.shape(cov)[-2:] != (n, n):
        raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, "
                         f"but got cov.shape == {np.shape(cov)}.")
    if shape is None:
        shape = broadcast_shapes(mean.shape[:-1], cov.shape[:-2])
    else:
        check_shape("normal", shape, mean.shape[:-1], cov.shape[:-2])
    if method == "svd":
        u, s, _ = linalg.svd(cov)
        factor = u * jnp.sqrt(s[..., None, :])
    elif method == "eigh":
        w, v = linalg.eigh(cov)
        factor = v * jnp.sqrt(w[..., None, :])
    else:
        factor = linalg.cholesky(cov)
    samples = _normal(key, shape + mean.shape[-1:], dtype)
    with config.numpy_rank_promotion("allow"):
        return mean + jnp.einsum("...ij,...j->...i", factor, samples)


def orthogonal(key, n: int, shape=(), dtype=None, m: int | None = None, *,
               out_sharding=None):
    """Samples matrices uniformly (Haar measure) among those with orthonormal
    columns (or rows, when wider than tall).

    Args:
        key: a PRNG key.
        n: the number of rows.
        shape: the shape of the result (the batch shape).
        dtype: a floating-point dtype (default: float32, float64 with x64).
        m: the number of columns (default: `n`, square orthogonal matrices).
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        An array of shape `(*shape, n, m)`.

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> import plax.numpy as jnp
        >>> q = plax.random.orthogonal(key, 3)
        >>> bool(jnp.allclose(q.T @ q, jnp.eye(3), atol=1e-5))
        True
    """
    m = n if m is None else m
    key, shape, dtype = prepare("orthogonal", key, shape, dtype)
    n = operator.index(concrete_or_error(n, "The error occurred in plax.random.orthogonal()"))
    m = operator.index(concrete_or_error(m, "The error occurred in plax.random.orthogonal()"))
    return sampled("orthogonal", out_sharding, shape,
                   lambda k: _orthogonal(k, n, m, shape, dtype), key)


@functools.partial(plax.jit, static_argnums=(1, 2, 3, 4))
def _orthogonal(key, n, m, shape, dtype):
    z = _normal(key, (*shape, max(n, m), min(n, m)), dtype)
    q, r = linalg.qr(z)
    d = linalg.diagonal(r)
    x = q * jnp.expand_dims(jnp.sign(d), -2)  # Mezzadri's sign correction
    return jnp.swapaxes(x, -1, -2) if n < m else x


def maxwell(key, shape=(), dtype=None, *, out_sharding=None):
    """Samples the (one-sided) Maxwell distribution: the norm of a 3-d standard
    normal vector, as molecular speeds are.

    Args:
        key: a PRNG key.
        shape: the shape of the result.
        dtype: a floating-point dtype (default: float32, float64 with x64).
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        An array of `shape` and `dtype` of non-negative values.

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> x = plax.random.maxwell(key, (10000,))  # mean 2 sqrt(2 / pi)
        >>> bool(abs(x.mean() - 1.5958) < 0.03)
        True
    """
    key, shape, dtype = prepare("maxwell", key, shape, dtype)
    return sampled("maxwell", out_sharding, shape, lambda k: _maxwell(k, shape, dtype),
                   key)


@functools.partial(plax.jit, static_argnums=(1, 2))
def _maxwell(key, shape, dtype):
    return _vector_norm(_normal(key, (*shape, 3), dtype))


def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
    """Samples a Maxwell distribution of random sign, scaled by `scale` and
    shifted by `loc`.

    Args:
        key: a PRNG key.
        loc: the location (an array).
        scale: the scale, positive.
        shape: the shape of the result.
        dtype: a floating-point dtype (default: float32, float64 with x64).

    Returns:
        An array of `shape` and `dtype`.

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> x = plax.random.double_sided_maxwell(key, 0.0, 1.0, (10000,))
        >>> bool(abs(x.mean()) < 0.05), bool(abs(x.std() - 3 ** 0.5) < 0.05)
        (True, True)
    """
    key, shape, dtype = prepare("double_sided_maxwell", key, shape, dtype)
    return _double_sided_maxwell(key, loc, scale, shape, dtype)


@functools.partial(plax.jit, static_argnums=(3, 4))
def _double_sided_maxwell(key, loc, scale, shape, dtype):
    params_shape = broadcast_shapes(np.shape(loc), np.shape(scale))
    if not shape:
        shape = params_shape
    shape = shape + params_shape
    maxwell_key, rademacher_key = split_typed(key)
    maxwell_rvs = _maxwell(maxwell_key, shape, dtype)
    random_sign = _rademacher(rademacher_key, shape, dtype)
    return random_sign * maxwell_rvs * scale + loc


def ball(key, d: int, p: float = 2, shape=(), dtype=None, *, out_sharding=None):
    """Samples points uniformly from the unit ball of the `p`-norm in `d`
    dimensions.

    Args:
        key: a PRNG key.
        d: the dimension of the points.
        p: the norm (2: the Euclidean ball).
        shape: the shape of the result (the points' batch shape).
        dtype: a floating-point dtype (default: float32, float64 with x64).
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        An array of shape `(*shape, d)` of points with `p`-norm at most 1.

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> x = plax.random.ball(key, 3, shape=(1000,))
        >>> x.shape, bool((plax.numpy.linalg.norm(x, axis=-1) <= 1).all())
        ((1000, 3), True)
    """
    key, shape, dtype = prepare("ball", key, shape, dtype)
    d = operator.index(concrete_or_error(d, "The error occurred in plax.random.ball()"))
    return laid_out("ball", out_sharding, lambda k, p: _ball(k, p, d, shape, dtype), key, p)


@functools.partial(plax.jit, static_argnums=(2, 3, 4))
def _ball(key, p, d, shape, dtype):
    k1, k2 = split_typed(key)
    g = _generalized_normal(k1, p, (*shape, d), dtype)
    e = _exponential(k2, shape, dtype)
    return g / (((jnp.abs(g) ** p).sum(-1) + e) ** (1 / p))[..., None]

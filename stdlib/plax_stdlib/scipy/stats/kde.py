"""`gaussian_kde`: a Gaussian kernel density estimate of weighted samples in d
dimensions, as a pytree (so it passes through jit and vmap) with SciPy's methods."""
from __future__ import annotations

import math

import numpy as np

import plax
from plax_stdlib import numpy as jnp
from plax_stdlib import random
from plax_stdlib.numpy import util
from plax_stdlib.scipy import linalg
from plax_stdlib.scipy.special import logsumexp, ndtr

_FIELDS = ("neff", "dataset", "weights", "covariance", "inv_cov")


@plax.tree_util.register_pytree_node_class
class gaussian_kde:  # noqa: N801 (SciPy's name)
    """A kernel density estimate from `dataset` of shape (d, n) (or (n,) for d = 1),
    with optional `weights` (n,), and a kernel covariance that is the data's weighted
    covariance times factor², the factor from `bw_method`: "scott" (the default),
    "silverman", a scalar, or a callable of the estimate."""
    __slots__ = _FIELDS

    def __init__(self, dataset, bw_method=None, weights=None):
        util.check_arraylike("gaussian_kde", dataset)
        dataset = jnp.atleast_2d(dataset)
        if jnp.iscomplexobj(dataset):
            raise NotImplementedError("gaussian_kde does not support complex data")
        if not dataset.size > 1:
            raise ValueError("`dataset` input should have multiple elements.")
        d, n = dataset.shape
        if weights is None:
            dataset, = util.promote_dtypes_inexact(dataset)
            weights = jnp.full(n, 1.0 / n, dtype=dataset.dtype)
        else:
            util.check_arraylike("gaussian_kde", weights)
            dataset, weights = util.promote_dtypes_inexact(dataset, jnp.atleast_1d(weights))
            if weights.ndim != 1:
                raise ValueError("`weights` input should be one-dimensional.")
            if weights.shape[0] != n:
                raise ValueError(f"`weights` input should be of length n = {n}, got "
                                 f"{weights.shape[0]}")
            weights = weights / jnp.sum(weights)
        self._set("dataset", dataset)
        self._set("weights", weights)
        neff = self._set("neff", 1 / jnp.sum(weights ** 2))
        factor = self._bandwidth_factor("scott" if bw_method is None else bw_method, neff, d)
        covariance, inv_cov = _kernel_covariance(dataset, weights, factor)
        self._set("covariance", covariance)
        self._set("inv_cov", inv_cov)

    def _bandwidth_factor(self, bw_method, neff, d):
        if isinstance(bw_method, str) and bw_method == "scott":
            return neff ** (-1.0 / (d + 4))
        if isinstance(bw_method, str) and bw_method == "silverman":
            return (neff * (d + 2) / 4.0) ** (-1.0 / (d + 4))
        if jnp.isscalar(bw_method) and not isinstance(bw_method, str):
            return bw_method
        if callable(bw_method):
            return bw_method(self)
        raise ValueError("`bw_method` should be 'scott', 'silverman', a scalar, or a callable.")

    def _set(self, name, value):
        object.__setattr__(self, name, value)
        return value

    def __setattr__(self, name, value):
        raise AttributeError(f"cannot assign to field {name!r}: a gaussian_kde is immutable")

    def tree_flatten(self):
        return tuple(getattr(self, f) for f in _FIELDS), None

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        kde = cls.__new__(cls)
        for name, value in zip(_FIELDS, children):
            kde._set(name, value)
        return kde

    @property
    def d(self):
        return self.dataset.shape[0]

    @property
    def n(self):
        return self.dataset.shape[1]

    def evaluate(self, points):
        """The density at `points` of shape (d, m) (or (m,) for d = 1, or (d,))."""
        util.check_arraylike("evaluate", points)
        return _kernel_sum(False, self.dataset, self.weights, self._points(points),
                           self.inv_cov)

    __call__ = evaluate
    pdf = evaluate

    def logpdf(self, x):
        """The log density, summed in log space (no underflow far from the data)."""
        util.check_arraylike("logpdf", x)
        return _kernel_sum(True, self.dataset, self.weights, self._points(x), self.inv_cov)

    def integrate_gaussian(self, mean, cov):
        """∫ kde(x) N(x; mean, cov) dx."""
        mean = jnp.atleast_1d(jnp.squeeze(jnp.asarray(mean)))
        cov = jnp.atleast_2d(cov)
        if mean.shape != (self.d,):
            raise ValueError(f"mean does not have dimension {self.d}: shape {mean.shape}")
        if cov.shape != (self.d, self.d):
            raise ValueError(f"covariance does not have dimension {self.d}: shape {cov.shape}")
        return _convolved(self.covariance + cov, self.dataset, self.weights, mean)

    def integrate_box_1d(self, low, high):
        """The mass between the scalars `low` and `high` of a one-dimensional estimate."""
        if self.d != 1:
            raise ValueError("integrate_box_1d() only handles 1D pdfs")
        if np.ndim(low) != 0 or np.ndim(high) != 0:
            raise ValueError("the limits of integration in integrate_box_1d must be scalars")
        return _box_1d(self, low, high)

    def integrate_kde(self, other):
        """∫ self(x) other(x) dx."""
        if other.d != self.d:
            raise ValueError(f"KDEs are not the same dimensionality: {self.d} and {other.d}")
        small, large = (self, other) if self.n < other.n else (other, self)
        covariance = self.covariance + other.covariance
        per_point = plax.vmap(lambda mean: _convolved(covariance, large.dataset, large.weights,
                                                      mean), in_axes=1)(small.dataset)
        return jnp.sum(per_point * small.weights)

    def resample(self, key, shape=()):
        """Samples of shape (d,) + shape: a data point drawn by weight plus kernel noise."""
        return _resample(self, key, tuple(shape))

    def integrate_box(self, low_bounds, high_bounds, maxpts=None):
        """Not implemented (as in JAX): only `integrate_box_1d`."""
        raise NotImplementedError(
            "only 1D box integrations are supported; use `integrate_box_1d`")

    def set_bandwidth(self, bw_method=None):
        """Not implemented (as in JAX): the estimate is immutable."""
        raise NotImplementedError("dynamically changing the bandwidth method is not supported")

    def _points(self, points):
        if jnp.iscomplexobj(points):
            raise NotImplementedError("gaussian_kde does not support complex coordinates")
        points = jnp.atleast_2d(points)
        d, m = points.shape
        if d == self.d:
            return points
        if d == 1 and m == self.d:
            return jnp.reshape(points, (self.d, 1))
        raise ValueError(f"points have dimension {d}, dataset has dimension {self.d}")


@plax.jit(static_argnums=0)
def _kernel_sum(in_log, data, weights, points, precision):
    """Σ_i w_i N(x; data_i, precision⁻¹) for each column x of points, with the
    precision's Cholesky factor whitening both sets."""
    data, weights, points, precision = util.promote_dtypes_inexact(data, weights, points,
                                                                   precision)
    d = data.shape[0]
    whitening = jnp.linalg.cholesky(precision)
    data, points = whitening.T @ data, whitening.T @ points
    log_norm = jnp.sum(jnp.log(jnp.diag(whitening))) - 0.5 * d * math.log(2 * math.pi)
    squared = jnp.sum(jnp.square(points[:, :, None] - data[:, None, :]), axis=0)
    exponent = log_norm - 0.5 * squared
    if in_log:
        return logsumexp(exponent, axis=1, b=weights[None, :])
    return jnp.sum(weights * jnp.exp(exponent), axis=1)


@plax.jit
def _kernel_covariance(dataset, weights, factor):
    """The data's weighted covariance times factor², and its inverse."""
    data_covariance = jnp.atleast_2d(jnp.cov(dataset, rowvar=True, bias=False, aweights=weights))
    return data_covariance * factor ** 2, jnp.linalg.inv(data_covariance) / factor ** 2


@plax.jit
def _box_1d(kde, low, high):
    sigma = jnp.sqrt(kde.covariance[0, 0])
    data = kde.dataset[0]
    return jnp.sum(kde.weights * (ndtr((high - data) / sigma) - ndtr((low - data) / sigma)))


@plax.jit
def _convolved(covariance, data, weights, mean):
    """Σ_i w_i N(mean; data_i, covariance)."""
    factor = linalg.cho_factor(covariance)
    diff = data - mean[:, None]
    exponent = 0.5 * jnp.sum(diff * linalg.cho_solve(factor, diff), axis=0)
    norm = math.sqrt(2 * math.pi) ** data.shape[0] * jnp.prod(jnp.diag(factor[0]))
    return jnp.sum(jnp.exp(-exponent) * weights) / norm


@plax.jit(static_argnums=2)
def _resample(kde, key, shape):
    index_key, noise_key = random.split(key)
    index = random.choice(index_key, kde.n, shape=shape, p=kde.weights)
    noise = random.multivariate_normal(noise_key, jnp.zeros(kde.d, kde.covariance.dtype),
                                       kde.covariance, shape=shape, dtype=kde.dataset.dtype)
    return kde.dataset[:, index] + jnp.moveaxis(noise, -1, 0)

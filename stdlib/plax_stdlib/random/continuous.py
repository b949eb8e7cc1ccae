"""Continuous distributions drawn by transforming uniform or normal samples:
truncated normal, exponential, Cauchy, Laplace, logistic, Gumbel, Pareto, Rayleigh,
Weibull, log-normal, triangular and Wald. Each follows JAX 0.10.2's formula, so the
same key gives the same values.
"""
from __future__ import annotations

import functools

import numpy as np

import plax
from plax.extend import config, dtypes
from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.lax.conversion import constant_like as const
from plax_stdlib.lax.out_sharding import laid_out
from plax_stdlib.random import key_primitives as prims
from plax_stdlib.random.keys import check_prng_key, split_typed
from plax_stdlib.random.sampling import (
    broadcast_param_shapes,
    canonicalize_shape,
    check_safe_to_cast,
    float_dtype,
    sampled,
)
from plax_stdlib.random.uniform_normal import _normal, _uniform


def prepare(name: str, key, shape, dtype, *params):
    """The typed key, the output shape (`shape`, or the parameters' broadcast when
    None) and the float dtype of a sampler, all checked."""
    key, _ = check_prng_key(name, key)
    dtype = float_dtype(name, dtype)
    shape = (broadcast_param_shapes(name, shape, *params) if params
             else canonicalize_shape(shape, name))
    return key, shape, dtype


def prepare_castable(name: str, key, shape, dtype, *params):
    """`prepare`, and a TypePromotionError for parameters `dtype` cannot hold."""
    key, shape, dtype = prepare(name, key, shape, dtype, *params)
    check_safe_to_cast(name, dtype, *params)
    return key, shape, dtype


_ONE = np.float32(1)  # lognormal's default sigma, as in JAX


# --- truncated normal -------------------------------------------------------------

def truncated_normal(key, lower, upper, shape=None, dtype=None, *, out_sharding=None):
    """Samples the standard normal distribution conditioned on lying in the open
    interval (`lower`, `upper`); common for initializing neural network weights.

    Args:
        key: a PRNG key.
        lower: the lower bound (an array; may be -inf).
        upper: the upper bound (may be inf).
        shape: the shape of the result (default: the bounds broadcast together).
        dtype: a floating-point dtype (default: float32, float64 with x64).
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        An array of `shape` and `dtype` with values strictly between the bounds.

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> x = plax.random.truncated_normal(key, -2.0, 2.0, (10000,))
        >>> bool((abs(x) < 2).all()), bool(abs(x.mean()) < 0.05)
        (True, True)
    """
    key, shape, dtype = prepare("truncated_normal", key, shape, dtype, lower, upper)
    return laid_out("truncated_normal", out_sharding, lambda k, lo, up: _truncated_normal(
        k, lo, up, shape, dtype), key, lower, upper)


@functools.partial(plax.jit, static_argnums=(3, 4))
def _truncated_normal(key, lower, upper, shape, dtype):
    sqrt2 = np.asarray(np.sqrt(2), dtype)[()]
    lower = lax.convert_element_type(lower, dtype)
    upper = lax.convert_element_type(upper, dtype)
    a = lax.erf(lax.div(lower, sqrt2))
    b = lax.erf(lax.div(upper, sqrt2))
    u = _uniform(key, a, b, shape, dtype)
    out = lax.mul(sqrt2, lax.erf_inv(u))
    # Rounding (or drawing a itself) must not leave the open interval.
    inf = np.asarray(np.inf, dtype)[()]
    return jnp.clip(out, lax.nextafter(lax.stop_gradient(lower), inf),
                    lax.nextafter(lax.stop_gradient(upper), -inf))


# --- from one uniform sample ---------------------------------------------------------

def exponential(key, shape=(), dtype=None, *, out_sharding=None):
    """Samples the exponential distribution of rate 1 (mean 1); divide by a rate
    for others.

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
        >>> x = plax.random.exponential(key, (10000,)) / 4.0  # rate 4
        >>> bool(abs(x.mean() - 0.25) < 0.01)
        True
    """
    key, shape, dtype = prepare("exponential", key, shape, dtype)
    return sampled("exponential", out_sharding, shape,
                   lambda k: _exponential(k, shape, dtype), key)


@functools.partial(plax.jit, static_argnums=(1, 2))
def _exponential(key, shape, dtype):
    u = _uniform(key, 0.0, 1.0, shape, dtype)
    return lax.neg(lax.log1p(lax.neg(u)))  # log of 1 - u, in (0, 1]


def cauchy(key, shape=(), dtype=None, *, out_sharding=None):
    """Samples the standard Cauchy distribution (location 0, scale 1): heavy
    tailed, with no mean; its median is 0.

    Args:
        key: a PRNG key.
        shape: the shape of the result.
        dtype: a floating-point dtype (default: float32, float64 with x64).
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        An array of `shape` and `dtype`.

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> x = plax.random.cauchy(key, (10000,))
        >>> bool(abs(plax.numpy.median(x)) < 0.05)
        True
    """
    key, shape, dtype = prepare("cauchy", key, shape, dtype)
    return sampled("cauchy", out_sharding, shape, lambda k: _cauchy(k, shape, dtype), key)


@functools.partial(plax.jit, static_argnums=(1, 2))
def _cauchy(key, shape, dtype):
    u = _uniform(key, dtypes.finfo(dtype).eps, 1.0, shape, dtype)
    return lax.tan(lax.mul(const(u, np.pi), lax.sub(u, const(u, 0.5))))


def laplace(key, shape=(), dtype=None, *, out_sharding=None):
    """Samples the Laplace distribution of location 0 and scale 1 (density
    `exp(-|x|) / 2`, variance 2).

    Args:
        key: a PRNG key.
        shape: the shape of the result.
        dtype: a floating-point dtype (default: float32, float64 with x64).
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        An array of `shape` and `dtype`.

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> x = plax.random.laplace(key, (10000,))
        >>> bool(abs(x.var() - 2.0) < 0.15)
        True
    """
    key, shape, dtype = prepare("laplace", key, shape, dtype)
    return sampled("laplace", out_sharding, shape, lambda k: _laplace(k, shape, dtype), key)


@functools.partial(plax.jit, static_argnums=(1, 2))
def _laplace(key, shape, dtype):
    u = _uniform(key, -1.0 + dtypes.finfo(dtype).epsneg, 1.0, shape, dtype)
    return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


def logistic(key, shape=(), dtype=None, *, out_sharding=None):
    """Samples the standard logistic distribution (location 0, scale 1, variance
    pi ** 2 / 3).

    Args:
        key: a PRNG key.
        shape: the shape of the result.
        dtype: a floating-point dtype (default: float32, float64 with x64).
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        An array of `shape` and `dtype`.

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> x = plax.random.logistic(key, (10000,))
        >>> bool(abs(x.mean()) < 0.05)
        True
    """
    key, shape, dtype = prepare("logistic", key, shape, dtype)
    return sampled("logistic", out_sharding, shape, lambda k: _logistic(k, shape, dtype),
                   key)


@functools.partial(plax.jit, static_argnums=(1, 2))
def _logistic(key, shape, dtype):
    x = _uniform(key, dtypes.finfo(dtype).tiny, 1.0, shape, dtype)
    return lax.sub(lax.log(x), lax.log1p(lax.neg(x)))


# --- Gumbel ----------------------------------------------------------------------------

def gumbel(key, shape=(), dtype=None, mode=None, *, out_sharding=None):
    """Samples the standard Gumbel distribution (location 0, scale 1), the
    distribution of the maximum of many samples; `argmax(logits + gumbel)`
    samples a categorical distribution.

    Args:
        key: a PRNG key.
        shape: the shape of the result.
        dtype: a floating-point dtype (default: float32, float64 with x64).
        mode: `"low"` (one uniform per value) or `"high"` (two, reaching further
            into the tail; also set by `jax_high_dynamic_range_gumbel`).
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        An array of `shape` and `dtype`.

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> x = plax.random.gumbel(key, (10000,))  # mean: Euler's constant
        >>> bool(abs(x.mean() - 0.5772) < 0.05)
        True
    """
    key, shape, dtype = prepare("gumbel", key, shape, dtype)
    mode = gumbel_mode(mode)
    return sampled("gumbel", out_sharding, shape,
                   lambda k: _gumbel(k, shape, dtype, mode), key)


def gumbel_mode(mode):
    if mode is None:
        mode = "high" if config.high_dynamic_range_gumbel.value else "low"
    if mode not in ("highest", "high", "low"):
        raise ValueError(f"Must provide valid mode for gumbel got: {mode}")
    return mode


@functools.partial(plax.jit, static_argnums=(1, 2, 3))
def _gumbel(key, shape, dtype, mode):
    info = dtypes.finfo(dtype)
    if dtype == np.float32 and mode == "highest":
        return _gumbel_highest(key, shape)
    if mode in ("high", "highest"):
        u = _uniform(key, 0.0, 1.0, (2, *shape), dtype)
        high, low = (lax.index_in_dim(u, i, keepdims=False) for i in (0, 1))
        # Fill the low bits of `high` with `low` where that cannot round up to 1.
        x = jnp.where(high >= 0.5, high, high + 2.0 ** -info.nmant * low + info.tiny)
        return -jnp.log(-jnp.log1p(-x))
    return -jnp.log(-jnp.log(_uniform(key, info.tiny, 1.0, shape, dtype)))


def _gumbel_highest(key, shape):
    """float32 Gumbel values from 64 random bits each, as a fixed-point number in (0, 1)."""
    finfo = dtypes.finfo(np.float32)
    bits = prims.random_bits(key, finfo.bits, (2, *shape))
    neg = lax.bitwise_not(bits)
    lo_bits = lax.index_in_dim(neg, 1, keepdims=False)
    carry = jnp.stack([lo_bits == np.uint32((1 << finfo.bits) - 1),
                       jnp.ones_like(lo_bits, dtype=bool)]).astype(np.uint32)
    neg = neg + carry  # 1 - bits, in 64-bit fixed point
    flip = lax.index_in_dim(bits, 0, keepdims=False) < np.uint32(1 << (finfo.bits - 1))
    x = _bits_to_unit_float(jnp.where(flip, bits, neg))
    return jnp.where(flip, -jnp.log(-jnp.log1p(-x)), -jnp.log(-jnp.log(x)))


def _bits_to_unit_float(bits):
    """u32[2, ...] (high, low words of a 64-bit fraction) as float32 in (0, 1)."""
    finfo = dtypes.finfo(np.float32)
    hiclz, loclz = (lax.index_in_dim(lax.clz(bits), i, keepdims=False) for i in (0, 1))
    hi, lo = (lax.index_in_dim(bits, i, keepdims=False) for i in (0, 1))
    mantissa = lax.bitwise_or(
        lax.shift_left(hi, hiclz),
        jnp.where(hiclz == 32, lax.shift_left(lo, loclz),
                  lax.shift_right_logical(lo, np.uint32(finfo.bits) - hiclz)))
    mantissa = lax.shift_right_logical(mantissa, np.uint32(finfo.bits - finfo.nmant - 1))
    mantissa = lax.bitwise_and(mantissa, np.uint32((1 << finfo.nmant) - 1))
    exp = lax.shift_left(np.uint32(-finfo.minexp) - jnp.where(hiclz == 32, 32 + loclz, hiclz),
                         np.uint32(finfo.nmant))
    exp = lax.bitwise_and(exp, np.uint32((1 << (finfo.bits - 2)) - (1 << (finfo.nmant - 1))))
    return lax.bitcast_convert_type(lax.bitwise_or(exp, mantissa), np.float32)


# --- with parameters -------------------------------------------------------------------

def pareto(key, b, shape=None, dtype=None, *, out_sharding=None):
    """Samples the Pareto distribution of shape `b` on [1, inf) (density
    `b / x ** (b + 1)`).

    Args:
        key: a PRNG key.
        b: the shape parameter, positive.
        shape: the shape of the result (default: `b`'s).
        dtype: a floating-point dtype (default: float32, float64 with x64).
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        An array of `shape` and `dtype` of values >= 1.

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> x = plax.random.pareto(key, 3.0, (10000,))  # mean b / (b - 1)
        >>> bool(abs(x.mean() - 1.5) < 0.05), bool((x >= 1).all())
        (True, True)
    """
    key, shape, dtype = prepare_castable("pareto", key, shape, dtype, b)
    return sampled("pareto", out_sharding, shape,
                   lambda k, b: _pareto(k, b, shape, dtype), key, b)


@functools.partial(plax.jit, static_argnums=(2, 3))
def _pareto(key, b, shape, dtype):
    b = lax.convert_element_type(b, dtype)
    return lax.exp(_exponential(key, shape, dtype) / b)


def rayleigh(key, scale, shape=None, dtype=None, *, out_sharding=None):
    """Samples the Rayleigh distribution of a scale: the norm of a 2-d normal
    vector of that standard deviation.

    Args:
        key: a PRNG key.
        scale: the scale, positive.
        shape: the shape of the result (default: `scale`'s).
        dtype: a floating-point dtype (default: float32, float64 with x64).
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        An array of `shape` and `dtype` of non-negative values.

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> x = plax.random.rayleigh(key, 2.0, (10000,))  # mean scale sqrt(pi / 2)
        >>> bool(abs(x.mean() - 2.5066) < 0.05)
        True
    """
    key, shape, dtype = prepare_castable("rayleigh", key, shape, dtype, scale)
    return sampled("rayleigh", out_sharding, shape,
                   lambda k, scale: _rayleigh(k, scale, shape, dtype), key, scale)


@functools.partial(plax.jit, static_argnums=(2, 3))
def _rayleigh(key, scale, shape, dtype):
    u = _uniform(key, 0.0, 1.0, shape, dtype)
    scale = jnp.broadcast_to(scale.astype(dtype), shape)
    return lax.mul(scale, lax.sqrt(lax.mul(lax.log(u), const(scale, -2))))


def weibull_min(key, scale, concentration, shape=(), dtype=None):
    """Samples the Weibull distribution of a scale and a concentration (shape):
    `scale * (-log(u)) ** (1 / concentration)` for uniform `u`.

    Args:
        key: a PRNG key.
        scale: the scale, positive.
        concentration: the shape parameter, positive (1: exponential).
        shape: the shape of the result.
        dtype: a floating-point dtype (default: float32, float64 with x64).

    Returns:
        An array of `shape` and `dtype` of non-negative values.

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> x = plax.random.weibull_min(key, 2.0, 1.0, (10000,))  # exponential of mean 2
        >>> bool(abs(x.mean() - 2.0) < 0.1)
        True
    """
    key, shape, dtype = prepare("weibull_min", key, shape, dtype)
    return _weibull_min(key, scale, concentration, shape, dtype)


@functools.partial(plax.jit, static_argnums=(3, 4))
def _weibull_min(key, scale, concentration, shape, dtype):
    u = _uniform(key, 0, 1, shape, dtype)
    return jnp.power(-jnp.log1p(-u), 1.0 / concentration) * scale  # inverse CDF


def lognormal(key, sigma=_ONE, shape=None, dtype=None, *, out_sharding=None):
    """Samples the log-normal distribution: `exp` of a normal of mean 0 and
    standard deviation `sigma`.

    Args:
        key: a PRNG key.
        sigma: the standard deviation of the underlying normal, positive.
        shape: the shape of the result (default: `sigma`'s).
        dtype: a floating-point dtype (default: float32, float64 with x64).
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        An array of `shape` and `dtype` of positive values.

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> x = plax.random.lognormal(key, 0.5, (10000,))
        >>> bool(abs(plax.numpy.log(x).std() - 0.5) < 0.02)
        True
    """
    key, _ = check_prng_key("lognormal", key)
    dtype = dtypes.check_and_canonicalize_user_dtype(float if dtype is None else dtype,
                                                     "lognormal")
    if not dtypes.issubdtype(dtype, np.inexact):
        raise ValueError(f"dtype argument to `lognormal` must be a float or complex dtype, "
                         f"got {dtype}")
    shape = broadcast_param_shapes("lognormal", shape, sigma)
    check_safe_to_cast("lognormal", dtype, sigma)
    return laid_out("lognormal", out_sharding,
                    lambda k, sigma: _lognormal(k, sigma, shape, dtype), key, sigma)


@functools.partial(plax.jit, static_argnums=(2, 3))
def _lognormal(key, sigma, shape, dtype):
    sigma = lax.convert_element_type(sigma, dtype)
    return lax.exp(_normal(key, shape, dtype) * sigma)


def triangular(key, left, mode, right, shape=None, dtype=None, *, out_sharding=None):
    """Samples the triangular distribution on [left, right] whose density peaks at
    `mode`.

    Args:
        key: a PRNG key.
        left: the lower limit.
        mode: the peak, in [left, right].
        right: the upper limit.
        shape: the shape of the result (default: the parameters broadcast together).
        dtype: a floating-point dtype (default: float32, float64 with x64).
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        An array of `shape` and `dtype` with values in [left, right].

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> x = plax.random.triangular(key, 0.0, 1.0, 4.0, (10000,))  # mean 5 / 3
        >>> bool(abs(x.mean() - 5 / 3) < 0.05), bool(((x >= 0) & (x <= 4)).all())
        (True, True)
    """
    key, shape, dtype = prepare_castable("triangular", key, shape, dtype, left, mode, right)
    return sampled("triangular", out_sharding, shape, lambda k, *params: _triangular(
        k, *params, shape, dtype), key, left, mode, right)


@functools.partial(plax.jit, static_argnums=(4, 5))
def _triangular(key, left, mode, right, shape, dtype):
    left, mode, right = (jnp.broadcast_to(lax.convert_element_type(v, dtype), shape)
                         for v in (left, mode, right))
    fc = (mode - left) / (right - left)
    u = _uniform(key, 0.0, 1.0, shape, dtype)
    out1 = left + lax.sqrt(u * (right - left) * (mode - left))
    out2 = right - lax.sqrt((1 - u) * (right - left) * (right - mode))
    return lax.select(u < fc, out1, out2)


def wald(key, mean, shape=None, dtype=None, *, out_sharding=None):
    """Samples the Wald (inverse Gaussian) distribution of a mean and shape 1.

    Args:
        key: a PRNG key.
        mean: the mean, positive.
        shape: the shape of the result (default: `mean`'s).
        dtype: a floating-point dtype (default: float32, float64 with x64).
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        An array of `shape` and `dtype` of positive values.

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> x = plax.random.wald(key, 1.0, (10000,))
        >>> bool(abs(x.mean() - 1.0) < 0.05), bool((x > 0).all())
        (True, True)
    """
    key, shape, dtype = prepare_castable("wald", key, shape, dtype, mean)
    return laid_out("wald", out_sharding, lambda k, mean: _wald(k, mean, shape, dtype),
                    key, mean)


@functools.partial(plax.jit, static_argnums=(2, 3))
def _wald(key, mean, shape, dtype):
    k1, k2 = split_typed(key)
    mean = jnp.broadcast_to(mean.astype(dtype), shape)
    v = _normal(k1, shape, dtype)
    z = _uniform(k2, 0.0, 1.0, shape, dtype)
    y = lax.integer_pow(v, 2)
    y_sq = lax.integer_pow(y, 2)
    mean_sq = lax.integer_pow(mean, 2)
    sqrt_term = lax.sqrt(4 * mean * y + mean_sq * y_sq)
    x = mean + mean_sq * y / 2 - mean / 2 * sqrt_term
    return lax.select(lax.le(z, mean / (mean + x)), x, mean_sq / x)

"""Discrete distributions: `randint`, `bernoulli`, `rademacher`, `categorical`,
`geometric`, `poisson`, `binomial` and `multinomial`, following JAX 0.10.2's
algorithms (modular reduction of twice the bits for `randint`, the Gumbel-max trick
for `categorical`, Knuth and transformed rejection for `poisson`, inversion and
BTRS for `binomial`) so the same key gives the same values.
"""
from __future__ import annotations

import functools
import math

import numpy as np

import plax
from plax.extend import dtypes
from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.lax.dimensions import dimension_as_value
from plax_stdlib.lax.out_sharding import laid_out
from plax_stdlib.numpy.util import check_arraylike, promote_dtypes_inexact
from plax_stdlib.random import key_primitives as prims
from plax_stdlib.random.continuous import const, gumbel, gumbel_mode, _gumbel
from plax_stdlib.random.impls import KeyTy
from plax_stdlib.random.keys import check_prng_key, split_typed
from plax_stdlib.random.threefry import threefry_prng_impl
from plax_stdlib.random.sampling import (
    broadcast_param_shapes,
    canonicalize_shape,
    check_shape,
    float_dtype,
    sampled,
)
from plax_stdlib.random.uniform_normal import broadcast_to_rank, _uniform

_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _int_dtype(name: str, dtype) -> np.dtype:
    dtype = dtypes.check_and_canonicalize_user_dtype(int if dtype is None else dtype, name)
    if not dtypes.issubdtype(dtype, np.integer):
        raise TypeError(f"{name} only accepts integer dtypes, got {dtype}")
    return dtype


# --- randint ---------------------------------------------------------------------------

def randint(key, shape, minval, maxval, dtype=None, *, out_sharding=None):
    """Samples integers uniformly from `[minval, maxval)`.

    Args:
        key: a PRNG key.
        shape: the result's shape.
        minval: the lower bound (inclusive), broadcastable to `shape`.
        maxval: the upper bound (exclusive); where `maxval <= minval` the result
            is `minval`.
        dtype: an integer dtype (default int32, int64 under `jax_enable_x64`).
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        An integer array of `shape`.

    Examples:
        >>> import plax
        >>> rolls = plax.random.randint(plax.random.key(0), (1000,), 1, 7)
        >>> rolls.dtype, int(rolls.min()), int(rolls.max())
        (dtype('int32'), 1, 6)
    """
    key, _ = check_prng_key("randint", key)
    dtype = _int_dtype("randint", dtype)
    shape = canonicalize_shape(shape, "randint")
    minval, maxval = dimension_as_value(minval), dimension_as_value(maxval)  # symbolic sizes
    info = dtypes.iinfo(dtype)
    sampling_dtype = dtype
    if info.bits < 32:  # sampled in 32 bits, which keeps the modulo bias small
        sampling_dtype = np.dtype(np.int32)
        minval = jnp.asarray(minval).astype(np.int32).clip(int(info.min), int(info.max))
        maxval = jnp.asarray(maxval).astype(np.int32).clip(int(info.min), int(info.max) + 1)
    return sampled("randint", out_sharding, shape, lambda k, lo, hi: _randint(
        k, lo, hi, shape, sampling_dtype), key, minval, maxval).astype(dtype)


def _convert_and_clip_integer(val, dtype):
    """`val` as `dtype`, clipped to the range both dtypes share (not wrapped)."""
    lo = max(dtypes.iinfo(dtype).min, dtypes.iinfo(val.dtype).min)
    hi = min(dtypes.iinfo(dtype).max, dtypes.iinfo(val.dtype).max)
    return jnp.clip(val, const(val, lo), const(val, hi)).astype(dtype)


@functools.partial(plax.jit, static_argnums=(3, 4))
def _randint(key, minval, maxval, shape, dtype):
    check_shape("randint", shape, np.shape(minval), np.shape(maxval))
    check_arraylike("randint", minval, maxval)
    minval, maxval = jnp.asarray(minval), jnp.asarray(maxval)
    if not dtypes.issubdtype(minval.dtype, np.integer):
        minval = minval.astype(int)
    if not dtypes.issubdtype(maxval.dtype, np.integer):
        maxval = maxval.astype(int)
    # randint(key, shape, 0, 256, uint8): maxval beyond the dtype's range.
    maxval_out_of_range = lax.gt(
        maxval, _convert_and_clip_integer(jnp.array(dtypes.iinfo(dtype).max, dtype),
                                          maxval.dtype))
    minval = _convert_and_clip_integer(minval, dtype)
    maxval = _convert_and_clip_integer(maxval, dtype)
    minval, maxval = broadcast_to_rank(minval, len(shape)), broadcast_to_rank(maxval, len(shape))
    nbits = dtypes.iinfo(dtype).bits
    if nbits not in _UINT:
        raise TypeError(f"randint only accepts 8-, 16-, 32-, or 64-bit dtypes, got {dtype}")

    # Twice the bits the dtype needs, reduced modulo the span: a small bias unless the
    # span is a power of two.
    k1, k2 = split_typed(key)
    higher_bits = prims.random_bits(k1, nbits, shape)
    lower_bits = prims.random_bits(k2, nbits, shape)
    unsigned = np.dtype(_UINT[nbits])
    span = lax.convert_element_type(maxval - minval, unsigned)
    span = lax.select(maxval <= minval, lax.full_like(span, 1), span)  # then minval
    span = lax.select(maxval_out_of_range & (maxval > minval),
                      lax.add(span, const(span, 1)), span)
    # 2**nbits % span, without overflow: (a * b) % N == ((a % N) * (b % N)) % N.
    multiplier = lax.rem(const(span, 2 ** (nbits // 2)), span)
    multiplier = lax.rem(lax.mul(multiplier, multiplier), span)
    offset = lax.add(lax.mul(lax.rem(higher_bits, span), multiplier),
                     lax.rem(lower_bits, span))
    offset = lax.rem(offset, span)
    return lax.add(minval, lax.convert_element_type(offset, dtype))


# --- bernoulli, rademacher, geometric -------------------------------------------------------

def bernoulli(key, p=0.5, shape=None, mode="low", *, out_sharding=None):
    """Samples booleans that are True with probability `p`.

    Args:
        key: a PRNG key.
        p: the probability of True, a float or an array broadcastable to `shape`.
        shape: the result's shape (default: `p`'s shape).
        mode: `"low"` (the default) compares one uniform float to `p`; `"high"`
            uses more random bits, resolving probabilities below float32's
            resolution.
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        A boolean array of `shape`.

    Examples:
        >>> import plax
        >>> coins = plax.random.bernoulli(plax.random.key(0), 0.3, (10000,))
        >>> coins.dtype, bool(abs(coins.mean() - 0.3) < 0.02)
        (dtype('bool'), True)
    """
    if shape is not None:
        shape = canonicalize_shape(shape, "bernoulli")
    if mode not in ("high", "low"):
        raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
    key, _ = check_prng_key("bernoulli", key)
    dtype = dtypes.dtype(p, canonicalize=True)
    if not dtypes.issubdtype(dtype, np.floating):
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dtype}.")
    return laid_out("bernoulli", out_sharding, lambda k, p: _bernoulli(k, p, shape, mode),
                    key, lax.convert_element_type(p, dtype))


@functools.partial(plax.jit, static_argnums=(2, 3))
def _bernoulli(key, p, shape, mode):
    if shape is None:
        shape = np.shape(p)
    else:
        check_shape("bernoulli", shape, np.shape(p))
    dtype = p.dtype
    if mode == "high":
        u = _uniform(key, 0.0, 1.0, (2, *shape), dtype)
        u1, u2 = (lax.index_in_dim(u, i, keepdims=False) for i in (0, 1))
        u2 = u2 * 2.0 ** -dtypes.finfo(dtype).nmant  # below the resolution of u1
        return u2 < p - u1
    return _uniform(key, 0.0, 1.0, shape, dtype) < p


def rademacher(key, shape=(), dtype=None, *, out_sharding=None):
    """Samples -1 or +1, each with probability 1/2.

    Args:
        key: a PRNG key.
        shape: the shape of the result.
        dtype: an integer dtype (default: int32, int64 with x64).
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        An array of `shape` holding -1s and 1s.

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> x = plax.random.rademacher(key, (1000,))
        >>> sorted(set(x.tolist()))
        [-1, 1]
    """
    key, _ = check_prng_key("rademacher", key)
    dtype = dtypes.check_and_canonicalize_user_dtype(int if dtype is None else dtype,
                                                     "rademacher")
    shape = canonicalize_shape(shape, "rademacher")
    return sampled("rademacher", out_sharding, shape,
                   lambda k: _rademacher(k, shape, dtype), key)


@functools.partial(plax.jit, static_argnums=(1, 2))
def _rademacher(key, shape, dtype):
    half = np.asarray(0.5, dtypes.default_float_dtype())[()]  # bernoulli's default p
    samples = _bernoulli(key, half, shape, "low").astype(dtype)
    return (2 * samples - 1).astype(dtype)


def geometric(key, p, shape=None, dtype=None, *, out_sharding=None):
    """Samples the geometric distribution: the number of trials (1, 2, ...) up to
    and including the first success, each succeeding with probability `p`.

    Args:
        key: a PRNG key.
        p: the success probability, in (0, 1].
        shape: the shape of the result (default: `p`'s).
        dtype: an integer dtype (default: int32, int64 with x64).
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        An array of `shape` of positive integers.

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> x = plax.random.geometric(key, 0.25, (10000,))  # mean 1 / p
        >>> bool(abs(x.mean() - 4.0) < 0.15), int(x.min())
        (True, 1)
    """
    key, _ = check_prng_key("geometric", key)
    dtype = dtypes.check_and_canonicalize_user_dtype(int if dtype is None else dtype,
                                                     "geometric")
    if not dtypes.issubdtype(dtype, np.integer):
        raise ValueError(f"dtype argument to `geometric` must be an int dtype, got {dtype}")
    shape = broadcast_param_shapes("geometric", shape, p)
    return sampled("geometric", out_sharding, shape,
                   lambda k, p: _geometric(k, p, shape, dtype), key, p)


@functools.partial(plax.jit, static_argnums=(2, 3))
def _geometric(key, p, shape, dtype):
    check_arraylike("geometric", p)
    (p,) = promote_dtypes_inexact(p)
    u = _uniform(key, 0.0, 1.0, shape, p.dtype)
    u = jnp.where(u == 0, 1, u)  # JAX's choice: log(0) avoided, other samples unchanged
    log_one_minus_p = jnp.broadcast_to(lax.log1p(-p), shape)
    g = lax.floor(lax.div(lax.log(u), log_one_minus_p)) + 1
    return g.astype(dtype)


# --- categorical ------------------------------------------------------------------------------

def top_k_indices(x, k: int):
    """The indices of the `k` largest entries along the last axis, largest first (the
    lower index first among equal entries), as `lax.top_k` gives them."""
    n = x.shape[-1]
    order = lax.broadcasted_iota(np.int32, x.shape, x.ndim - 1)
    _, indices = lax.sort((-x, order), dimension=x.ndim - 1, num_keys=1)
    return lax.slice_in_dim(indices, 0, min(k, n), axis=x.ndim - 1)


def categorical(key, logits, axis: int = -1, shape=None, replace: bool = True, mode=None,
                *, out_sharding=None):
    """Samples category indices with probabilities `softmax(logits)` along `axis`.

    Args:
        key: a PRNG key.
        logits: unnormalized log-probabilities; `-inf` excludes a category.
        axis: the axis of `logits` holding the categories.
        shape: the result's shape (default: `logits`' shape without `axis`); it
            must end with that shape.
        replace: sample with replacement (the default); False draws distinct
            indices (by the Gumbel top-k trick).
        mode: `"low"` or `"high"`, as for `uniform`-based samplers.
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        An int32 array of indices into `axis`.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> logits = jnp.log(jnp.array([0.0, 1.0, 0.0]))   # only category 1 possible
        >>> plax.random.categorical(plax.random.key(0), logits, shape=(5,))
        Array([1, 1, 1, 1, 1], dtype=int32)
    """
    key, _ = check_prng_key("categorical", key)
    check_arraylike("categorical", logits)
    logits = jnp.asarray(logits)
    float_dtype("gumbel", logits.dtype)
    batch_shape = tuple(np.delete(logits.shape, axis))
    if shape is None:
        shape = batch_shape
    else:
        shape = canonicalize_shape(shape, "categorical")
        check_shape("categorical", shape, batch_shape)
    mode = gumbel_mode(mode)
    return laid_out("categorical", out_sharding, lambda k, logits: _categorical(
        k, logits, shape, batch_shape, axis, replace, mode), key, logits)


def _categorical(key, logits, shape, batch_shape, axis, replace, mode):
    shape_prefix = shape[:len(shape) - len(batch_shape)]
    ndim = logits.ndim
    if replace:
        if axis >= 0:
            axis -= ndim
        logits_shape = list(shape[len(shape) - len(batch_shape):])
        logits_shape.insert(axis % ndim, logits.shape[axis])
        noise = _gumbel(key, (*shape_prefix, *logits_shape), logits.dtype, mode)
        return jnp.argmax(noise + lax.expand_dims(logits, tuple(range(len(shape_prefix)))),
                          axis=axis)
    logits = logits + _gumbel(key, logits.shape, logits.dtype, mode)
    k = math.prod(shape_prefix)
    if k > logits.shape[axis]:
        raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number "
                         f"of categories ({logits.shape[axis]}).")
    indices = top_k_indices(jnp.moveaxis(logits, axis, -1), k)
    return lax.reshape(indices, shape, (indices.ndim - 1, *range(indices.ndim - 1)))


# --- poisson ----------------------------------------------------------------------------------

def poisson(key, lam, shape=None, dtype=None, *, out_sharding=None):
    """Samples the Poisson distribution of rate `lam`: counts of events occurring
    independently at that average rate.

    As in JAX, only threefry keys are supported.

    Args:
        key: a PRNG key (threefry).
        lam: the rate, non-negative.
        shape: the shape of the result (default: `lam`'s).
        dtype: an integer dtype (default: int32, int64 with x64).
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        An array of `shape` of non-negative counts.

    Raises:
        NotImplementedError: a key of another implementation.

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> x = plax.random.poisson(key, 3.0, (10000,))
        >>> bool(abs(x.mean() - 3.0) < 0.1), x.dtype
        (True, dtype('int32'))
    """
    key, _ = check_prng_key("poisson", key)
    dtype = dtypes.check_and_canonicalize_user_dtype(int if dtype is None else dtype,
                                                     "poisson")
    if key.dtype != KeyTy(threefry_prng_impl):
        raise NotImplementedError(f"`poisson` is only implemented for the threefry2x32 RNG, "
                                  f"not {key.dtype._impl}")
    shape = np.shape(lam) if shape is None else canonicalize_shape(shape, "poisson")
    lam = lax.convert_element_type(jnp.broadcast_to(lam, shape), np.float32)
    return sampled("poisson", out_sharding, shape,
                   lambda k, lam: _poisson(k, lam, shape, dtype), key, lam)


@functools.partial(plax.jit, static_argnums=(2, 3, 4))
def _poisson_knuth(key, lam, shape, dtype, max_iters):
    """Knuth's method: count uniforms until their product drops below exp(-lam)."""
    def body(carry):
        i, k, rng, log_prod = carry
        rng, subkey = split_typed(rng)
        k = lax.select(log_prod > -lam, k + 1, k)
        u = _uniform(subkey, 0.0, 1.0, shape, np.dtype(np.float32))
        return i + 1, k, rng, log_prod + jnp.log(u)

    def cond(carry):
        i, log_prod = carry[0], carry[3]
        return (log_prod > -lam).any() & (i < max_iters)

    k_init = lax.full_like(lam, 0, dtype, shape)
    log_rate_init = lax.full_like(lam, 0, np.float32, shape)
    k = lax.while_loop(cond, body, (0, k_init, key, log_rate_init))[1]
    return (k - 1).astype(dtype)


@functools.partial(plax.jit, static_argnums=(2, 3, 4))
def _poisson_rejection(key, lam, shape, dtype, max_iters):
    """Hörmann's transformed rejection with squeeze (PTRS), for lam >= 10."""
    log_lam = lax.log(lam)
    b = 0.931 + 2.53 * lax.sqrt(lam)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)

    def body(carry):
        i, k_out, accepted, key = carry
        key, subkey_0, subkey_1 = split_typed(key, 3)
        u = _uniform(subkey_0, 0.0, 1.0, shape, lam.dtype) - 0.5
        v = _uniform(subkey_1, 0.0, 1.0, shape, lam.dtype)
        u_shifted = 0.5 - abs(u)
        k = lax.floor((2 * a / u_shifted + b) * u + lam + 0.43)
        s = lax.log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
        t = -lam + k * log_lam - lax.lgamma(k + 1)
        accept1 = (u_shifted >= 0.07) & (v <= v_r)
        reject = (k < 0) | ((u_shifted < 0.013) & (v > u_shifted))
        accept2 = s <= t
        accept = accept1 | (~reject & accept2)
        return i + 1, lax.select(accept, k, k_out), accepted | accept, key

    def cond(carry):
        i, _, accepted, _ = carry
        return (~accepted).any() & (i < max_iters)

    k_init = lax.full_like(lam, -1, lam.dtype, shape)
    accepted = lax.full_like(lam, False, np.dtype(bool), shape)
    k = lax.while_loop(cond, body, (0, k_init, accepted, key))[1]
    return k.astype(dtype)


@functools.partial(plax.jit, static_argnums=(2, 3))
def _poisson(key, lam, shape, dtype):
    use_knuth = lax.ne(lam, lam) | (lam < 10)
    lam_knuth = lax.select(use_knuth, lam, lax.full_like(lam, 0.0))
    lam_rejection = lax.select(use_knuth, lax.full_like(lam, 1e5), lam)
    max_iters = dtype.type(dtypes.iinfo(dtype).max)  # never reached in practice
    result = lax.select(use_knuth,
                        _poisson_knuth(key, lam_knuth, shape, dtype, max_iters),
                        _poisson_rejection(key, lam_rejection, shape, dtype, max_iters))
    return lax.select(lam == 0, jnp.zeros_like(result), result)


# --- binomial and multinomial ------------------------------------------------------------------

def binomial(key, n, p, shape=None, dtype=None):
    """Samples the binomial distribution: the number of successes in `n`
    independent trials that each succeed with probability `p`.

    Args:
        key: a PRNG key.
        n: the number of trials (a float array broadcast with `p`).
        p: the success probability, in [0, 1].
        shape: the shape of the result (default: `n` and `p` broadcast together).
        dtype: a floating-point dtype (default: float32, float64 with x64).

    Returns:
        An array of `shape` of whole-number counts, in a floating-point dtype.

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> x = plax.random.binomial(key, 10.0, 0.3, (10000,))
        >>> bool(abs(x.mean() - 3.0) < 0.1), bool(((x >= 0) & (x <= 10)).all())
        (True, True)
    """
    key, _ = check_prng_key("binomial", key)
    check_arraylike("binomial", n, p)
    dtype = float_dtype("binomial", dtype)
    if shape is not None:
        shape = canonicalize_shape(shape, "binomial")
    return _binomial(key, n, p, shape, dtype)


def _stirling_approx_tail(k):
    """log(k!) minus Stirling's approximation, tabulated for k <= 9."""
    tail_values = jnp.array([0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                             0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                             0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                             0.00833056343336287], dtype=k.dtype)
    use_tail_values = k <= 9
    k = lax.clamp(const(k, 0.0), k, const(k, 9.0))
    kp1sq = (k + 1) * (k + 1)
    approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
    k = jnp.floor(k)
    return lax.select(use_tail_values, tail_values[jnp.asarray(k, dtype=np.int32)], approx)


def _binomial_inversion(key, count, prob, shape, dtype, max_iters):
    """Sums of geometric waiting times until they pass `count` (for count * p <= 10)."""
    log1minusprob = jnp.log1p(-prob)

    def body(carry):
        i, num_geom, geom_sum, key = carry
        subkey, key = split_typed(key)
        num_geom_out = lax.select(geom_sum <= count, num_geom + 1, num_geom)
        u = _uniform(subkey, 0.0, 1.0, shape, prob.dtype)
        geom = jnp.ceil(jnp.log(u) / log1minusprob)
        return i + 1, num_geom_out, geom_sum + geom, key

    def cond(carry):
        i, geom_sum = carry[0], carry[2]
        return (geom_sum <= count).any() & (i < max_iters)

    num_geom_init = lax.full_like(prob, 0, prob.dtype, shape)
    geom_sum_init = lax.full_like(prob, 0, prob.dtype, shape)
    k = lax.while_loop(cond, body, (0, num_geom_init, geom_sum_init, key))[1]
    return (k - 1).astype(dtype)


def _btrs(key, count, prob, shape, dtype, max_iters):
    """Hörmann's transformed rejection (BTRS), for count * p > 10."""
    stddev = jnp.sqrt(count * prob * (1 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    r = prob / (1 - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = jnp.floor((count + 1) * prob)

    def body(carry):
        i, k_out, accepted, key = carry
        key, subkey_0, subkey_1 = split_typed(key, 3)
        u = _uniform(subkey_0, 0.0, 1.0, shape, prob.dtype)
        v = _uniform(subkey_1, 0.0, 1.0, shape, prob.dtype)
        u = u - 0.5
        us = 0.5 - jnp.abs(u)
        accept1 = (us >= 0.07) & (v <= v_r)
        k = jnp.floor((2 * a / us + b) * u + c)
        reject = (k < 0) | (k > count)
        v = jnp.log(v * alpha / (a / (us * us) + b))
        ub = ((m + 0.5) * jnp.log((m + 1) / (r * (count - m + 1)))
              + (count + 1) * jnp.log((count - m + 1) / (count - k + 1))
              + (k + 0.5) * jnp.log(r * (count - k + 1) / (k + 1))
              + _stirling_approx_tail(m)
              + _stirling_approx_tail(count - m)
              - _stirling_approx_tail(k)
              - _stirling_approx_tail(count - k))
        accept = accept1 | (~reject & (v <= ub))
        return i + 1, lax.select(accept, k, k_out), accepted | accept, key

    def cond(carry):
        i, accepted = carry[0], carry[2]
        return (~accepted).any() & (i < max_iters)

    k_init = lax.full_like(prob, -1, prob.dtype, shape)
    carry = (0, k_init, jnp.full(shape, False, bool), key)
    return lax.while_loop(cond, body, carry)[1].astype(dtype)


@functools.partial(plax.jit, static_argnums=(3, 4))
def _binomial(key, count, prob, shape, dtype):
    if shape is None:
        shape = jnp.broadcast_shapes(np.shape(count), np.shape(prob))
    else:
        check_shape("binomial", shape, np.shape(count), np.shape(prob))
    (prob,) = promote_dtypes_inexact(prob)
    count = jnp.broadcast_to(lax.convert_element_type(count, prob.dtype), shape)
    prob = jnp.broadcast_to(prob, shape)
    p_lt_half = prob < 0.5
    q = lax.select(p_lt_half, prob, 1.0 - prob)
    count_nan_or_neg = lax.ne(count, count) | (count < 0.0)
    count_inf = jnp.isinf(count)
    q_is_nan = lax.ne(q, q)
    q_l_0 = q < 0.0
    q = lax.select(q_is_nan | q_l_0, lax.full_like(q, 0.01), q)
    use_inversion = count_nan_or_neg | (count * q <= 10.0)
    count = jnp.floor(count)  # as NumPy treats float counts
    count_inv = lax.select(use_inversion, count, lax.full_like(count, 0.0))
    count_btrs = lax.select(use_inversion, lax.full_like(count, 1e4), count)
    q_btrs = lax.select(use_inversion, lax.full_like(q, 0.5), q)
    max_iters = dtype.type(dtypes.finfo(dtype).max)
    samples = lax.select(use_inversion,
                         _binomial_inversion(key, count_inv, q, shape, dtype, max_iters),
                         _btrs(key, count_btrs, q_btrs, shape, dtype, max_iters))
    invalid = q_l_0 | q_is_nan | count_nan_or_neg  # NaN results
    samples = lax.select(invalid, jnp.full_like(samples, np.nan, dtype), samples)
    samples = lax.select(count_inf & ~invalid, jnp.full_like(samples, np.inf, dtype), samples)
    return lax.select(p_lt_half | count_nan_or_neg | q_is_nan | count_inf, samples,
                      count.astype(dtype) - samples)


def multinomial(key, n, p, *, shape=None, dtype=None, unroll: int | bool = 1):
    """Samples the multinomial distribution: how many of `n` independent trials
    fall on each outcome, the outcomes having probabilities `p`.

    Args:
        key: a PRNG key.
        n: the number of trials (an array broadcast with `p`'s batch shape).
        p: the outcomes' probabilities along the last axis (summing to 1).
        shape: the result's shape (its last axis that of `p`; default: `n` and
            `p` broadcast).
        dtype: a floating-point dtype for the counts.
        unroll: how many outcomes each step of the internal loop handles.

    Returns:
        An array of counts whose last axis sums to `n`.

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> x = plax.random.multinomial(key, 10.0, plax.numpy.array([0.2, 0.3, 0.5]))
        >>> x.shape, float(x.sum())
        ((3,), 10.0)
    """
    key, _ = check_prng_key("multinomial", key)
    check_arraylike("multinomial", n, p)
    n, p = promote_dtypes_inexact(n, p)
    if shape is None:
        shape = p.shape
    n = jnp.broadcast_to(n, shape[:-1])
    p = jnp.moveaxis(jnp.broadcast_to(p, shape), -1, 0)
    remaining = lax.cumsum(p, 0, reverse=True)
    ratios = p / jnp.where(remaining == 0, 1, remaining)
    keys = split_typed(key, ratios.shape[0])

    def draw(remainder, ratio_key):
        ratio, k = ratio_key
        count = _binomial(k, remainder, ratio.clip(0, 1), None, remainder.dtype)
        return remainder - count, count

    _, counts = lax.scan(draw, n, (ratios, keys), unroll=unroll)
    dtype = dtypes.default_float_dtype() if dtype is None else dtype
    return jnp.moveaxis(counts, 0, -1).astype(dtype)


__all__ = ["bernoulli", "binomial", "categorical", "geometric", "gumbel", "multinomial",
           "poisson", "rademacher", "randint"]

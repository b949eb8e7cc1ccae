"""The two samplers the others build on: `uniform` and `normal`.

`uniform` fills the mantissa of floats in [1, 2) with random bits and subtracts 1,
so every value is a multiple of 2**-nmant; `normal` maps uniforms in (-1, 1)
through `erf_inv`. Both follow JAX 0.10.2's computation op for op, so they draw the
same values from the same key.
"""
from __future__ import annotations

import functools

import numpy as np

import plax
from plax.extend import dtypes
from plax_stdlib import lax
from plax_stdlib.random import key_primitives as prims
from plax_stdlib.random.keys import check_prng_key, split_typed
from plax_stdlib.random.sampling import canonicalize_shape, float_dtype, sampled

_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def broadcast_to_rank(x, rank: int):
    """`x` with leading size-1 dimensions up to `rank`."""
    shape = np.shape(x)
    if len(shape) >= rank:
        return x
    return lax.broadcast_in_dim(x, (1,) * (rank - len(shape)) + shape,
                                tuple(range(rank - len(shape), rank)))


def uniform(key, shape=(), dtype=None, minval=0., maxval=1., *, out_sharding=None):
    """Samples floats uniformly from `[minval, maxval)`.

    Args:
        key: a PRNG key.
        shape: the shape of the result.
        dtype: a float dtype (default float32, float64 under `jax_enable_x64`).
        minval: the lower bound (inclusive), broadcastable to `shape`.
        maxval: the upper bound (exclusive), broadcastable to `shape`.
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        An array of `shape` and `dtype`.

    Raises:
        ValueError: `dtype` is not a float type.

    Examples:
        >>> import plax
        >>> x = plax.random.uniform(plax.random.key(1), (1000,), minval=-1.0, maxval=1.0)
        >>> bool((x >= -1).all() and (x < 1).all()), x.dtype
        (True, dtype('float32'))
    """
    key, _ = check_prng_key("uniform", key)
    dtype = float_dtype("uniform", dtype)
    shape = canonicalize_shape(shape, "uniform")
    return sampled("uniform", out_sharding, shape, lambda k, lo, hi: _uniform(
        k, lo, hi, shape, dtype), key, minval, maxval)


@functools.partial(plax.jit, static_argnums=(3, 4))
def _uniform(key, minval, maxval, shape, dtype):
    """`uniform` of a typed key, with checked arguments."""
    finfo = dtypes.finfo(dtype)
    nbits, nmant = finfo.bits, finfo.nmant
    if nbits not in _UINT:
        raise TypeError(f"uniform only accepts 8-, 16-, 32-, or 64-bit dtypes, got {dtype}.")
    minval = lax.convert_element_type(minval, dtype)
    maxval = lax.convert_element_type(maxval, dtype)
    minval, maxval = broadcast_to_rank(minval, len(shape)), broadcast_to_rank(maxval, len(shape))
    rng_bits = 8 if nmant < 8 else nbits
    uint = np.dtype(_UINT[nbits])
    bits = prims.random_bits(key, rng_bits, shape)
    if rng_bits != nbits:
        bits = lax.convert_element_type(bits, uint)
    # Random mantissa bits under the exponent of 1.0: a float in [1, 2).
    float_bits = lax.shift_right_logical(bits, np.asarray(rng_bits - nmant, uint)[()])
    float_bits = lax.bitwise_or(float_bits, np.array(1.0, dtype).view(uint)[()])
    floats = lax.sub(lax.bitcast_convert_type(float_bits, dtype), np.asarray(1.0, dtype)[()])
    scaled = lax.add(lax.mul(floats, lax.sub(maxval, minval)), minval)
    return lax.max(minval, lax.reshape(scaled, shape))


def normal(key, shape=(), dtype=None, *, out_sharding=None):
    """Samples the standard normal distribution (mean 0, variance 1).

    For another mean and scale, use `mean + std * normal(key, shape)`.

    Args:
        key: a PRNG key.
        shape: the shape of the result.
        dtype: a float or complex dtype (default float32); for complex dtypes the
            real and imaginary parts each have variance 1/2.
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        An array of `shape` and `dtype`.

    Examples:
        >>> import plax
        >>> x = plax.random.normal(plax.random.key(0), (10000,))
        >>> bool(abs(x.mean()) < 0.05), bool(abs(x.std() - 1) < 0.05)
        (True, True)
    """
    key, _ = check_prng_key("normal", key)
    shape = canonicalize_shape(shape, "normal")
    dtype = dtypes.check_and_canonicalize_user_dtype(float if dtype is None else dtype,
                                                     "normal")
    if not dtypes.issubdtype(dtype, np.inexact):
        raise ValueError(f"dtype argument to `normal` must be a float or complex dtype, "
                         f"got {dtype}")
    return sampled("normal", out_sharding, shape, lambda k: _normal(k, shape, dtype), key)


@functools.partial(plax.jit, static_argnums=(1, 2))
def _normal(key, shape, dtype):
    if dtypes.issubdtype(dtype, np.complexfloating):
        real_dtype = np.array(0, dtype).real.dtype
        key_re, key_im = split_typed(key)
        re = lax.convert_element_type(_normal_real(key_re, shape, real_dtype), dtype)
        im = lax.convert_element_type(_normal_real(key_im, shape, real_dtype), dtype)
        return lax.div(lax.add(re, lax.mul(np.asarray(1j, dtype)[()], im)),
                       np.asarray(np.sqrt(2), dtype)[()])
    return _normal_real(key, shape, dtype)


@functools.partial(plax.jit, static_argnums=(1, 2))
def _normal_real(key, shape, dtype):
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype), dtype=dtype)
    u = _uniform(key, lo[()], np.asarray(1.0, dtype)[()], shape, dtype)
    return lax.mul(np.asarray(np.sqrt(2), dtype)[()], lax.erf_inv(u))

"""`rng_bit_generator`: XLA's stateless bit generator (`stablehlo.rng_bit_generator`).

Given a key (uint32[4], or uint64[2]) it returns the next key and an array of random
bits. The bits depend on XLA's algorithm for the platform, not on plax; `plax.random`'s
`rbg` and `unsafe_rbg` implementations draw with it. Batched keys draw with the
first key only, for the whole batch, as JAX does.
"""
from __future__ import annotations

import enum

import numpy as np

from plax.extend import dtypes
from plax.extend.batching import moveaxis, not_mapped
from plax.extend.constructors import describe, standard_primitive
from plax.extend.core import ShapedArray
from plax.extend.mlir import hlo, ir, mu
from plax_stdlib.lax.out_sharding import canonical_out_sharding
from plax_stdlib.lax.shape_ops import canonicalize_shape
from plax_stdlib.lax.slicing import dynamic_update_index_in_dim, index_in_dim


class RandomAlgorithm(enum.IntEnum):
    """The bit-generation algorithm of `lax.rng_bit_generator`: `RNG_DEFAULT` (the
    backend's choice), `RNG_THREE_FRY` or `RNG_PHILOX`.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> key = jnp.zeros(4, jnp.uint32)
        >>> _, bits = lax.rng_bit_generator(key, (2,), algorithm=lax.RandomAlgorithm.RNG_THREE_FRY)
        >>> bits.dtype
        dtype('uint32')
    """
    RNG_DEFAULT = 0  # the platform's default
    RNG_THREE_FRY = 1
    RNG_PHILOX = 2

    def __str__(self):
        return self.name


_ALGORITHM_NAMES = {RandomAlgorithm.RNG_DEFAULT: "DEFAULT",
                    RandomAlgorithm.RNG_THREE_FRY: "THREE_FRY",
                    RandomAlgorithm.RNG_PHILOX: "PHILOX"}
_BIT_DTYPES = tuple(np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
_U32, _U64 = np.dtype(np.uint32), np.dtype(np.uint64)


def _abstract_eval(key, *, shape, dtype, algorithm):
    if (key.shape, key.dtype) not in (((4,), _U32), ((2,), _U64)):
        raise TypeError(f"rng_bit_generator takes a uint32[4] or uint64[2] key, got "
                        f"{describe(key)}")
    return [ShapedArray(key.shape, key.dtype), ShapedArray(shape, dtype)]


def _lower(ctx, key, *, shape, dtype, algorithm):
    key_aval = ctx.avals_in[0]
    u64_key = ir.RankedTensorType.get([2], mu.ir_element_type(_U64))
    if key_aval.dtype == _U32:  # XLA's key is u64[2]: the words pairwise
        key = hlo.bitcast_convert(u64_key, hlo.reshape(
            ir.RankedTensorType.get([2, 2], mu.ir_element_type(_U32)), key))
    new_key, bits = hlo.RngBitGeneratorOp(
        u64_key, mu.ir_type(ctx.avals_out[1]),
        hlo.RngAlgorithmAttr.get(_ALGORITHM_NAMES[algorithm]), key).results
    if key_aval.dtype == _U32:
        new_key = hlo.reshape(mu.ir_type(key_aval), hlo.bitcast_convert(
            ir.RankedTensorType.get([2, 2], mu.ir_element_type(_U32)), new_key))
    return [new_key, bits]


def _batching(axis_data, args, dims, *, shape, dtype, algorithm):
    """One draw, from the first key of the batch, for the whole batch (as JAX does)."""
    (keys,), (d,) = args, dims
    if d is not_mapped:
        return rng_bit_generator_p.bind(keys, shape=shape, dtype=dtype,
                                        algorithm=algorithm), [not_mapped, not_mapped]
    keys = moveaxis(keys, d, 0)
    new_key, bits = rng_bit_generator_p.bind(index_in_dim(keys, 0, keepdims=False),
                                             shape=(axis_data.size, *shape), dtype=dtype,
                                             algorithm=algorithm)
    return [dynamic_update_index_in_dim(keys, new_key, 0, 0), bits], [0, 0]


rng_bit_generator_p = standard_primitive("lax.rng_bit_generator", _abstract_eval, _lower,
                                         multiple_results=True, batching=_batching)


def rng_bit_generator(key, shape, dtype=np.uint32,
                      algorithm: RandomAlgorithm = RandomAlgorithm.RNG_DEFAULT, *,
                      out_sharding=None):
    """Random bits from XLA's stateless bit generator, and the next key.

    A low-level primitive: `plax.random` with the `"rbg"`/`"unsafe_rbg"`
    implementations is built on it. The same key always gives the same bits on
    a given backend, but different backends may give different bits.

    Args:
        key: a uint32 array of shape (4,) (the generator's state).
        shape: the shape of the bits.
        dtype: an unsigned integer dtype (uint8 to uint64).
        algorithm: a `lax.RandomAlgorithm` (`RNG_DEFAULT`, `RNG_THREE_FRY`,
            `RNG_PHILOX`).
        out_sharding: the bits' sharding.

    Returns:
        `(new_key, bits)`.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> key = jnp.zeros(4, jnp.uint32)
        >>> new_key, bits = lax.rng_bit_generator(key, (2, 3), jnp.uint8)
        >>> new_key.shape, bits.shape, bits.dtype
        ((4,), (2, 3), dtype('uint8'))
    """
    shape = canonicalize_shape("rng_bit_generator", shape)
    dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "rng_bit_generator")
    if dtype not in _BIT_DTYPES:
        raise TypeError(f"rng_bit_generator: unsupported dtype {dtype}")
    out_sharding = canonical_out_sharding("rng_bit_generator", out_sharding)
    new_key, bits = rng_bit_generator_p.bind(key, shape=shape, dtype=dtype,
                                             algorithm=RandomAlgorithm(algorithm))
    if out_sharding is not None:
        from plax.sharding import reshard
        bits = reshard(bits, out_sharding)
    return new_key, bits

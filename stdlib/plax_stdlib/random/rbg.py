"""The `rbg` and `unsafe_rbg` PRNGs: keys of four uint32 words, bits from XLA's
`rng_bit_generator`.

`rbg` splits and folds in with threefry on each half of the key, so splitting is
as sound as threefry's; `unsafe_rbg` also splits and folds in with the bit
generator, which is faster and has no such guarantee. Their bits follow XLA's
generator for the platform, so they match JAX on the same jaxlib and backend.
"""
from __future__ import annotations

import math

import numpy as np

import plax
from plax.extend import config
from plax_stdlib import lax
from plax_stdlib.random import threefry
from plax_stdlib.random.impls import PRNGImpl, register_prng

_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _rbg_seed(seed):
    half = threefry.threefry_seed(seed)
    return lax.concatenate([half, half], 0)


def _rbg_split(key, shape: tuple[int, ...]):
    split = (threefry.split_foldlike if config.threefry_partitionable.value
             else threefry.split_original)
    halves = lax.reshape(key, (2, 2))
    keys = plax.vmap(lambda half: split(half, shape), out_axes=len(shape))(halves)
    return lax.reshape(keys, (*shape, 4))


def _rbg_fold_in(key, data):
    halves = lax.reshape(key, (2, 2))
    return lax.reshape(plax.vmap(threefry.threefry_fold_in, (0, None))(halves, data), (4,))


def _rbg_random_bits(key, bit_width: int, shape):
    if bit_width not in _UINT:
        raise TypeError("requires 8-, 16-, 32- or 64-bit field width.")
    _, bits = lax.rng_bit_generator(key, tuple(shape), dtype=_UINT[bit_width])
    return bits


def _unsafe_rbg_split(key, shape: tuple[int, ...]):
    """Every tenth of 10·num draws of four words (ten draws as a 'hash')."""
    num = math.prod(shape)
    _, keys = lax.rng_bit_generator(key, (10 * num, 4), dtype=np.uint32)
    return lax.reshape(lax.slice_in_dim(keys, 0, 10 * num, 10), (*shape, 4))


def _unsafe_rbg_fold_in(key, data):
    _, bits = lax.rng_bit_generator(_rbg_seed(data), (10, 4), dtype=np.uint32)
    return lax.bitwise_xor(key, lax.index_in_dim(bits, 9, keepdims=False))


rbg_prng_impl = PRNGImpl(key_shape=(4,), seed=_rbg_seed, split=_rbg_split,
                         random_bits=_rbg_random_bits, fold_in=_rbg_fold_in,
                         name="rbg", tag="rbg")
unsafe_rbg_prng_impl = PRNGImpl(key_shape=(4,), seed=_rbg_seed, split=_unsafe_rbg_split,
                                random_bits=_rbg_random_bits, fold_in=_unsafe_rbg_fold_in,
                                name="unsafe_rbg", tag="urbg")
register_prng(rbg_prng_impl)
register_prng(unsafe_rbg_prng_impl)

"""The primitives on typed key arrays, each with all its rules.

`random_seed` (integer seeds → keys), `random_split` (keys → keys with trailing
dimensions), `random_fold_in` (keys, uint32 data → keys), `random_bits` (keys →
unsigned bits with trailing dimensions), `random_wrap`/`random_unwrap` (uint32 key
data ↔ keys) and `random_clone`. All are elementwise over the key array, so
batching keeps the batch dimension where it is, and a key array sharded over its
dimensions can be split or drawn from shard by shard. Each lowers by tracing the
implementation's single-key function, mapped over the key dimensions, on the key
data (`traced_lowering`). Their outputs are keys or integers: differentiation gives
them `float0` tangents.
"""
from __future__ import annotations

import numpy as np

import plax
from plax.extend.ad import defjvp
from plax.extend.batching import broadcasting_batcher, move_to, unary_batcher
from plax.extend.constructors import (
    INT,
    broadcasting_shape,
    check_dtype,
    describe,
    standard_primitive,
)
from plax.extend.core import ShapedArray
from plax_stdlib import lax
from plax_stdlib.random.impls import KeyTy
from plax_stdlib.random.traced_lowering import lower_traced, vmap_n

_UINT_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32),
                64: np.dtype(np.uint64)}


def is_key_aval(aval) -> bool:
    return isinstance(aval.dtype, KeyTy)


def _check_keys(name: str, aval) -> KeyTy:
    if not is_key_aval(aval):
        raise TypeError(f"{name} takes a typed key array, got {describe(aval)}")
    return aval.dtype


# --- random_seed --------------------------------------------------------------------

def _seed_abstract_eval(seeds, *, impl):
    check_dtype("random_seed", seeds, INT, what="seed")
    return ShapedArray(seeds.shape, KeyTy(impl))


def _seed_data(seeds, *, impl):
    return vmap_n(impl.seed, seeds.ndim)(seeds)


random_seed_p = standard_primitive(
    "random.random_seed", _seed_abstract_eval,
    lambda ctx, seeds, *, impl: lower_traced(ctx, _seed_data, seeds, impl=impl),
    batching=unary_batcher(), jvp=defjvp(None))


# --- random_split -------------------------------------------------------------------

def _split_abstract_eval(keys, *, shape):
    dtype = _check_keys("random_split", keys)
    return ShapedArray((*keys.shape, *shape), dtype)


def _split_data(keys, *, impl, ndim, shape):
    return vmap_n(lambda k: impl.split(k, shape), ndim)(keys)


def _split_lower(ctx, keys, *, shape):
    aval = ctx.avals_in[0]
    return lower_traced(ctx, _split_data, keys, impl=aval.dtype._impl, ndim=aval.ndim,
                        shape=shape)


random_split_p = standard_primitive("random.random_split", _split_abstract_eval, _split_lower,
                                    batching=unary_batcher(), jvp=defjvp(None))


# --- random_fold_in -----------------------------------------------------------------

def _fold_in_abstract_eval(keys, msgs):
    dtype = _check_keys("random_fold_in", keys)
    if msgs.dtype != np.dtype(np.uint32):
        raise TypeError(f"random_fold_in takes uint32 data, got {describe(msgs)}")
    return ShapedArray(broadcasting_shape("random_fold_in", keys, msgs), dtype)


def _fold_in_data(keys, msgs, *, impl, shape):
    key_shape = impl.key_shape
    keys = lax.broadcast_in_dim(keys, (*shape, *key_shape),
                                _trailing_dims(keys.ndim, len(shape) + len(key_shape)))
    msgs = lax.broadcast_in_dim(msgs, shape, _trailing_dims(msgs.ndim, len(shape)))
    return vmap_n(impl.fold_in, len(shape))(keys, msgs)


def _trailing_dims(ndim: int, out_ndim: int) -> tuple[int, ...]:
    return tuple(range(out_ndim - ndim, out_ndim)) if ndim else ()


def _fold_in_lower(ctx, keys, msgs):
    out = ctx.avals_out[0]
    return lower_traced(ctx, _fold_in_data, keys, msgs, impl=out.dtype._impl, shape=out.shape)


random_fold_in_p = standard_primitive("random.random_fold_in", _fold_in_abstract_eval,
                                      _fold_in_lower, batching=broadcasting_batcher(),
                                      jvp=defjvp(None, None))


# --- random_bits --------------------------------------------------------------------

def _bits_abstract_eval(keys, *, bit_width, shape):
    _check_keys("random_bits", keys)
    if bit_width not in _UINT_DTYPES:
        raise TypeError(f"random_bits: bit_width must be 8, 16, 32 or 64, got {bit_width}")
    return ShapedArray((*keys.shape, *shape), _UINT_DTYPES[bit_width])


def _bits_data(keys, *, impl, ndim, bit_width, shape):
    return vmap_n(lambda k: impl.random_bits(k, bit_width, shape), ndim)(keys)


def _bits_lower(ctx, keys, *, bit_width, shape):
    aval = ctx.avals_in[0]
    return lower_traced(ctx, _bits_data, keys, impl=aval.dtype._impl, ndim=aval.ndim,
                        bit_width=bit_width, shape=shape)


random_bits_p = standard_primitive("random.random_bits", _bits_abstract_eval, _bits_lower,
                                   batching=unary_batcher(), jvp=defjvp(None))


# --- random_wrap / random_unwrap / random_clone ---------------------------------------

def check_key_data(impl, aval) -> None:
    """TypeError unless `aval` can be the data of an array of `impl`'s keys."""
    key_shape = impl.key_shape
    if aval.ndim < len(key_shape) or aval.shape[aval.ndim - len(key_shape):] != key_shape:
        raise TypeError(f"invalid PRNG key data: expected an array whose shape ends with "
                        f"{key_shape} (the key shape of {impl.name}), got "
                        f"{describe(aval)}")
    if aval.dtype != np.dtype(np.uint32):
        raise TypeError(f"invalid PRNG key data: expected dtype uint32, got "
                        f"{describe(aval)}")


def _wrap_abstract_eval(data, *, impl):
    check_key_data(impl, data)
    return ShapedArray(data.shape[:data.ndim - len(impl.key_shape)], KeyTy(impl))


def _wrap_batching(axis_data, args, dims, *, impl):
    (data,), (d,) = args, dims
    if d >= data.ndim - len(impl.key_shape):  # mapped over key words: bring it forward
        data, d = move_to(data, d, 0, axis_data.size), 0
    return random_wrap_p.bind(data, impl=impl), d


random_wrap_p = standard_primitive("random.random_wrap", _wrap_abstract_eval,
                                   lambda ctx, data, *, impl: data,
                                   batching=_wrap_batching, jvp=defjvp(None))


def _unwrap_abstract_eval(keys):
    dtype = _check_keys("random_unwrap", keys)
    return ShapedArray((*keys.shape, *dtype.element_shape), dtype.physical_dtype)


random_unwrap_p = standard_primitive("random.random_unwrap", _unwrap_abstract_eval,
                                     lambda ctx, keys: keys, batching=unary_batcher(),
                                     jvp=defjvp(None))

random_clone_p = standard_primitive("random.random_clone",
                                    lambda keys: keys, lambda ctx, keys: keys,
                                    batching=unary_batcher())


def random_seed(seeds, impl):
    return random_seed_p.bind(seeds, impl=impl)


def random_split(keys, shape: tuple[int, ...]):
    return random_split_p.bind(keys, shape=tuple(shape))


def random_fold_in(keys, msgs):
    return random_fold_in_p.bind(keys, plax.numpy.asarray(msgs, np.uint32))


def random_bits(keys, bit_width: int, shape: tuple[int, ...]):
    return random_bits_p.bind(keys, bit_width=bit_width, shape=tuple(shape))


def random_wrap(data, impl):
    return random_wrap_p.bind(data, impl=impl)


def random_unwrap(keys):
    return random_unwrap_p.bind(keys)


def is_key_array(x) -> bool:
    """Whether `x` is a typed key array (concrete or traced)."""
    return isinstance(getattr(x, "dtype", None), KeyTy)

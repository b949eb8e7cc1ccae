"""The threefry2x32 PRNG (JAX's default), with the counter-based hash as a primitive.

`threefry2x32` hashes pairs of uint32 counters under a pair of uint32 key words
(Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", 20 rounds); it lowers
to plain StableHLO integer ops, unrolled — except the bits samplers use on CPU,
which loop over the five groups of four rounds as JAX's do there, so that XLA fuses
what is computed from them exactly as it fuses JAX's (see `_threefry2x32_lower_cpu`).
`iota_2x32_shape` numbers the elements of a shape as 64-bit counters split into
two uint32 arrays, so the counters do not depend on `jax_enable_x64`.

On these, the implementation's functions of one key (uint32[2]) follow JAX 0.10.2
bit for bit, in both variants `jax_threefry_partitionable` selects: the
partitionable one (the default) hashes each output element's own counter, so any
shard of the output can be computed alone; the original one hashes one flat run of
counters and splits it.
"""
from __future__ import annotations

import math

import numpy as np

from plax.extend import config
from plax.extend.batching import broadcasting_batcher
from plax.extend.constructors import broadcasting_shape, describe, standard_primitive
from plax.extend.core import ShapedArray, SymbolicDimension
from plax.extend.mlir import hlo, ir, mu
from plax_stdlib import lax
from plax_stdlib.random.impls import PRNGImpl, register_prng

_U32 = np.dtype(np.uint32)
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA  # the key-schedule constant of Threefish


# --- the hash primitive ------------------------------------------------------------

def _threefry2x32_abstract_eval(k1, k2, x1, x2, *, rolled):
    for aval in (k1, k2, x1, x2):
        if aval.dtype != _U32:
            raise TypeError(f"threefry2x32 takes uint32 operands, got "
                            f"{', '.join(map(describe, (k1, k2, x1, x2)))}")
    aval = ShapedArray(broadcasting_shape("threefry2x32", k1, k2, x1, x2), _U32)
    return [aval, aval]


def _broadcast_operands(ctx, *operands):
    out = ctx.avals_out[0]
    return out, [mu.broadcast_to(v, out) for v in operands]


def _four_rounds(x, rotations):
    """Four Threefry rounds; `rotations` are (r, 32 - r) pairs of shift amounts."""
    x0, x1 = x
    for r, r_complement in rotations:
        x0 = hlo.add(x0, x1)
        x1 = hlo.xor(x0, hlo.or_(hlo.shift_left(x1, r), hlo.shift_right_logical(x1, r_complement)))
    return [x0, x1]


def _key_schedule(out, k1, k2, x1, x2):
    """The three key words, and the counters with the first two added."""
    ks = [k1, k2, hlo.xor(hlo.xor(k1, k2), mu.splat(np.uint32(_PARITY), out))]
    return ks, [hlo.add(x1, ks[0]), hlo.add(x2, ks[1])]


def _threefry2x32_lower(ctx, k1, k2, x1, x2, *, rolled):
    """Twenty rounds unrolled into one elementwise expression."""
    out, (k1, k2, x1, x2) = _broadcast_operands(ctx, k1, k2, x1, x2)

    def const(c):
        return mu.splat(np.uint32(c), out)

    ks, x = _key_schedule(out, k1, k2, x1, x2)
    for i in range(5):
        x = _four_rounds(x, [(const(r), const(32 - r)) for r in _ROTATIONS[i % 2]])
        x[0] = hlo.add(x[0], ks[(i + 1) % 3])
        x[1] = hlo.add(hlo.add(x[1], ks[(i + 2) % 3]), const(i + 1))
    return x


def _threefry2x32_lower_cpu(ctx, k1, k2, x1, x2, *, rolled):
    """On CPU, bits for samplers (`rolled`) have their rounds lowered as JAX lowers
    them there: five groups of four rounds in a loop. The loop also bounds XLA's
    fusions as JAX's does, which keeps floating-point samples computed from the bits
    identical to JAX's (fused with the sampler, a reduction over the samples can round
    differently). New keys are integers, exact however fused: they are unrolled."""
    if not rolled:
        return _threefry2x32_lower(ctx, k1, k2, x1, x2, rolled=rolled)
    return _rolled_rounds(ctx, k1, k2, x1, x2)


def _rolled_rounds(ctx, k1, k2, x1, x2):
    """The loop over the five groups; the key words stay scalars in it when they are
    (one key for all counters)."""
    out = ctx.avals_out[0]
    k1_aval, k2_aval = ctx.avals_in[:2]
    key_aval = out if k1_aval.shape or k2_aval.shape else ShapedArray((), _U32)
    k1, k2 = mu.broadcast_to(k1, key_aval), mu.broadcast_to(k2, key_aval)
    x1, x2 = mu.broadcast_to(x1, out), mu.broadcast_to(x2, out)
    ks = [k1, k2, hlo.xor(hlo.xor(k1, k2), mu.splat(np.uint32(_PARITY), key_aval))]
    x = [hlo.add(x1, mu.broadcast_to(ks[0], out)), hlo.add(x2, mu.broadcast_to(ks[1], out))]
    rotations = [mu.dense_constant(np.array(r, np.uint32)) for r in _ROTATIONS]
    i32 = ShapedArray((), np.int32)
    state = [mu.dense_constant(np.int32(0)), *x, ks[1], ks[2], ks[0], *rotations]
    types = [v.type for v in state]
    loop = hlo.WhileOp(types, state)
    cond = loop.cond.blocks.append(*types)
    with ir.InsertionPoint(cond):
        hlo.return_([mu.compare(cond.arguments[0], mu.dense_constant(np.int32(5)), "LT",
                                np.int32)])
    body = loop.body.blocks.append(*types)
    with ir.InsertionPoint(body):
        i, x0, x1, ka, kb, kc, rot_now, rot_next = body.arguments
        u32 = ShapedArray((), _U32)

        def amount(j):
            r = hlo.reshape(mu.ir_type(u32), hlo.slice(rot_now, [j], [j + 1], [1]))
            return (mu.broadcast_to(r, out),
                    mu.broadcast_to(hlo.subtract(mu.dense_constant(np.uint32(32)), r), out))

        x0, x1 = _four_rounds([x0, x1], [amount(j) for j in range(4)])
        next_i = hlo.add(i, mu.dense_constant(np.int32(1)))
        step = mu.convert(next_i, i32, u32)
        x0 = hlo.add(x0, mu.broadcast_to(ka, out))
        x1 = hlo.add(x1, mu.broadcast_to(hlo.add(kb, mu.broadcast_to(step, key_aval)), out))
        hlo.return_([next_i, x0, x1, kb, kc, ka, rot_next, rot_now])
    return list(loop.results)[1:3]


def _threefry2x32_batching(axis_data, args, dims, *, rolled):
    outs, dim = broadcasting_batcher().apply(threefry2x32_p, args, dims, {"rolled": rolled})
    return outs, [dim, dim]


threefry2x32_p = standard_primitive("random.threefry2x32", _threefry2x32_abstract_eval,
                                    _threefry2x32_lower, multiple_results=True,
                                    batching=_threefry2x32_batching)
threefry2x32_p.def_lowering(_threefry2x32_lower_cpu, platform="cpu")


def _iota_2x32_shape_abstract_eval(*, shape):
    aval = ShapedArray(shape, _U32)
    return [aval, aval]


def _iota_2x32_shape_lower(ctx, *, shape):
    """The row-major index of each element, in 64 bits, as (high, low) words."""
    u64 = ShapedArray(shape, np.uint64)
    index = None
    for d in range(len(shape)):
        term = hlo.multiply(mu.iota(u64, d), _stride(shape[d + 1:], u64))
        index = term if index is None else hlo.add(index, term)
    high = hlo.shift_right_logical(index, mu.splat(np.uint64(32), u64))
    out_type = mu.ir_type(ctx.avals_out[0])
    return [hlo.convert(out_type, high), hlo.convert(out_type, index)]


def _stride(trailing, u64: ShapedArray):
    """The number of elements of the `trailing` dimensions, broadcast to `u64`'s shape
    (a constant, or computed from the dimension variables where one is symbolic)."""
    stride = math.prod(trailing)
    if not isinstance(stride, SymbolicDimension):
        return mu.splat(np.uint64(stride), u64)
    scalar = hlo.convert(mu.ir_type(ShapedArray((), np.uint64)), mu.dimension_value(stride))
    return mu.broadcast_to(scalar, u64)


iota_2x32_shape_p = standard_primitive("random.iota_2x32_shape",
                                       _iota_2x32_shape_abstract_eval,
                                       _iota_2x32_shape_lower, multiple_results=True)


def iota_2x32_shape(shape: tuple[int, ...]):
    """(high, low) uint32 words of `arange(prod(shape)).reshape(shape)` in 64 bits."""
    if not shape:
        zero = lax.full((), np.uint32(0))
        return zero, zero
    return iota_2x32_shape_p.bind(shape=tuple(shape))


def threefry2x32(key1, key2, x1, x2, *, rolled: bool):
    """The threefry2x32 hash of counter pairs (x1, x2) under the key (key1, key2);
    `rolled` for bits that samplers compute with (see `_threefry2x32_lower_cpu`)."""
    return threefry2x32_p.bind(key1, key2, x1, x2, rolled=rolled)


# --- one key's functions --------------------------------------------------------------

def _words(key):
    return lax.index_in_dim(key, 0, keepdims=False), lax.index_in_dim(key, 1, keepdims=False)


def threefry_hash(key, count, *, rolled: bool):
    """threefry2x32 of a uint32 array of counters: its first and second halves (padded
    with a zero to an even size) are the two counter words. A symbolic size of unknown
    parity is always padded: the halves of `size + 1` counters are `size // 2` long
    when it is even, which leaves the zero out."""
    size = math.prod(count.shape)
    flat = lax.reshape(count, (size,))
    parity = size % 2
    padded = isinstance(parity, SymbolicDimension) or parity == 1
    if padded:
        flat = lax.concatenate([flat, lax.full((1,), np.uint32(0))], 0)
    half = flat.shape[0] // 2
    y1, y2 = threefry2x32(*_words(key), lax.slice_in_dim(flat, 0, half),
                          lax.slice_in_dim(flat, half, 2 * half), rolled=rolled)
    out = lax.concatenate([y1, y2], 0)
    if padded:
        out = lax.slice_in_dim(out, 0, size)
    return lax.reshape(out, count.shape)


def threefry_seed(seed):
    """The key of an integer seed: its high and low 32 bits (the high word is 0 for
    seeds of 32 bits or fewer)."""
    if seed.shape:
        raise TypeError(f"PRNG key seed must be a scalar; got {describe(seed.aval)}.")
    high = lax.shift_right_logical(seed, np.asarray(32, seed.dtype)[()])
    return lax.concatenate([lax.broadcast(lax.convert_element_type(w, np.uint32), (1,))
                            for w in (high, seed)], 0)


def split_foldlike(key, shape: tuple[int, ...]):
    """The partitionable split: key number i hashes the 64-bit counter i."""
    bits1, bits2 = threefry2x32(*_words(key), *iota_2x32_shape(shape), rolled=False)
    ndim = len(shape)
    return lax.concatenate([lax.expand_dims(b, (ndim,)) for b in (bits1, bits2)], ndim)


def split_original(key, shape: tuple[int, ...]):
    """The original split: one run of 2·num counters, hashed and cut into keys."""
    counts = lax.iota(np.uint32, math.prod(shape) * 2)
    return lax.reshape(threefry_hash(key, counts, rolled=False), (*shape, 2))


def threefry_split(key, shape: tuple[int, ...]):
    if config.threefry_partitionable.value:
        return split_foldlike(key, shape)
    return split_original(key, shape)


def threefry_fold_in(key, data):
    """The key hashed with the seed of `data` (a uint32 scalar) as counters."""
    return threefry_hash(key, threefry_seed(data), rolled=False)


_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _bits_partitionable(key, bit_width: int, shape):
    size = math.prod(shape)
    if not isinstance(size, SymbolicDimension) and size > 2 ** 64:  # (symbolic: unchecked)
        raise NotImplementedError("random bits array of size exceeding 2 ** 64")
    bits1, bits2 = threefry2x32(*_words(key), *iota_2x32_shape(shape), rolled=True)
    dtype = np.dtype(_UINT[bit_width])
    if bit_width == 64:
        high = lax.convert_element_type(bits1, dtype)
        low = lax.convert_element_type(bits2, dtype)
        return lax.bitwise_or(lax.shift_left(high, np.asarray(32, dtype)[()]), low)
    bits = lax.bitwise_xor(bits1, bits2)
    return bits if bit_width == 32 else lax.convert_element_type(bits, dtype)


def _bits_original(key, bit_width: int, shape):
    size = math.prod(shape)
    max_count, partial_word = divmod(bit_width * size, 32)
    if partial_word > 0:  # (inconclusive for a symbolic size it may leave whole, as JAX)
        max_count += 1
    blocks, rest = 0, max_count
    if not isinstance(max_count, SymbolicDimension):
        blocks, rest = divmod(max_count, np.iinfo(np.uint32).max)
    if blocks:
        raise NotImplementedError("random bits of more than 2 ** 32 words with "
                                  "jax_threefry_partitionable=False")
    bits = threefry_hash(key, lax.iota(np.uint32, rest), rolled=True)
    dtype = np.dtype(_UINT[bit_width])
    if bit_width == 64:
        half = bits.shape[0] // 2
        high, low = (lax.convert_element_type(lax.slice_in_dim(bits, lo, lo + half), dtype)
                     for lo in (0, half))
        bits = lax.bitwise_or(lax.shift_left(high, np.asarray(32, dtype)[()]), low)
    elif bit_width in (8, 16):
        # Each word gives 32 // bit_width values, its low bits first.
        per_word = 32 // bit_width
        shifts = lax.mul(lax.full((per_word, 1), np.uint32(bit_width)),
                         lax.broadcasted_iota(np.uint32, (per_word, 1), 0))
        pieces = lax.bitwise_and(lax.full((), np.uint32(np.iinfo(dtype).max)),
                                 lax.shift_right_logical(lax.broadcast(bits, (1,)), shifts))
        pieces = lax.reshape(pieces, (max_count * per_word,), (1, 0))
        bits = lax.slice_in_dim(lax.convert_element_type(pieces, dtype), 0, size)
    return lax.reshape(bits, shape)


def threefry_random_bits(key, bit_width: int, shape):
    if bit_width not in _UINT:
        raise TypeError("requires 8-, 16-, 32- or 64-bit field width.")
    if config.threefry_partitionable.value:
        return _bits_partitionable(key, bit_width, tuple(shape))
    return _bits_original(key, bit_width, tuple(shape))


threefry_prng_impl = PRNGImpl(key_shape=(2,), seed=threefry_seed, split=threefry_split,
                              random_bits=threefry_random_bits, fold_in=threefry_fold_in,
                              name="threefry2x32", tag="fry")
register_prng(threefry_prng_impl)

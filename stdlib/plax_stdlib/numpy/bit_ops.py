"""Bits of integer arrays: packbits, unpackbits and bitwise_count."""
from __future__ import annotations

import operator

import numpy as np

from plax_stdlib import jax_jits, lax
from plax_stdlib.numpy import reductions, shape_ops, ufuncs, util


def _bit_weights(bitorder: str, name: str) -> np.ndarray:
    if bitorder not in ("big", "little"):
        raise ValueError(f"{name}: bitorder must be 'big' or 'little', got {bitorder!r}")
    weights = (1 << np.arange(8)).astype(np.uint8)
    return weights[::-1].copy() if bitorder == "big" else weights


def packbits(a, axis: int | None = None, bitorder: str = "big"):
    """The elements of a boolean array (or integers: nonzero counts as 1) packed eight
    to a byte (uint8) along `axis`, zero-padded at the end.

    Follows `numpy.packbits`.

    Args:
        a: a bool or integer array.
        axis: the axis to pack along; None packs the flattened array.
        bitorder: "big" (the first element is the most significant bit) or "little".

    Returns:
        A uint8 array, `ceil(n / 8)` long along `axis`.

    Raises:
        ValueError: an unknown `bitorder`, or a float input.

    Examples:
        >>> jnp.packbits(jnp.array([1, 0, 1, 1, 0, 0, 0, 0, 1]))
        Array([176, 128], dtype=uint8)
    """
    a = util.ensure_arraylike("packbits", a)
    if util.dtype_category(util.dtype_of(a)) not in "biu":
        raise TypeError(f"packbits: expected an integer or boolean array, got dtype "
                        f"{util.dtype_of(a)}")
    weights = _bit_weights(bitorder, "packbits")
    if axis is None:
        a, axis = shape_ops.ravel(a), 0
    axis = util.canonicalize_axis(axis, len(util.shape_of(a)), IndexError)  # JAX's class
    bits = util.convert(ufuncs._as_bool(a), np.uint8)
    bits = shape_ops.moveaxis(bits, axis, -1)
    n = util.shape_of(bits)[-1]
    pad = -n % 8
    if pad:
        bits = lax.pad(bits, np.uint8(0), [(0, 0, 0)] * (len(util.shape_of(bits)) - 1)
                       + [(0, pad, 0)])
    groups = lax.reshape(bits, util.shape_of(bits)[:-1] + ((n + pad) // 8, 8))
    packed = reductions.sum(ufuncs.multiply(groups, weights), axis=-1, dtype=np.uint8)
    return shape_ops.moveaxis(packed, -1, axis)


def unpackbits(a, axis: int | None = None, count: int | None = None, bitorder: str = "big"):
    """The bits of a uint8 array as 0s and 1s, eight per element, along `axis` (the
    inverse of `packbits`).

    Follows `numpy.unpackbits`: `count` keeps that many bits (a negative count drops
    bits from the end; a larger one pads with zeros).

    Args:
        a: a uint8 array.
        axis: the axis to unpack along; None unpacks the flattened array.
        count: the number of bits to keep (static).
        bitorder: "big" or "little".

    Returns:
        A uint8 array of 0s and 1s.

    Raises:
        TypeError: `a` is not uint8.

    Examples:
        >>> jnp.unpackbits(jnp.array([5], jnp.uint8))
        Array([0, 0, 0, 0, 0, 1, 0, 1], dtype=uint8)
        >>> jnp.unpackbits(jnp.array([5], jnp.uint8), bitorder="little", count=3)
        Array([1, 0, 1], dtype=uint8)
    """
    a = util.ensure_arraylike("unpackbits", a)
    if util.dtype_of(a) != np.dtype(np.uint8):
        raise TypeError(f"unpackbits: expected an input array of unsigned byte data type, "
                        f"got {util.dtype_of(a)}")
    weights = _bit_weights(bitorder, "unpackbits")
    if axis is None:
        a, axis = shape_ops.ravel(a), 0
    axis = util.canonicalize_axis(axis, len(util.shape_of(a)), IndexError)  # JAX's class
    a = shape_ops.moveaxis(a, axis, -1)
    bits = lax.ne(ufuncs.bitwise_and(lax.expand_dims(a, (len(util.shape_of(a)),)), weights), 0)
    bits = lax.reshape(util.convert(bits, np.uint8), util.shape_of(a)[:-1]
                       + (8 * util.shape_of(a)[-1],))
    if count is not None:
        count = operator.index(count)
        n = util.shape_of(bits)[-1]
        keep = count if count >= 0 else max(n + count, 0)
        if keep <= n:
            bits = bits[..., :keep]
        else:
            bits = lax.pad(bits, np.uint8(0), [(0, 0, 0)] * (len(util.shape_of(bits)) - 1)
                           + [(0, keep - n, 0)])
    return shape_ops.moveaxis(bits, -1, axis)


def bitwise_count(x, /):
    """The number of 1 bits in the absolute value of each element (population count),
    as uint8.

    Follows `numpy.bitwise_count`; integer and bool inputs only.

    Args:
        x: an integer or bool array.

    Returns:
        A uint8 array of `x`'s shape.

    Examples:
        >>> jnp.bitwise_count(jnp.array([0, 7, -8, 255]))
        Array([0, 3, 1, 8], dtype=uint8)
    """
    x, = util.promote_args_numeric("bitwise_count", x)
    if util.dtype_category(util.dtype_of(x)) not in "iu":
        raise TypeError(f"bitwise_count requires integer or boolean input, got dtype "
                        f"{util.dtype_of(x)}")
    return util.as_array(util.convert(lax.population_count(ufuncs.absolute(x)), np.uint8))


jax_jits.apply(globals())  # JAX's jitted functions become jit functions

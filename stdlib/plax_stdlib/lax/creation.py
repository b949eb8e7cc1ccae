"""Arrays made from nothing but a shape: `iota` (a primitive), `full`, `full_like`,
`zeros_like_array` built from a broadcast scalar, and `empty_like_aval` (`empty2`)."""
from __future__ import annotations

import enum

import numpy as np

from plax.extend import dtypes
from plax.extend.constructors import (
    NUMBER,
    canonicalize_axis,
    check_dtype,
    describe,
    standard_primitive,
)
from plax.extend.core import ShapedArray, get_aval
from plax.extend.mlir import mu
from plax_stdlib.lax.conversion import convert_with_weak_type
from plax_stdlib.lax.out_sharding import check_out_sharding
from plax_stdlib.lax.shape_ops import broadcast, canonicalize_shape


def _iota_abstract_eval(*, dtype, shape, dimension, sharding):
    aval = ShapedArray(canonicalize_shape("iota", shape), dtype)
    check_dtype("iota", aval, NUMBER, what="dtype")
    if not 0 <= dimension < len(shape):
        raise ValueError(f"iota: dimension {dimension} out of range for shape {shape}")
    return aval


def _iota_lower(ctx, *, dtype, shape, dimension, sharding):
    return mu.iota(ctx.avals_out[0], dimension)


iota_p = standard_primitive("lax.iota", _iota_abstract_eval, _iota_lower)


class MemorySpace(enum.Enum):
    """Where a value lives, as JAX's avals say (it prints in `empty2`'s parameters)."""
    Device = "device"


empty2_p = standard_primitive(
    "lax.empty2", lambda *, dtype, memory_space: ShapedArray((), dtype),
    lambda ctx, *, dtype, memory_space: mu.splat(0, mu.physical_aval(ctx.avals_out[0])))


def empty_like_aval(aval: ShapedArray):
    """A value of `aval` whose contents do not matter (JAX's: a slot a branch fills
    for another branch's residual); zeros, for now, as JAX lowers it."""
    empty = empty2_p.bind(dtype=aval.dtype, memory_space=MemorySpace.Device)
    return broadcast(empty, aval.shape) if aval.shape else empty


def broadcasted_iota(dtype, shape, dimension: int, *, out_sharding=None):
    """An array of `shape` whose elements count 0, 1, 2... along `dimension` (and
    are constant along the others).

    Args:
        dtype: the result's dtype.
        shape: the result's shape.
        dimension: the dimension along which values increase.
        out_sharding: on a mesh with `Explicit` axes, the result's sharding.

    Returns:
        An array of `shape` and `dtype`.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.broadcasted_iota(jnp.int32, (2, 3), 1)
        Array([[0, 1, 2],
               [0, 1, 2]], dtype=int32)
    """
    dtype = dtypes.dtype(dtype, canonicalize=True)
    shape = canonicalize_shape("broadcasted_iota", shape)
    dimension = canonicalize_axis("broadcasted_iota", dimension, len(shape), "dimension",
                                  error=ValueError, negative=False)
    return iota_p.bind(dtype=dtype, shape=shape, dimension=dimension,
                       sharding=check_out_sharding("broadcasted_iota", out_sharding))


def iota(dtype, size: int, *, sharding=None):
    """The integers `0, 1, ..., size - 1` as a 1-d array of `dtype`.

    Args:
        dtype: the result's dtype (integer, floating-point or complex).
        size: the number of elements (an int).
        sharding: on a mesh with `Explicit` axes, the result's sharding.

    Returns:
        A 1-d array of length `size`.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.iota(jnp.int32, 4)
        Array([0, 1, 2, 3], dtype=int32)
    """
    return broadcasted_iota(dtype, (size,), 0, out_sharding=sharding)


def full(shape, fill_value, dtype=None, *, sharding=None):
    """An array of `shape` filled with one scalar value.

    Args:
        shape: the result's shape.
        fill_value: a scalar (Python, NumPy or 0-d array).
        dtype: the result's dtype (default: `fill_value`'s; weakly typed if
            `fill_value` is a Python scalar).
        sharding: the result's sharding.

    Returns:
        An array of `shape`.

    Raises:
        TypeError: `fill_value` is not a scalar.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.full((2, 2), 7, jnp.int8)
        Array([[7, 7],
               [7, 7]], dtype=int8)
    """
    shape = canonicalize_shape("full", shape)
    fill_aval = get_aval(fill_value)
    if fill_aval.shape:
        raise TypeError(f"full requires a scalar fill_value, got {describe(fill_aval)}")
    if dtype is None:
        fill = fill_value
    else:
        dtype = dtypes.dtype(dtype, canonicalize=True)
        fill = _converted_fill(fill_value, dtype, weak_type=False)
    return broadcast(fill, shape, out_sharding=sharding)


def _converted_fill(fill_value, dtype, weak_type: bool):
    """`fill_value` in `dtype`; a host scalar is converted on the host (a constant in
    the Jaxpr, as JAX folds it), anything else by `convert_element_type`."""
    host = type(fill_value) in (bool, int, float) or (
        isinstance(fill_value, (np.generic, np.ndarray)) and fill_value.dtype.kind in "biuf")
    if host and isinstance(dtype, np.dtype):
        get_aval(fill_value)  # an int too large for any integer type is an OverflowError
        folded = np.asarray(fill_value).astype(dtype)
        if not weak_type:
            return folded
        if get_aval(folded.item()).dtype == dtype:  # a Python scalar is weak in its dtype
            return folded.item()
    return convert_with_weak_type(fill_value, dtype, weak_type)


def full_like(x, fill_value, dtype=None, shape=None, sharding=None):
    """An array like `x` (its shape and dtype unless given) filled with one value.

    Args:
        x: an array (or anything with `shape` and `dtype`).
        fill_value: a scalar.
        dtype: the dtype (default: `x`'s).
        shape: the shape (default: `x`'s).
        sharding: the sharding (default: `x`'s, when it has one and the shape
            is unchanged).

    Returns:
        The filled array.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.full_like(jnp.zeros((2,), jnp.float32), 3)
        Array([3., 3.], dtype=float32)
    """
    aval = get_aval(x)
    if dtype is None:
        dtype, weak_type = aval.dtype, aval.weak_type
    else:
        dtype, weak_type = dtypes.dtype(dtype, canonicalize=True), False
    fill = _converted_fill(fill_value, dtype, weak_type)
    return full(aval.shape if shape is None else shape, fill, sharding=sharding)


def zeros_like_array(x):
    """Zeros of `x`'s shape and dtype.

    Args:
        x: an array.

    Returns:
        An array of zeros.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.zeros_like_array(jnp.array([1, 2, 3]))
        Array([0, 0, 0], dtype=int32)
    """
    return full_like(x, 0)

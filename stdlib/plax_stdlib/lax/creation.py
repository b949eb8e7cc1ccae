"""Arrays made from nothing but a shape: `iota` (a primitive), and `full`,
`full_like`, `zeros_like_array` built from a broadcast scalar."""
from __future__ import annotations

import numpy as np

from plax.extend import dtypes
from plax.extend.constructors import (
    FLOAT,
    INT,
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
    check_dtype("iota", aval, INT | FLOAT, what="dtype")
    if not 0 <= dimension < len(shape):
        raise ValueError(f"iota: dimension {dimension} out of range for shape {shape}")
    return aval


def _iota_lower(ctx, *, dtype, shape, dimension, sharding):
    return mu.iota(ctx.avals_out[0], dimension)


iota_p = standard_primitive("lax.iota", _iota_abstract_eval, _iota_lower)


def broadcasted_iota(dtype, shape, dimension: int, *, out_sharding=None):
    """An array of `shape` whose elements count 0, 1, 2... along `dimension`."""
    dtype = dtypes.dtype(dtype, canonicalize=True)
    shape = canonicalize_shape("broadcasted_iota", shape)
    dimension = canonicalize_axis("broadcasted_iota", dimension, len(shape), "dimension",
                                  error=ValueError, negative=False)
    return iota_p.bind(dtype=dtype, shape=shape, dimension=dimension,
                       sharding=check_out_sharding("broadcasted_iota", out_sharding))


def iota(dtype, size: int, *, sharding=None):
    """`[0, 1, ..., size - 1]` of `dtype`."""
    return broadcasted_iota(dtype, (size,), 0, out_sharding=sharding)


def full(shape, fill_value, dtype=None, *, sharding=None):
    """An array of `shape` filled with the scalar `fill_value` (of `dtype` if given,
    else of `fill_value`'s dtype, weakly typed if `fill_value` is)."""
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
    """An array like `x` (its shape and dtype unless given) filled with `fill_value`."""
    aval = get_aval(x)
    if dtype is None:
        dtype, weak_type = aval.dtype, aval.weak_type
    else:
        dtype, weak_type = dtypes.dtype(dtype, canonicalize=True), False
    fill = _converted_fill(fill_value, dtype, weak_type)
    return full(aval.shape if shape is None else shape, fill, sharding=sharding)


def zeros_like_array(x):
    """Zeros of `x`'s shape and dtype."""
    return full_like(x, 0)

"""Block-scaled matmuls: `scaled_matmul` of operands already quantized (narrow float
data with a scale per block of the contracting dimension), and `scaled_dot_general`,
which quantizes high-precision operands itself (mxfp8: float8_e4m3fn data, blocks of
32, power-of-two float8_e8m0fnu scales; nvfp4: float4_e2m1fn data, blocks of 16,
float8_e4m3fn scales under a float32 global scale) and whose gradient quantizes the
cotangent the same way.

JAX runs `scaled_matmul` only on GPU (a cuDNN call, or `lax.scaled_dot` on ROCm);
here it is `lax.scaled_dot` on every backend, so it also runs on CPU.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

import plax
from plax.extend import dtypes
from plax.extend.core import get_aval
from plax_stdlib import lax
from plax_stdlib import numpy as jnp

_MATMUL_DIMS = (((2,), (2,)), ((0,), (0,)))  # (B, M, K) x (B, N, K) -> (B, M, N)


@dataclass(slots=True)
class BlockScaleConfig:
    """How `scaled_dot_general` quantizes one operand (or the cotangent)."""
    mode: str
    block_size: int
    data_type: object
    scale_type: object
    global_scale: object
    infer_only: bool


def get_scaled_dot_general_config(mode, global_scale=None) -> BlockScaleConfig:
    """The block-scaling recipe named `mode`, for `scaled_dot_general`.

    Args:
        mode: `"mxfp8"` (float8_e4m3fn data, one float8_e8m0fnu power-of-two scale per
            block of 32) or `"nvfp4"` (float4_e2m1fn data, one float8_e4m3fn scale per
            block of 16, times a float32 global scale).
        global_scale: for "nvfp4", a float32 array of shape (1,); default one.

    Returns:
        A `BlockScaleConfig` (fields `mode`, `block_size`, `data_type`, `scale_type`,
        `global_scale`, `infer_only`).

    Raises:
        ValueError: an unknown `mode`.

    Examples:
        >>> config = plax.nn.get_scaled_dot_general_config("mxfp8")
        >>> config.block_size, config.data_type.__name__
        (32, 'float8_e4m3fn')
    """
    if mode == "mxfp8":
        return BlockScaleConfig(mode="mxfp8", block_size=32, data_type=dtypes.float8_e4m3fn,
                                scale_type=dtypes.float8_e8m0fnu, global_scale=None,
                                infer_only=False)
    if mode == "nvfp4":
        scale = jnp.ones((1,), np.float32) if global_scale is None else global_scale
        return BlockScaleConfig(mode="nvfp4", block_size=16, data_type=dtypes.float4_e2m1fn,
                                scale_type=dtypes.float8_e4m3fn, global_scale=scale,
                                infer_only=False)
    raise ValueError(f"Unsupported mode: {mode!r} (get_scaled_dot_general_config takes "
                     "'mxfp8' or 'nvfp4')")


def scaled_matmul(lhs, rhs, lhs_scales, rhs_scales, preferred_element_type=np.float32):
    """A batched matmul of block-scaled operands: each operand is multiplied by its scales
    (each scale repeated over a block of the contracting axis) and the products are
    contracted over that axis.

    `lhs` is (B, M, K) and `rhs` is (B, N, K) (both contract their last axis; `rhs`
    is not transposed by the caller); `lhs_scales` is (B, M, K // block) and
    `rhs_scales` (B, N, K // block). Usually the data are low-precision floats
    (float8, float4) and the scales float8_e8m0fnu or float8_e4m3fn, as
    `scaled_dot_general` produces them.

    Args:
        lhs: (B, M, K) array.
        rhs: (B, N, K) array.
        lhs_scales: (B, M, K_a) scales, K a multiple of K_a.
        rhs_scales: (B, N, K_b) scales.
        preferred_element_type: the result's dtype (default float32).

    Returns:
        A (B, M, N) array.

    Raises:
        ValueError: operands that are not 3-D, or whose batch, contracting or scale
            dimensions do not match.

    Examples:
        >>> x = jnp.ones((1, 2, 32), jnp.float8_e4m3fn)
        >>> s = jnp.ones((1, 2, 1), jnp.float8_e8m0fnu)
        >>> plax.nn.scaled_matmul(x, x, s, s)
        Array([[[32., 32.],
                [32., 32.]]], dtype=float32)
    """
    shapes = [get_aval(x).shape for x in (lhs, rhs, lhs_scales, rhs_scales)]
    if any(len(s) != 3 for s in shapes):
        raise ValueError("scaled_matmul requires all inputs to be 3-dimensional arrays, got "
                         f"shapes {shapes} (lhs, rhs, lhs_scales, rhs_scales)")
    (b, m, k), (rb, n, rk), (sb, sm, sk), (tb, tn, tk) = shapes
    if k != rk or b != rb:
        raise ValueError("scaled_matmul requires inputs a and b to have matching batch (B) "
                         f"and contract (K) dimensions, but got shapes {shapes[0]} and "
                         f"{shapes[1]}")
    if sk != tk or sb != tb:
        raise ValueError("scaled_matmul requires scales to have matching batch (B) and "
                         f"contract (K) dimensions, but got shapes {shapes[2]} and "
                         f"{shapes[3]}")
    if sm != m or tn != n:
        raise ValueError("scaled_matmul requires scales to match non-contract dimensions of "
                         f"inputs, but got shapes a: {shapes[0]}, b: {shapes[1]}, a_scales: "
                         f"{shapes[2]}, b_scales: {shapes[3]}")
    preferred = dtypes.check_and_canonicalize_user_dtype(preferred_element_type,
                                                         "scaled_matmul")
    return lax.scaled_dot(lhs, rhs, lhs_scale=lhs_scales, rhs_scale=rhs_scales,
                          dimension_numbers=_MATMUL_DIMS, preferred_element_type=preferred)


# --- quantization ---------------------------------------------------------------------

def _as_matrices(x, contracting, batch):
    """`x` transposed to (batch, free, contracting) dims and reshaped to (B, M, K)."""
    shape = get_aval(x).shape
    free = [d for d in range(len(shape)) if d not in contracting and d not in batch]
    order = sorted(batch) + free + sorted(contracting)
    sizes = [math.prod(shape[d] for d in dims) for dims in (batch, free, contracting)]
    return jnp.reshape(lax.transpose(x, tuple(order)), tuple(sizes))


def _e8m0_rounding_up(scale):
    """The float8_e8m0fnu exponent bits (as uint8) of the least power of two at least
    `scale` (positive float32): the exponent field, plus one when any mantissa bit is
    set, except where that would overflow to NaN or the value is at most 2**-127."""
    bits = lax.bitcast_convert_type(scale.astype(np.float32), np.uint32)
    exponent, mantissa = bits >> 23, bits & 0x7FFFFF
    tiny = (exponent == 0) & (mantissa <= 0x400000)
    up = (mantissa > 0) & (exponent != 0xFE) & ~tiny
    return jnp.where(up, exponent + 1, exponent).astype(np.uint8)


def _e8m0_value(exponent_bits, dtype):
    """2**(e - 127) in `dtype`; the zero exponent as the least power of two the
    division can use (2**-15 in float16, else 2**-127)."""
    value = lax.bitcast_convert_type(exponent_bits.astype(np.uint32) << 23, np.float32)
    floor = 2.0 ** -15 if np.dtype(dtype) == np.float16 else 2.0 ** -127
    return jnp.where(value == 0, np.float32(floor), value).astype(dtype)


def _check_config(config: BlockScaleConfig) -> None:
    """The scale types (and global scale) each mode's quantization is written for."""
    scale_type = np.dtype(config.scale_type)
    if config.mode == "mxfp8":
        if scale_type != np.dtype(dtypes.float8_e8m0fnu) or config.global_scale is not None:
            raise ValueError("scaled_dot_general: an mxfp8 config needs float8_e8m0fnu scales "
                             f"and no global scale, got scale_type {scale_type} and "
                             f"global_scale {config.global_scale!r}")
    elif config.mode == "nvfp4":
        global_dtype = getattr(config.global_scale, "dtype", None)
        if scale_type != np.dtype(dtypes.float8_e4m3fn) or global_dtype != np.float32:
            raise ValueError("scaled_dot_general: an nvfp4 config needs float8_e4m3fn scales "
                             f"and a float32 global scale, got scale_type {scale_type} and a "
                             f"global_scale of dtype {global_dtype}")
    else:
        raise ValueError(f"scaled_dot_general: unrecognized mode {config.mode!r} (the "
                         "configs of get_scaled_dot_general_config are 'mxfp8' or 'nvfp4')")


def quantize(x, config: BlockScaleConfig):
    """`x` (B, M, K) as `config.data_type` data and one `config.scale_type` scale per
    block of K: the block's largest magnitude over the data type's largest value
    (rounded up to a power of two for mxfp8; over the global scale for nvfp4)."""
    shape = get_aval(x).shape
    block = config.block_size
    if shape[-1] < block or shape[-1] % block:
        raise ValueError(f"scaled_dot_general: a contracting size of {shape[-1]} is not a "
                         f"multiple of the {config.mode} block size {block} (operand of shape "
                         f"{shape})")
    blocks = jnp.reshape(x, shape[:-1] + (shape[-1] // block, block))
    data_max = np.asarray(dtypes.finfo(config.data_type).max).astype(blocks.dtype)
    amax = lambda v: jnp.max(jnp.abs(v), axis=-1, keepdims=True) / data_max
    _check_config(config)
    if config.mode == "mxfp8":
        scales = _e8m0_rounding_up(amax(blocks))
        scaled = blocks / _e8m0_value(scales, blocks.dtype)
    elif config.mode == "nvfp4":
        scale_max = np.asarray(dtypes.finfo(config.scale_type).max).astype(blocks.dtype)
        blocks = blocks / config.global_scale
        scales = lax.optimization_barrier(
            jnp.clip(amax(blocks), 0, scale_max).astype(config.scale_type))
        scaled = blocks / scales.astype(np.float32)
    data = jnp.clip(scaled, -data_max, data_max).astype(config.data_type)
    scales = jnp.reshape(scales, scales.shape[:-1])
    if scales.dtype != np.dtype(config.scale_type):
        scales = lax.bitcast_convert_type(scales, config.scale_type)
    return jnp.reshape(data, shape), scales


def _dot_shape(lhs_shape, rhs_shape, lhs_dims, rhs_dims):
    """dot_general's result shape: batch, lhs free, rhs free dims."""
    (lhs_contract, lhs_batch), (rhs_contract, rhs_batch) = lhs_dims, rhs_dims
    free = lambda shape, c, b: [s for d, s in enumerate(shape) if d not in c and d not in b]
    return tuple([lhs_shape[d] for d in sorted(lhs_batch)]
                 + free(lhs_shape, lhs_contract, lhs_batch)
                 + free(rhs_shape, rhs_contract, rhs_batch))


def _quantized_dot(lhs, rhs, dimension_numbers, preferred, configs):
    """The forward product: both operands quantized, `scaled_matmul` of them (in
    float32 then rescaled by both global scales for nvfp4)."""
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    a, a_scales = quantize(_as_matrices(lhs, lhs_contract, lhs_batch), configs[0])
    b, b_scales = quantize(_as_matrices(rhs, rhs_contract, rhs_batch), configs[1])
    nvfp4 = configs[0].mode == "nvfp4"
    out = scaled_matmul(a, b, a_scales, b_scales, np.float32 if nvfp4 else preferred)
    if nvfp4:
        out = (out * (configs[0].global_scale * configs[1].global_scale)).astype(preferred)
    return jnp.reshape(out, _dot_shape(get_aval(lhs).shape, get_aval(rhs).shape,
                                       (lhs_contract, lhs_batch), (rhs_contract, rhs_batch)))


def _cotangent_of_lhs(g, x_aval, y, dimension_numbers, preferred, configs, swap=False):
    """d(x . y) / dx applied to `g`: `g` contracted with `y` over y's free dims (the
    two quantized with `configs` unless nvfp4, whose backward is a plain matmul),
    transposed back to x's layout."""
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    y_shape = get_aval(y).shape
    x_free = [d for d in range(len(x_aval.shape)) if d not in x_contract + x_batch]
    y_free = [d for d in range(len(y_shape)) if d not in y_contract + y_batch]
    n_batch = len(x_batch)
    n_x, n_y = len(x_free), len(y_free)
    g_batch = tuple(range(n_batch))
    g_y = (tuple(range(n_batch, n_batch + n_y)) if swap
           else tuple(range(n_batch + n_x, n_batch + n_x + n_y)))
    g3 = _as_matrices(g, g_y, g_batch)
    y3 = _as_matrices(y, tuple(y_free), tuple(y_batch))
    if configs[0].mode == "nvfp4":
        out = jnp.matmul(g3, jnp.swapaxes(y3, 1, 2), preferred_element_type=preferred)
    else:
        g_q, g_scales = quantize(g3, configs[0])
        y_q, y_scales = quantize(y3, configs[1])
        out = scaled_matmul(g_q, y_q, g_scales, y_scales, preferred)
    out = jnp.reshape(out, _dot_shape(get_aval(g).shape, y_shape, (g_y, g_batch),
                                      (tuple(y_free), tuple(y_batch))))
    x_contract_by_y = [x_contract[i] for i in np.argsort(y_contract)]
    order = list(x_batch) + x_free + x_contract_by_y
    return lax.transpose(out, tuple(int(i) for i in np.argsort(order)))


def _quantized_dot_with_vjp(dimension_numbers, preferred, configs):
    """`_quantized_dot` whose gradient quantizes the cotangent with `configs[2]` (and
    the other operand with its own config); with nvfp4, inputs clipped by the
    forward quantization get a zero gradient (a straight-through estimator)."""
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    swapped = ((y_contract, x_contract), (y_batch, x_batch))

    @plax.custom_vjp
    def product(lhs, rhs):
        return _quantized_dot(lhs, rhs, dimension_numbers, preferred, configs)

    def forward(lhs, rhs):
        return product(lhs, rhs), (lhs, rhs)

    def backward(residuals, g):
        lhs, rhs = residuals
        grad_lhs = _cotangent_of_lhs(g, get_aval(lhs), rhs, dimension_numbers, preferred,
                                     [configs[2], configs[1]])
        grad_rhs = _cotangent_of_lhs(g, get_aval(rhs), lhs, swapped, preferred,
                                     [configs[2], configs[0]], swap=True)
        if configs[2].mode == "nvfp4":
            limit = (np.asarray(dtypes.finfo(configs[0].data_type).max)
                     * np.asarray(dtypes.finfo(configs[0].scale_type).max)).astype(lhs.dtype)
            grad_lhs = jnp.where(jnp.abs(lhs) <= configs[0].global_scale * limit, grad_lhs, 0)
            grad_rhs = jnp.where(jnp.abs(rhs) <= configs[1].global_scale * limit, grad_rhs, 0)
        return grad_lhs, grad_rhs

    product.defvjp(forward, backward)
    return product


_OUTPUT_TYPES = (np.dtype(np.float32), np.dtype(dtypes.bfloat16), np.dtype(np.float16))


def scaled_dot_general(lhs, rhs, dimension_numbers, preferred_element_type=np.float32,
                       configs=None, implementation=None):
    """`lax.dot_general` computed on block-quantized operands (microscaling, e.g. MXFP8).

    Each operand is quantized along its contracting axis in blocks, with one scale per
    block, as `configs` describes, and the product runs as `scaled_matmul`. Its
    gradient quantizes the incoming cotangent with the third config. Without
    `configs`, this is plain `lax.dot_general`.

    Args:
        lhs: an array.
        rhs: an array.
        dimension_numbers: `((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))`,
            as for `lax.dot_general`.
        preferred_element_type: the result's dtype: float32 (default), bfloat16 or float16.
        configs: three `BlockScaleConfig`s (lhs, rhs, cotangent), e.g. from
            `get_scaled_dot_general_config`; None for an unquantized product.
        implementation: ignored (deprecated).

    Returns:
        The product, with `lax.dot_general`'s shape.

    Raises:
        TypeError: an unsupported `preferred_element_type`.

    Examples:
        >>> c = plax.nn.get_scaled_dot_general_config("mxfp8")
        >>> plax.nn.scaled_dot_general(jnp.ones((2, 32)), jnp.ones((32, 2)),
        ...                            (((1,), (0,)), ((), ())), configs=[c, c, c])
        Array([[32., 32.],
               [32., 32.]], dtype=float32)
    """
    if implementation is not None:
        warnings.warn("scaled_dot_general: `implementation` is ignored (the backend is "
                      "chosen automatically)", DeprecationWarning, stacklevel=2)
    if configs is None:
        return lax.dot_general(lhs, rhs, dimension_numbers,
                               preferred_element_type=preferred_element_type)
    preferred = np.dtype(dtypes.dtype(preferred_element_type))
    if preferred not in _OUTPUT_TYPES:
        raise TypeError("scaled_dot_general: preferred_element_type must be float32, "
                        f"bfloat16 or float16, got {preferred}")
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = (
        tuple(tuple(int(d) for d in dims) for dims in pair) for pair in dimension_numbers)
    lhs, rhs = jnp.asarray(lhs), jnp.asarray(rhs)
    unbatched = not lhs_batch and not rhs_batch
    if unbatched:  # a batch of one, as a new last axis of each
        lhs, rhs = lhs[..., None], rhs[..., None]
        lhs_batch, rhs_batch = (lhs.ndim - 1,), (rhs.ndim - 1,)
    dims = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))
    out = _quantized_dot_with_vjp(dims, preferred, list(configs))(lhs, rhs)
    return out[0] if unbatched else out

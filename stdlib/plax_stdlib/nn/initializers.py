"""`plax.nn.initializers`: functions `init(key, shape, dtype)` that make parameters.

Random draws go through the public `plax.random` module. Variance-scaling
initializers (glorot/xavier, he/kaiming, lecun) scale a unit distribution by the
fans of the weight shape: `fan_in` (input size times the receptive field),
`fan_out`, their mean or their geometric mean. Complex dtypes draw the modulus and
the phase separately, with unit mean squared modulus.
"""
from __future__ import annotations

import math
from typing import Any, Protocol, Sequence

import numpy as np

import plax
from plax.extend import dtypes
from plax_stdlib import numpy as jnp
from plax_stdlib.numpy import util

# The standard deviation of a standard normal truncated to (-2, 2), and of the
# modulus of a complex standard normal truncated to 2.
_TRUNCATED_STD = .87962566103423978
_COMPLEX_TRUNCATED_STD = .95311164380491208
_MODES = ("fan_in", "fan_out", "fan_avg", "fan_geo_avg")
_DISTRIBUTIONS = ("truncated_normal", "normal", "uniform")


class Initializer(Protocol):
    """What every initializer is: `init(key, shape, dtype=..., out_sharding=None)`."""

    def __call__(self, key: Any, shape: Sequence[int], dtype: Any = None,
                 out_sharding: Any = None) -> Any:
        ...


def _dtype(dtype) -> np.dtype:
    if dtype is None:
        return np.dtype(dtypes.default_float_dtype())
    return util.check_user_dtype(dtype, "initializer")


def _shape(shape) -> tuple[int, ...]:
    return util.canonicalize_shape(shape, "initializer")


def _placed(x, out_sharding):
    return x if out_sharding is None else plax.device_put(x, out_sharding)


def _is_complex(dtype) -> bool:
    return dtypes.issubdtype(dtype, np.complexfloating)


def zeros(key, shape, dtype=None, out_sharding=None):
    """An array of zeros (`key` is unused)."""
    return _placed(jnp.zeros(_shape(shape), _dtype(dtype)), out_sharding)


def ones(key, shape, dtype=None, out_sharding=None):
    """An array of ones (`key` is unused)."""
    return _placed(jnp.ones(_shape(shape), _dtype(dtype)), out_sharding)


def constant(value, dtype=None) -> Initializer:
    """An initializer filling arrays with `value`."""
    def init(key, shape, dtype=dtype, out_sharding=None):
        return _placed(jnp.full(_shape(shape), value, _dtype(dtype)), out_sharding)
    return init


def uniform(scale=1e-2, dtype=None) -> Initializer:
    """An initializer drawing uniformly from [0, scale)."""
    def init(key, shape, dtype=dtype, out_sharding=None):
        dtype = _dtype(dtype)
        out = plax.random.uniform(key, _shape(shape), dtype) * jnp.array(scale, dtype)
        return _placed(out, out_sharding)
    return init


def normal(stddev=1e-2, dtype=None) -> Initializer:
    """An initializer drawing from a normal distribution of deviation `stddev`."""
    def init(key, shape, dtype=dtype, out_sharding=None):
        dtype = _dtype(dtype)
        out = plax.random.normal(key, _shape(shape), dtype) * jnp.array(stddev, dtype)
        return _placed(out, out_sharding)
    return init


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0) -> Initializer:
    """An initializer drawing from a standard normal truncated to (lower, upper),
    scaled by `stddev` (which is thus not the result's deviation)."""
    def init(key, shape, dtype=dtype, out_sharding=None):
        dtype = _dtype(dtype)
        unit = plax.random.truncated_normal(key, lower, upper, _shape(shape), dtype)
        return _placed(unit * jnp.array(stddev, dtype), out_sharding)
    return init


def _axes_size(shape, axes) -> int:
    if isinstance(axes, int):
        return shape[axes]
    return math.prod(shape[i] for i in axes)


def _fans(shape, in_axis, out_axis, batch_axis) -> tuple[float, float]:
    if len(shape) <= 1:
        raise ValueError(f"Can't compute input and output sizes of a {len(shape)}-dimensional "
                         f"weights tensor (shape {shape}). Must be at least 2D.")
    in_size = _axes_size(shape, in_axis)
    out_size = _axes_size(shape, out_axis)
    receptive_field = math.prod(shape) / in_size / out_size / _axes_size(shape, batch_axis)
    return in_size * receptive_field, out_size * receptive_field


def _complex_parts(key, shape, dtype):
    """Two independent uniform [0, 1) draws of the real dtype under `dtype`, and the
    complex dtype to build from them."""
    real = np.dtype(np.array(0, dtype).real.dtype)
    key_modulus, key_phase = plax.random.split(key)
    return (plax.random.uniform(key_modulus, shape, real),
            plax.random.uniform(key_phase, shape, real), dtypes.to_complex_dtype(real))


def _complex_uniform(key, shape, dtype):
    """Uniform on the unit disk scaled to E|z|² = 1."""
    u_modulus, u_phase, complex_dtype = _complex_parts(key, shape, dtype)
    modulus = jnp.sqrt(2 * u_modulus).astype(complex_dtype)
    return modulus * jnp.exp(1j * (2 * np.pi * u_phase.astype(complex_dtype)))


def _complex_truncated_normal(key, upper, shape, dtype):
    """A complex standard normal with its modulus truncated to `upper`."""
    u_modulus, u_phase, complex_dtype = _complex_parts(key, shape, dtype)
    t = (1 - jnp.exp(jnp.array(-(upper ** 2), complex_dtype))) * u_modulus.astype(complex_dtype)
    modulus = jnp.sqrt(-jnp.log(1 - t))
    return modulus * jnp.exp(1j * (2 * np.pi * u_phase.astype(complex_dtype)))


def variance_scaling(scale, mode: str, distribution: str, in_axis=-2, out_axis=-1,
                     batch_axis=(), dtype=None) -> Initializer:
    """An initializer whose draws have variance `scale / n`, n the fan that `mode`
    names, from a truncated normal, a normal or a uniform `distribution`."""
    if mode not in _MODES:
        raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
    if distribution not in _DISTRIBUTIONS:
        raise ValueError(f"invalid distribution for variance scaling initializer: "
                         f"{distribution}")

    def init(key, shape, dtype=dtype, out_sharding=None):
        shape, dtype = _shape(shape), _dtype(dtype)
        fan_in, fan_out = _fans(shape, in_axis, out_axis, batch_axis)
        fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2,
               "fan_geo_avg": (fan_in * fan_out) ** 0.5}[mode]
        variance = jnp.array(scale / fan, dtype=dtype)
        if distribution == "truncated_normal":
            if _is_complex(dtype):
                out = (_complex_truncated_normal(key, 2, shape, dtype)
                       * (jnp.sqrt(variance) / jnp.array(_COMPLEX_TRUNCATED_STD, dtype)))
            else:
                out = (plax.random.truncated_normal(key, -2, 2, shape, dtype)
                       * (jnp.sqrt(variance) / jnp.array(_TRUNCATED_STD, dtype)))
        elif distribution == "normal":
            out = plax.random.normal(key, shape, dtype) * jnp.sqrt(variance)
        elif _is_complex(dtype):
            out = _complex_uniform(key, shape, dtype) * jnp.sqrt(variance)
        else:
            out = plax.random.uniform(key, shape, dtype, -1) * jnp.sqrt(3 * variance)
        return _placed(out, out_sharding)
    return init


def _variance_scaling_preset(name: str, scale: float, mode: str, distribution: str,
                             doc: str):
    def make(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
        return variance_scaling(scale, mode, distribution, in_axis=in_axis,
                                out_axis=out_axis, batch_axis=batch_axis, dtype=dtype)
    make.__name__ = make.__qualname__ = name
    make.__doc__ = doc
    return make


glorot_uniform = _variance_scaling_preset(
    "glorot_uniform", 1.0, "fan_avg", "uniform",
    "Glorot (Xavier) uniform: variance 2 / (fan_in + fan_out).")
glorot_normal = _variance_scaling_preset(
    "glorot_normal", 1.0, "fan_avg", "truncated_normal",
    "Glorot (Xavier) truncated normal: variance 2 / (fan_in + fan_out).")
lecun_uniform = _variance_scaling_preset(
    "lecun_uniform", 1.0, "fan_in", "uniform", "LeCun uniform: variance 1 / fan_in.")
lecun_normal = _variance_scaling_preset(
    "lecun_normal", 1.0, "fan_in", "truncated_normal",
    "LeCun truncated normal: variance 1 / fan_in.")
he_uniform = _variance_scaling_preset(
    "he_uniform", 2.0, "fan_in", "uniform", "He (Kaiming) uniform: variance 2 / fan_in.")
he_normal = _variance_scaling_preset(
    "he_normal", 2.0, "fan_in", "truncated_normal",
    "He (Kaiming) truncated normal: variance 2 / fan_in.")
xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal


def orthogonal(scale=1.0, column_axis: int = -1, dtype=None) -> Initializer:
    """An initializer of (semi-)orthogonal matrices: the columns along `column_axis`
    against all other axes flattened, times `scale` (the Q of a Gaussian's QR, its
    signs fixed by R's diagonal so the distribution is uniform)."""
    def init(key, shape, dtype=dtype, out_sharding=None):
        shape, dtype = _shape(shape), _dtype(dtype)
        if len(shape) < 2:
            raise ValueError("orthogonal initializer requires at least a 2D shape, got "
                             f"{shape}")
        n_cols = shape[column_axis]
        n_rows = math.prod(shape) // n_cols
        wide = n_rows < n_cols
        draws = plax.random.normal(key, (n_cols, n_rows) if wide else (n_rows, n_cols), dtype)
        q, r = jnp.linalg.qr(draws)
        q = q * jnp.sign(jnp.diagonal(r, axis1=-2, axis2=-1))
        if wide:
            q = q.T
        rest = tuple(np.delete(shape, column_axis))
        q = jnp.moveaxis(jnp.reshape(q, rest + (n_cols,)), -1, column_axis)
        return _placed(jnp.array(scale, dtype) * q, out_sharding)
    return init


def delta_orthogonal(scale=1.0, column_axis: int = -1, dtype=None) -> Initializer:
    """The delta-orthogonal initializer of convolution kernels (Xiao et al., 2018): an
    orthogonal matrix over the last two axes at the spatial centre, zeros elsewhere."""
    def init(key, shape, dtype=dtype, out_sharding=None):
        shape, dtype = _shape(shape), _dtype(dtype)
        if len(shape) not in (3, 4, 5):
            raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape, "
                             f"got {shape}")
        if shape[-2] > shape[-1]:
            raise ValueError("`fan_in` must be less or equal than `fan_out`, got shape "
                             f"{shape}")
        matrix = orthogonal(scale, column_axis, dtype)(key, shape[-2:])
        centre = tuple((k - 1) // 2 for k in shape[:-2])
        return _placed(jnp.zeros(shape, dtype).at[centre].set(matrix), out_sharding)
    return init

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

__all__ = ["Initializer", "constant", "delta_orthogonal", "glorot_normal", "glorot_uniform",
           "he_normal", "he_uniform", "kaiming_normal", "kaiming_uniform", "lecun_normal",
           "lecun_uniform", "normal", "ones", "orthogonal", "truncated_normal", "uniform",
           "variance_scaling", "xavier_normal", "xavier_uniform", "zeros"]


class Initializer(Protocol):
    """The interface every initializer has: `init(key, shape, dtype=None, out_sharding=None)`.

    An initializer makes a parameter array: `key` is a PRNG key (ignored by the
    deterministic ones), `shape` the array's shape, `dtype` its dtype (default: the
    default float type, or the dtype given when the initializer was made) and
    `out_sharding` an optional Sharding to place the result with. The functions of
    `plax.nn.initializers` either are initializers (`zeros`, `ones`) or make one
    (`normal(stddev)`, `glorot_uniform()`...).

    Examples:
        >>> init: plax.nn.initializers.Initializer = plax.nn.initializers.normal(0.1)
        >>> init(plax.random.key(0), (2, 3)).shape
        (2, 3)
    """

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
    """An initializer that returns an array of zeros.

    Args:
        key: a PRNG key (unused; accepted so every initializer has one signature).
        shape: the array's shape.
        dtype: its dtype; default the default float type.
        out_sharding: an optional Sharding to place the result with.

    Returns:
        An array of zeros.

    Examples:
        >>> plax.nn.initializers.zeros(plax.random.key(0), (2, 3))
        Array([[0., 0., 0.],
               [0., 0., 0.]], dtype=float32)
    """
    return _placed(jnp.zeros(_shape(shape), _dtype(dtype)), out_sharding)


def ones(key, shape, dtype=None, out_sharding=None):
    """An initializer that returns an array of ones.

    Args:
        key: a PRNG key (unused).
        shape: the array's shape.
        dtype: its dtype; default the default float type.
        out_sharding: an optional Sharding to place the result with.

    Returns:
        An array of ones.

    Examples:
        >>> plax.nn.initializers.ones(plax.random.key(0), (2,), jnp.int32)
        Array([1, 1], dtype=int32)
    """
    return _placed(jnp.ones(_shape(shape), _dtype(dtype)), out_sharding)


def constant(value, dtype=None) -> Initializer:
    """Makes an initializer that fills its arrays with `value`.

    Args:
        value: the fill value (a scalar, or an array broadcastable to the shapes asked
            for).
        dtype: the default dtype of the arrays made (default: the default float type).

    Returns:
        An `Initializer`.

    Examples:
        >>> init = plax.nn.initializers.constant(0.5)
        >>> init(plax.random.key(0), (2,))
        Array([0.5, 0.5], dtype=float32)
    """
    def init(key, shape, dtype=dtype, out_sharding=None):
        return _placed(jnp.full(_shape(shape), value, _dtype(dtype)), out_sharding)
    return init


def uniform(scale=1e-2, dtype=None) -> Initializer:
    """Makes an initializer that draws uniformly from `[0, scale)`.

    Note the range starts at 0 (not `-scale`), as in JAX.

    Args:
        scale: the upper bound of the range.
        dtype: the default dtype of the arrays made.

    Returns:
        An `Initializer`.

    Examples:
        >>> w = plax.nn.initializers.uniform(2.0)(plax.random.key(0), (100,))
        >>> bool(jnp.all((w >= 0) & (w < 2)))
        True
    """
    def init(key, shape, dtype=dtype, out_sharding=None):
        dtype = _dtype(dtype)
        out = plax.random.uniform(key, _shape(shape), dtype) * jnp.array(scale, dtype)
        return _placed(out, out_sharding)
    return init


def normal(stddev=1e-2, dtype=None) -> Initializer:
    """Makes an initializer that draws from a normal distribution with mean 0 and standard
    deviation `stddev`.

    Args:
        stddev: the standard deviation.
        dtype: the default dtype of the arrays made.

    Returns:
        An `Initializer`.

    Examples:
        >>> w = plax.nn.initializers.normal(0.1)(plax.random.key(0), (2, 3))
        >>> w.shape, w.dtype
        ((2, 3), dtype('float32'))
    """
    def init(key, shape, dtype=dtype, out_sharding=None):
        dtype = _dtype(dtype)
        out = plax.random.normal(key, _shape(shape), dtype) * jnp.array(stddev, dtype)
        return _placed(out, out_sharding)
    return init


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0) -> Initializer:
    """Makes an initializer that draws a standard normal truncated to `(lower, upper)` and
    multiplies it by `stddev`.

    Because of the truncation the draws' standard deviation is smaller than `stddev`
    (about 0.88 · stddev for the default bounds).

    Args:
        stddev: the scale applied to the truncated unit normal.
        dtype: the default dtype of the arrays made.
        lower: the lower truncation bound, in units of `stddev`.
        upper: the upper truncation bound, in units of `stddev`.

    Returns:
        An `Initializer`.

    Examples:
        >>> w = plax.nn.initializers.truncated_normal(1.0)(plax.random.key(0), (1000,))
        >>> bool(jnp.all(jnp.abs(w) < 2))
        True
    """
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
    """Makes an initializer whose draws have variance `scale / n`, where n is a "fan"
    of the weight's shape.

    The fans are computed from the shape: `fan_in` is the size of `in_axis` times the
    receptive field (the product of the axes that are neither in, out nor batch axes,
    e.g. a convolution's spatial axes), `fan_out` likewise with `out_axis`. `mode`
    picks n: `"fan_in"`, `"fan_out"`, `"fan_avg"` (their mean) or `"fan_geo_avg"`
    (their geometric mean). The draws come from a truncated normal (rescaled so the
    variance is exact), a normal, or a uniform distribution. Complex dtypes draw the
    modulus and the phase separately. `glorot_*`, `he_*` and `lecun_*` are presets of
    this function.

    Args:
        scale: the variance numerator.
        mode: "fan_in", "fan_out", "fan_avg" or "fan_geo_avg".
        distribution: "truncated_normal", "normal" or "uniform".
        in_axis: the input axis (or axes) of the weights.
        out_axis: the output axis (or axes).
        batch_axis: axes that are neither (left out of the fans).
        dtype: the default dtype of the arrays made.

    Returns:
        An `Initializer`; calling it on a shape of fewer than 2 dimensions raises
        ValueError (the fans are undefined).

    Raises:
        ValueError: an unknown `mode` or `distribution`.

    Examples:
        >>> init = plax.nn.initializers.variance_scaling(1.0, "fan_in", "uniform")
        >>> w = init(plax.random.key(0), (3, 4))  # fan_in = 3: |w| < sqrt(3 / 3)
        >>> bool(jnp.all(jnp.abs(w) < 1.0))
        True
    """
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
                             summary: str, fan: str):
    """A named `variance_scaling` preset; its docstring is written from the table below."""
    def make(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
        return variance_scaling(scale, mode, distribution, in_axis=in_axis,
                                out_axis=out_axis, batch_axis=batch_axis, dtype=dtype)
    make.__name__ = make.__qualname__ = name
    make.__doc__ = _PRESET_DOC.format(name=name, summary=summary, scale=scale, mode=mode,
                                      distribution=distribution, fan=fan)
    return make


_PRESET_DOC = """{summary}

    The same as `variance_scaling({scale}, "{mode}", "{distribution}")`: the draws have
    variance {fan}, where the fans count the weight's input and output axes times
    its receptive field (see `variance_scaling`).

    Args:
        in_axis: the input axis (or axes) of the weights.
        out_axis: the output axis (or axes).
        batch_axis: axes left out of the fans.
        dtype: the default dtype of the arrays made.

    Returns:
        An `Initializer`.

    Examples:
        >>> init = plax.nn.initializers.{name}()
        >>> w = init(plax.random.key(0), (64, 32))
        >>> w.shape, w.dtype
        ((64, 32), dtype('float32'))
    """

# name, scale, mode, distribution, summary, variance
glorot_uniform = _variance_scaling_preset(
    "glorot_uniform", 1.0, "fan_avg", "uniform",
    "Makes the Glorot (Xavier) uniform initializer, for layers with tanh or sigmoid "
    "activations.", "2 / (fan_in + fan_out)")
glorot_normal = _variance_scaling_preset(
    "glorot_normal", 1.0, "fan_avg", "truncated_normal",
    "Makes the Glorot (Xavier) truncated-normal initializer, for layers with tanh or "
    "sigmoid activations.", "2 / (fan_in + fan_out)")
lecun_uniform = _variance_scaling_preset(
    "lecun_uniform", 1.0, "fan_in", "uniform",
    "Makes the LeCun uniform initializer (the one `selu` networks expect).", "1 / fan_in")
lecun_normal = _variance_scaling_preset(
    "lecun_normal", 1.0, "fan_in", "truncated_normal",
    "Makes the LeCun truncated-normal initializer (the one `selu` networks expect).",
    "1 / fan_in")
he_uniform = _variance_scaling_preset(
    "he_uniform", 2.0, "fan_in", "uniform",
    "Makes the He (Kaiming) uniform initializer, for layers with relu activations.",
    "2 / fan_in")
he_normal = _variance_scaling_preset(
    "he_normal", 2.0, "fan_in", "truncated_normal",
    "Makes the He (Kaiming) truncated-normal initializer, for layers with relu "
    "activations.", "2 / fan_in")
xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal


def orthogonal(scale=1.0, column_axis: int = -1, dtype=None) -> Initializer:
    """Makes an initializer of (semi-)orthogonal matrices, times `scale`.

    The array is viewed as a matrix whose columns run along `column_axis` and whose
    rows are all the other axes flattened; that matrix has orthonormal columns (or
    rows, when there are fewer rows than columns). It is the Q factor of the QR
    decomposition of a Gaussian matrix, with signs fixed so its distribution is
    uniform over orthogonal matrices.

    Args:
        scale: multiplies the orthogonal matrix.
        column_axis: the axis of the columns.
        dtype: the default dtype of the arrays made.

    Returns:
        An `Initializer`; a shape of fewer than 2 dimensions raises ValueError.

    Examples:
        >>> q = plax.nn.initializers.orthogonal()(plax.random.key(0), (3, 3))
        >>> jnp.round(q.T @ q, 3)
        Array([[1., 0., 0.],
               [0., 1., 0.],
               [0., 0., 1.]], dtype=float32)
    """
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
    """Makes the delta-orthogonal initializer of convolution kernels (Xiao et al., 2018).

    The kernel (spatial axes first, then input and output channels) is zero except at
    the spatial centre, where it holds an orthogonal (input × output) matrix, so the
    convolution starts as an orthogonal map that preserves signal norms.

    Args:
        scale: multiplies the orthogonal matrix.
        column_axis: the axis of the columns of that matrix.
        dtype: the default dtype of the arrays made.

    Returns:
        An `Initializer` for 3-, 4- or 5-D shapes whose input channels do not exceed the
        output channels; other shapes raise ValueError.

    Examples:
        >>> w = plax.nn.initializers.delta_orthogonal()(plax.random.key(0), (3, 2, 2))
        >>> w[0]  # away from the centre: zeros
        Array([[0., 0.],
               [0., 0.]], dtype=float32)
        >>> jnp.round(w[1].T @ w[1], 3)
        Array([[1., 0.],
               [0., 1.]], dtype=float32)
    """
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

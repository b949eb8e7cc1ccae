"""Elementwise activation functions of `plax.nn`, with `jax.nn`'s definitions.

Each is compiled once per signature (`plax.jit`) where JAX's is (all but `gelu`);
`relu` is JAX's `custom_jvp` of a compiled `maximum`. Other piecewise functions
are written with `where`, so their derivative at a kink is the one JAX documents
(relu'(0) = 0) and NaN inputs stay NaN.
"""
from __future__ import annotations

import functools

import numpy as np

import plax
from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.numpy import util


def _array(name: str, x):
    return util.ensure_arraylike(name, x)


def _zero_unless_nan(x):
    """0 where x is a number, x (NaN) where it is not."""
    return jnp.where(x == x, jnp.zeros_like(x), x)


@plax.jit
def identity(x):
    """The identity: returns `x` as an array."""
    return jnp.asarray(_array("identity", x))


@functools.cache
def _relu_with_rule():
    """max(x, 0) compiled as its own call, differentiated by a rule (JAX's shape of
    relu, so its Jaxpr, HLO and derivatives are JAX's); made on first use, since
    `custom_jvp` is a transform reached through the facade."""
    @plax.custom_jvp
    @plax.jit
    def relu(x):
        return jnp.maximum(x, 0)
    relu.defjvps(lambda g, ans, x: lax.select(x > 0, g, lax.full_like(g, 0)))
    return relu


def relu(x):
    """The rectified linear unit, `max(x, 0)`, elementwise.

    Its derivative is 1 for positive inputs and 0 elsewhere (0 at 0 too, as in
    JAX). NaNs propagate.

    Args:
        x: an array (or scalar).

    Returns:
        An array of `x`'s shape and dtype.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> plax.nn.relu(jnp.array([-1.0, 0.0, 2.0]))
        Array([0., 0., 2.], dtype=float32)
        >>> plax.grad(plax.nn.relu)(0.0)
        Array(0., dtype=float32, weak_type=True)
    """
    return _relu_with_rule()(_array("relu", x))


@plax.jit
def relu6(x):
    """min(max(x, 0), 6), with derivative 0 at 0 and 6 (integers become floats, as
    with JAX's float bound)."""
    x = _array("relu6", x)
    return jnp.where(x > 0, jnp.where(x < 6, x, 6.0), _zero_unless_nan(x))


@plax.jit
def squareplus(x, b=4):
    """(x + sqrt(x² + b)) / 2, a smooth relu."""
    x = _array("squareplus", x)
    return (x + jnp.sqrt(jnp.square(x) + b)) / 2


@plax.jit
def softplus(x):
    """log(1 + e^x), computed without overflow."""
    return jnp.logaddexp(_array("softplus", x), 0)


@plax.jit
def sparse_plus(x):
    """0 below -1, (x + 1)² / 4 on (-1, 1), x from 1 on."""
    x = _array("sparse_plus", x)
    return jnp.where(x <= -1.0, 0.0, jnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


@plax.jit
def soft_sign(x):
    """x / (|x| + 1)."""
    x = _array("soft_sign", x)
    return x / (jnp.abs(x) + 1)


@plax.jit
def sigmoid(x):
    """The logistic function `1 / (1 + exp(-x))`, elementwise, mapping reals to (0, 1).

    Args:
        x: an array (or scalar).

    Returns:
        An array of `x`'s shape and (inexact) dtype.

    Examples:
        >>> import plax
        >>> plax.nn.sigmoid(0.0)
        Array(0.5, dtype=float32, weak_type=True)
    """
    return lax.logistic(_array("sigmoid", x))


@plax.jit
def sparse_sigmoid(x):
    """0 below -1, (x + 1) / 2 on (-1, 1), 1 from 1 on."""
    return 0.5 * jnp.clip(_array("sparse_sigmoid", x) + 1.0, 0.0, 2.0)


@plax.jit
def silu(x):
    """The sigmoid linear unit (also called swish), `x * sigmoid(x)`, elementwise.

    Smooth and non-monotonic: slightly negative for negative inputs, close to `x`
    for large ones. Takes an array `x` and returns one of its shape and (inexact)
    dtype.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> plax.nn.silu(jnp.array([0.0, 1.0]))
        Array([0. , 0.731...], dtype=float32)
    """
    x = _array("silu", x)
    return x * sigmoid(x)


swish = silu


@plax.jit
def mish(x):
    """x · tanh(softplus(x))."""
    x = _array("mish", x)
    return x * jnp.tanh(softplus(x))


@plax.jit
def log_sigmoid(x):
    """log(sigmoid(x)) = -softplus(-x), accurate for large |x|."""
    return -softplus(-_array("log_sigmoid", x))


@plax.jit
def log1mexp(x):
    """log(1 - e^-x) for x > 0, accurate near 0 and for large x."""
    x = _array("log1mexp", x)
    return jnp.where(x > np.log(2), jnp.log1p(-jnp.exp(-x)), jnp.log(-jnp.expm1(-x)))


@plax.jit
def elu(x, alpha=1.0):
    """x for x > 0, alpha (e^x - 1) otherwise."""
    x = _array("elu", x)
    return jnp.where(x > 0, x, alpha * jnp.expm1(jnp.where(x > 0, 0.0, x)))


@plax.jit
def leaky_relu(x, negative_slope=1e-2):
    """x for x ≥ 0, negative_slope · x otherwise."""
    x = _array("leaky_relu", x)
    return jnp.where(x >= 0, x, negative_slope * x)


@plax.jit
def hard_tanh(x):
    """x clipped to [-1, 1] (derivative 1 at ±1)."""
    x = _array("hard_tanh", x)
    return jnp.where(x > 1, 1, jnp.where(x < -1, -1, x))


@plax.jit
def celu(x, alpha=1.0):
    """max(x, 0) + alpha (e^(min(x, 0) / alpha) - 1): continuously differentiable elu."""
    x = _array("celu", x)
    return jnp.maximum(x, 0.0) + alpha * jnp.expm1(jnp.minimum(x, 0.0) / alpha)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


@plax.jit
def selu(x):
    """Scaled elu with the self-normalizing constants of Klambauer et al. (2017)."""
    return _SELU_SCALE * elu(_array("selu", x), _SELU_ALPHA)


# Not compiled as a call: JAX 0.10.2 runs gelu op by op (its Jaxpr is inline).
def gelu(x, approximate: bool = True):
    """The Gaussian error linear unit, `x * Φ(x)` (Φ the standard normal CDF).

    Args:
        x: an array.
        approximate: use the tanh approximation (the default, as in JAX) instead
            of the exact `erf` form.

    Returns:
        An array of `x`'s shape and (inexact) dtype.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> plax.nn.gelu(jnp.array([0.0, 1.0]))
        Array([0. , 0.841...], dtype=float32)
    """
    x = _array("gelu", x)
    dtype = util.dtype_of(x)
    if approximate:
        inner = np.sqrt(2 / np.pi).astype(dtype) * (x + 0.044715 * x ** 3)
        return x * (0.5 * (1.0 + jnp.tanh(inner)))
    return jnp.asarray(0.5 * x * lax.erfc(-x * np.sqrt(0.5).astype(dtype)), dtype=dtype)


@plax.jit(static_argnames=("axis",))
def glu(x, axis: int = -1):
    """The gated linear unit: the first half of `x` along `axis` times the sigmoid of
    the second half."""
    x = _array("glu", x)
    size = np.shape(x)[axis]
    if size % 2:
        raise ValueError(f"glu: axis {axis} of an array of shape {np.shape(x)} has odd "
                         f"size {size}; it must split into two halves")
    first, second = jnp.split(x, 2, axis)
    return first * sigmoid(second)


@plax.jit
def hard_sigmoid(x):
    """relu6(x + 3) / 6, a piecewise linear sigmoid."""
    return relu6(_array("hard_sigmoid", x) + 3.0) / 6.0


@plax.jit
def hard_silu(x):
    """x · hard_sigmoid(x) (also called hard_swish)."""
    x = _array("hard_silu", x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu
tanh = jnp.tanh

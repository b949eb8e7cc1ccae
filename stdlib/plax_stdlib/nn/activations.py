"""Elementwise activation functions of `plax.nn`, with `jax.nn`'s definitions.

Each is compiled once per signature (`plax.jit`) where JAX's is (all but `gelu`);
`relu` and `relu6` are JAX's `custom_jvp`s of a compiled `maximum` (and
`minimum`). Other piecewise functions
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


@plax.jit
def identity(x):
    """The identity activation: returns `x` unchanged, as an array.

    Useful as a placeholder where a layer takes an activation function.

    Args:
        x: an array or a Python scalar.

    Returns:
        `x` as an array, same shape and dtype.

    Examples:
        >>> plax.nn.identity(jnp.array([-1.0, 2.0]))
        Array([-1.,  2.], dtype=float32)
    """
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


@functools.cache
def _relu6_with_rule():
    """min(max(x, 0), 6) compiled as its own call and differentiated by a rule that
    passes the cotangent strictly between the kinks (JAX's shape of relu6)."""
    @plax.custom_jvp
    @plax.jit
    def relu6(x):
        return jnp.minimum(jnp.maximum(x, 0), 6.0)
    relu6.defjvps(lambda g, ans, x: lax.select((x > 0) & (x < 6), g, lax.full_like(g, 0)))
    return relu6


def relu6(x):
    """The rectified linear unit capped at 6: `min(max(x, 0), 6)`, elementwise.

    The derivative is 1 strictly between 0 and 6 and 0 elsewhere (0 at both kinks, as
    in JAX). Integer inputs give a float result, because the upper bound is the float 6.

    Args:
        x: an array (or scalar).

    Returns:
        An array of `x`'s shape.

    Examples:
        >>> plax.nn.relu6(jnp.array([-2.0, 3.0, 8.0]))
        Array([0., 3., 6.], dtype=float32)
    """
    return _relu6_with_rule()(_array("relu6", x))


@plax.jit
def squareplus(x, b=4):
    """The squareplus activation `(x + sqrt(x**2 + b)) / 2`, a smooth, algebraic relu.

    Args:
        x: an array (or scalar).
        b: the smoothing constant (non-negative); `b = 0` gives exactly `relu`.

    Returns:
        An array of `x`'s shape and (inexact) dtype.

    Examples:
        >>> plax.nn.squareplus(jnp.array([-2.0, 0.0, 2.0]))
        Array([0.414..., 1. , 2.414...], dtype=float32)
    """
    x = _array("squareplus", x)
    return (x + jnp.sqrt(jnp.square(x) + b)) / 2


@plax.jit
def softplus(x):
    """The softplus activation `log(1 + exp(x))`, elementwise: a smooth relu.

    Computed as `logaddexp(x, 0)`, so large positive `x` do not overflow (the result
    tends to `x`) and large negative ones do not underflow to a rounding error.

    Args:
        x: an array (or scalar).

    Returns:
        An array of `x`'s shape and (inexact) dtype, everywhere positive.

    Examples:
        >>> plax.nn.softplus(jnp.array([0.0, 100.0]))
        Array([ 0.693..., 100. ], dtype=float32)
    """
    return jnp.logaddexp(_array("softplus", x), 0)


@plax.jit
def sparse_plus(x):
    """The sparse-plus activation: 0 for `x <= -1`, `(x + 1)**2 / 4` on `(-1, 1)` and
    `x` for `x >= 1`.

    A piecewise-quadratic softplus whose output is exactly 0 on the left (hence
    "sparse"); it is continuously differentiable.

    Args:
        x: an array (or scalar).

    Returns:
        An array of `x`'s shape and (inexact) dtype.

    Examples:
        >>> plax.nn.sparse_plus(jnp.array([-2.0, 0.0, 2.0]))
        Array([0.  , 0.25, 2.  ], dtype=float32)
    """
    x = _array("sparse_plus", x)
    return jnp.where(x <= -1.0, 0.0, jnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


@plax.jit
def soft_sign(x):
    """The softsign activation `x / (|x| + 1)`, elementwise, with values in (-1, 1).

    Args:
        x: an array (or scalar).

    Returns:
        An array of `x`'s shape.

    Examples:
        >>> plax.nn.soft_sign(jnp.array([-1.0, 0.0, 3.0]))
        Array([-0.5 , 0. , 0.75], dtype=float32)
    """
    x = _array("soft_sign", x)
    return x / (jnp.abs(x) + 1)


@plax.jit(inline=True)  # as JAX's: a Jaxpr shows the bare `logistic`
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
    """The sparse sigmoid: 0 for `x <= -1`, `(x + 1) / 2` on `(-1, 1)`, 1 for `x >= 1`.

    It is the derivative of `sparse_plus`: a piecewise-linear sigmoid that reaches 0
    and 1 exactly.

    Args:
        x: an array (or scalar).

    Returns:
        An array of `x`'s shape and (inexact) dtype, with values in [0, 1].

    Examples:
        >>> plax.nn.sparse_sigmoid(jnp.array([-2.0, 0.0, 2.0]))
        Array([0. , 0.5, 1. ], dtype=float32)
    """
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
    """The mish activation `x * tanh(softplus(x))`, elementwise.

    A smooth, non-monotonic relu-like function, slightly negative for negative `x`.

    Args:
        x: an array (or scalar).

    Returns:
        An array of `x`'s shape and (inexact) dtype.

    Examples:
        >>> plax.nn.mish(jnp.array([-2.0, 0.0, 2.0]))
        Array([-0.252...,  0. ,  1.943...], dtype=float32)
    """
    x = _array("mish", x)
    return x * jnp.tanh(softplus(x))


@plax.jit
def log_sigmoid(x):
    """The logarithm of the sigmoid, `log(sigmoid(x)) = -softplus(-x)`, elementwise.

    Written through `softplus`, so it stays accurate where `jnp.log(sigmoid(x))`
    would round to `log(0) = -inf` (large negative `x`). It is the log-likelihood
    term of binary logistic regression.

    Args:
        x: an array (or scalar).

    Returns:
        An array of `x`'s shape and (inexact) dtype, everywhere negative.

    Examples:
        >>> plax.nn.log_sigmoid(jnp.array([0.0, -200.0]))
        Array([  -0.693..., -200. ], dtype=float32)
    """
    return -softplus(-_array("log_sigmoid", x))


@plax.custom_jvp
@plax.jit
def log1mexp(x):
    """`log(1 - exp(-x))` for positive `x`, computed accurately.

    Two formulas are used (`log1p(-exp(-x))` above `log(2)`, `log(-expm1(-x))` below),
    so neither small `x` (where `1 - exp(-x)` cancels) nor large `x` loses precision.
    The result is NaN for negative `x` and `-inf` at 0.

    Args:
        x: an array (or scalar) of positive values.

    Returns:
        An array of `x`'s shape and (inexact) dtype.

    Examples:
        >>> plax.nn.log1mexp(jnp.array([0.5, 2.0]))
        Array([-0.932..., -0.145...], dtype=float32)
    """
    x = _array("log1mexp", x)
    return jnp.where(x < jnp.log(2.0), jnp.log(-jnp.expm1(-x)), jnp.log1p(-jnp.exp(-x)))


log1mexp.defjvps(lambda g, _, x: g / jnp.expm1(x))  # (a rule, as JAX's: finite near 0⁺)


@plax.jit
def elu(x, alpha=1.0):
    """The exponential linear unit: `x` for `x > 0`, `alpha * (exp(x) - 1)` otherwise.

    Args:
        x: an array (or scalar).
        alpha: the scale of the negative branch, which tends to `-alpha`.

    Returns:
        An array of `x`'s shape and (inexact) dtype.

    Examples:
        >>> plax.nn.elu(jnp.array([-2.0, 0.0, 2.0]))
        Array([-0.864...,  0. ,  2. ], dtype=float32)
    """
    x = _array("elu", x)
    return jnp.where(x > 0, x, alpha * jnp.expm1(jnp.where(x > 0, 0.0, x)))


@plax.jit
def leaky_relu(x, negative_slope=1e-2):
    """The leaky relu: `x` for `x >= 0`, `negative_slope * x` otherwise.

    Unlike `relu`, negative inputs keep a small gradient (`negative_slope`).

    Args:
        x: an array (or scalar).
        negative_slope: the slope for negative inputs (JAX's default, 0.01).

    Returns:
        An array of `x`'s shape.

    Examples:
        >>> plax.nn.leaky_relu(jnp.array([-2.0, 0.0, 2.0]))
        Array([-0.02,  0.  ,  2.  ], dtype=float32)
    """
    x = _array("leaky_relu", x)
    return jnp.where(x >= 0, x, negative_slope * x)


@plax.jit
def hard_tanh(x):
    """`x` clipped to [-1, 1], a piecewise-linear tanh.

    The derivative is 1 on [-1, 1] (including at the kinks, as in JAX) and 0 outside.

    Args:
        x: an array (or scalar).

    Returns:
        An array of `x`'s shape.

    Examples:
        >>> plax.nn.hard_tanh(jnp.array([-2.0, 0.5, 2.0]))
        Array([-1. ,  0.5,  1. ], dtype=float32)
    """
    x = _array("hard_tanh", x)
    return jnp.where(x > 1, 1, jnp.where(x < -1, -1, x))


@plax.jit
def celu(x, alpha=1.0):
    """The continuously differentiable elu: `max(x, 0) + alpha * (exp(min(x, 0) / alpha) - 1)`.

    Its derivative at 0 is 1 for every `alpha` (elu's is only continuous for
    `alpha = 1`).

    Args:
        x: an array (or scalar).
        alpha: the scale of the negative branch (non-zero).

    Returns:
        An array of `x`'s shape and (inexact) dtype.

    Examples:
        >>> plax.nn.celu(jnp.array([-2.0, 0.0, 2.0]), alpha=2.0)
        Array([-1.264...,  0. ,  2. ], dtype=float32)
    """
    x = _array("celu", x)
    return jnp.maximum(x, 0.0) + alpha * jnp.expm1(jnp.minimum(x, 0.0) / alpha)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


@plax.jit
def selu(x):
    """The scaled exponential linear unit: `scale * elu(x, alpha)` with the fixed
    constants alpha ≈ 1.6733 and scale ≈ 1.0507.

    With these constants, activations of a suitably initialized network
    (`plax.nn.initializers.lecun_normal`) keep zero mean and unit variance from layer to
    layer (Klambauer et al., 2017, "self-normalizing networks").

    Args:
        x: an array (or scalar).

    Returns:
        An array of `x`'s shape and (inexact) dtype.

    Examples:
        >>> plax.nn.selu(jnp.array([-2.0, 0.0, 2.0]))
        Array([-1.520...,  0. ,  2.101...], dtype=float32)
    """
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
    x, = util.promote_args_inexact("gelu", x)  # an integer's constants are not truncated
    dtype = util.dtype_of(x)
    if approximate:
        inner = np.sqrt(2 / np.pi).astype(dtype) * (x + 0.044715 * x ** 3)
        return x * (0.5 * (1.0 + jnp.tanh(inner)))
    return jnp.asarray(0.5 * x * lax.erfc(-x * np.sqrt(0.5).astype(dtype)), dtype=dtype)


@plax.jit(static_argnames=("axis",))
def glu(x, axis: int = -1):
    """The gated linear unit: `x` is split in two halves `a, b` along `axis`, and the
    result is `a * sigmoid(b)`.

    Args:
        x: an array whose `axis` has even size.
        axis: the axis to split (static).

    Returns:
        An array of `x`'s shape with `axis` halved.

    Raises:
        ValueError: `x`'s size along `axis` is odd.

    Examples:
        >>> plax.nn.glu(jnp.array([1.0, 2.0, 0.0, 0.0]))
        Array([0.5, 1. ], dtype=float32)
    """
    x = _array("glu", x)
    size = np.shape(x)[axis]
    if size % 2:
        raise ValueError(f"glu: axis {axis} of an array of shape {np.shape(x)} has odd "
                         f"size {size}; it must split into two halves")
    first, second = jnp.split(x, 2, axis)
    return first * sigmoid(second)


@plax.jit
def hard_sigmoid(x):
    """The hard sigmoid `relu6(x + 3) / 6`: 0 below -3, 1 above 3, linear in between.

    Args:
        x: an array (or scalar).

    Returns:
        An array of `x`'s shape and (inexact) dtype, with values in [0, 1].

    Examples:
        >>> plax.nn.hard_sigmoid(jnp.array([-4.0, 0.0, 1.5]))
        Array([0.  , 0.5 , 0.75], dtype=float32)
    """
    return relu6(_array("hard_sigmoid", x) + 3.0) / 6.0


@plax.jit
def hard_silu(x):
    """The hard SiLU (hard swish), `x * hard_sigmoid(x)`: a cheap, piecewise-quadratic
    stand-in for `silu`. `hard_swish` is the same function.

    Args:
        x: an array (or scalar).

    Returns:
        An array of `x`'s shape and (inexact) dtype.

    Examples:
        >>> plax.nn.hard_silu(jnp.array([-4.0, 0.0, 3.0]))
        Array([-0.,  0.,  3.], dtype=float32)
    """
    x = _array("hard_silu", x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu
tanh = jnp.tanh

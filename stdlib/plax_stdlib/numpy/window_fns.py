"""Window functions for spectral analysis: bartlett, blackman, hamming, hanning and
kaiser (with `i0`, the modified Bessel function it is made of). Each window is an
array of `M` samples in the default float dtype (empty for M < 1, [1.] for M = 1)."""
from __future__ import annotations

import functools

import operator
from typing import Callable

import numpy as np

import plax
from plax.extend import dtypes
from plax_stdlib import jax_jits, lax
from plax_stdlib.numpy import ufuncs, util


def _window(name: str, shape: Callable):
    def fn(M: int):
        M = operator.index(util.concrete_or_error(M, f"{name}: M must be static"))
        dtype = dtypes.default_float_dtype()
        if M <= 1:
            return util.as_array(lax.full((max(M, 0),), 1, dtype))
        n = lax.iota(dtype, M)
        return util.as_array(shape(n, M))
    fn.__name__ = fn.__qualname__ = name
    return fn


def _cos(n, M, k: int):
    """cos(2 pi k n / (M - 1))."""
    return lax.cos(lax.mul(n, 2 * np.pi * k / (M - 1)))


_WINDOW_DOC = """The {what} of `M` samples{formula}.

    Follows `numpy.{name}`; the dtype is the default float type.

    Args:
        M: the number of samples (concrete).

    Returns:
        A 1-D array of `M` values.

    Examples:
        >>> {example}
        {output}
    """


def _documented(fn, what: str, formula: str, example: str, output: str):
    fn.__doc__ = _WINDOW_DOC.format(name=fn.__name__, what=what, formula=formula,
                                    example=example, output=output)
    return fn


bartlett = _documented(_window("bartlett", lambda n, M: lax.sub(
    1.0, lax.div(lax.abs(lax.sub(lax.mul(n, 2.0), M - 1.0)), M - 1.0))),
    "Bartlett (triangular) window", ", peaking at 1 in the middle", "jnp.bartlett(5)",
    "Array([0. , 0.5, 1. , 0.5, 0. ], dtype=float32)")
blackman = _documented(_window("blackman", lambda n, M: lax.add(
    lax.sub(0.42, lax.mul(_cos(n, M, 1), 0.5)), lax.mul(_cos(n, M, 2), 0.08))),
    "Blackman window", " (a taper with low side lobes)",
    "jnp.blackman(5).shape, jnp.allclose(jnp.blackman(5), np.blackman(5), atol=1e-6)",
    "((5,), Array(True, dtype=bool))")
hamming = _documented(_window(
    "hamming", lambda n, M: lax.sub(0.54, lax.mul(_cos(n, M, 1), 0.46))),
    "Hamming window", ": `0.54 - 0.46 cos(2 pi n / (M - 1))`", "jnp.hamming(3)",
    "Array([0.08..., 1. , 0.08...], dtype=float32)")
hanning = _documented(_window(
    "hanning", lambda n, M: lax.mul(lax.sub(1.0, _cos(n, M, 1)), 0.5)),
    "Hann window", ": `0.5 - 0.5 cos(2 pi n / (M - 1))`", "jnp.hanning(5)",
    "Array([0. , 0.5, 1. , 0.5, 0. ], dtype=float32)")

def i0(x):
    """The modified Bessel function of the first kind of order 0, `I0(x)`, for real `x`.

    Follows `numpy.i0`; computed as `exp(|x|) * i0e(x)`, differentiable (its
    derivative is `I1(x)`, 0 at `x = 0`).

    Args:
        x: a real array.

    Returns:
        An inexact array of `x`'s shape.

    Raises:
        TypeError: a complex input.

    Examples:
        >>> jnp.i0(jnp.array([0.0]))  # (JAX's float32 series: 1 + 1 ulp)
        Array([1.0000001], dtype=float32)
    """
    x, = util.promote_args_inexact("i0", x)
    if util.dtype_category(util.dtype_of(x)) != "f":
        raise ValueError(f"Unsupported input type to plax.numpy.i0: {util.dtype_of(x)}")
    return util.as_array(_i0_with_rule()(x))


@functools.cache
def _i0_with_rule():
    """JAX's `_i0`: exp(|x|)·i0e(|x|), a custom_jvp whose tangent is the formula's but
    0 at x = 0, where |x| has no derivative (made on first use: `custom_jvp` is reached
    through the facade)."""
    def _i0(x):
        magnitude = lax.abs(x)
        return lax.mul(lax.exp(magnitude), lax.bessel_i0e(magnitude))

    fn = plax.custom_jvp(_i0)

    @fn.defjvp
    def _i0_jvp(primals, tangents):
        out, tangent = plax.jvp(_i0, primals, tangents)
        return out, ufuncs.where(ufuncs.equal(primals[0], 0), 0.0, tangent)
    return fn


def kaiser(M: int, beta):
    """The Kaiser window of `M` samples with shape parameter `beta`:
    `I0(beta sqrt(1 - (2n/(M-1) - 1)**2)) / I0(beta)`.

    Follows `numpy.kaiser`; `beta` may be traced.

    Args:
        M: the number of samples (concrete).
        beta: the shape: 0 is rectangular, larger values narrow the main lobe's taper.

    Returns:
        A 1-D array of `M` values.

    Examples:
        >>> jnp.kaiser(3, 0.0)
        Array([1., 1., 1.], dtype=float32)
    """
    M = operator.index(util.concrete_or_error(M, "kaiser: M must be static"))
    dtype = dtypes.default_float_dtype()
    if M <= 1:
        return util.as_array(lax.full((max(M, 0),), 1, dtype))
    n = lax.iota(dtype, M)
    alpha = 0.5 * (M - 1)
    ratio = lax.div(lax.sub(n, alpha), alpha)
    return i0(beta * ufuncs.sqrt(1 - ratio * ratio)) / i0(beta)


jax_jits.apply(globals())  # JAX's jitted functions become jit functions

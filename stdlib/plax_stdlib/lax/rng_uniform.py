"""`rng_uniform(a, b, shape)`: numbers drawn uniformly from `[a, b)` by the backend's
own stateful generator (StableHLO's `rng` with the UNIFORM distribution).

Unlike `plax.random` there is no key: the stream belongs to the compiled program, so
results are reproducible per executable and not across backends. No derivative or
batching rule (as in JAX): the draw is not a function of the bounds one could
differentiate or vectorize meaningfully.
"""
from __future__ import annotations

import operator
from typing import Sequence

import numpy as np

from plax.extend.constructors import describe, dtype_name, standard_primitive, weak_result
from plax.extend.core import ShapedArray
from plax.extend.mlir import hlo, mu
from plax_stdlib.lax.conversion import match_python_scalars

# The element types XLA's expansion of the UNIFORM rng implements (others abort the
# compiler on CPU, so they are refused here rather than crash the process).
_DTYPES = ("float16", "bfloat16", "float32", "float64", "int32", "int64", "uint32", "uint64")


def _abstract_eval(a: ShapedArray, b: ShapedArray, *, shape: tuple[int, ...]) -> ShapedArray:
    if a.shape or b.shape:
        raise ValueError(f"Arguments to rng_uniform must be scalars; got shapes {a.shape} and "
                         f"{b.shape}.")
    if a.dtype != b.dtype:
        raise ValueError(f"Arguments to rng_uniform must have identical dtypes, got "
                         f"{dtype_name(a.dtype)} and {dtype_name(b.dtype)}.")
    if dtype_name(a.dtype) not in _DTYPES:
        raise TypeError(f"rng_uniform does not accept dtype {dtype_name(a.dtype)} (got "
                        f"{describe(a)} and {describe(b)}); it accepts {', '.join(_DTYPES)}")
    return ShapedArray(shape, a.dtype, weak_result((a, b), a.dtype))


def _lower(ctx, a, b, *, shape):
    distribution = hlo.RngDistributionAttr.get("UNIFORM")
    shape_operand = mu.dense_constant(np.array(shape, np.int64).reshape(len(shape)))
    return hlo.rng(a, b, shape_operand, distribution, results=[mu.ir_type(ctx.avals_out[0])])


rng_uniform_p = standard_primitive("lax.rng_uniform", _abstract_eval, _lower)


def rng_uniform(a, b, shape: Sequence[int]):
    """Uniform random values in `[a, b)` from the backend's stateful generator.

    Not reproducible (there is no key); prefer `plax.random.uniform`.

    Args:
        a: the lower bound, a scalar.
        b: the upper bound, a scalar of `a`'s dtype (floating-point or a 32/64-
            bit integer).
        shape: the result's shape.

    Returns:
        An array of `shape` and `a`'s dtype.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> x = lax.rng_uniform(jnp.float32(0), jnp.float32(1), (1000,))
        >>> bool(((x >= 0) & (x < 1)).all())
        True
    """
    try:
        shape = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"rng_uniform: shape must be a sequence of integers, got "
                        f"{shape!r}") from None
    return rng_uniform_p.bind(*match_python_scalars("rng_uniform", a, b), shape=shape)


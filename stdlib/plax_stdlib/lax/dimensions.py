"""`dimension_as_value`: a symbolic dimension of shape-polymorphic export used as a
number (`x.sum(0) / x.shape[0]`, `jnp.mean` over a symbolic axis, the start index
`x.shape[0] - 1`). It is the primitive `lax.dimension_as_value`, whose lowering
computes the size from the module's dimension variables, as JAX's `__jax_array__` of
a dimension does. An int stays as it is. A symbolic dimension that reaches any
primitive's bind is staged through it too (`SymbolicDimension.as_value`, which
export's expressions define as `dimension_as_value`).
"""
from __future__ import annotations

import numpy as np

from plax.extend import dtypes
from plax.extend.batching import not_mapped
from plax.extend.constructors import standard_primitive
from plax.extend.core import ShapedArray, SymbolicDimension
from plax.extend.mlir import hlo, mu
from plax_stdlib.lax.conversion import convert_with_weak_type


def _abstract_eval(*, dimension):
    return ShapedArray((), dtypes.canonicalize_dtype(np.dtype(np.int64)), weak_type=True)


def _lowering(ctx, *, dimension):
    value = mu.dimension_value(dimension)  # an i32
    aval, = ctx.avals_out
    return value if aval.dtype == np.int32 else hlo.convert(mu.ir_type(aval), value)


def _impl(*, dimension):  # (JAX's class for it: no evaluation rule)
    raise NotImplementedError(f"the symbolic dimension '{dimension}' has a value only while "
                              "a function is traced for shape-polymorphic export")


dimension_as_value_p = standard_primitive(
    "lax.dimension_as_value", _abstract_eval, _lowering, impl=_impl,
    batching=lambda axis_data, args, dims, *, dimension: (
        dimension_as_value_p.bind(dimension=dimension), not_mapped))


def dimension_as_value(d):
    """An array dimension as a value: the int itself for a known size, a weakly
    typed integer scalar for a symbolic one (shape polymorphism).

    Args:
        d: a dimension size.

    Returns:
        An int, or an integer scalar array.

    Examples:
        >>> from plax import lax
        >>> lax.dimension_as_value(3)
        3
    """
    return dimension_as_value_p.bind(dimension=d) if isinstance(d, SymbolicDimension) else d


def size_scalar(d, dtype):
    """The size `d` as a scalar of integer `dtype` (to wrap negative indices with, or
    to fill what an update drops)."""
    if isinstance(d, SymbolicDimension):
        return convert_with_weak_type(dimension_as_value(d), dtype, weak_type=False)
    return np.asarray(d, dtype)[()]

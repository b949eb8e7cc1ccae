"""`scatter_sub` (a primitive: updates subtracted at their windows) and
`scatter_apply` (a unary function applied at the indexed elements, once per index
that names them, as XLA applies a scatter's update computation)."""
from __future__ import annotations

from typing import Callable

import numpy as np

from plax.extend.constructors import standard_primitive
from plax.extend.core import get_aval
from plax.extend.mlir import hlo
from plax_stdlib.lax import control_flow, elementwise
from plax_stdlib.lax.comparison import gt, select_n
from plax_stdlib.lax.creation import full
from plax_stdlib.lax.reductions import reduce_max
from plax_stdlib.lax.scatters import (
    _abstract_eval,
    _bind,
    _lowering,
    _scatter_batcher,
    combines_with,
    documented_scatter,
    linear_scatter_rules,
    scatter_add,
)


scatter_sub_p = standard_primitive(
    "lax.scatter-sub", _abstract_eval("scatter_sub"),
    _lowering(lambda old, new, _: hlo.subtract(old, new)),
    **linear_scatter_rules(lambda: scatter_sub_p, negate_updates=True),
    batching=_scatter_batcher())
combines_with(scatter_sub_p, elementwise.sub)


@documented_scatter(
    "Subtracts windows of `updates` from `operand` at many positions at once.",
    "Where windows overlap, all their updates are subtracted.", "subtract", "subtract",
    "[10.0, 20.0, 30.0]", "Array([  1., -38.,   3., -16.], dtype=float32)")
def scatter_sub(operand, scatter_indices, updates, dimension_numbers, *,
                indices_are_sorted: bool = False, unique_indices: bool = False, mode=None):
    return _bind(scatter_sub_p, operand, scatter_indices, updates, dimension_numbers,
                 indices_are_sorted, unique_indices, mode)


def scatter_apply(operand, scatter_indices, func: Callable, dimension_numbers, *,
                  update_shape=None, indices_are_sorted: bool = False,
                  unique_indices: bool = False, mode=None):
    """Applies a unary function to the elements of `operand` that a scatter's
    windows cover, as many times as the indices name them.

    The functional form of `x.at[idx].apply(func)`.

    Args:
        operand: the array to update.
        scatter_indices: an integer array of index vectors (last dimension).
        func: an elementwise function of arrays.
        dimension_numbers: a `ScatterDimensionNumbers`.
        update_shape: the shape of the windows' updates (default: the indices'
            batch shape, windows of one element).
        indices_are_sorted: a promise that the indices are sorted.
        unique_indices: a promise that no two windows overlap.
        mode: out-of-bounds windows: dropped (`"fill"`) or clipped (`"clip"`).

    Returns:
        A new array of `operand`'s shape and dtype.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> dnums = lax.ScatterDimensionNumbers(update_window_dims=(),
        ...     inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
        >>> x = jnp.array([1.0, 2.0, 3.0, 4.0])
        >>> lax.scatter_apply(x, jnp.array([[1], [3], [1]]), lambda v: v * 2, dnums)
        Array([1., 8., 3., 8.], dtype=float32)
    """
    aval = get_aval(operand)
    if update_shape is None:
        update_shape = get_aval(scatter_indices).shape[:-1]
    hits = scatter_add(full(aval.shape, 0, np.int32), scatter_indices,
                       full(tuple(update_shape), 1, np.int32), dimension_numbers,
                       indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                       mode=mode)
    rounds = reduce_max(hits, tuple(range(aval.ndim))) if aval.ndim else hits

    def body(i, x):
        return select_n(gt(hits, i), x, func(x))

    return control_flow.fori_loop(0, rounds, body, operand)

"""`lax.reduce` with any reduction function, on one array or a pytree of them.

A monoid (`lax.add`, `max`, ... on one operand) becomes its reduction primitive.
Any other `computation` — a variadic one such as a (value, index) argmax, or one
written by hand — reduces through the generic `reduce_window` with one window
spanning the reduced dimensions, so it has that primitive's lowering, batching and
derivatives in both modes. As in XLA, the result is defined for associative
computations whose identity the initial values are.
"""
from __future__ import annotations

from typing import Callable, Sequence

from plax.extend import tree_util
from plax.extend.core import get_aval
from plax_stdlib.lax import conversion, reductions, shape_ops
from plax_stdlib.lax.windowed_reductions import reduce_window


def reduce(operands, init_values, computation: Callable, dimensions: Sequence[int]):
    """Reduce `operands` (an array or a pytree of same-shaped arrays) over
    `dimensions` with `computation(accumulated, new)`, starting from `init_values`
    (scalars, in the pytree of `operands`)."""
    if not callable(computation):
        raise TypeError(f"reduce: computation must be callable, got {computation!r}")
    flat_operands, tree = tree_util.tree_flatten(operands)
    flat_inits, init_tree = tree_util.tree_flatten(init_values)
    if tree != init_tree:
        raise ValueError(f"reduce: operands {tree} and init_values {init_tree} must have the "
                         "same structure")
    if not flat_operands:
        raise ValueError("reduce must have at least one operand")
    shapes = [get_aval(x).shape for x in flat_operands]
    if len(set(shapes)) > 1:
        raise ValueError(f"reduce: operands must have the same shape, got shapes {shapes}")
    shape = shapes[0]
    dims = reductions.canonicalize_axes("reduce", dimensions, len(shape))
    if len(flat_operands) == 1 and tree == tree_util.tree_structure(0):
        result = reductions.monoid_reduce(flat_operands[0], flat_inits[0], computation, dims)
        if result is not None:
            return result
    out_shape = tuple(n for d, n in enumerate(shape) if d not in dims)
    if any(shape[d] == 0 for d in dims):  # nothing to reduce: every result is the initial value
        inits = [conversion.match_python_scalars("reduce", init, x)[0]
                 for init, x in zip(flat_inits, flat_operands)]
        outs = [shape_ops.broadcast_in_dim(init, out_shape, ()) for init in inits]
        return tree_util.tree_unflatten(tree, outs)
    window = tuple(n if d in dims else 1 for d, n in enumerate(shape))
    reduced = reduce_window(operands, init_values, computation, window, (1,) * len(shape),
                            "VALID")
    outs = [shape_ops.reshape(x, out_shape) for x in tree_util.tree_leaves(reduced)]
    return tree_util.tree_unflatten(tree, outs)

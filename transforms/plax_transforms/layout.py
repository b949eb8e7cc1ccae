"""`plax.experimental.layout`: device-memory layouts (`Layout`, `Format`, from
plax-runtime) and `with_layout_constraint`, which asks XLA to give a value a layout
inside a computation (a `LayoutConstraint` custom call, as JAX lowers it).
"""
from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir

from plax.extend import tree_util
from plax.extend.ad import linear_jvp
from plax.extend.constructors import standard_primitive
from plax.extend.mlir import hlo
from plax_runtime.array import Array
from plax_runtime.layouts import Format, Layout, satisfies
from plax_runtime.executable import relayout

__all__ = ["Format", "Layout", "with_layout_constraint"]


def with_layout_constraint(x, layouts):
    """`x` (a pytree of arrays), each leaf constrained to its `Layout` in `layouts`
    (a pytree prefix of `x`)."""
    leaves, tree = tree_util.tree_flatten(x)
    try:
        flat_layouts = tree_util.broadcast_prefix(layouts, x, is_leaf=lambda v: v is None)
    except ValueError as err:
        raise ValueError("with_layout_constraint layouts specification must be a tree "
                         f"prefix of the corresponding value: {err}") from None
    if any(not isinstance(layout, Layout) for layout in flat_layouts):
        raise ValueError("layouts passed to `with_layout_constraint` must be of type "
                         f"`Layout`. Got {[type(layout) for layout in flat_layouts]}")
    for leaf, layout in zip(leaves, flat_layouts):
        try:
            layout.check_compatible_aval(np.shape(leaf))
        except ValueError as err:
            raise ValueError("One of with_layout_constraint arguments is incompatible with "
                             f"its layout annotation {layout}: {err}") from None
    return tree.unflatten([layout_constraint_p.bind(leaf, layout=layout)
                           for leaf, layout in zip(leaves, flat_layouts)])


def _index_array(dims) -> ir.Attribute:
    return ir.DenseIntElementsAttr.get(np.asarray(dims, np.int64), type=ir.IndexType.get())


def _lower_layout_constraint(ctx, x, *, layout):
    op = hlo.CustomCallOp(
        [x.type], [x], call_target_name="LayoutConstraint",
        backend_config=ir.StringAttr.get(""),
        # XLA reads only the result's layout; the operand's is any valid one.
        operand_layouts=ir.ArrayAttr.get([_index_array(range(len(ctx.avals_in[0].shape)))]),
        result_layouts=ir.ArrayAttr.get([_index_array(layout.major_to_minor[::-1])]))
    return op.result


def _eager_layout_constraint(x, *, layout):
    if not isinstance(x, Array):
        raise ValueError("with_layout_constraint in eager mode can only be applied to "
                         f"jax.Arrays. Got {type(x)}")
    if satisfies(x.format.layout, layout):
        return x
    return relayout(x, layout, committed=True)  # as JAX's copy into a Format


def _batch_layout_constraint(axis_data, args, dims, *, layout):
    (x,), (d,) = args, dims
    if d is None:
        return layout_constraint_p.bind(x, layout=layout), None
    # The batch dimension is the major-most; the others keep their order.
    batched = (d,) + tuple(m + (m >= d) for m in layout.major_to_minor)
    return layout_constraint_p.bind(x, layout=layout.update(major_to_minor=batched)), d


layout_constraint_p = standard_primitive(
    "layout.layout_constraint", lambda aval, *, layout: aval, _lower_layout_constraint,
    jvp=linear_jvp(),
    transpose=lambda ct, x, *, layout: [layout_constraint_p.bind(ct, layout=layout)],
    batching=_batch_layout_constraint)
layout_constraint_p.def_impl(_eager_layout_constraint)

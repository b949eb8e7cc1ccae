"""Writing batching rules: the rule signature `rule(axis_data, args, dims, **params)
-> (outputs, output dims)`, helper rule constructors, the axis environment of
named axes, and `batch_jaxpr` for higher-order primitives (implemented by
plax-transforms through the `plax.interpreters` entry points)."""
from __future__ import annotations

from typing import Any, Sequence

from plax._src.axis_env import (axis_size, bound_axis_names, canonicalize_axis_names,
                                extend_axis_env)
from plax._src.batching_rules import (AxisData, axes_batcher, batched_axis, bdim_at_front,
                                      broadcast_dim, broadcasting_batcher, common_dim,
                                      full_shape_batcher, move_to, moveaxis, not_mapped,
                                      unary_batcher)
from plax._src.ir import ClosedJaxpr
from plax._src.plugins import seam

_batch_jaxpr = seam("batch_jaxpr")


def batch_jaxpr(closed: ClosedJaxpr, axis_data: AxisData | int, in_dims: Sequence[Any],
                out_dims_instantiate: bool | Sequence[Any] = False
                ) -> tuple[ClosedJaxpr, list[Any]]:
    """`closed` mapped over an axis: inputs with an `in_dims` entry get a batch
    dimension there (`not_mapped` for the others; an int `axis_data` is the size).
    `out_dims_instantiate` (one entry per output, or one for all) forces outputs to be
    batched: True at 0, an int at that position; False or None leaves each output
    where the batching rules put it. → (batched Jaxpr with the same debug info,
    where each output is batched)."""
    return _batch_jaxpr(closed, axis_data, in_dims, out_dims_instantiate)


__all__ = [
    "AxisData", "axes_batcher", "axis_size", "batch_jaxpr", "batched_axis", "bdim_at_front",
    "bound_axis_names", "broadcast_dim", "broadcasting_batcher", "canonicalize_axis_names",
    "common_dim", "extend_axis_env", "full_shape_batcher", "move_to", "moveaxis", "not_mapped",
    "unary_batcher",
]

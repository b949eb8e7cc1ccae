"""`shard_alike(x, y)`: asks the partitioner to give two values the same sharding,
whichever it chooses (or a constraint on one of them dictates).

Each pair of leaves binds `sharding.shard_alike`, which returns its operands. It
lowers to one sharding group per pair: `sdy.sharding_group` on both values under
Shardy, GSPMD's `Sharding` custom call with a `shard_as` group under GSPMD; on one
device, to nothing. Applied eagerly it is compiled like any primitive, so a sharded
Array's partner comes back laid out as it is. It is linear: tangents and cotangents
are grouped alike (a symbolic-zero cotangent on either side leaves both as they are);
under `vmap` an unbatched side is broadcast and both carry the batch dimension at
the same place.
"""
from __future__ import annotations

import itertools
import weakref
from typing import Any

from jaxlib import xla_client as xc
from jaxlib.mlir.dialects import sdy

from plax.extend import tree_util
from plax.extend.ad import Zero, linear_jvp
from plax.extend.batching import broadcast_dim, moveaxis, not_mapped
from plax.extend.constructors import standard_primitive
from plax.extend.core import get_aval
from plax.extend.mlir import hlo, ir

# Group ids count up within each module (so that a module's text, and its
# compilation-cache key, do not depend on what was lowered before it).
_group_ids: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def shard_alike(x: Any, y: Any) -> tuple[Any, Any]:
    """`(x, y)` (pytrees of one structure, leaves of equal shapes), each pair of leaves
    laid out alike by the partitioner."""
    x_leaves, x_tree = tree_util.tree_flatten(x)
    y_leaves, y_tree = tree_util.tree_flatten(y)
    if x_tree != y_tree:
        raise ValueError(f"Trees should be equal. Got x_tree: {x_tree}, y_tree: {y_tree}")
    for a, b in zip(x_leaves, y_leaves):
        a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
        if a_shape != b_shape:
            raise ValueError(f"The leaves shapes of `x` and `y` should match. Got `x` leaf "
                             f"shape: {a_shape} and `y` leaf shape: {b_shape}.")
    pairs = [shard_alike_p.bind(a, b) for a, b in zip(x_leaves, y_leaves)]
    return (tree_util.tree_unflatten(x_tree, [a for a, _ in pairs]),
            tree_util.tree_unflatten(y_tree, [b for _, b in pairs]))


def _transpose(cts, x, y):
    x_ct, y_ct = cts
    if isinstance(x_ct, Zero) or isinstance(y_ct, Zero):
        return [x_ct, y_ct]
    return list(shard_alike_p.bind(x_ct, y_ct))


def _batching(axis_data, args, dims):
    (x, y), (x_dim, y_dim) = args, dims
    if x_dim is not_mapped and y_dim is not_mapped:
        return shard_alike_p.bind(x, y), [not_mapped, not_mapped]
    if x_dim is not_mapped:
        x, dim = broadcast_dim(x, axis_data.size, y_dim), y_dim
    elif y_dim is not_mapped:
        y, dim = broadcast_dim(y, axis_data.size, x_dim), x_dim
    else:
        y, dim = moveaxis(y, y_dim, x_dim), x_dim
    return shard_alike_p.bind(x, y), [dim, dim]


def _lowering(ctx, x, y):
    if ctx.num_partitions == 1:
        return [x, y]
    group = next(_group_ids.setdefault(ctx.module_context, itertools.count()))
    if ctx.shardy:
        sdy.sharding_group(x, group)
        sdy.sharding_group(y, group)
        return [x, y]
    op_sharding = xc.OpSharding()
    op_sharding.type = xc.OpSharding.Type.UNKNOWN
    op_sharding.is_shard_group = True
    op_sharding.shard_group_id = group
    op_sharding.shard_group_type = xc.OpSharding.ShardGroupType.AS
    text = str(xc.HloSharding.from_proto(op_sharding))
    outs = []
    for value in (x, y):
        op = hlo.CustomCallOp([value.type], [value], call_target_name="Sharding",
                              has_side_effect=ir.BoolAttr.get(True),
                              backend_config=ir.StringAttr.get(""))
        op.attributes["mhlo.sharding"] = ir.StringAttr.get(text)
        outs.append(op.result)
    return outs


shard_alike_p = standard_primitive(
    "sharding.shard_alike", lambda x, y: [x, y], _lowering,
    multiple_results=True, jvp=linear_jvp(), transpose=_transpose, batching=_batching)


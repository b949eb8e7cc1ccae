"""`inspect_array_sharding` inside jit: the sharding XLA's partitioner chose for a
traced value, handed to a callback when the computation is compiled.

The primitive `sharding.inspect_sharding` (no outputs; an effect keeps it from being
pruned) lowers to jaxlib's `InspectSharding` custom call, whose partitioner calls a
Python function with the value's `HloSharding` during SPMD partitioning. The module
is shared by every device assignment of its shape, so that function reads the
devices being compiled for from `executing.compiling_for()` and describes the
sharding in the kind of the call's own shardings (a NamedSharding on its mesh).
"""
from __future__ import annotations

from typing import Any, Callable

from jaxlib import xla_client as xc

from plax.extend.core import Primitive, Tracer
from plax.extend.mlir import hlo, ir
from plax.extend.sharding import Sharding
from plax_runtime.array import Array
from plax_runtime.sharding_impls import sharding_from_xla
from plax_transforms import executing


class _InspectEffect:
    """Marks an inspection as something that happened, so DCE keeps it."""

    def __repr__(self):
        return "InspectSharding"


INSPECT_EFFECT = _InspectEffect()

inspect_sharding_p = Primitive("sharding.inspect_sharding", multiple_results=True)
inspect_sharding_p.def_abstract_eval(lambda aval, *, callback: [])
inspect_sharding_p.define_rule("effects", lambda *, callback: frozenset({INSPECT_EFFECT}))


@inspect_sharding_p.def_impl
def _impl(x, *, callback):
    callback(x.sharding if isinstance(x, Array) else None)
    return []


def _batching(axis_data, args, dims, *, callback):
    """Under vmap the batched value is inspected, its batch dimension included (as
    in JAX): that is the array the partitioner lays out."""
    inspect_sharding_p.bind(*args, callback=callback)
    return [], []


inspect_sharding_p.define_rule("batching", _batching)
inspect_sharding_p.define_rule("jvp", lambda primals, tangents, *, callback: (
    inspect_sharding_p.bind(*primals, callback=callback), []))


@inspect_sharding_p.def_lowering
def _lowering(ctx, value, *, callback):
    ndim = len(ctx.avals_in[0].shape)

    def on_partitioned(hlo_sharding: xc.HloSharding) -> None:
        devices, like = executing.compiling_for()
        callback(sharding_from_xla(devices, hlo_sharding, ndim=ndim, like=like))

    if ctx.num_partitions == 1:  # nothing is partitioned: the value is on the one device
        ctx.module_context.on_compile.append(lambda: on_partitioned(None))
        return []
    ctx.module_context.keepalives.append(on_partitioned)  # XLA holds only its address
    hlo.CustomCallOp([value.type], [value], call_target_name=ir.StringAttr.get("InspectSharding"),
                     has_side_effect=ir.BoolAttr.get(True),
                     api_version=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 1),
                     called_computations=ir.ArrayAttr.get([]),
                     backend_config=ir.StringAttr.get(
                         xc.encode_inspect_sharding_callback(on_partitioned)))
    return []


def inspect_sharding(value: Any, callback: Callable[[Sharding], None]) -> None:
    if not isinstance(value, (Tracer, Array)):
        raise TypeError(f"inspect_array_sharding expects an Array or a traced value, got "
                        f"{type(value).__name__}")
    inspect_sharding_p.bind(value, callback=callback)

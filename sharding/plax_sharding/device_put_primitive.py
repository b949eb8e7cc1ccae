"""`device_put` of traced values (inside jit, vmap, grad): the primitive
`plax.device_put`, one equation per leaf (JAX binds one for all leaves of a call).

As in JAX, a traced value is not moved: the equation says where it should be. A
Sharding target gives the result the target's layout over `Explicit` mesh axes in
its type (over Auto axes the partitioner chooses), its mesh names the devices of the
jit that holds it, and it must split the value evenly; a Device or a memory space
changes nothing. The lowering is the value itself, as JAX's on CPU (a typed result
gets its sharding constraint as every typed value does).

The primitive's rules, all here: abstract evaluation; impl (the eager `device_put`,
for concrete operands: `eval_jaxpr`, the primal of `grad` outside jit); linear jvp;
transpose (the cotangent in the input's type); batching (the batch dimension left
out of a NamedSharding's split, as the constraint's).
"""
from __future__ import annotations

from typing import Any

from plax.extend.ad import linear_jvp
from plax.extend.constructors import standard_primitive
from plax.extend.mlir import mu
from plax.extend.sharding import Sharding
from plax_runtime.device_put import device_put
from plax_runtime.sharding_impls import SingleDeviceSharding
from plax_sharding.constraint import (batched_target, concrete_for, sharding_constraint_p,
                                      typed_as)
from plax_sharding.partition_spec import PartitionSpec


def _abstract_eval(aval, *, device, donate, may_alias):
    if not isinstance(device, Sharding):
        return aval
    if mu.is_static(aval.shape):
        try:
            device.shard_shape(aval.shape)
        except ValueError as err:
            raise ValueError(f"device_put of a value of type {aval.str_short()}: {err}"
                             ) from None
    return typed_as(aval, device, "device_put")


def _impl(x, *, device, donate, may_alias):
    if isinstance(device, Sharding):
        device = concrete_for(x, device, "device_put")
    return device_put(x, device, donate=donate, may_alias=may_alias)


def _transpose(ct, x, *, device, donate, may_alias):
    """As JAX: the cotangent goes back to the input's type where the put changed it
    (unsplit over the explicit axes of an untyped input), and else stays where it is
    (JAX puts it back on the input's source, which for a traced value is unknown)."""
    if donate:
        raise ValueError("device_put with donate=True cannot be transposed: drop donate "
                         "in a function differentiated in reverse mode")
    if not isinstance(device, Sharding) or typed_as(x.aval, device, "device_put") == x.aval:
        return [ct]
    back = x.aval.typed_sharding or device.update(spec=PartitionSpec())
    return [sharding_constraint_p.bind(ct, sharding=back)]


def _batching(axis_data, args, dims, *, device, donate, may_alias):
    (x,), (dim,) = args, dims
    if isinstance(device, Sharding) and not isinstance(device, SingleDeviceSharding):
        device = batched_target(device, dim, axis_data, "device_put")
    return device_put_p.bind(x, device=device, donate=donate, may_alias=may_alias), dim


device_put_p = standard_primitive(
    "plax.device_put", _abstract_eval, lambda ctx, x, **params: x, impl=_impl,
    jvp=linear_jvp(), transpose=_transpose, batching=_batching)


def traced_device_put(x: Any, device: Any, donate: bool, may_alias: bool | None) -> Any:
    """The seam `traced_device_put`: `x` (a tracer) put on `device` (a Sharding, a
    Device or a memory space) by the primitive."""
    return device_put_p.bind(x, device=device, donate=donate, may_alias=may_alias)

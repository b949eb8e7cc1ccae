"""`with_sharding_constraint`: asks the partitioner to lay a value out as a sharding.

Inside `jit` it binds `sharding.sharding_constraint`, whose parameter is the sharding
itself: give it a `NamedSharding` on an `AbstractMesh` (or a bare `PartitionSpec`
under `use_abstract_mesh`/`set_mesh`, which becomes one) and the Jaxpr names no
device, so two meshes of one shape share its trace and lowering. Outside `jit` the
value is moved to the sharding now; an abstract mesh then takes its devices from
the input's own mesh, which must have the same axes.

The primitive's rules, all here: abstract evaluation (the value, typed with the
target's explicit axes); linear jvp and
transpose (tangents and cotangents get the same constraint); batching (the batch
dimension is left unsplit); lowering (`sdy.sharding_constraint`, or GSPMD's
`Sharding` custom call; nothing on one device); eager impl (a `device_put`).
"""
from __future__ import annotations

from typing import Any

from plax.extend import tree_util
from plax.extend.ad import linear_jvp
from plax.extend.constructors import standard_primitive
from plax.extend.core import get_aval
from plax.extend.sharding import Sharding, abstract_mesh, concrete_mesh, sharding_from_spec
from plax_runtime.array import Array
from plax_runtime.device_put import device_put
from plax_sharding.mesh import AxisType, Mesh
from plax_sharding.named_sharding import NamedSharding
from plax_sharding.partition_spec import PartitionSpec
from plax_stdlib.lax.out_sharding import with_batch_dim
from plax_transforms.lowering import sharding_constraint


def typed_as(aval, sharding: Sharding, what: str):
    """`aval` laid out as `sharding`: on a mesh with `Explicit` axes its type takes the
    target's layout over them (which is how `reshard` changes a type); a ValueError
    naming `what` where the target's rank does not fit."""
    try:
        sharding._to_sdy_sharding(aval.ndim)
    except (ValueError, TypeError) as err:
        raise ValueError(f"{what}: {err}") from None
    typed = sharding._type_sharding(aval.ndim)
    return aval if typed is None and aval.typed_sharding is None else aval.update(sharding=typed)


def _abstract_eval(aval, *, sharding: Sharding):
    return typed_as(aval, sharding, "with_sharding_constraint")


def _impl(x, *, sharding: Sharding):
    return device_put(x, concrete_for(x, sharding, "with_sharding_constraint"))


def concrete_for(x: Any, sharding: Sharding, what: str) -> Sharding:
    """`sharding`, with an abstract mesh replaced by a concrete mesh of the same axis
    names and sizes, retyped with the target's axis types: the mesh in context, else
    the mesh of `x`'s own NamedSharding."""
    if sharding._is_concrete:
        return sharding
    in_context = concrete_mesh()
    if in_context is not None and in_context.shape_tuple == sharding.mesh.shape_tuple:
        return _on_devices_of(in_context, sharding)
    if not isinstance(x, Array):
        raise ValueError(
            f"{what}: the target sharding {sharding} is on an "
            "AbstractMesh, so outside jit the input must be a plax Array on a mesh of the "
            f"same shape to take devices from; got a {type(x).__name__} of shape "
            f"{get_aval(x).str_short()}")
    own = x.sharding
    if not isinstance(own, NamedSharding) or own.mesh.shape_tuple != sharding.mesh.shape_tuple:
        where = (f"a mesh of shape {dict(own.mesh.shape)}" if isinstance(own, NamedSharding)
                 else f"{own}")
        raise ValueError(
            f"{what}: the target sharding {sharding} is on an "
            f"AbstractMesh of shape {dict(sharding.mesh.shape)}, but the input lives on "
            f"{where}; outside jit the input's mesh must have the same axis names and "
            "sizes")
    return _on_devices_of(own.mesh, sharding)


def _on_devices_of(mesh: Mesh, sharding: Sharding) -> NamedSharding:
    if mesh.axis_types != sharding.mesh.axis_types:  # auto_axes/explicit_axes retype it
        mesh = Mesh(mesh.devices, mesh.axis_names, sharding.mesh.axis_types)
    return NamedSharding(mesh, sharding.spec, memory_kind=sharding.memory_kind)


def _transpose(ct, x, *, sharding: Sharding):
    """The same constraint; but where the constraint changed the value's type (a
    `reshard`, or entering `auto_axes`), the cotangent goes back to the input's type,
    as in JAX."""
    typed = x.aval.typed_sharding
    if typed == sharding._type_sharding(x.aval.ndim):
        return [sharding_constraint_p.bind(ct, sharding=sharding)]
    if typed is None and abstract_mesh() == sharding.mesh.abstract_mesh:
        # a reshard under the target's mesh: the untyped input was unsplit over its
        # explicit axes, and so goes its cotangent
        typed = NamedSharding(sharding.mesh.abstract_mesh, PartitionSpec(),
                              memory_kind=sharding.memory_kind)
    elif typed is None:  # entering explicit_axes: the cotangent keeps the layout, untyped
        mesh = sharding.mesh.abstract_mesh
        auto = mesh.update_axis_types({a: AxisType.Auto for a in mesh.explicit_axes})
        typed = NamedSharding(auto, sharding.spec, memory_kind=sharding.memory_kind)
    return [sharding_constraint_p.bind(ct, sharding=typed)]


def _batching(axis_data, args, dims, *, sharding: Sharding):
    (x,), (dim,) = args, dims
    batched = batched_target(sharding, dim, axis_data, "with_sharding_constraint")
    return sharding_constraint_p.bind(x, sharding=batched), dim


def batched_target(sharding: Sharding, dim: int | None, axis_data, what: str) -> Sharding:
    """`sharding` for the value batched at `dim`: the batch dimension split as the
    vmapped axis is (its inputs' Explicit mesh axes or spmd_axis_name), as JAX does."""
    if dim is None:
        return sharding
    if not isinstance(sharding, NamedSharding):
        raise NotImplementedError(f"vmap of {what} to {sharding}: only NamedSharding "
                                  "targets can be batched")
    return with_batch_dim(sharding, dim, axis_data)


def _lowering(ctx, x, *, sharding: Sharding):
    return sharding_constraint(ctx, x, sharding, ctx.avals_in[0])


sharding_constraint_p = standard_primitive(
    "sharding.sharding_constraint", _abstract_eval, _lowering, impl=_impl,
    jvp=linear_jvp(), transpose=_transpose, batching=_batching)


def with_sharding_constraint(x: Any, shardings: Any) -> Any:
    """`x` (a pytree) with each leaf constrained to its sharding (`shardings` is one
    Sharding or PartitionSpec, or a pytree prefix of `x` of them)."""
    leaves, treedef = tree_util.tree_flatten(x)
    try:
        targets = tree_util.broadcast_prefix(shardings, x, is_leaf=lambda s: s is None
                                             or isinstance(s, (Sharding, PartitionSpec)))
    except ValueError as err:
        raise ValueError(f"with_sharding_constraint: shardings must be a sharding or a "
                         f"pytree prefix of the value: {err}") from None
    outs = []
    for i, (leaf, target) in enumerate(zip(leaves, targets)):
        if target is None:
            raise ValueError(f"with_sharding_constraint: leaf {i} of the value has no "
                             "sharding (None is not a constraint)")
        target = sharding_from_spec(target, "with_sharding_constraint's shardings")
        outs.append(sharding_constraint_p.bind(leaf, sharding=target))
    return tree_util.tree_unflatten(treedef, outs)

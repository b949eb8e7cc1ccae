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
from plax_runtime.layouts import Format, Layout
from plax_sharding.mesh import AxisType, Mesh
from plax_sharding.named_sharding import NamedSharding
from plax_sharding.partition_spec import PartitionSpec
from plax_stdlib.lax.out_sharding import with_batch_dim
from plax_transforms.layout import with_layout_constraint
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
    """Asks the compiler to lay out intermediate values in a given way: a hint for
    the partitioner inside `jit`.

    Use it on values computed inside a jitted function whose sharding the
    compiler would otherwise choose badly. As in JAX, a constraint's
    NamedShardings may name only `Auto` mesh axes; on `Explicit` axes, where
    layouts are part of types, use `reshard` to change a layout, and a
    constraint only asserts that each value already has its spec.

    Args:
        x: a pytree of arrays.
        shardings: one `Sharding` or `PartitionSpec` (resolved against the mesh
            in context), or a `Format` (a sharding with a `Layout`, which the
            value is constrained to as well), or a pytree prefix of `x` of them.

    Returns:
        `x`'s values, constrained to the shardings.

    Raises:
        ValueError: a spec names a mesh axis more than once, or does not fit a
            value's rank.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> from plax.sharding import AxisType, NamedSharding, PartitionSpec as P
        >>> mesh = plax.make_mesh((4,), ("x",), axis_types=AxisType.Auto)
        >>> @plax.jit
        ... def f(a):
        ...     return plax.lax.with_sharding_constraint(a * 2, NamedSharding(mesh, P("x")))
        >>> y = f(jnp.arange(8.0))
        >>> y, y.sharding.spec
        (Array([ 0., 2., 4., 6., 8., 10., 12., 14.], dtype=float32), P('x',))
    """
    leaves, treedef = tree_util.tree_flatten(x)
    try:
        targets = tree_util.broadcast_prefix(shardings, x, is_leaf=lambda s: s is None
                                             or isinstance(s, (Sharding, PartitionSpec, Format)))
    except ValueError as err:
        raise ValueError(f"with_sharding_constraint: shardings must be a sharding or a "
                         f"pytree prefix of the value: {err}") from None
    outs = []
    for i, (leaf, target) in enumerate(zip(leaves, targets)):
        if target is None:
            raise ValueError(f"with_sharding_constraint: leaf {i} of the value has no "
                             "sharding (None is not a constraint)")
        layout = target.layout if isinstance(target, Format) else None
        target = target.sharding if isinstance(target, Format) else target
        target = sharding_from_spec(target, "with_sharding_constraint's shardings")
        out = _constrained(leaf, target)
        outs.append(with_layout_constraint(out, layout) if isinstance(layout, Layout) else out)
    return tree_util.tree_unflatten(treedef, outs)


def _constrained(x: Any, target: Sharding) -> Any:
    if not isinstance(target, NamedSharding):
        return sharding_constraint_p.bind(x, sharding=target)
    context = abstract_mesh()
    if context is not None and context.are_all_axes_explicit:
        _check_typed_as(x, target)
        return x
    mesh = target.mesh
    typed = [a for a in target.spec.mesh_axes()
             if mesh.axis_types[mesh.axis_names.index(a)] is not AxisType.Auto]
    if typed:
        raise ValueError(
            f"with_sharding_constraint: the spec {target.spec} names the mesh axes "
            f"{tuple(typed)}, which are not Auto (on {mesh.abstract_mesh}); a constraint "
            "may name only Auto axes: `plax.sharding.reshard` lays a value out over "
            "Explicit ones")
    return sharding_constraint_p.bind(x, sharding=_keeping_type(get_aval(x), target))


def _keeping_type(aval, target: NamedSharding) -> NamedSharding:
    """`target` (which names only Auto axes) with the split of `aval`'s type over its
    Explicit axes added in, dimension by dimension: a constraint leaves the type as it
    is, as JAX's does, and the layout it asks for keeps the type's splits."""
    typed = aval.typed_sharding
    if typed is None or not typed.spec.mesh_axes():
        return target
    have, want = typed.spec.for_rank(aval.ndim), target.spec.for_rank(aval.ndim)
    merged = []
    for dim, entry in enumerate(want.partitions):
        names = have.axes_of(dim)
        if names:
            names += () if entry is PartitionSpec.UNCONSTRAINED else want.axes_of(dim)
            entry = names[0] if len(names) == 1 else names
        merged.append(entry)
    return target.update(spec=want.update(partitions=tuple(merged)))


def _check_typed_as(x: Any, target: NamedSharding) -> None:
    """On an all-`Explicit` mesh a constraint asserts, as in JAX: an AssertionError
    unless `x`'s type already has the spec of `target` (unconstrained entries aside)."""
    aval = get_aval(x)
    typed = aval.typed_sharding
    have = (typed.spec if typed is not None else PartitionSpec()).for_rank(aval.ndim)
    want = target.spec.for_rank(aval.ndim)
    if any(w is not PartitionSpec.UNCONSTRAINED and w != h
           for h, w in zip(have.partitions, want.partitions)) or len(want) > aval.ndim:
        raise AssertionError(
            f"with_sharding_constraint acts as an assertion when every axis of the mesh "
            f"is Explicit: the value of type {aval.str_short()} has the spec {have}, not "
            f"{want}; use `plax.sharding.reshard` to lay it out as that")

"""`out_sharding=` arguments, which fix the sharding in a result's type on a mesh
with `Explicit` axes (plax-sharding's rules then take it instead of deriving one).

They are checked where they are given, so that a wrong kind of value is a TypeError
naming the function, as in JAX. The sharding classes come from the public
`plax.sharding` module, imported only when an `out_sharding` is given.
"""
from __future__ import annotations

from typing import Any, Callable

from plax.extend.core import get_aval
from plax.extend.sharding import sharding_from_spec


def check_out_sharding(name: str, out_sharding: Any) -> Any:
    """`out_sharding` (None, a `NamedSharding` or a `PartitionSpec`), or JAX's errors:
    a TypeError for another kind of value, a ValueError for a PartitionSpec outside a
    mesh context (it names axes of no mesh)."""
    if out_sharding is None:
        return None
    from plax.sharding import NamedSharding, PartitionSpec, get_abstract_mesh
    if not isinstance(out_sharding, (NamedSharding, PartitionSpec)):
        raise TypeError(f"`out_sharding` argument of {name} only supports instances of "
                        "`NamedSharding` or `PartitionSpec`. Got "
                        f"{out_sharding!r} of type: {type(out_sharding)}")
    if isinstance(out_sharding, PartitionSpec) and get_abstract_mesh().empty:
        raise ValueError(f"{name}: using the PartitionSpec {out_sharding} as out_sharding "
                         "outside a mesh context is not allowed; pass a NamedSharding "
                         "or enter a mesh with `plax.set_mesh(mesh)`")
    return out_sharding


def cotangent_sharding(aval, *others, order=None) -> Any:
    """The `out_sharding` of the product that computes the cotangent of an operand of
    type `aval` (its dimensions in `order`, default as they are): the operand's
    sharding (as JAX does), unsplit where the `others`' types carry shardings but the
    operand's none, None where no type has one."""
    typed = aval.typed_sharding
    if typed is None:
        typed_others = [s for s in (get_aval(x).typed_sharding for x in others) if s is not None]
        if not typed_others:
            return None
        from plax.sharding import PartitionSpec
        return typed_others[0].update(spec=PartitionSpec())
    if order is None:
        return typed
    spec = typed.spec.for_rank(aval.ndim).partitions
    return typed.update(spec=type(typed.spec)(*(spec[d] for d in order)))


def _batch_entry(axis_data) -> Any:
    """The spec entry of a vmapped axis: the mesh axes that split it in the inputs'
    types, or those of `spmd_axis_name` (None: unsplit)."""
    axes = axis_data.explicit_mesh_axis
    if axes is None:
        return axis_data.spmd_name
    return axes[0] if len(axes) == 1 else tuple(axes)


def _respec(out_sharding: Any, entries: list) -> Any:
    from plax.sharding import NamedSharding, PartitionSpec
    new = PartitionSpec(*entries)
    return out_sharding.update(spec=new) if isinstance(out_sharding, NamedSharding) else new


def _entries(out_sharding: Any, ndim: int) -> list:
    from plax.sharding import NamedSharding
    spec = out_sharding.spec if isinstance(out_sharding, NamedSharding) else out_sharding
    return list(spec) + [None] * (ndim - len(spec))


def with_batch_dim(out_sharding: Any, dim: int, axis_data) -> Any:
    """`out_sharding` for the result of a batching rule that adds the vmapped axis as
    result dimension `dim`: that dimension inserted in its spec, split as the vmapped
    axis is (as JAX does)."""
    if out_sharding is None:
        return None
    entries = _entries(out_sharding, dim)
    entries.insert(dim, _batch_entry(axis_data))
    return _respec(out_sharding, entries)


def with_folded_batch(name: str, out_sharding: Any, dim: int, axis_data) -> Any:
    """`out_sharding` for the result of a batching rule that folds the vmapped axis
    into result dimension `dim`, split over the vmapped axis's mesh axes (its
    inputs' `Explicit` axes or `spmd_axis_name`; unsplit: left as given, as JAX
    does)."""
    entry = _batch_entry(axis_data)
    if out_sharding is None or entry is None:
        return out_sharding
    entries = _entries(out_sharding, dim + 1)
    if entries[dim] is not None:
        raise NotImplementedError(
            f"{name}: vmap over mesh axes {entry!r} folds its axis into dimension "
            f"{dim} of the result, which out_sharding={tuple(entries)} already splits")
    entries[dim] = entry
    return _respec(out_sharding, entries)


def _spec_axes(spec) -> list:
    names = []
    for entry in tuple(spec):
        names.extend(entry if isinstance(entry, tuple) else () if entry is None else (entry,))
    return names


def canonical_out_sharding(name: str, out_sharding: Any) -> Any:
    """`out_sharding` as the `NamedSharding` a function that lays out its result
    takes (a bare PartitionSpec on the mesh in context), None where there is none (or
    its mesh is empty); JAX's errors otherwise: a TypeError for another kind of value,
    a ValueError for a PartitionSpec outside a mesh context, for a mesh that is not the
    one in context, and for a spec naming axes that are not `Explicit`."""
    out_sharding = check_out_sharding(name, out_sharding)
    if out_sharding is None:
        return None
    from plax import sharding
    context = sharding.get_abstract_mesh()
    if isinstance(out_sharding, sharding.PartitionSpec):
        out_sharding = sharding_from_spec(out_sharding, f"the out_sharding of {name}")
    mesh = out_sharding.mesh.abstract_mesh
    if mesh.empty:
        return None
    auto = sharding.AxisType.Auto
    if not context.empty and mesh != context and not (
            all(t is auto for t in mesh.axis_types + context.axis_types)):
        raise ValueError(f"{name}: the context mesh {context} should match the mesh of "
                         f"its out_sharding, {mesh}")
    for axis in _spec_axes(out_sharding.spec):
        kind = mesh.axis_types[mesh.axis_names.index(axis)]
        if kind is not sharding.AxisType.Explicit:
            raise ValueError(f"{name}: the PartitionSpec of out_sharding cannot name axes of "
                             f"type Auto or Manual; got {out_sharding.spec} with axis "
                             f"{axis!r} of type {kind.name}")
    return out_sharding


def laid_out(name: str, out_sharding: Any, compute: Callable, *operands) -> Any:
    """`compute(*operands)`; with an `out_sharding`, computed as JAX does for indexed
    reads and updates and for random samplers: with the explicit axes of its mesh made
    `Auto` (the partitioner lays out the gather, scatter or sampler), the result then
    typed and laid out as `out_sharding` (see `canonical_out_sharding`)."""
    out_sharding = canonical_out_sharding(name, out_sharding)
    if out_sharding is None:
        return compute(*operands)
    from plax import sharding
    axes = out_sharding.mesh.abstract_mesh.explicit_axes
    return sharding.auto_axes(compute, axes=axes, out_sharding=out_sharding)(*operands)

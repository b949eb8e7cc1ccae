"""The shardings of an export, as JAX 0.10.2 keeps them: one `NamedSharding` on an
*abstract* mesh (axis names, sizes and types, no devices) or None (unspecified) per
flat input and output, so that the export can be called on any mesh of that shape.

jit's shardings become named ones as JAX 0.10.2 converts them: a one-device sharding
is the replicated spec on the empty mesh, a `GSPMDSharding` a spec on the mesh of the
export's first named sharding, or (without one) replicated, or tiled on an abstract
mesh `_axis_0, _axis_1...` made from its iota tile assignment.

`in_shardings_hlo`/`out_shardings_hlo` are JAX's older form: an export made now has
them all None, one read back from bytes has each named sharding's `HloSharding`, and
one that JAX serialized before 2026 has only `HloSharding`s (no named ones), which
`Exported` turns into named shardings on its module's mesh (`module_mesh`, as JAX
does when it calls one), and `in_shardings_jax` into ones on the mesh it is given.
The sharding classes are `plax.sharding`'s (a public module; imported when a
sharded export needs them, so that `plax.export` does not load the sharding
package for one-device exports).
"""
from __future__ import annotations

from typing import Any, Sequence

from plax.extend.sharding import Sharding


def export_mesh(given: Sequence[Sharding | None]) -> Any:
    """The abstract mesh of the first NamedSharding among `given` (None if none)."""
    from plax import sharding as shd
    return next((s.mesh.abstract_mesh for s in given if isinstance(s, shd.NamedSharding)),
                None)


def abstract_named_sharding(s: Sharding | None, ndim: int, mesh=None) -> Any:
    """`s` (given to jit, or an argument's) as a NamedSharding on an abstract mesh:
    a NamedSharding keeps its spec, a one-device sharding becomes the replicated
    spec on the empty mesh, a GSPMDSharding a spec on `mesh` (the export's, see
    `export_mesh`) or on a mesh of its own (`from_hlo`); None stays None."""
    if s is None:
        return None
    from plax import sharding as shd
    if isinstance(s, shd.NamedSharding):
        return shd.NamedSharding(s.mesh.abstract_mesh, s.spec, memory_kind=s.memory_kind)
    if isinstance(s, shd.SingleDeviceSharding) or (s.num_devices == 1):
        return _replicated(ndim, s.memory_kind)
    if isinstance(s, shd.GSPMDSharding):
        return from_hlo(s._to_xla_hlo_sharding(ndim), ndim, mesh, s.memory_kind,
                        described=f"GSPMDSharding {s}")
    raise TypeError(f"Cannot convert {type(s).__name__} {s} into NamedSharding: export "
                    "records the shardings of its inputs and outputs as NamedShardings")


def from_hlo(hlo, ndim: int, mesh=None, memory_kind: str | None = None,
             described: str | None = None) -> Any:
    """The NamedSharding whose layout is the `HloSharding` `hlo`: on `mesh` (concrete
    or abstract), else replicated on the empty mesh or tiled on the abstract mesh
    `_axis_0, _axis_1...` of its iota tile assignment; TypeError where no spec has
    that layout."""
    from plax import sharding as shd
    described = described or f"HloSharding {hlo}"
    if mesh is None:
        if not hlo.tuple_elements() and hlo.is_replicated():
            return _replicated(ndim, memory_kind)
        if hlo.tuple_elements() or not hlo.is_tiled() or not hlo.is_tile_assignment_iota():
            raise TypeError(f"Cannot convert {described} into NamedSharding: it is not "
                            "replicated or tiled over devices in iota order")
        sizes = tuple(hlo.get_axis_sizes())
        mesh = shd.AbstractMesh(sizes, tuple(f"_axis_{i}" for i in range(len(sizes))),
                                (shd.AxisType.Auto,) * len(sizes))
    found = shd.NamedSharding(mesh, shd.PartitionSpec())._like_from_xla(hlo, ndim)
    if found is None:
        raise TypeError(f"Cannot convert {described} into NamedSharding on the mesh {mesh}")
    return shd.NamedSharding(mesh, found.spec, memory_kind=memory_kind)


def _replicated(ndim: int, memory_kind: str | None) -> Any:
    from plax import sharding as shd
    return shd.NamedSharding(shd.AbstractMesh((), ()), shd.PartitionSpec(*[None] * ndim),
                             memory_kind=memory_kind)


def module_mesh(module) -> Any:
    """The abstract mesh (axis names and sizes, `Auto` axes) of the one `sdy.mesh` with
    axes that `module` declares, or None."""
    from jaxlib.mlir.dialects import sdy
    from plax import sharding as shd
    found = []
    for op in module.body.operations:
        if op.operation.name == "sdy.mesh":
            axes = [sdy.MeshAxisAttr(a) for a in sdy.MeshAttr(op.attributes["mesh"]).axes]
            if axes:
                found.append((tuple(a.size for a in axes), tuple(a.name for a in axes)))
    if len(set(found)) != 1:
        return None
    sizes, names = found[0]
    return shd.AbstractMesh(sizes, names, (shd.AxisType.Auto,) * len(sizes))


def stated(named: Sequence[Any]) -> tuple:
    """`named`, or () when every entry is unspecified (how `Exported` stores that)."""
    return tuple(named) if any(s is not None for s in named) else ()


def hlo_shardings(named: Sequence[Any], avals) -> tuple:
    """The `HloSharding` of each named sharding (None where unspecified)."""
    return tuple(None if s is None else s._to_xla_hlo_sharding(len(a.shape))
                 for s, a in zip(named, avals))


def on_mesh(named: Sequence[Any], mesh, hlo: Sequence[Any] = (), avals=()) -> tuple:
    """The named shardings moved onto `mesh` (concrete or abstract), which must have
    the export's axis names, sizes and types; None stays None. An export with only
    `HloSharding`s (`hlo`, JAX's older format) gets their specs on `mesh`."""
    if all(s is None for s in named) and any(h is not None for h in hlo):
        return tuple(None if h is None else from_hlo(h, len(a.shape), mesh)
                     for h, a in zip(hlo, avals))
    out = []
    for s in named:
        if s is None or mesh is None:
            out.append(s)
            continue
        want, got = s.mesh, mesh.abstract_mesh
        if (got.axis_sizes, got.axis_names, got.axis_types) != (
                want.axis_sizes, want.axis_names, want.axis_types):
            raise ValueError(f"NamedSharding new mesh {mesh} does not match the mesh used "
                             f"for export {want}.")
        out.append(s.update(mesh=mesh))
    return tuple(out)

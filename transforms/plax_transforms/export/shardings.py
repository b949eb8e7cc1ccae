"""The shardings of an export, as JAX 0.10.2 keeps them: one `NamedSharding` on an
*abstract* mesh (axis names, sizes and types, no devices) or None (unspecified) per
flat input and output, so that the export can be called on any mesh of that shape.

`in_shardings_hlo`/`out_shardings_hlo` are JAX's older form: an export made now has
them all None, one read back from bytes has each named sharding's `HloSharding`.
The sharding classes are `plax.sharding`'s (a public module; imported when a
sharded export needs them, so that `plax.export` does not load the sharding
package for one-device exports).
"""
from __future__ import annotations

from typing import Any, Sequence

from plax.extend.sharding import Sharding


def abstract_named_sharding(s: Sharding | None, ndim: int) -> Any:
    """`s` (given to jit, or an argument's) as a NamedSharding on an abstract mesh:
    a NamedSharding keeps its spec, a one-device sharding becomes the replicated
    spec on the empty mesh; None stays None."""
    if s is None:
        return None
    from plax import sharding as shd
    if isinstance(s, shd.NamedSharding):
        return shd.NamedSharding(s.mesh.abstract_mesh, s.spec, memory_kind=s.memory_kind)
    if isinstance(s, shd.SingleDeviceSharding) or (s.num_devices == 1):
        return shd.NamedSharding(shd.AbstractMesh((), ()), shd.PartitionSpec(*[None] * ndim),
                                 memory_kind=s.memory_kind)
    raise TypeError(f"Cannot convert {type(s).__name__} {s} into NamedSharding: export "
                    "records the shardings of its inputs and outputs as NamedShardings")


def stated(named: Sequence[Any]) -> tuple:
    """`named`, or () when every entry is unspecified (how `Exported` stores that)."""
    return tuple(named) if any(s is not None for s in named) else ()


def hlo_shardings(named: Sequence[Any], avals) -> tuple:
    """The `HloSharding` of each named sharding (None where unspecified)."""
    return tuple(None if s is None else s._to_xla_hlo_sharding(len(a.shape))
                 for s, a in zip(named, avals))


def on_mesh(named: Sequence[Any], mesh) -> tuple:
    """The named shardings moved onto `mesh` (concrete or abstract), which must have
    the export's axis names, sizes and types; None stays None."""
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

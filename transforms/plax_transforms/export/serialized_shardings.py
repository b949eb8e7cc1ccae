"""The shardings of an `Exported` in JAX 0.10.2's FlatBuffers schema: named shardings
on abstract meshes (`AbstractMesh`, `PartitionSpec`, `NamedSharding` tables), each
distinct mesh and sharding written once and referred to by index.

`Shardings` collects the distinct ones while writing; `read_shardings` gives back
the per-input and per-output lists (None: unspecified), which for an export that
JAX serialized before 2026 hold the `HloSharding`s of its per-entry protos instead.
"""
from __future__ import annotations

from typing import Any, Sequence

from plax_transforms.export import flatbuffer as fb
from plax_transforms.export.flatbuffer import UINT8, UINT32, Table, Vector

_DEVICE_KIND, _DEVICE_NUM_CORES, _DEVICE_PLATFORM = range(3)
_MESH_AXIS_SIZES, _MESH_AXIS_NAMES, _MESH_AXIS_TYPES, _MESH_DEVICE = range(4)
_AXIS_AXES = 0
_SPEC_PARTITIONS, _SPEC_REDUCED, _SPEC_UNREDUCED = range(3)
_NAMED_MESH, _NAMED_SPEC, _NAMED_MEMORY_KIND, _NAMED_MESH_IDX = range(4)
_SHARDING_KIND, _SHARDING_HLO_PROTO, _SHARDING_NAMED = range(3)
_AXIS_TYPE_CODES = {"Auto": 1, "Explicit": 2, "Manual": 3}


class Shardings:
    """The distinct meshes and named shardings of an export, in first-seen order."""

    def __init__(self, shardings: Sequence[Any]):
        self.meshes: dict[Any, int] = {}
        self.named: dict[Any, int] = {}
        for s in shardings:
            if s is not None:
                self.meshes.setdefault(s.mesh, len(self.meshes))
                self.named.setdefault(s, len(self.named))

    def indices(self, shardings: Sequence[Any]) -> Vector:
        """0 for an unspecified sharding, else 1 + its index among the distinct ones."""
        return Vector([0 if s is None else 1 + self.named[s] for s in shardings], UINT32)

    def entries(self, shardings: Sequence[Any]) -> Vector:
        """JAX's older per-entry form (still written, for older readers)."""
        return Vector([Table({}) if s is None else
                       Table({_SHARDING_NAMED: (None, self.named_table(s))})
                       for s in shardings])

    def mesh_tables(self) -> Vector:
        return Vector([_mesh_table(m) for m in self.meshes])

    def named_tables(self) -> Vector:
        return Vector([self.named_table(s) for s in self.named])

    def named_table(self, s) -> Table:
        return Table({_NAMED_MESH: (None, _mesh_table(s.mesh)),
                      _NAMED_SPEC: (None, _spec_table(s.spec, s)),
                      _NAMED_MEMORY_KIND: (None, s.memory_kind),
                      _NAMED_MESH_IDX: (UINT32, self.meshes[s.mesh])})


def _mesh_table(mesh) -> Table:
    device = mesh.abstract_device
    device_table = None if device is None else Table({
        _DEVICE_KIND: (None, device.device_kind),
        _DEVICE_NUM_CORES: (UINT32, device.num_cores),
        _DEVICE_PLATFORM: (None, device.platform)})
    return Table({
        _MESH_AXIS_SIZES: (None, Vector(mesh.axis_sizes, UINT32)),
        _MESH_AXIS_NAMES: (None, Vector([str(n) for n in mesh.axis_names])),
        _MESH_AXIS_TYPES: (None, Vector([_AXIS_TYPE_CODES[t.name] for t in mesh.axis_types],
                                        UINT8)),
        _MESH_DEVICE: (None, device_table)})


def _spec_table(spec, sharding) -> Table:
    parts = []
    for entry in spec:
        if entry is not None and not isinstance(entry, (str, tuple)):
            raise NotImplementedError(f"serializing the sharding {sharding}: its spec has "
                                      f"{entry!r}, which JAX's format cannot state")
        axes = () if entry is None else (entry,) if isinstance(entry, str) else entry
        parts.append(Table({_AXIS_AXES: (None, Vector([str(a) for a in axes]))}))
    return Table({_SPEC_PARTITIONS: (None, Vector(parts)),
                  _SPEC_REDUCED: (None, Vector(sorted(map(str, spec.reduced)))),
                  _SPEC_UNREDUCED: (None, Vector(sorted(map(str, spec.unreduced))))})


# --- reading -----------------------------------------------------------------------------

def read_shardings(root: fb.TableView, slots: dict[str, int], count: int,
                   what: str) -> tuple:
    """The `count` shardings of the inputs or outputs (`what`) of the Exported table
    `root`; `slots` names its fields (`meshes`, `named`, `idxs`, `entries`)."""
    meshes = [_read_mesh(t) for t in root.tables(slots["meshes"])]
    named = [_read_named(t, meshes) for t in root.tables(slots["named"])]
    idxs = root.scalars(slots["idxs"], "I")
    if idxs:
        if max(idxs) > len(named):
            raise ValueError(f"a serialized {what} sharding index is out of range")
        found = tuple(None if i == 0 else named[i - 1] for i in idxs)
    else:
        found = tuple(_read_entry(t, meshes, what) for t in root.tables(slots["entries"]))
    if not found:
        return (None,) * count
    if len(found) != count:
        raise ValueError(f"the serialized Exported has {len(found)} {what} shardings for "
                         f"{count} {what}s")
    return found


def _read_entry(t: fb.TableView, meshes, what: str):
    named = t.table(_SHARDING_NAMED)
    if named is not None:
        return _read_named(named, meshes)
    if t.has(_SHARDING_HLO_PROTO):  # JAX's format before 2026: an `OpSharding` proto
        from jaxlib import xla_client as xc
        proto = xc.OpSharding()
        proto.ParseFromString(t.bytes(_SHARDING_HLO_PROTO) or b"")
        return xc.HloSharding.from_proto(proto)
    return None


def _read_mesh(t: fb.TableView):
    from plax import sharding as shd  # only sharded exports need the sharding package
    types = {code: name for name, code in _AXIS_TYPE_CODES.items()}
    device = t.table(_MESH_DEVICE)
    abstract_device = None if device is None else shd.AbstractDevice(
        device.string(_DEVICE_KIND), device.scalar(_DEVICE_NUM_CORES, UINT32, None),
        device.string(_DEVICE_PLATFORM) or _platform_of_kind(device.string(_DEVICE_KIND)))
    return shd.AbstractMesh(
        tuple(t.scalars(_MESH_AXIS_SIZES, UINT32)), tuple(t.strings(_MESH_AXIS_NAMES)),
        tuple(getattr(shd.AxisType, types[c]) for c in t.scalars(_MESH_AXIS_TYPES, UINT8)),
        abstract_device=abstract_device)


def _platform_of_kind(kind: str) -> str:
    """The platform of a device kind (for meshes JAX wrote before it stored one)."""
    kind = kind.lower()
    for platform, words in (("cpu", ("cpu",)), ("tpu", ("tpu",)),
                            ("gpu", ("nvidia", "tesla", "amd"))):
        if any(w in kind for w in words):
            return platform
    raise ValueError(f"Got unexpected device_kind={kind!r}")


def _read_named(t: fb.TableView, meshes):
    from plax import sharding as shd
    mesh = (meshes[t.scalar(_NAMED_MESH_IDX, UINT32)] if meshes
            else _read_mesh(t.table(_NAMED_MESH)))
    spec_table = t.table(_NAMED_SPEC)
    parts = []
    for axis in spec_table.tables(_SPEC_PARTITIONS):
        axes = tuple(axis.strings(_AXIS_AXES))
        parts.append(None if not axes else axes[0] if len(axes) == 1 else axes)
    spec = shd.PartitionSpec(*parts, reduced=frozenset(spec_table.strings(_SPEC_REDUCED)),
                             unreduced=frozenset(spec_table.strings(_SPEC_UNREDUCED)))
    return shd.NamedSharding(mesh, spec, memory_kind=t.string(_NAMED_MEMORY_KIND))

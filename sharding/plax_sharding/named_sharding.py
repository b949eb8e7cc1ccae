"""`NamedSharding`: an array laid out over a mesh by a `PartitionSpec`.

`NamedSharding(mesh, P('x', None))` splits an array's first dimension over mesh
axis `x` and replicates it over the other axes. On a concrete `Mesh` it places
data; on an `AbstractMesh` it only describes a layout, which is what shardings
inside `jit` should do so that traces and lowerings do not depend on devices.

It is a plain subclass of the kernel's `Sharding`: XLA sees it as an `HloSharding`
(an iota tile assignment over the mesh's devices), Shardy as an `SdyArray` in the
mesh's own axis names, and jaxlib's C++ as a `GSPMDSharding`. jaxlib's own C++
`NamedSharding` is not used: its constructor imports `jax` (DESIGN §9).
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
import math

import numpy as np
from jaxlib import xla_client as xc

from plax.extend import config
from plax.extend.sharding import SdyArray, SdyDim, Sharding, hlo_shardings_equal
from plax_sharding.mesh import AbstractMesh, AxisType, Mesh
from plax_sharding.partition_spec import UNCONSTRAINED, PartitionSpec
from plax_transforms.manual_regions import gspmd_sharding

_REPLICATED = xc.HloSharding.replicate()
_ABSTRACT_MEMORY_KINDS = ("device", "pinned_host", "unpinned_host")
# How many candidate specs `_like_from_xla` tries before giving up on a layout.
_SPEC_SEARCH_LIMIT = 20000


class DuplicateSpecError(ValueError):
    """A mesh axis appears twice in a PartitionSpec (`spec`, for messages that print
    the type it would have given)."""

    def __init__(self, message: str, spec: PartitionSpec):
        super().__init__(message)
        self.spec = spec


@functools.lru_cache(maxsize=1024)
def _canonical_memory_kind(mesh, memory_kind: str | None) -> str:
    if isinstance(mesh, AbstractMesh):
        kind = "device" if memory_kind is None else memory_kind
        if kind not in _ABSTRACT_MEMORY_KINDS:
            raise ValueError(f"a NamedSharding on an AbstractMesh takes the memory kinds "
                             f"{_ABSTRACT_MEMORY_KINDS}; got {memory_kind!r}")
        return kind
    return xc.check_and_canonicalize_memory_kind(memory_kind, mesh._internal_device_list)


def check_spec(mesh, spec: PartitionSpec) -> None:
    """Raises unless every axis `spec` names is an axis of `mesh`, used once."""
    if not isinstance(spec, PartitionSpec):
        raise TypeError(f"NamedSharding's spec must be a PartitionSpec (plax.sharding.P), "
                        f"got {spec!r} of type {type(spec).__name__}")
    names = spec.mesh_axes() + sorted(spec.unreduced | spec.reduced, key=str)
    for name in names:
        if name not in mesh.shape:
            raise ValueError(f"Resource axis: {name} of {spec} is not found in mesh: "
                             f"{mesh.axis_names}.")
    seen = set()
    for name in spec.mesh_axes():
        if name in seen:
            raise DuplicateSpecError(
                f"A single NamedSharding spec specification can map every mesh axis to at "
                f"most one positional dimension, but {spec} has duplicate entries for "
                f"`{name}`", spec)
        seen.add(name)
    if UNCONSTRAINED in spec.partitions and AxisType.Auto not in mesh.axis_types:
        raise ValueError(f"{spec} cannot contain P.UNCONSTRAINED on a mesh without Auto axes "
                         f"(the partitioner chooses nothing there); got the axis types "
                         f"{mesh.axis_types}")
    for what, axes in (("Unreduced", spec.unreduced), ("Reduced", spec.reduced)):
        implicit = [a for a in sorted(axes, key=str)
                    if mesh.axis_types[mesh.axis_names.index(a)] is not AxisType.Explicit]
        if implicit:
            raise ValueError(f"{what} axes can only refer to mesh axes of type `Explicit`; "
                             f"{spec} names {implicit} of the mesh {mesh}")


class NamedSharding(Sharding):
    """A layout of arrays over a mesh: `spec` says which mesh axes split each dimension.

    `NamedSharding(mesh, P("x", None))` splits an array's first dimension over the
    mesh axis `x` and copies it over every axis the spec does not name. On a concrete
    `Mesh` it places data (`device_put`, `jit`'s `in_shardings`/`out_shardings`); on
    an `AbstractMesh` it only describes a layout, which is what code inside `jit`
    should use.

    Args:
        mesh: a `Mesh` or `AbstractMesh`.
        spec: a `PartitionSpec` with at most one entry per dimension of the arrays it
            will lay out, naming each mesh axis at most once.
        memory_kind: the memory space (e.g. "device", "pinned_host"); default the
            devices' default memory.

    Raises:
        TypeError: `mesh` is not a mesh.
        ValueError: `spec` names an axis the mesh lacks, or one axis twice.

    Examples:
        >>> mesh = plax.make_mesh((2, 4), ("x", "y"))
        >>> s = plax.sharding.NamedSharding(mesh, plax.sharding.PartitionSpec("x", None))
        >>> x = plax.device_put(jnp.zeros((4, 2)), s)
        >>> s.shard_shape(x.shape), len(x.addressable_shards)  # split in 2, copied 4 times
        ((2, 2), 8)
    """

    def __init__(self, mesh: Mesh | AbstractMesh, spec: PartitionSpec, *,
                 memory_kind: str | None = None):
        if not isinstance(mesh, (Mesh, AbstractMesh)):
            raise TypeError(f"NamedSharding's mesh must be a plax.sharding.Mesh or "
                            f"AbstractMesh, got {type(mesh).__name__}")
        check_spec(mesh, spec)
        self._mesh = mesh
        self._spec = spec
        self._memory_kind = _canonical_memory_kind(mesh, memory_kind)
        self._hash = hash((NamedSharding, mesh, spec._normalized, spec.unreduced, spec.reduced,
                           self._memory_kind))
        self._hlo_cache: dict[int, xc.HloSharding] = {}
        self._typed_cache: dict[int, NamedSharding | None] = {}

    mesh = property(lambda self: self._mesh)
    spec = property(lambda self: self._spec)
    memory_kind = property(lambda self: self._memory_kind)
    num_devices = property(lambda self: self._mesh.size)

    @property
    def _is_concrete(self) -> bool:
        return isinstance(self._mesh, Mesh)

    def _type_sharding(self, ndim: int) -> NamedSharding | None:
        drop_size_one = config.remove_size_one_mesh_axis_from_type.value
        typed = self._typed_cache.get((ndim, drop_size_one), _UNSET)
        if typed is _UNSET:
            typed = explicit_part(self._mesh, self._spec, ndim, drop_size_one)
            self._typed_cache[(ndim, drop_size_one)] = typed
        return typed

    def _concrete_mesh(self, what: str) -> Mesh:
        if not isinstance(self._mesh, Mesh):
            raise ValueError(f"{self} has no {what}: its mesh is an AbstractMesh, which "
                             "names no devices; use a plax.sharding.Mesh to place data")
        return self._mesh

    @property
    def device_set(self) -> set:
        return set(self._concrete_mesh("devices")._flat_devices_set)

    @property
    def _device_assignment(self) -> tuple:
        return self._concrete_mesh("devices")._flat_devices_tuple

    @property
    def _internal_device_list(self) -> xc.DeviceList:
        return self._concrete_mesh("devices")._internal_device_list

    @functools.cached_property
    def is_fully_replicated(self) -> bool:
        sizes = self._mesh.shape
        return all(sizes[a] == 1 for a in self._spec.mesh_axes())

    @functools.cached_property
    def is_fully_addressable(self) -> bool:
        return not self._concrete_mesh("devices").is_multi_process

    def with_memory_kind(self, kind: str) -> NamedSharding:
        return NamedSharding(self._mesh, self._spec, memory_kind=kind)

    def update(self, **kwargs) -> NamedSharding:
        """A copy with `mesh=`, `spec=` and/or `memory_kind=` replaced."""
        unknown = set(kwargs) - {"mesh", "spec", "memory_kind"}
        if unknown:
            raise TypeError(f"NamedSharding.update got unexpected arguments {sorted(unknown)}")
        return NamedSharding(kwargs.get("mesh", self._mesh), kwargs.get("spec", self._spec),
                             memory_kind=kwargs.get("memory_kind", self._memory_kind))

    # --- layouts ---------------------------------------------------------------------

    def _check_rank(self, ndim: int) -> None:
        if len(self._spec) > ndim:
            raise ValueError(f"Sharding {self} is only valid for values of rank at least "
                             f"{len(self._spec)}, but was applied to a value of rank {ndim}")

    def _split_axes(self, ndim: int) -> list[tuple]:
        """Per dimension, the mesh axes of size > 1 that split it."""
        sizes = self._mesh.shape
        return [tuple(a for a in self._spec.axes_of(i) if sizes[a] > 1) for i in range(ndim)]

    def _to_xla_hlo_sharding(self, num_dimensions: int) -> xc.HloSharding:
        hlo = self._hlo_cache.get(num_dimensions)
        if hlo is None:
            self._check_rank(num_dimensions)
            hlo = self._hlo_cache[num_dimensions] = gspmd_sharding(
                self._mesh.shape_tuple, self._split_axes(num_dimensions))
        return hlo

    def _to_sdy_sharding(self, num_dimensions: int, as_type: bool = False) -> SdyArray:
        """Shardy's layout; `as_type`: as a value's type (this sharding's explicit part)
        constrains it, which on a mesh with Auto axes leaves every dimension open to
        them and holds the Explicit axes the type does not name replicated (JAX's)."""
        self._check_rank(num_dimensions)
        dims = []
        for i in range(num_dimensions):
            entry = self._spec.partitions[i] if i < len(self._spec) else None
            dims.append(SdyDim((), is_open=entry is UNCONSTRAINED) if entry is None
                        or entry is UNCONSTRAINED else
                        SdyDim(tuple(str(a) for a in self._spec.axes_of(i))))
        replicated = ()
        if as_type and self._mesh.auto_axes:
            dims = [dataclasses.replace(d, is_open=True) for d in dims]
            named = set(self._spec.mesh_axes())
            replicated = tuple(str(a) for a in self._mesh.explicit_axes if a not in named)
        return SdyArray(tuple((str(n), s) for n, s in self._mesh.shape_tuple), tuple(dims),
                        replicated_axes=replicated)

    def shard_shape(self, global_shape) -> tuple[int, ...]:
        shape = tuple(global_shape)
        self._check_rank(len(shape))
        sizes = self._mesh.shape
        out = []
        for dim, (size, axes) in enumerate(zip(shape, self._split_axes(len(shape)))):
            pieces = math.prod(sizes[a] for a in axes)
            if size % pieces:
                named = " x ".join(f"{a!r} (size {sizes[a]})" for a in axes)
                raise ValueError(
                    f"{self} splits array axis {dim} of size {size} (shape {shape}) over "
                    f"mesh axes {named}, {pieces} pieces, but {size} is not divisible by "
                    f"{pieces}")
            out.append(size // pieces)
        return tuple(out)

    def _on_devices(self, devices: tuple) -> NamedSharding | None:
        if self._is_concrete:
            return self if self._device_assignment == devices else None
        if len(devices) != self._mesh.size:
            return None
        grid = np.empty(len(devices), dtype=object)
        grid[:] = devices
        mesh = Mesh(grid.reshape(self._mesh.axis_sizes), self._mesh.axis_names,
                    self._mesh.axis_types)
        return NamedSharding(mesh, self._spec, memory_kind=self._memory_kind)

    def _like_from_xla(self, hlo: xc.HloSharding, num_dimensions: int):
        spec = _spec_for_hlo(self._mesh, hlo, num_dimensions)
        return None if spec is None else NamedSharding(self._mesh, spec,
                                                       memory_kind=self._memory_kind)

    # --- identity --------------------------------------------------------------------

    def __eq__(self, other):
        if self is other:
            return True
        return (isinstance(other, NamedSharding) and self._mesh is other._mesh
                and self._spec._normalized == other._spec._normalized
                and self._spec.unreduced == other._spec.unreduced
                and self._spec.reduced == other._spec.reduced
                and self._memory_kind == other._memory_kind)

    def __hash__(self):
        return self._hash

    def __reduce__(self):
        return (_rebuild, (self._mesh, self._spec, self._memory_kind))

    def __repr__(self):
        if isinstance(self._mesh, Mesh):
            return (f"NamedSharding(mesh={self._mesh}, spec={self._spec}, "
                    f"memory_kind={self._memory_kind})")
        # as JAX prints a type's sharding: an abstract mesh's default kind goes unsaid
        kind = "" if self._memory_kind == "device" else f", memory_kind={self._memory_kind}"
        return f"NamedSharding(mesh={self._mesh!r}, spec={self._spec}{kind})"


_UNSET = object()


def explicit_part(mesh: Mesh | AbstractMesh, spec: PartitionSpec, ndim: int,
                  drop_size_one: bool = False) -> NamedSharding | None:
    """`spec` restricted to the `Explicit` axes of `mesh` (less those of size 1 if
    `drop_size_one`), on its abstract mesh, one entry per dimension: the sharding an
    array of rank `ndim` has in its type. None when the mesh has no explicit axis (the
    layout is then not part of the type)."""
    explicit = frozenset(mesh.explicit_axes)
    if not explicit or len(spec) > ndim:
        return None
    if drop_size_one:
        explicit -= {a for a in explicit if mesh.shape[a] == 1}

    def kept(entry):
        names = entry if isinstance(entry, tuple) else (entry,)
        names = tuple(n for n in names if n in explicit)
        return None if not names else names[0] if len(names) == 1 else names

    entries = [kept(e) for e in spec.for_rank(ndim).partitions]
    return NamedSharding(mesh.abstract_mesh, PartitionSpec(
        *entries, unreduced=spec.unreduced & explicit, reduced=spec.reduced & explicit))


def _rebuild(mesh, spec, memory_kind) -> NamedSharding:
    return NamedSharding(mesh, spec, memory_kind=memory_kind)


@functools.lru_cache(maxsize=1024)
def _spec_for_hlo(mesh, hlo: xc.HloSharding, ndim: int) -> PartitionSpec | None:
    """A spec on `mesh` whose layout is `hlo` (mesh axes in the device order the
    partitioner used), or None when no assignment of axes to dimensions gives it."""
    if hlo.is_manual() or hlo.is_unknown() or hlo.tuple_elements():
        return None
    if hlo_shardings_equal(hlo, _REPLICATED) or not hlo.is_tiled():
        return PartitionSpec()
    dims = hlo.tile_assignment_dimensions()
    data_dims = len(dims) - len(hlo.subgroup_types()) - int(hlo.replicate_on_last_tile_dim())
    if data_dims != ndim or hlo.subgroup_types():
        return None
    sizes = mesh.shape
    axes = [a for a in mesh.axis_names if sizes[a] > 1]
    budget = itertools.count()

    def assignments(dim: int, free: tuple):
        if dim == ndim:
            yield ()
            return
        for r in range(len(free) + 1):
            for combo in itertools.permutations(free, r):
                if math.prod(sizes[a] for a in combo) != dims[dim]:
                    continue
                rest = tuple(a for a in free if a not in combo)
                for tail in assignments(dim + 1, rest):
                    yield (combo, *tail)

    for assignment in assignments(0, tuple(axes)):
        if next(budget) > _SPEC_SEARCH_LIMIT:
            return None
        if hlo_shardings_equal(gspmd_sharding(mesh.shape_tuple, assignment), hlo):
            spec = [None if not c else c[0] if len(c) == 1 else c for c in assignment]
            while spec and spec[-1] is None:
                spec.pop()
            return PartitionSpec(*spec)
    return None


@functools.lru_cache(maxsize=None)
def unsharded_type(ndim: int) -> NamedSharding:
    """The sharding users see in the type of a value with no layout in it (JAX's:
    one None per dimension on the empty abstract mesh)."""
    return NamedSharding(AbstractMesh((), ()), PartitionSpec(*(None,) * ndim))

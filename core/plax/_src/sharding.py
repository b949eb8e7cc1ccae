"""The abstract `Sharding`: how an array's elements are laid out over devices.

The base class lives in core so that runtime, jit and lowering can all speak of
shardings without importing the package that defines concrete ones (DESIGN §2).
A subclass describes itself with a handful of abstract members, chiefly its
device assignment and an XLA `HloSharding`; everything else here (index maps,
shard shapes, equivalence, the jaxlib object handed to C++) is derived from those.

jaxlib's C++ is never given a plax sharding: `_to_jaxlib_sharding(ndim)` returns a
jaxlib `GSPMDSharding`, which C++ handles without calling back into Python.

Lowering speaks of shardings without devices: `_to_sdy_sharding(ndim)` gives an
`SdyArray` (Shardy's view: mesh axis names and sizes, which axes split each
dimension, logical device ids) and `_to_xla_hlo_sharding(ndim)` an `HloSharding`
whose device ids index the sharding's own `_device_assignment`. A sharding whose
mesh is abstract (`_is_concrete` false) has those two but no devices.
"""
from __future__ import annotations

import abc
import dataclasses
import functools
import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

from jaxlib import xla_client as xc

Device = xc.Device
Index = tuple[slice, ...]
"""The part of a global array one device holds: a slice per dimension."""


@dataclasses.dataclass(frozen=True)
class SdyDim:
    """How one array dimension is split in Shardy's terms: over `axes` (major first);
    an open dimension lets the partitioner add more."""
    axes: tuple[str, ...] = ()
    is_open: bool = False


@dataclasses.dataclass(frozen=True)
class SdyArray:
    """A layout as Shardy states it, with no device in it: the mesh's axes as
    `(name, size)` pairs (None: the empty mesh of one device), one `SdyDim` per array
    dimension, and the mesh's logical device ids when they are not 0, 1, 2, ..."""
    mesh_shape: tuple[tuple[str, int], ...] | None
    dims: tuple[SdyDim, ...]
    device_ids: tuple[int, ...] | None = None
    replicated_axes: tuple[str, ...] = ()

    @property
    def num_devices(self) -> int:
        return math.prod(size for _, size in self.mesh_shape or ())


class Sharding(abc.ABC):
    """The base class of array layouts: how an array is split over, or copied onto,
    devices.

    Every `plax.Array` has one (`x.sharding`). plax's kinds are `NamedSharding` (over
    a mesh, by a `PartitionSpec`), `SingleDeviceSharding` and `GSPMDSharding` (an
    XLA `HloSharding`). A subclass must be hashable and comparable (equal shardings
    must mean the same placement) and implement the abstract members (`device_set`,
    `is_fully_replicated`, `is_fully_addressable`, `memory_kind`,
    `with_memory_kind`, `_device_assignment`, `_to_xla_hlo_sharding`); the rest
    (`shard_shape`, `devices_indices_map`, `addressable_devices`...) is derived.

    Examples:
        >>> s = jnp.ones(3).sharding
        >>> isinstance(s, plax.sharding.Sharding), s.num_devices, s.is_fully_replicated
        (True, 1, True)
    """

    # --- abstract members -----------------------------------------------------------

    @property
    @abc.abstractmethod
    def device_set(self) -> set[Device]:
        """All devices this sharding spans, addressable or not."""

    @property
    @abc.abstractmethod
    def is_fully_replicated(self) -> bool:
        """Whether every device holds the whole array."""

    @property
    @abc.abstractmethod
    def is_fully_addressable(self) -> bool:
        """Whether this process can address every device of the sharding."""

    @property
    @abc.abstractmethod
    def num_devices(self) -> int:
        """The number of devices the sharding spans."""

    @property
    @abc.abstractmethod
    def memory_kind(self) -> str | None:
        """The memory kind (`device`, `pinned_host`, ...) or None for the default."""

    @abc.abstractmethod
    def with_memory_kind(self, kind: str) -> Sharding:
        """The same layout in another memory kind."""

    @property
    @abc.abstractmethod
    def _device_assignment(self) -> tuple[Device, ...]:
        """The devices in the order the HloSharding's logical device ids refer to."""

    @abc.abstractmethod
    def _to_xla_hlo_sharding(self, num_dimensions: int) -> xc.HloSharding:
        """The XLA sharding for an array of rank `num_dimensions`."""

    # --- derived members --------------------------------------------------------------

    @property
    def _is_concrete(self) -> bool:
        """Whether the sharding names devices (False for one on an abstract mesh)."""
        return True

    def _type_sharding(self, ndim: int) -> Sharding | None:
        """The part of this layout that belongs in an array's type (its aval's
        `sharding`): None unless the sharding splits over `Explicit` mesh axes."""
        return None

    def _to_sdy_sharding(self, num_dimensions: int) -> SdyArray:
        """The layout for an array of rank `num_dimensions` in Shardy's terms.

        Derived from the HloSharding: each tiled dimension gets a mesh axis of its
        own (`_axis_<dim>`), and the mesh lists the tile assignment's device ids.
        Subclasses with named axes say it in their own names.
        """
        return sdy_from_hlo(self._to_xla_hlo_sharding(num_dimensions), num_dimensions)

    def _on_devices(self, devices: tuple[Device, ...]) -> Sharding | None:
        """The same layout on `devices` (for a sharding whose mesh is abstract), or None
        if this kind cannot be placed so."""
        return self if self._is_concrete and self._device_assignment == devices else None

    def _like_from_xla(self, hlo: xc.HloSharding, num_dimensions: int) -> Sharding | None:
        """A sharding of this kind on the same devices that lays out an array of rank
        `num_dimensions` as `hlo` does, or None if this kind cannot say it.

        How outputs whose layout the compiler chose come back as the kind of sharding
        the inputs had (a NamedSharding on the inputs' mesh, say)."""
        return None

    @functools.cached_property
    def addressable_devices(self) -> set[Device]:
        """The devices of this sharding that the current process can address."""
        return {d for d in self.device_set if _is_addressable(d)}

    # The addressable devices in `_device_assignment`'s order (JAX's name; orbax reads it).
    _addressable_device_assignment = functools.cached_property(
        lambda self: tuple(d for d in self._device_assignment if _is_addressable(d)))

    def devices_indices_map(self, global_shape: Sequence[int]) -> Mapping[Device, Index]:
        """For each device, the slice of an array of `global_shape` it holds."""
        shape = tuple(global_shape)
        indices = _indices_from_hlo(self._to_xla_hlo_sharding(len(shape)), shape,
                                    len(self._device_assignment))
        return dict(zip(self._device_assignment, indices))

    def addressable_devices_indices_map(
            self, global_shape: Sequence[int]) -> Mapping[Device, Index]:
        """`devices_indices_map` restricted to addressable devices."""
        return {d: idx for d, idx in self.devices_indices_map(global_shape).items()
                if _is_addressable(d)}

    def shard_shape(self, global_shape: Sequence[int]) -> tuple[int, ...]:
        """The shape of each shard; the array must divide evenly."""
        shape = tuple(global_shape)
        hlo = self._to_xla_hlo_sharding(len(shape))
        counts = _tile_counts(hlo, len(shape))
        for axis, (size, count) in enumerate(zip(shape, counts)):
            if size % count:
                raise ValueError(
                    f"{self} splits axis {axis} of an array of shape {shape} into "
                    f"{count} pieces, but {size} is not evenly divisible by {count}")
        return tuple(size // count for size, count in zip(shape, counts))

    def is_equivalent_to(self, other: Sharding, ndim: int) -> bool:
        """Whether both place an array of rank `ndim` identically on the same devices."""
        if not isinstance(other, Sharding):
            return False
        return (self._device_assignment == other._device_assignment
                and self.memory_kind == other.memory_kind
                and hlo_shardings_equal(self._to_xla_hlo_sharding(ndim),
                                        other._to_xla_hlo_sharding(ndim)))

    def _to_jaxlib_sharding(self, ndim: int) -> xc.GSPMDSharding:
        """The jaxlib C++ sharding handed to jaxlib for an array of rank `ndim`.

        Cached per instance and rank: building one costs a C++ device list.
        """
        cache = self.__dict__.setdefault("_jaxlib_sharding_cache", {})
        jaxlib_sharding = cache.get(ndim)
        if jaxlib_sharding is None:
            jaxlib_sharding = cache[ndim] = xc.GSPMDSharding(
                list(self._device_assignment), self._to_xla_hlo_sharding(ndim),
                memory_kind=self.memory_kind)
        return jaxlib_sharding


def sdy_from_hlo(hlo: xc.HloSharding, ndim: int) -> SdyArray:
    """`SdyArray` of any HloSharding that places one array: a mesh with one axis per
    tile dimension larger than one, in the tile assignment's device order."""
    if hlo.is_manual() or hlo.is_unknown() or hlo.tuple_elements():
        raise TypeError(f"the sharding {hlo} cannot be stated for Shardy")
    _tile_counts(hlo, ndim)  # checks the rank
    if _is_replicated(hlo) or not hlo.is_tiled():
        return SdyArray(None, (SdyDim(),) * ndim)
    dims = hlo.tile_assignment_dimensions()
    mesh = tuple((f"_axis_{i}", size) for i, size in enumerate(dims) if size > 1)
    ids = tuple(hlo.tile_assignment_devices())
    return SdyArray(mesh, tuple(SdyDim((f"_axis_{i}",) if dims[i] > 1 else ())
                                for i in range(ndim)),
                    None if ids == tuple(range(len(ids))) else ids)


def _is_addressable(device: Device) -> bool:
    return device.process_index == device.client.process_index()


def hlo_shardings_equal(a: xc.HloSharding, b: xc.HloSharding) -> bool:
    """HloSharding equality that treats every spelling of "replicated" alike."""
    if _is_replicated(a) and _is_replicated(b):
        return True
    return a == b


def _is_replicated(hlo: xc.HloSharding) -> bool:
    if hlo.is_replicated():
        return True
    if not hlo.is_tiled():
        return False
    dims = hlo.tile_assignment_dimensions()
    data_dims = len(dims) - len(hlo.subgroup_types()) - int(hlo.replicate_on_last_tile_dim())
    return all(d == 1 for d in dims[:data_dims])


def _tile_counts(hlo: xc.HloSharding, ndim: int) -> tuple[int, ...]:
    """How many pieces each of the `ndim` array axes is split into."""
    if hlo.tuple_elements():
        raise ValueError(f"a tuple sharding {hlo} cannot place a single array")
    if hlo.is_manual() or hlo.is_unknown():
        raise ValueError(f"the sharding {hlo} does not describe a placement of an array")
    if not hlo.is_tiled():  # replicated or on one device ("maximal")
        return (1,) * ndim
    dims = hlo.tile_assignment_dimensions()
    data_dims = len(dims) - len(hlo.subgroup_types()) - int(hlo.replicate_on_last_tile_dim())
    if data_dims != ndim:
        raise ValueError(f"the sharding {hlo} tiles {data_dims} axes, but the array "
                         f"has rank {ndim}")
    return tuple(dims[:ndim])


def _indices_from_hlo(hlo: xc.HloSharding, shape: tuple[int, ...],
                      num_devices: int) -> list[Index]:
    """The slice held by each logical device 0..num_devices-1 under `hlo`.

    Tiles follow XLA's rule: each of `n` pieces of an axis of size `s` has
    ceil(s / n) elements, the last ones fewer (possibly none).
    """
    ndim = len(shape)
    counts = _tile_counts(hlo, ndim)
    full: Index = (slice(None),) * ndim
    if not hlo.is_tiled():
        return [full] * num_devices
    dims = hlo.tile_assignment_dimensions()
    devices = hlo.tile_assignment_devices()
    if len(devices) != num_devices:
        raise ValueError(f"the sharding {hlo} assigns {len(devices)} devices, but "
                         f"{num_devices} devices were given")
    indices: list[Any] = [None] * num_devices
    for position, logical in zip(itertools.product(*map(range, dims)), devices):
        index = []
        for axis, (size, count) in enumerate(zip(shape, counts)):
            if count == 1:
                index.append(slice(None))
            else:
                chunk = math.ceil(size / count)
                start = min(position[axis] * chunk, size)
                index.append(slice(start, min(start + chunk, size)))
        indices[logical] = tuple(index)
    return indices

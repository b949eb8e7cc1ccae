"""Meshes: devices arranged in an n-dimensional grid with named axes.

A `Mesh` holds concrete devices; an `AbstractMesh` only the axis names, sizes and
types (and optionally the kind of device). Shardings inside `jit` use the abstract
mesh, so that two meshes of the same shape on different devices share traces and
lowerings; the concrete devices come from the arguments when compiling.

Both kinds are interned (jaxlib's weak-value interner): equal constructor calls give
the same object, so equality and hashing are by identity and cost nothing in cache
keys.
"""
from __future__ import annotations

import collections
import enum
import functools
import math
import threading
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
from jaxlib import weakref_lru_cache, xla_client as xc

from plax.extend.sharding import Device, restore_meshes, swap_meshes

MeshAxisName = Hashable


class AxisType(enum.Enum):
    """How the partitioner may treat one axis of a mesh.

    - `Auto`: the compiler (GSPMD/Shardy) chooses how values are split over the
      axis; shardings given by the user are hints, and they are not part of the
      values' types.
    - `Explicit`: how a value is split over the axis is part of its type
      (`plax.typeof(x)` shows `float32[8@x]`), propagated by each operation at trace
      time; an ambiguous case is a `ShardingTypeError` instead of a silent choice.
    - `Manual`: inside `shard_map`, the program sees per-device blocks and
      communicates with collectives.

    `plax.make_mesh` makes Explicit axes by default; `Mesh` and `AbstractMesh`
    default to Auto.

    Examples:
        >>> mesh = plax.make_mesh((2, 4), ("x", "y"),
        ...                       axis_types=(plax.sharding.AxisType.Auto,) * 2)
        >>> mesh.axis_types
        (Auto, Auto)
    """
    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()

    def __repr__(self):
        return self.name


def _axis_names(axis_names: str | Sequence[MeshAxisName], what: str) -> tuple:
    names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
    for name in names:
        if name is None:
            raise ValueError(f"{what} axis names cannot be None; got {names}")
        try:
            hash(name)
        except TypeError:
            raise TypeError(f"{what} axis names must be hashable; got {name!r}") from None
    if len(set(names)) != len(names):
        raise ValueError(f"{what} axis names must be unique; got {names}")
    return names


def _axis_types(names: tuple, axis_types, what: str) -> tuple[AxisType, ...]:
    if axis_types is None:
        return (AxisType.Auto,) * len(names)
    if isinstance(axis_types, AxisType):
        return (axis_types,) * len(names)
    types = tuple(axis_types)
    if not all(isinstance(t, AxisType) for t in types):
        raise TypeError(f"{what} axis_types must be AxisType values; got {axis_types!r}")
    if len(types) != len(names):
        raise ValueError(f"{what}: {len(types)} axis_types were given for the "
                         f"{len(names)} axes {names}")
    return types


class _BaseMesh:
    """What both kinds of mesh share: names, sizes, types and the derived views."""
    axis_names: tuple
    axis_sizes: tuple[int, ...]
    axis_types: tuple[AxisType, ...]
    size: int

    def __setattr__(self, name, value):
        if name in self.__dict__ or not name.startswith("_"):
            raise AttributeError(f"{type(self).__name__} is immutable")
        object.__setattr__(self, name, value)

    @functools.cached_property
    def shape(self) -> collections.OrderedDict:
        """`{axis name: size}` in axis order."""
        return collections.OrderedDict(zip(self.axis_names, self.axis_sizes))

    @functools.cached_property
    def shape_tuple(self) -> tuple[tuple[Any, int], ...]:
        return tuple(zip(self.axis_names, self.axis_sizes))

    @property
    def empty(self) -> bool:
        return self.size == 0

    def _axes_of_type(self, kind: AxisType) -> tuple:
        return tuple(n for n, t in zip(self.axis_names, self.axis_types) if t is kind)

    def _all_axes_are(self, kind: AxisType) -> bool:
        """Whether the mesh has axes and all are of `kind` (JAX's: False when empty)."""
        return bool(self.axis_types) and all(t is kind for t in self.axis_types)

    are_all_axes_explicit = property(lambda self: self._all_axes_are(AxisType.Explicit))
    are_all_axes_auto = property(lambda self: self._all_axes_are(AxisType.Auto))
    are_all_axes_manual = property(lambda self: self._all_axes_are(AxisType.Manual))

    auto_axes = property(lambda self: self._axes_of_type(AxisType.Auto))
    explicit_axes = property(lambda self: self._axes_of_type(AxisType.Explicit))
    manual_axes = property(lambda self: self._axes_of_type(AxisType.Manual))

    def _shape_repr(self) -> str:
        return ", ".join(f"{n!r}: {s}" for n, s in self.shape_tuple)


class AbstractDevice:
    """The kind of device an abstract mesh stands for, without naming devices.

    A concrete mesh's `abstract_mesh` records it, so that code traced against the
    abstract mesh can still ask which platform it will run on.

    Args:
        device_kind: the device kind string (e.g. `"cpu"`, `"TPU v5 lite"`).
        num_cores: cores per device, where the platform has that notion, else None.
        platform: the platform name (`"cpu"`, `"gpu"`, `"tpu"`).

    Examples:
        >>> plax.make_mesh((8,), ("x",)).abstract_mesh.abstract_device
        AbstractDevice(device_kind=cpu, num_cores=None, platform=cpu)
    """
    __slots__ = ("device_kind", "num_cores", "platform")

    def __init__(self, device_kind: str, num_cores: int | None, platform: str):
        self.device_kind, self.num_cores, self.platform = device_kind, num_cores, platform

    def _key(self):
        return (self.device_kind, self.num_cores, self.platform)

    def __eq__(self, other):
        return isinstance(other, AbstractDevice) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def _repr(self) -> str:
        return (f"device_kind={self.device_kind}, num_cores={self.num_cores}, "
                f"platform={self.platform}")

    def __repr__(self):
        return f"AbstractDevice({self._repr()})"


class AbstractMesh(_BaseMesh):
    """A mesh's shape, axis names and axis types, without devices.

    It describes layouts without placing anything: shardings made with it
    (`NamedSharding(abstract_mesh, P("x"))`) are what a traced program should use, so
    that tracing and lowering do not depend on which devices run it. Inside `jit`,
    `plax.sharding.get_abstract_mesh()` returns the one in context. Equal
    constructions return the same (interned) object.

    Args:
        axis_sizes: the size of each axis (positive integers).
        axis_names: a name for each axis (hashable, usually strings).
        axis_types: an `AxisType` per axis, or one for all; default `Auto`.
        abstract_device: the kind of device the mesh stands for (optional).

    Raises:
        ValueError: sizes that are not positive integers, or as many sizes as names.

    Examples:
        >>> am = plax.sharding.AbstractMesh((2, 4), ("x", "y"))
        >>> am
        AbstractMesh('x': 2, 'y': 4, axis_types=(Auto, Auto))
        >>> am.size, am.shape["y"]
        (8, 4)
    """

    def __new__(cls, axis_sizes: Sequence[int], axis_names: Sequence[MeshAxisName],
                axis_types: AxisType | Sequence[AxisType] | None = None, *,
                abstract_device: AbstractDevice | None = None):
        names = _axis_names(axis_names, "AbstractMesh")
        sizes = tuple(axis_sizes)
        if not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s >= 1
                   for s in sizes):
            raise ValueError(f"AbstractMesh axis sizes must be positive integers; "
                             f"got {axis_sizes!r}")
        if len(sizes) != len(names):
            raise ValueError(f"AbstractMesh got {len(sizes)} axis sizes {sizes} for "
                             f"{len(names)} axis names {names}")
        types = _axis_types(names, axis_types, "AbstractMesh")
        return _create_abstract_mesh(tuple(int(s) for s in sizes), names, types,
                                     abstract_device)

    def __getnewargs_ex__(self):
        return ((self.axis_sizes, self.axis_names, self.axis_types),
                {"abstract_device": self.abstract_device})

    @property
    def abstract_mesh(self) -> AbstractMesh:
        return self

    _internal_device_list = property(lambda self: None)

    def update(self, axis_sizes=None, axis_names=None, axis_types=None,
               **kwargs) -> AbstractMesh:
        kwargs.setdefault("abstract_device", self.abstract_device)
        return AbstractMesh(self.axis_sizes if axis_sizes is None else axis_sizes,
                            self.axis_names if axis_names is None else axis_names,
                            self.axis_types if axis_types is None else axis_types, **kwargs)

    def update_axis_types(self, name_to_type: dict) -> AbstractMesh:
        return self.update(axis_types=tuple(name_to_type.get(n, t) for n, t in
                                            zip(self.axis_names, self.axis_types)))

    def _no_devices(self, what: str):
        raise ValueError(f"AbstractMesh does not implement {what}: it has no devices")

    devices = property(lambda self: self._no_devices("devices"))
    device_ids = property(lambda self: self._no_devices("device_ids"))
    local_devices = property(lambda self: self._no_devices("local_devices"))
    local_mesh = property(lambda self: self._no_devices("local_mesh"))
    is_multi_process = property(lambda self: self._no_devices("is_multi_process"))

    def __enter__(self):
        self._no_devices("__enter__ (use plax.sharding.use_abstract_mesh)")

    def __exit__(self, *exc_info):
        return False

    def __repr__(self):
        device = "" if self.abstract_device is None else f", {self.abstract_device._repr()}"
        return (f"AbstractMesh({self._shape_repr() or '()'}, "
                f"axis_types={self.axis_types}{device})")


@weakref_lru_cache.weak_value_interner
def _create_abstract_mesh(axis_sizes, axis_names, axis_types, abstract_device):
    mesh = object.__new__(AbstractMesh)
    object.__setattr__(mesh, "axis_sizes", axis_sizes)
    object.__setattr__(mesh, "axis_names", axis_names)
    object.__setattr__(mesh, "axis_types", axis_types)
    object.__setattr__(mesh, "abstract_device", abstract_device)
    object.__setattr__(mesh, "size", math.prod(axis_sizes) if axis_sizes else 0)
    return mesh


EMPTY_ABSTRACT_MESH = AbstractMesh((), ())


class Mesh(_BaseMesh):
    """Devices arranged in an n-dimensional grid whose axes have names.

    Shardings refer to mesh axes by name: `NamedSharding(mesh, P("x"))` splits an
    array's first dimension over the devices along axis `x` and copies it along the
    other axes. Most programs build meshes with `plax.make_mesh`, which picks a good
    device order; `Mesh` takes the grid as given. Equal constructions return the same
    object. `with mesh:` puts it in context, like `plax.set_mesh(mesh)`.

    Args:
        devices: an array (or nested sequence) of devices, one dimension per axis
            name; every device at most once, all of one backend.
        axis_names: a name per dimension of `devices` (or one string for 1-D).
        axis_types: an `AxisType` per axis, or one for all; default `Auto`.

    Raises:
        ValueError: the rank of `devices` differs from the number of names, a device
            appears twice, or devices come from several backends.
        TypeError: an element of `devices` is not a device.

    Examples:
        >>> devices = np.array(plax.devices()[:4]).reshape(2, 2)
        >>> mesh = plax.sharding.Mesh(devices, ("a", "b"))
        >>> mesh
        Mesh(axis_sizes=(2, 2), axis_names=('a', 'b'), axis_types=(Auto, Auto))
        >>> mesh.devices.shape, mesh.size
        ((2, 2), 4)
    """

    def __new__(cls, devices: np.ndarray | Sequence[Device],
                axis_names: str | Sequence[MeshAxisName],
                axis_types: AxisType | Sequence[AxisType] | None = None):
        names = _axis_names(axis_names, "Mesh")
        array = devices if isinstance(devices, np.ndarray) else np.array(devices, dtype=object)
        if array.ndim != len(names):
            raise ValueError(f"Mesh requires the rank of `devices` to equal the number of "
                             f"axis names, but got devices of shape {array.shape} and "
                             f"{len(names)} axis names {names}")
        flat = tuple(array.flat)
        for d in flat:
            if not isinstance(d, Device):
                raise TypeError(f"Mesh devices must be plax devices (plax.devices()); got "
                                f"{d!r} of type {type(d).__name__}")
        if not flat:
            raise ValueError("Mesh needs at least one device")
        if len(set(flat)) != len(flat):
            raise ValueError(f"Mesh got a device more than once: {list(flat)}")
        if len({d.client for d in flat}) != 1:
            raise ValueError("Mesh devices must all belong to one backend")
        types = _axis_types(names, axis_types, "Mesh")
        return _create_mesh(flat, array.shape, names, types)

    def __reduce__(self):
        return (Mesh, (self.devices, self.axis_names, self.axis_types))

    @functools.cached_property
    def devices(self) -> np.ndarray:
        array = np.empty(len(self._flat_devices_tuple), dtype=object)
        array[:] = self._flat_devices_tuple
        array = array.reshape(self.axis_sizes)
        array.flags.writeable = False
        return array

    @functools.cached_property
    def device_ids(self) -> np.ndarray:
        return np.array([d.id for d in self._flat_devices_tuple]).reshape(self.axis_sizes)

    @functools.cached_property
    def _internal_device_list(self) -> xc.DeviceList:
        return xc.DeviceList(self._flat_devices_tuple)

    @functools.cached_property
    def _flat_devices_set(self) -> frozenset:
        return frozenset(self._flat_devices_tuple)

    @functools.cached_property
    def local_devices(self) -> list[Device]:
        return [d for d in self._flat_devices_tuple
                if d.process_index == d.client.process_index()]

    @functools.cached_property
    def is_multi_process(self) -> bool:
        return len(self.local_devices) != self.size

    @functools.cached_property
    def local_mesh(self) -> Mesh:
        """The smallest sub-grid holding this process's devices; it must hold only them."""
        local = np.vectorize(lambda d: d.process_index == d.client.process_index(),
                             otypes=[bool])(self.devices)
        if not local.any():
            raise ValueError(f"{self} has no device of this process")
        box = []
        for axis in range(local.ndim):
            others = tuple(a for a in range(local.ndim) if a != axis)
            hits = np.flatnonzero(local.any(axis=others))
            box.append(slice(int(hits[0]), int(hits[-1]) + 1))
        if not local[tuple(box)].all():
            raise ValueError("the devices of this process do not form a contiguous "
                             f"sub-grid of {self}")
        return Mesh(self.devices[tuple(box)], self.axis_names, self.axis_types)

    @functools.cached_property
    def abstract_mesh(self) -> AbstractMesh:
        """The same axes without devices (recording the device kind and platform)."""
        first = self._flat_devices_tuple[0]
        cores = getattr(first, "num_cores", None) if first.platform == "tpu" else (
            getattr(first, "core_count", None) if first.platform == "gpu" else None)
        return AbstractMesh(self.axis_sizes, self.axis_names, self.axis_types,
                            abstract_device=AbstractDevice(first.device_kind, cores,
                                                           first.platform))

    def update(self, devices=None, axis_names=None, axis_types=None) -> Mesh:
        return Mesh(self.devices if devices is None else devices,
                    self.axis_names if axis_names is None else axis_names,
                    self.axis_types if axis_types is None else axis_types)

    def __enter__(self):
        _entered_stack().append(swap_meshes(self.abstract_mesh, self))
        return self

    def __exit__(self, *exc_info):
        restore_meshes(_entered_stack().pop())
        return False

    def __str__(self):
        return f"Mesh({self._shape_repr()}, axis_types={self.axis_types})"

    def __repr__(self):
        return (f"Mesh(axis_sizes={self.axis_sizes}, axis_names={self.axis_names!r}, "
                f"axis_types={self.axis_types})")


@weakref_lru_cache.weak_value_interner
def _create_mesh(flat_devices, shape, axis_names, axis_types):
    mesh = object.__new__(Mesh)
    object.__setattr__(mesh, "_flat_devices_tuple", flat_devices)
    object.__setattr__(mesh, "axis_sizes", tuple(shape))
    object.__setattr__(mesh, "axis_names", axis_names)
    object.__setattr__(mesh, "axis_types", axis_types)
    object.__setattr__(mesh, "size", len(flat_devices))
    return mesh


_entered = threading.local()


def _entered_stack() -> list:
    """This thread's meshes entered with `with mesh:`, to restore what they replaced."""
    stack = getattr(_entered, "stack", None)
    if stack is None:
        stack = _entered.stack = []
    return stack

"""Concrete shardings the runtime makes: one device, or an explicit XLA sharding.

`SingleDeviceSharding` places a whole array on one device. `GSPMDSharding` pairs a
device list with an XLA `HloSharding` (what executables report for their outputs).
Both are plain subclasses of the core `Sharding`; the runtime relies only on the base
class protocol, so other packages add their own kinds (`NamedSharding`) the same way.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence

from jaxlib import xla_client as xc

from plax.extend.sharding import Device, Sharding, hlo_shardings_equal

_REPLICATED = xc.HloSharding.replicate()


@functools.lru_cache(maxsize=4096)
def _canonical_memory_kind(devices: tuple[Device, ...], memory_kind: str | None) -> str:
    return xc.check_and_canonicalize_memory_kind(memory_kind, xc.DeviceList(devices))


def _device_tuple(devices: Sequence[Device], what: str) -> tuple[Device, ...]:
    devices = tuple(devices)
    if not devices:
        raise ValueError(f"{what} needs at least one device")
    for d in devices:
        if not isinstance(d, Device):
            raise TypeError(f"{what} expects devices, got {d!r} of type {type(d).__name__}")
    if len(set(devices)) != len(devices):
        raise ValueError(f"{what} got a device more than once: {list(devices)}")
    return devices


class SingleDeviceSharding(Sharding):
    """The layout of an array held whole by one device (the default for arrays created
    outside a mesh).

    Instances are interned per (device, memory kind), so the arrays on a device and
    the outputs of computations there share one sharding object.

    Args:
        device: the device.
        memory_kind: the memory space on it; default the device's default memory.

    Examples:
        >>> plax.sharding.SingleDeviceSharding(plax.devices()[0])
        SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)
    """
    _interned: dict[tuple, SingleDeviceSharding] = {}

    def __new__(cls, device: Device, *, memory_kind: str | None = None):
        key = (device, memory_kind)
        self = cls._interned.get(key)
        if self is None:
            self = super().__new__(cls)
            (self._device,) = _device_tuple((device,), "SingleDeviceSharding")
            self._memory_kind = _canonical_memory_kind((device,), memory_kind)
            self._hash = hash((SingleDeviceSharding, self._device, self._memory_kind))
            self = cls._interned.setdefault(key, self)
        return self

    def __reduce__(self):
        return (_single_device_sharding, (self._device, self._memory_kind))

    device_set = property(lambda self: {self._device})
    is_fully_replicated = property(lambda self: True)
    is_fully_addressable = property(
        lambda self: self._device.process_index == self._device.client.process_index())
    num_devices = property(lambda self: 1)
    memory_kind = property(lambda self: self._memory_kind)
    _device_assignment = property(lambda self: (self._device,))

    def with_memory_kind(self, kind: str) -> SingleDeviceSharding:
        return SingleDeviceSharding(self._device, memory_kind=kind)

    def _to_xla_hlo_sharding(self, num_dimensions: int) -> xc.HloSharding:
        return _REPLICATED

    def devices_indices_map(self, global_shape):
        return {self._device: (slice(None),) * len(global_shape)}

    def shard_shape(self, global_shape):
        return tuple(global_shape)

    def _to_jaxlib_sharding(self, ndim: int) -> xc.GSPMDSharding:
        return _replicated_jaxlib_sharding((self._device,), self._memory_kind)

    def __eq__(self, other):
        return (isinstance(other, SingleDeviceSharding) and self._device == other._device
                and self._memory_kind == other._memory_kind)

    def __hash__(self):  # jit cache keys hash it on every call
        return self._hash

    def __repr__(self):
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind={self._memory_kind})"


@functools.lru_cache(maxsize=4096)
def _replicated_jaxlib_sharding(devices: tuple[Device, ...], memory_kind: str):
    """One jaxlib object per placement, so C++ caches keyed by it keep hitting."""
    return xc.GSPMDSharding(list(devices), _REPLICATED, memory_kind=memory_kind)


def _single_device_sharding(device: Device, memory_kind: str | None) -> SingleDeviceSharding:
    return SingleDeviceSharding(device, memory_kind=memory_kind)


class GSPMDSharding(Sharding):
    """A layout given by an XLA `HloSharding` over an ordered list of devices.

    This is the form the compiler reports layouts in; plax returns it for outputs
    whose layout no `NamedSharding` on the inputs' mesh can say. The sharding's
    logical device ids index into `devices`. `GSPMDSharding.get_replicated(devices)`
    makes the fully replicated one.

    Args:
        devices: the devices, in the order the sharding's device ids refer to.
        op_sharding: an `HloSharding` (or an `OpSharding` proto) for one array.
        memory_kind: the memory space; default the devices' default memory.

    Raises:
        TypeError: `op_sharding` is neither an `HloSharding` nor an `OpSharding`.
        ValueError: a tuple sharding, or one spanning a different number of devices.

    Examples:
        >>> s = plax.sharding.GSPMDSharding.get_replicated(plax.devices()[:2])
        >>> s.num_devices, s.is_fully_replicated
        (2, True)
    """

    def __init__(self, devices: Sequence[Device],
                 op_sharding: xc.HloSharding | xc.OpSharding, *,
                 memory_kind: str | None = None):
        self._devices = _device_tuple(devices, "GSPMDSharding")
        if isinstance(op_sharding, xc.OpSharding):
            op_sharding = xc.HloSharding.from_proto(op_sharding)
        if not isinstance(op_sharding, xc.HloSharding):
            raise TypeError("GSPMDSharding expects an HloSharding or OpSharding, got "
                            f"{type(op_sharding).__name__}")
        if op_sharding.tuple_elements():
            raise ValueError(f"GSPMDSharding places one array; got the tuple sharding "
                             f"{op_sharding}")
        if op_sharding.is_tiled() and op_sharding.num_devices() != len(self._devices):
            raise ValueError(f"the sharding {op_sharding} spans {op_sharding.num_devices()} "
                             f"devices, but {len(self._devices)} devices were given")
        self._hlo_sharding = op_sharding
        self._memory_kind = _canonical_memory_kind(self._devices, memory_kind)

    def __reduce__(self):
        return (_gspmd_sharding, (self._devices, self._hlo_sharding.to_proto().SerializeToString(),
                                  self._memory_kind))

    @classmethod
    def get_replicated(cls, devices: Sequence[Device], *,
                       memory_kind: str | None = None) -> GSPMDSharding:
        return cls(devices, _REPLICATED, memory_kind=memory_kind)

    device_set = property(lambda self: set(self._devices))
    num_devices = property(lambda self: len(self._devices))
    memory_kind = property(lambda self: self._memory_kind)
    _device_assignment = property(lambda self: self._devices)

    @functools.cached_property
    def is_fully_replicated(self) -> bool:
        return hlo_shardings_equal(self._hlo_sharding, _REPLICATED)

    @functools.cached_property
    def is_fully_addressable(self) -> bool:
        return all(d.process_index == d.client.process_index() for d in self._devices)

    def with_memory_kind(self, kind: str) -> GSPMDSharding:
        return GSPMDSharding(self._devices, self._hlo_sharding, memory_kind=kind)

    def _to_xla_hlo_sharding(self, num_dimensions: int) -> xc.HloSharding:
        return self._hlo_sharding

    def __eq__(self, other):
        return (isinstance(other, GSPMDSharding) and self._devices == other._devices
                and self._memory_kind == other._memory_kind
                and hlo_shardings_equal(self._hlo_sharding, other._hlo_sharding))

    def __hash__(self):
        hlo = _REPLICATED if self.is_fully_replicated else self._hlo_sharding
        return hash((GSPMDSharding, self._devices, self._memory_kind, hlo))

    def __repr__(self):
        return f"GSPMDSharding({self._hlo_sharding!r}, memory_kind={self._memory_kind})"


def _gspmd_sharding(devices, op_sharding: bytes, memory_kind: str | None) -> GSPMDSharding:
    proto = xc.OpSharding()
    proto.ParseFromString(op_sharding)
    return GSPMDSharding(devices, proto, memory_kind=memory_kind)


@functools.lru_cache(maxsize=1024)
def replicated_sharding(devices: tuple[Device, ...]) -> Sharding:
    """The (cached) sharding of an array copied whole onto each of `devices`."""
    if len(devices) == 1:
        return SingleDeviceSharding(devices[0])
    return GSPMDSharding.get_replicated(devices)


def sharding_from_xla(devices: Sequence[Device], hlo: xc.HloSharding | xc.OpSharding | None,
                      memory_kind: str | None = None, *, ndim: int | None = None,
                      like: Sequence[Sharding] = (), shared: Sequence[Sharding] = ()
                      ) -> Sharding:
    """The plax sharding for what XLA reports for an array of rank `ndim` on `devices`:
    one device; else, where one of the shardings `like` (on the same devices) can say
    it, a sharding of its kind (a NamedSharding on the inputs' mesh, say), or the one
    of `shared` equal to it, itself (as JAX's results take their first argument's
    sharding, spelled as it is, where equal); else a GSPMDSharding."""
    devices = tuple(devices)
    if len(devices) == 1:
        return SingleDeviceSharding(devices[0], memory_kind=memory_kind)
    if hlo is None:
        hlo = _REPLICATED
    elif isinstance(hlo, xc.OpSharding):
        hlo = xc.HloSharding.from_proto(hlo)
    if ndim is not None:
        for reference in like:
            if reference._device_assignment != devices:
                continue
            same_kind = reference._like_from_xla(hlo, ndim)
            if same_kind is None:
                continue
            if memory_kind is not None and same_kind.memory_kind != memory_kind:
                same_kind = same_kind.with_memory_kind(memory_kind)
            # an equal one is shared, unless it names more dimensions than `ndim` (P('x')
            # equals P('x', None), which a rank-1 result cannot take)
            return next((r for r in shared if r == same_kind
                         and len(getattr(r, "spec", ())) <= ndim), same_kind)
    return GSPMDSharding(devices, hlo, memory_kind=memory_kind)

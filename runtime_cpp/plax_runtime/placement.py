"""Placing data on devices as jaxlib buffers: host values through jaxlib's
`batched_device_put` (one call per value listing all of its shards), and batched
buffer copies through `batched_copy_array_to_devices_with_sharding` (one call, grouped
by source and destination in C++). `Array` and `device_put` build on this module;
both jaxlib functions are called through module-level names so that tests can count
the calls, and with jaxlib's own transfer guard kept out (`transfer_guard.py`).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from jaxlib import xla_client as xc

from plax.extend import config, dtypes
from plax.extend.core import ShapedArray, SymbolicDimension, register_cache, reject_masked
from plax.extend.sharding import Device, Sharding
from plax_runtime import transfer_guard
from plax_runtime.backends import get_backend
from plax_runtime.sharding_impls import SingleDeviceSharding

_batched_device_put = xc.batched_device_put
_batched_copy = xc.batched_copy_array_to_devices_with_sharding

_PYTHON_SCALARS = (bool, int, float, complex)


def default_device() -> Device:
    """`jax_default_device` (a device or platform name), else the default backend's first."""
    choice = config.default_device.value
    if choice is None or isinstance(choice, str):
        return get_backend(choice).local_devices()[0]
    return choice


def host_value(x: Any, weak_type: bool | None) -> tuple[np.ndarray, ShapedArray]:
    """The NumPy data and canonical aval of a host value. A float0 value (a tangent of
    integers: no data) is physically bools, as lowering types it: false of its shape."""
    if isinstance(x, _PYTHON_SCALARS):
        dtype = dtypes.canonicalize_dtype(dtypes.dtype(type(x)))
        try:
            value = np.asarray(x, dtype=dtype)
        except OverflowError:
            raise OverflowError(f"Python int {x} is too large to convert to "
                                f"{dtype.name}") from None
        weak = dtypes.is_weakly_typed(x) if weak_type is None else weak_type
        return value, ShapedArray((), dtype, weak)
    reject_masked(x)
    if isinstance(x, (np.ndarray, np.generic)):
        value = np.asarray(x)
        if value.dtype == dtypes.float0:
            value = np.zeros(value.shape, bool)
        elif not value.dtype.isnative:
            value = value.astype(value.dtype.newbyteorder("="))
        dtypes.check_valid_dtype(value.dtype)
        return value, ShapedArray(value.shape, dtypes.canonicalize_dtype(value.dtype),
                                  bool(weak_type))
    if isinstance(x, SymbolicDimension):
        x.as_value()  # raises its one error: a symbolic size has no value outside export
    raise TypeError(f"device_put: a value of type {type(x).__name__} is not a valid plax "
                    "array; expected a NumPy array, a Python or NumPy scalar, or a "
                    "plax Array")


def place_host_value(x: Any, sharding: Sharding | None, *, weak_type: bool | None = None,
                     committed: bool | None = None, may_alias: bool | None = None
                     ) -> tuple[xc.ArrayImpl, ShapedArray, Sharding]:
    """One host value onto the devices of `sharding` (default device when None):
    → (the buffers, their aval, the sharding).

    A NumPy array is copied during the call unless `may_alias=True`, so that later
    writes to it (or to the array it views) cannot change the device array.
    """
    value, aval = host_value(x, weak_type)
    if committed is None:
        committed = sharding is not None
    if sharding is None:
        sharding = SingleDeviceSharding(default_device())
    transfer_guard.check("host_to_device", aval, dst_sharding=sharding)
    (impl,) = PreparedPut(aval, sharding, committed=committed, may_alias=may_alias
                          ).place_all([value])
    return impl, aval, sharding


class _Layout(NamedTuple):
    """Where the shards of an array of one shape go under one sharding."""
    devices: list           # addressable devices, in the order jaxlib takes shards
    indices: list           # each device's index into the array
    replicated: bool
    distinct: bool          # whether no two devices hold the same piece
    jaxlib_sharding: Any


def _index_key(index) -> tuple:
    return tuple((s.start, s.stop, s.step) if isinstance(s, slice) else s for s in index)


_layouts: dict[tuple, _Layout] = {}  # (sharding, shape) -> its layout; bounded below
register_cache(_layouts.clear)


def _layout(sharding: Sharding, shape: tuple[int, ...]) -> _Layout:
    """The layout of `shape` under `sharding`, worked out once per pair (shardings are
    immutable), so that placing many arrays of one shape costs no Python per shard."""
    try:
        layout = _layouts.get((sharding, shape))
    except TypeError:  # an unhashable third-party sharding: no caching
        layout, cacheable = None, False
    else:
        cacheable = True
    if layout is not None:
        return layout
    index_map = sharding.addressable_devices_indices_map(shape)
    replicated = sharding.is_fully_replicated
    if not replicated:
        sharding.shard_shape(shape)  # raises unless the shards are even
    indices = list(index_map.values())
    distinct = len({_index_key(i) for i in indices}) == len(indices)
    layout = _Layout(list(index_map), indices, replicated, distinct,
                     sharding._to_jaxlib_sharding(len(shape)))
    if cacheable:
        if len(_layouts) >= 1024:
            _layouts.clear()
        _layouts[(sharding, shape)] = layout
    return layout


class PreparedPut:
    """Placing host arrays of one aval onto `sharding`, prepared: the layout and the
    host-buffer semantics are worked out once, so placing each array is its slicing
    and one `batched_device_put` (`place_host_value`; a `device_put` of many like
    NumPy arrays; a jit argument seen before).

    A NumPy array is copied during the call unless `may_alias=True`: replicas, and
    the pieces of a split array that no two devices share, are copied by jaxlib
    from views of it; where devices share pieces, those alias one host copy made
    here (jaxlib fails, "bad_function_call", on views placed on several devices and
    copied during the call), and the pieces of a broadcast view (zero strides: they
    overlap too) are copied here one by one. Empty arrays have nothing to alias or
    copy."""

    def __init__(self, aval: ShapedArray, sharding: Sharding, *, committed: bool,
                 may_alias: bool | None = None):
        self.aval = aval
        self._layout = layout = _layout(sharding, aval.shape)
        self._committed, self._force_copy = committed, may_alias is False
        self._zero_copy = bool(may_alias) or aval.size == 0
        self._copy_first = not (self._zero_copy or layout.replicated or layout.distinct)
        self._semantics = (xc.HostBufferSemantics.ZERO_COPY
                           if self._zero_copy or self._copy_first
                           else xc.HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL)

    @classmethod
    def of(cls, shape: tuple[int, ...], dtype: np.dtype, sharding: Sharding, *,
           committed: bool, may_alias: bool | None = None) -> PreparedPut:
        """The put for plain NumPy arrays (`applies_to`) of this shape and dtype."""
        return cls(ShapedArray(shape, dtypes.canonicalize_dtype(dtype)), sharding,
                   committed=committed, may_alias=may_alias)

    @staticmethod
    def applies_to(x: Any) -> bool:
        """Whether `x` is a plain NumPy array (native byte order, a valid dtype), which
        this path places as the general one would."""
        return type(x) is np.ndarray and x.dtype in _PLAIN_DTYPES

    def __call__(self, x: np.ndarray) -> xc.ArrayImpl:
        """The buffers of `x` (NumPy data of this aval), for a jit argument the C++
        executor does not place itself (`replicated_call`). Callers check plax's
        transfer guard first."""
        return self.place_all([x])[0]

    def replicated_call(self) -> tuple | None:
        """How to place an array the way `place_all` does without Python, for a
        replicated layout (each shard is the array itself): (batched_device_put, its
        arguments before the shards, those after them, the number of shards, the config
        state whose value is its `enable_x64`). None for a split layout. The caller
        checks plax's transfer guard and keeps jaxlib's out of the call
        (`transfer_guard.unguarded`)."""
        layout = self._layout
        if not layout.replicated:
            return None
        return (_batched_device_put, (self.aval, layout.jaxlib_sharding),
                (layout.devices, self._committed, self._force_copy, self._semantics),
                len(layout.devices), config.enable_x64)

    def place_all(self, xs: Sequence[np.ndarray]) -> list[xc.ArrayImpl]:
        """The buffers of each of `xs`, everything but the jaxlib calls done once."""
        return transfer_guard.unguarded(self._place_all, xs, config.enable_x64.value)

    def _place_all(self, xs: Sequence[np.ndarray], x64: bool) -> list[xc.ArrayImpl]:
        layout, put, shards = self._layout, _batched_device_put, self._shards
        args = (self.aval, layout.jaxlib_sharding)
        rest = (layout.devices, self._committed, self._force_copy, self._semantics)
        return [put(*args, shards(x), *rest, enable_x64=x64) for x in xs]

    def _shards(self, x: np.ndarray) -> list[np.ndarray]:
        layout = self._layout
        if layout.replicated:
            return [x] * len(layout.devices)
        if self._copy_first:  # one host copy, whose pieces the buffers alias
            x = np.array(x)
        elif 0 in x.strides:  # a broadcast view, whose pieces overlap (jaxlib fails on them)
            return [np.ascontiguousarray(x[index]) for index in layout.indices]
        return [x[index] for index in layout.indices]


# Native-order NumPy dtypes that need no check or conversion on the host.
_PLAIN_DTYPES = frozenset(np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128))


def place_shards(shards: Sequence[np.ndarray], shape: tuple[int, ...], dtype: np.dtype,
                 sharding: Sharding, devices: Sequence[Device]
                 ) -> tuple[xc.ArrayImpl, ShapedArray]:
    """Host pieces (one per device of `devices`, each copied now) as one committed
    Array of `shape` laid out by `sharding`: (the buffers, their aval)."""
    dtype = dtypes.canonicalize_dtype(dtype)
    dtypes.check_valid_dtype(dtype)
    aval = ShapedArray(shape, dtype)
    impl = _batched_device_put(aval, sharding._to_jaxlib_sharding(len(shape)),
                               [np.array(s, dtype=dtype) for s in shards], list(devices),
                               True, False, xc.HostBufferSemantics.ZERO_COPY,
                               enable_x64=config.enable_x64.value)
    return impl, aval


def copy_buffers(impls: Sequence[xc.ArrayImpl], jaxlib_shardings: Sequence[Any],
                 semantics: Sequence[xc.ArrayCopySemantics]) -> list[xc.ArrayImpl]:
    """Copies of `impls` placed as `jaxlib_shardings` (`Sharding._to_jaxlib_sharding`
    of each array's rank), each of its source's layout, in one batched call: jaxlib
    groups them in C++ by source and destination devices and memory kinds, and makes
    one `CopyArrays` per group."""
    return transfer_guard.unguarded(
        _batched_copy, list(impls), [s._internal_device_list for s in jaxlib_shardings],
        list(jaxlib_shardings), list(semantics))

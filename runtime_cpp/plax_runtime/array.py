"""`plax.Array`: an array whose data lives on one or more devices.

An `Array` wraps a jaxlib C++ `ArrayImpl` (the buffer holder, which executables and
transfers consume directly) together with plax's own aval (`ShapedArray`) and
sharding. jaxlib's classes are used as they are, never patched (DESIGN §9).
Operators and NumPy-style methods are those of tracers (`plax.extend.core.install_array_methods`).

An array of an extended dtype (PRNG keys) has its logical aval (`key<fry>[3]`) while
its buffers hold the elements' data (`u32[3,2]`, `physical_aval`): jaxlib only ever
sees the latter. Such arrays have no NumPy value; `key_data` gives their bits.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jaxlib import xla_client as xc

from plax.extend.core import ShapedArray, Tracer, install_array_methods, physical_aval
from plax.extend.dtypes import ExtendedDType
from plax.extend.sharding import Device, Index, Sharding
from plax_runtime import (_fastpath, distributed_watch, dlpack_buffers, gc_guard, placement,
                          transfer_guard)
from plax_runtime.layouts import Format, layout_of
from plax_runtime.shard_buffers import shard_buffers
from plax_runtime.sharding_impls import SingleDeviceSharding


# Arrays of at most this many rows are iterated by slicing them all in one computation.
_UNSTACKED_ITERATION = 100


class Shard:
    """One piece of a (possibly sharded) Array held by one device: which device,
    which slice of the global array, and the data.

    `array.addressable_shards` lists the pieces this process holds.

    Attributes:
        device: the `Device` holding the piece.
        index: the piece's slice of the global array (a tuple of `slice`s).
        replica_id: which copy this is when the piece is replicated (0 for the
            first).
        data: the piece as a single-device Array.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> from plax.sharding import NamedSharding, PartitionSpec as P
        >>> mesh = plax.make_mesh((4,), ("x",))
        >>> a = plax.device_put(jnp.arange(8.0), NamedSharding(mesh, P("x")))
        >>> shard = a.addressable_shards[1]
        >>> shard.device, shard.index, shard.data
        (CpuDevice(id=1), (slice(2, 4, None),), Array([2., 3.], dtype=float32))
    """
    __slots__ = ("device", "index", "replica_id", "data")

    def __init__(self, device: Device, index: Index, replica_id: int, data: Array):
        self.device = device
        self.index = index
        self.replica_id = replica_id
        self.data = data

    def __repr__(self):
        return (f"Shard(device={self.device!r}, index={self.index}, "
                f"replica_id={self.replica_id}, data={self.data})")


class _ArrayMeta(type):
    """Makes `isinstance(x, plax.Array)` true for traced arrays too, as users expect
    of code that runs both eagerly and under transformations."""

    def __instancecheck__(cls, instance) -> bool:
        return super().__instancecheck__(instance) or (
            isinstance(instance, Tracer) and isinstance(instance.aval, ShapedArray))


class Array(metaclass=_ArrayMeta):
    """A plax array (`jax.Array`'s counterpart; `plax.numpy.ndarray` is the same class):
    an n-dimensional array of one dtype, held in device buffers and laid out by a
    `sharding`.

    Arrays are immutable, unlike NumPy's: `x[i] = v` raises TypeError. The functional
    form `x.at[i].set(v)` returns an updated copy (under `jit` the copy is usually
    optimized away), with `.add`, `.multiply`, `.divide`, `.power`, `.min`, `.max`,
    `.apply` and `.get` as the other operations; repeated indices accumulate in `.add`
    (NumPy's `x[i] += v` would apply only one), and out-of-range indices are dropped by
    updates (and follow `mode`/`fill_value` in `.get`, clamped by default for plain
    indexing), never an error. Indexing, arithmetic operators and most NumPy methods
    (`x.sum()`, `x.reshape(...)`, `x.T`, `x.astype(...)`) work as in NumPy; operators
    follow JAX's type promotion. `np.asarray(x)` copies the data to the host.
    Arrays are made by `plax.numpy` functions, `plax.device_put`, computations and
    `make_array_from_single_device_arrays`, not by calling the class. They are
    unhashable, like NumPy arrays. `isinstance(x, plax.Array)` is also true of traced
    values inside transformations.

    Attributes:
        shape: the shape, a tuple of ints.
        dtype: the NumPy dtype.
        sharding: how the array is laid out across devices.
        weak_type: whether the dtype came from a Python scalar.

    Examples:
        >>> x = jnp.array([1, 2, 3])
        >>> x[0] = 5
        Traceback (most recent call last):
        TypeError: plax arrays are immutable; instead of `x[idx] = y` use ...
        >>> x.at[0].set(5)
        Array([5, 2, 3], dtype=int32)
        >>> x.at[jnp.array([0, 0])].add(1)  # repeated indices accumulate
        Array([3, 2, 3], dtype=int32)
        >>> x.at[7].set(0)  # out of range: dropped
        Array([1, 2, 3], dtype=int32)
        >>> x.at[5].get(mode="fill", fill_value=-1)
        Array(-1, dtype=int32)
        >>> x.shape, x.dtype, isinstance(x, jnp.ndarray)
        ((3,), dtype('int32'), True)
    """
    # `_sig`: the jit fast path's signature of this array, made on first use (its
    # aval, sharding and commitment never change), or set by the executor making it.
    __slots__ = ("_impl", "_aval", "_sharding", "_npy_value", "_sig", "__weakref__")
    __hash__ = None  # unhashable, like NumPy arrays and JAX's Array

    def __init__(self, *args, **kwargs):
        raise TypeError("plax.Array cannot be constructed directly; use plax.device_put, "
                        "plax.numpy.asarray or make_array_from_single_device_arrays")

    @classmethod
    def _from_impl(cls, impl: xc.ArrayImpl, aval: ShapedArray, sharding: Sharding) -> Array:
        """Wraps a jaxlib array whose aval and sharding the caller vouches for (no checks)."""
        return cls._from_impls((impl,), aval, sharding)[0]

    @staticmethod
    def _from_impls(impls: Sequence[xc.ArrayImpl], aval: ShapedArray,
                    sharding: Sharding) -> list[Array]:
        """`_from_impl` of each of `impls`, all of one aval and sharding (the type part
        of the aval worked out once)."""
        typed = sharding._type_sharding(len(aval.shape))
        if typed != aval.typed_sharding:
            aval = aval.update(sharding=typed)
        arrays = _fastpath.wrap_arrays(impls, aval, sharding)
        if gc_guard.watching:
            for array in arrays:
                gc_guard.watch(array)
        return arrays

    # --- metadata (available even after deletion) -----------------------------------

    aval = property(lambda self: self._aval)
    shape = property(lambda self: self._aval.shape)
    dtype = property(lambda self: self._aval.dtype)
    ndim = property(lambda self: len(self._aval.shape))
    size = property(lambda self: self._aval.size)
    itemsize = property(lambda self: self._aval.dtype.itemsize)
    nbytes = property(lambda self: self._aval.size * self._aval.dtype.itemsize)
    weak_type = property(lambda self: self._aval.weak_type)
    sharding = property(lambda self: self._sharding)
    committed = property(lambda self: self._impl._committed)
    _committed = committed
    is_fully_replicated = property(lambda self: self._sharding.is_fully_replicated)
    is_fully_addressable = property(lambda self: self._sharding.is_fully_addressable)

    @property
    def format(self) -> Format:
        """The layout of this array's buffers (None once deleted, or where the backend
        cannot say) and its sharding."""
        if self._impl.is_deleted():
            return Format(None, self._sharding)
        return Format(layout_of(lambda: self._impl._pjrt_layout), self._sharding)

    def devices(self) -> set[Device]:
        return set(self._sharding.device_set)

    @property
    def device(self) -> Device | Sharding:
        """The device of a single-device array; the sharding of a multi-device one."""
        devices = self._sharding.device_set
        if len(devices) == 1:
            (device,) = devices
            return device
        return self._sharding

    def platform(self) -> str:
        return next(iter(self._sharding.device_set)).platform

    # --- lifetime -------------------------------------------------------------------

    def _check_alive(self) -> None:
        if self._impl.is_deleted():
            raise RuntimeError("Array has been deleted with shape="
                               f"{str(self._aval).lstrip('~')}.")

    def is_deleted(self) -> bool:
        return self._impl.is_deleted()

    def delete(self) -> None:
        """Frees the device buffers now; any later use of the array raises."""
        self._npy_value = None
        self._impl.delete()

    def block_until_ready(self) -> Array:
        self._check_alive()
        if distributed_watch.current() is None or self.is_fully_addressable:
            self._impl.block_until_ready()
        else:
            self._wait_for_other_processes()
        return self

    def _wait_for_other_processes(self) -> None:
        """Waits for an Array that spans processes within the run's bounds (a peer
        that is dead, stopped or elsewhere raises plax.errors.DistributedError)."""
        distributed_watch.wait(self._impl.is_ready, self._impl.block_until_ready,
                               f"a computation over {len(self._sharding.device_set)} "
                               f"devices of several processes (result "
                               f"{self._aval.str_short()})")

    def is_ready(self) -> bool:
        self._check_alive()
        return self._impl.is_ready()

    def copy_to_host_async(self) -> None:
        """Starts copying the data to host memory, so that a later `np.asarray` is fast."""
        self._check_alive()
        if self._npy_value is not None or not self._fetch_is_transfer():
            return  # CPU buffers are host memory already: nothing to overlap
        transfer_guard.check("device_to_host", self._aval, self._sharding)
        if self._sharding.num_devices == 1:
            impls = [self._impl]
        elif self.is_fully_replicated:
            impls = shard_buffers(self._impl)[:1]
        else:
            impls = shard_buffers(self._impl)
        for impl in impls:
            transfer_guard.unguarded(impl._copy_single_device_array_to_host_async)

    def _fetch_is_transfer(self) -> bool:
        """Whether reading the data moves it: not for CPU buffers, which are host memory
        (so, as in JAX, the transfer guard never stops reading a CPU array)."""
        return self.platform() != "cpu"

    def on_device_size_in_bytes(self) -> int:
        self._check_alive()
        return self._impl.on_device_size_in_bytes()

    def unsafe_buffer_pointer(self) -> int:
        self._check_alive()
        return self._impl.unsafe_buffer_pointer()

    def clone(self) -> Array:
        """A new Array object holding this one's buffers (no copy), as JAX's."""
        return Array._from_impl(self._impl.clone(), self._aval, self._sharding)

    traceback = property(lambda self: self._impl.traceback,
                         doc="Where the buffers were made (a jaxlib Traceback), or None.")

    @property
    def __cuda_array_interface__(self) -> dict:
        """The CUDA array interface of a one-device GPU array (AttributeError elsewhere)."""
        if len(self._sharding.device_set) != 1:
            raise ValueError("__cuda_array_interface__ is supported only for unsharded "
                             "arrays")
        return self._impl.__cuda_array_interface__

    device_buffer = property(lambda self: _removed("device_buffer", "arr.addressable_data(0)"))
    device_buffers = property(lambda self: _removed(
        "device_buffers", "[s.data for s in arr.addressable_shards]"))

    # --- shards ---------------------------------------------------------------------

    def _addressable_devices(self) -> list[Device]:
        """Addressable devices in the order of `shard_buffers(self._impl)`."""
        return [d for d in self._sharding._device_assignment
                if d.process_index == d.client.process_index()]

    @property
    def addressable_shards(self) -> list[Shard]:
        self._check_alive()
        indices = self._sharding.addressable_devices_indices_map(self.shape)
        devices = self._addressable_devices()
        if len(devices) == 1:
            return [Shard(devices[0], indices[devices[0]], 0, self)]
        shards, seen = [], {}
        kind = self._sharding.memory_kind
        for impl, device in zip(shard_buffers(self._impl), devices):
            index = indices[device]
            key = _index_key(index)
            replica_id = seen[key] = seen.get(key, -1) + 1
            aval = ShapedArray(_index_shape(index, self.shape), self.dtype, self.weak_type)
            impl.aval = physical_aval(aval)  # C++ leaves per-shard avals unset without `jax`
            data = Array._from_impl(impl, aval, SingleDeviceSharding(device, memory_kind=kind))
            shards.append(Shard(device, index, replica_id, data))
        return shards

    @property
    def global_shards(self) -> list[Shard]:
        """One shard per device of the sharding, including other processes' devices
        (whose `data` is None)."""
        self._check_alive()
        local = {shard.device: shard for shard in self.addressable_shards}
        indices = self._sharding.devices_indices_map(self.shape)
        shards, seen = [], {}
        for device in self._sharding._device_assignment:
            index = indices[device]
            key = _index_key(index)
            replica_id = seen[key] = seen.get(key, -1) + 1
            data = local[device].data if device in local else None
            shards.append(Shard(device, index, replica_id, data))
        return shards

    def addressable_data(self, index: int) -> Array:
        """The data of the `index`-th addressable shard."""
        return self.addressable_shards[index].data

    # --- host values ----------------------------------------------------------------

    @property
    def _value(self) -> np.ndarray:
        """The data as a read-only NumPy array, fetched once and cached (of the physical
        aval for extended dtypes)."""
        self._check_alive()
        if self._npy_value is None:
            replicated = self._locally_replicated()
            if not (replicated or self.is_fully_addressable):
                raise RuntimeError("Fetching the value of an Array that spans devices of "
                                   "other processes is not possible; use "
                                   "plax.experimental.multihost_utils.process_allgather "
                                   "for the whole value or `addressable_shards` for the "
                                   "local part")
            if not self.is_fully_addressable:
                self._wait_for_other_processes()
            if self._fetch_is_transfer():
                transfer_guard.check("device_to_host", self._aval, self._sharding)
            if self._sharding.num_devices == 1:
                value = self._host_copy(self._impl)
            elif replicated:
                value = self._host_copy(shard_buffers(self._impl)[0])
            else:
                value = self._assemble_from_shards()
            value.flags.writeable = False
            self._npy_value = value
        return self._npy_value

    def _host_copy(self, single_device_impl: xc.ArrayImpl) -> np.ndarray:
        """One device buffer as NumPy; CPU buffers are read without jaxlib's fetch, which
        imports `jax` when it is installed (DESIGN §9)."""
        dtype = physical_aval(self._aval).dtype
        if dlpack_buffers.can_copy_to_numpy(self.platform(), dtype):
            return dlpack_buffers.cpu_buffer_to_numpy(single_device_impl, dtype)
        value, _ = transfer_guard.unguarded(
            single_device_impl._single_device_array_to_np_array_did_copy)
        return value

    def _assemble_from_shards(self) -> np.ndarray:
        physical = physical_aval(self._aval)
        out = np.empty(physical.shape, physical.dtype)
        indices = self._sharding.addressable_devices_indices_map(self.shape)
        filled = set()
        for impl, device in zip(shard_buffers(self._impl), self._addressable_devices()):
            index = indices[device]
            key = _index_key(index)
            if key not in filled:
                filled.add(key)
                out[index] = self._host_copy(impl)
        return out

    def _locally_replicated(self) -> bool:
        """Whether this process holds a copy of the whole (replicated) array, so that it
        can read it even when other processes hold copies too."""
        return self.is_fully_replicated and bool(self._addressable_devices())

    @property
    def _host_value(self) -> np.ndarray:
        """`_value` for conversions to NumPy and Python values, which extended dtypes
        do not have."""
        if isinstance(self._aval.dtype, ExtendedDType):
            raise TypeError(f"an array of dtype {self.dtype.name} cannot be converted to a "
                            "NumPy array or Python value; use plax.random.key_data(arr) for "
                            "the underlying integer array")
        return self._value

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        return np.asarray(self._host_value, dtype=dtype,
                          **({} if copy is None else {"copy": copy}))

    def tolist(self) -> Any:
        return self._host_value.tolist()

    def tobytes(self, order: str = "C") -> bytes:
        return self._value.tobytes(order)

    @property
    def __numpy_dtype__(self) -> np.dtype:
        """NumPy's `dtype=arr` reads this (NumPy >= 2.4): deprecated, as in JAX."""
        warnings.warn("Using an array as a dtype (dtype=arr) is deprecated and will become "
                      "an error: pass dtype=arr.dtype", DeprecationWarning, stacklevel=2)
        return self.dtype

    def item(self, *args) -> Any:
        return self._host_value.item(*args)

    def __dlpack__(self, *, stream: int | Any | None = None,
                   max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None):
        return dlpack_buffers.to_dlpack(self, stream=stream, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        return dlpack_buffers.dlpack_device(self)

    # --- Python protocols -------------------------------------------------------------

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        if self.shape[0] <= _UNSTACKED_ITERATION:  # `a, b = x`: one computation
            return iter(self._unstack())
        return (self[i] for i in range(self.shape[0]))

    def __bool__(self) -> bool:
        if self.size != 1:
            what = "an empty array" if self.size == 0 else "an array with more than one element"
            raise ValueError(f"The truth value of {what} is ambiguous. Use a.any() or a.all()")
        return bool(self._host_value.reshape(()))

    def _scalar_value(self, kind: str) -> Any:
        if self.shape:
            raise TypeError(f"Only scalar arrays can be converted to Python {kind}; got an "
                            f"array of shape {self.shape}")
        value = self._host_value[()]
        # A complex value as a Python complex: int() and float() refuse it (TypeError) as
        # in JAX, where NumPy's complex scalars would drop the imaginary part.
        return value.item() if np.iscomplexobj(value) else value

    def __int__(self) -> int:
        return int(self._scalar_value("ints"))

    def __float__(self) -> float:
        return float(self._scalar_value("floats"))

    def __complex__(self) -> complex:
        return complex(self._scalar_value("complex numbers"))

    def __index__(self) -> int:
        if isinstance(self.dtype, ExtendedDType) or not np.issubdtype(self.dtype, np.integer):
            raise TypeError(f"Only integer scalar arrays can be converted to a scalar index; "
                            f"got dtype {self.dtype.name}")
        return int(self._scalar_value("ints"))

    def __hex__(self) -> str:  # (Python 2's protocol, which JAX's arrays keep)
        return hex(self.__index__())

    def __oct__(self) -> str:
        return oct(self.__index__())

    def __setitem__(self, index, value):
        raise TypeError("plax arrays are immutable; instead of `x[idx] = y` use "
                        "`x = x.at[idx].set(y)`")

    def __copy__(self) -> Array:
        """A new buffer with the same placement and commitment."""
        self._check_alive()
        physical = physical_aval(self._aval)
        (impl,) = placement.copy_buffers([self._impl],
                                         [self.sharding._to_jaxlib_sharding(physical.ndim)],
                                         [xc.ArrayCopySemantics.ALWAYS_COPY])
        if impl._committed != self._impl._committed:
            impl = xc.ArrayImpl(physical, impl._sharding, shard_buffers(impl),
                                self._impl._committed, _skip_checks=True)
        return Array._from_impl(impl, self.aval, self.sharding)

    def __deepcopy__(self, memo) -> Array:
        return self.__copy__()

    def __repr__(self) -> str:
        prefix = "Array("
        suffix = f"dtype={self.dtype.name}" + (", weak_type=True" if self.weak_type else "")
        if self.is_deleted():
            return f"{prefix}<deleted>, shape={self.shape}, {suffix})"
        if not (self.is_fully_addressable or self._locally_replicated()):
            return f"{prefix}shape={self.shape}, {suffix})"
        if isinstance(self.dtype, ExtendedDType):  # as JAX shows key arrays
            return f"{prefix}{self.shape}, {suffix}) overlaying:\n{self._value}"
        line_width = np.get_printoptions()["linewidth"]
        if self.size == 0:
            body = f"[], shape={self.shape}"
        else:
            body = np.array2string(self._value, prefix=prefix, suffix=",", separator=", ",
                                   max_line_width=line_width)
        # JAX's layout, kept so that doctests written against JAX pass: when the dtype
        # does not fit after the last line (measured as JAX measures it, two characters
        # over), it stays on that line, only set apart by the prefix's width in spaces.
        last_line = len(body) - body.rfind("\n") + 1
        fits = last_line + len(suffix) + 2 <= line_width
        separator = " " if fits else " " * len(prefix)
        return f"{prefix}{body},{separator}{suffix})"

    def __str__(self) -> str:
        if isinstance(self.dtype, ExtendedDType):
            return repr(self)
        return str(self._value)

    def __format__(self, format_spec: str) -> str:
        if self.ndim == 0:
            return format(self._host_value[()], format_spec)
        return format(self._host_value, format_spec)

    def __reduce__(self):
        extended = self.dtype if isinstance(self.dtype, ExtendedDType) else None
        return (_unpickle_array, (np.asarray(self._value), self.weak_type, extended))


def _removed(name: str, instead: str):
    """Reading an attribute JAX's arrays dropped: the AttributeError JAX's raises."""
    raise AttributeError(f"arr.{name} has been deprecated. Use {instead}")


def _unpickle_array(value: np.ndarray, weak_type: bool,
                    extended: ExtendedDType | None = None) -> Array:
    """Rebuilds a pickled Array on the default device (uncommitted); `value` is the
    data of an `extended` dtype's elements if one is given."""
    impl, aval, sharding = placement.place_host_value(value, None, weak_type=weak_type)
    if extended is not None:
        aval = ShapedArray(aval.shape[:aval.ndim - len(extended.element_shape)], extended)
    return Array._from_impl(impl, aval, sharding)


def _index_key(index: Index) -> tuple:
    return tuple((s.start, s.stop) for s in index)


def _index_shape(index: Index, shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(len(range(*s.indices(n))) for s, n in zip(index, shape))


def make_array_from_single_device_arrays(shape: Sequence[int], sharding: Sharding,
                                         arrays: Sequence[Array], *,
                                         dtype=None) -> Array:
    """Assembles one sharded Array from arrays that each live on one device.

    The inverse of taking `[s.data for s in a.addressable_shards]`: no data is
    copied, the buffers become the new array's shards.

    Args:
        shape: the global array's shape.
        sharding: the layout; it must assign each array's device the slice that
            array holds.
        arrays: one single-device Array per addressable device of `sharding`,
            each of its slice's shape.
        dtype: the dtype (default: the arrays').

    Returns:
        A plax Array of `shape` laid out by `sharding`.

    Raises:
        ValueError: the arrays' devices or shapes do not match what `sharding`
            assigns.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> from plax.sharding import NamedSharding, PartitionSpec as P
        >>> mesh = plax.make_mesh((4,), ("x",))
        >>> pieces = [plax.device_put(jnp.arange(2.0) + 2 * i, d)
        ...           for i, d in enumerate(mesh.devices.flat)]
        >>> plax.make_array_from_single_device_arrays((8,), NamedSharding(mesh, P("x")), pieces)
        Array([0., 1., 2., 3., 4., 5., 6., 7.], dtype=float32)
    """
    shape = tuple(int(d) for d in shape)
    if not isinstance(sharding, Sharding):
        raise TypeError(f"sharding must be a plax Sharding, got {type(sharding).__name__}")
    arrays = list(arrays)
    for i, a in enumerate(arrays):
        if not isinstance(a, Array):
            raise TypeError(f"arrays[{i}] must be a plax Array, got {type(a).__name__}")
        a._check_alive()
        if a.sharding.num_devices != 1:
            raise ValueError(f"arrays[{i}] spans {a.sharding.num_devices} devices; each must "
                             "be a single-device array")
    if dtype is None:
        if not arrays:
            raise ValueError("make_array_from_single_device_arrays needs dtype= when no "
                             "arrays are given")
        dtype = arrays[0].dtype
    dtype = dtype if isinstance(dtype, ExtendedDType) else np.dtype(dtype)
    indices = sharding.addressable_devices_indices_map(shape)
    by_device = {}
    for i, a in enumerate(arrays):
        (device,) = a.sharding.device_set
        if device not in indices:
            raise ValueError(f"arrays[{i}] is on {device}, which is not an addressable device "
                             f"of {sharding}")
        if device in by_device:
            raise ValueError(f"arrays[{i}] is on {device}, like another array")
        expected = _index_shape(indices[device], shape)
        if a.shape != expected or a.dtype != dtype:
            raise ValueError(f"arrays[{i}] on {device} has shape {a.shape} and dtype "
                             f"{a.dtype.name}; the sharding expects shape {expected} and "
                             f"dtype {dtype.name} there")
        by_device[device] = a
    missing = [d for d in indices if d not in by_device]
    if missing:
        raise ValueError(f"no array was given for the devices {missing} of {sharding}")
    aval = ShapedArray(shape, dtype)
    physical = physical_aval(aval)
    impl = xc.ArrayImpl(physical, sharding._to_jaxlib_sharding(physical.ndim),
                        [by_device[d]._impl for d in indices], True, _skip_checks=True)
    return Array._from_impl(impl, aval, sharding)


def make_array_from_callback(shape: Sequence[int], sharding: Sharding,
                             data_callback: Callable[[Index], Any], *, dtype=None) -> Array:
    """Builds a sharded Array from a function that gives each device's piece.

    For every addressable device, `sharding` determines the slice of the global
    array that device holds, and `data_callback(index)` is called with that
    slice (a tuple of `slice`s) to produce the piece's data, e.g. by indexing a
    NumPy array or reading a file. The pieces are placed in one batched
    transfer. Each process calls it for its own devices only.

    Args:
        shape: the global array's shape.
        sharding: how the array is laid out over devices.
        data_callback: `index -> data`: a NumPy array (or anything array-like)
            of that slice's shape.
        dtype: the array's dtype (default: the data's).

    Returns:
        A plax Array of `shape`, laid out by `sharding`.

    Raises:
        ValueError: a callback's result has the wrong shape for its slice.

    Examples:
        >>> import numpy as np
        >>> import plax
        >>> from plax.sharding import NamedSharding, PartitionSpec as P
        >>> mesh = plax.make_mesh((4,), ("x",))
        >>> data = np.arange(8.0)
        >>> a = plax.make_array_from_callback((8,), NamedSharding(mesh, P("x")),
        ...                                   lambda index: data[index])
        >>> a
        Array([0., 1., 2., 3., 4., 5., 6., 7.], dtype=float32)
        >>> a.addressable_shards[1].index
        (slice(2, 4, None),)
    """
    shape = tuple(int(d) for d in shape)
    if not isinstance(sharding, Sharding):
        raise TypeError(f"sharding must be a plax Sharding, got {type(sharding).__name__}")
    sharding.shard_shape(shape)  # the shards must be even
    indices = sharding.addressable_devices_indices_map(shape)
    pieces: dict[tuple, np.ndarray] = {}
    for index in indices.values():
        key = _index_key(index)
        if key not in pieces:
            piece = data_callback(index)
            if isinstance(piece, Array):
                piece = piece._value
            piece = np.asarray(piece, dtype=dtype)
            expected = _index_shape(index, shape)
            if piece.shape != expected:
                raise ValueError(f"data_callback returned shape {piece.shape} for the index "
                                 f"{index} of an array of shape {shape}; expected {expected}")
            pieces[key] = piece
    first = next(iter(pieces.values()), None)
    dtype = np.dtype(dtype if dtype is not None else
                     first.dtype if first is not None else np.float32)
    shards = [pieces[_index_key(index)] for index in indices.values()]
    impl, aval = placement.place_shards(shards, shape, dtype, sharding, list(indices))
    return Array._from_impl(impl, aval, sharding)


install_array_methods(Array)
Array.__module__ = "plax"
_fastpath.set_array_type(Array)  # what the C++ side wraps, unwraps and recognizes

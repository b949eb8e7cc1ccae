"""The runtime's public functions, as the `plax` facade exposes them (`plax.devices`...).

Backends are reached through the registry (`plax_runtime.backends`), which the
`plax.backends` entry points fill.
"""
from __future__ import annotations

import functools
import gc
import importlib.metadata
import os
import platform as _platform
import sys
import warnings
from typing import Any

import numpy as np
from jaxlib import xla_client as xc

from plax.extend.sharding import Sharding, sharding_from_spec
from plax.extend.tree_util import broadcast_prefix, tree_flatten, tree_unflatten
from plax_runtime import distributed_watch, transfer_guard
from plax_runtime.array import Array, make_array_from_callback
from plax_runtime.backends import get_backend
from plax_runtime import device_put as _placing
from plax_runtime.executable import put_with_format
from plax_runtime.layouts import Format

__all__ = ["devices", "local_devices", "device_count", "local_device_count",
           "default_backend", "process_index", "process_count", "process_indices",
           "get_backend", "device_put", "device_get", "block_until_ready",
           "copy_to_host_async", "live_arrays", "print_environment_info", "host_id",
           "host_count", "host_ids", "make_array_from_process_local_data"]

Backend = str | xc.Client | None


@functools.wraps(_placing.device_put)
def device_put(x: Any, device: Any = None, **options) -> Any:
    if isinstance(device, Format):  # a layout too: its copies are compiled
        return put_with_format(x, device, **options)
    return _placing.device_put(x, device, **options)


def devices(backend: Backend = None) -> list[xc.Device]:
    """Lists the devices of a backend, over all processes of a multi-process run.

    Args:
        backend: a platform name (`"cpu"`, `"tpu"`, `"cuda"`/`"gpu"`) or None for
            the default backend (the first of `jax_platforms` that starts).

    Returns:
        The devices, ordered by process, then id.

    Raises:
        RuntimeError: the backend is not available; the message says why (no
            plugin for that platform, or what its plugin is missing).

    Examples:
        >>> import plax
        >>> len(plax.devices()), plax.devices()[0].platform   # the suite's 8 CPU devices
        (8, 'cpu')
    """
    return get_backend(backend).devices()


def local_devices(process_index: int | None = None, backend: Backend = None) -> list[xc.Device]:
    """Lists the devices attached to one process.

    Args:
        process_index: the process (default: this one, `plax.process_index()`).
        backend: a platform name (`"cpu"`, `"tpu"`, ...) or backend (default:
            the default backend).

    Returns:
        A list of `Device`s, in id order.

    Raises:
        RuntimeError: `backend` names a platform with no backend available.

    Examples:
        >>> import plax
        >>> plax.local_devices()[:2]  # the test suite's virtual CPU devices
        [CpuDevice(id=0), CpuDevice(id=1)]
    """
    client = get_backend(backend)
    if process_index is None:
        process_index = client.process_index()
    return [d for d in client.devices() if d.process_index == process_index]


def device_count(backend: Backend = None) -> int:
    """Counts the devices of a backend across all processes.

    Args:
        backend: a platform name or backend (default: the default backend).

    Returns:
        The number of devices, an int (for a single process, the same as
        `local_device_count()`).

    Examples:
        >>> import plax
        >>> plax.device_count()  # the test suite runs with 8 virtual CPU devices
        8
    """
    return get_backend(backend).device_count()


def local_device_count(backend: Backend = None) -> int:
    """Counts the devices attached to this process.

    Args:
        backend: a platform name or backend (default: the default backend).

    Returns:
        The number of this process's devices, an int.

    Examples:
        >>> import plax
        >>> plax.local_device_count()
        8
    """
    return get_backend(backend).local_device_count()


def default_backend() -> str:
    """The platform name of the backend plax uses when none is given.

    The first available of the accelerator plugins installed (TPU, then GPU),
    else the CPU; the `jax_platforms` option (`JAX_PLATFORMS`) can choose.

    Returns:
        A platform name: `"cpu"`, `"cuda"`, `"tpu"`...

    Examples:
        >>> import plax
        >>> plax.default_backend()
        'cpu'
    """
    return get_backend().platform


def process_index(backend: Backend = None) -> int:
    """This process's index among the processes of a multi-process run.

    `plax.distributed.initialize` assigns the index; a single-process program is
    process 0.

    Args:
        backend: a platform name or backend (default: the default backend).

    Returns:
        An int in `[0, process_count())`.

    Examples:
        >>> import plax
        >>> plax.process_index()
        0
    """
    return get_backend(backend).process_index()


def process_count(backend: Backend = None) -> int:
    """The number of processes taking part in this run.

    Args:
        backend: a platform name or backend (default: the default backend).

    Returns:
        An int, 1 unless `plax.distributed.initialize` started several.

    Examples:
        >>> import plax
        >>> plax.process_count()
        1
    """
    return max(d.process_index for d in get_backend(backend).devices()) + 1


def process_indices(backend: Backend = None) -> list[int]:
    """The indices of the processes that hold devices of a backend.

    Args:
        backend: a platform name or backend (default: the default backend).

    Returns:
        A sorted list of ints.

    Examples:
        >>> import plax
        >>> plax.process_indices()
        [0]
    """
    return sorted({d.process_index for d in get_backend(backend).devices()})


def _renamed(old: str, new: str) -> None:
    warnings.warn(f"plax.{old} has been renamed to plax.{new}. This alias will eventually "
                  "be removed; please update your code.", stacklevel=3)


def host_id(backend: Backend = None) -> int:
    """The old name of `process_index` (it warns): this process's index.

    Args:
        backend: a platform name or backend (default: the default backend).

    Returns:
        An int.

    Examples:
        >>> import plax
        >>> plax.process_index()  # use the new name
        0
    """
    _renamed("host_id", "process_index")
    return process_index(backend)


def host_count(backend: Backend = None) -> int:
    """The old name of `process_count` (it warns): the number of processes.

    Args:
        backend: a platform name or backend (default: the default backend).

    Returns:
        An int.

    Examples:
        >>> import plax
        >>> plax.process_count()  # use the new name
        1
    """
    _renamed("host_count", "process_count")
    return process_count(backend)


def host_ids(backend: Backend = None) -> list[int]:
    """The old name of `process_indices` (it warns): the processes holding
    devices of a backend.

    Args:
        backend: a platform name or backend (default: the default backend).

    Returns:
        A list of ints.

    Examples:
        >>> import plax
        >>> plax.process_indices()  # use the new name
        [0]
    """
    _renamed("host_ids", "process_indices")
    return process_indices(backend)


def block_until_ready(x: Any) -> Any:
    """Waits until every Array in the pytree `x` is computed, and returns `x`.

    plax dispatches computations asynchronously: a call returns as soon as the
    work is queued. Call this before timing code, or before handing buffers to
    another library.

    Args:
        x: a pytree; leaves that are not Arrays are left alone.

    Returns:
        `x` itself.

    Raises:
        JaxRuntimeError: a computation that produced one of the arrays failed.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> plax.block_until_ready(jnp.ones(3) * 2)
        Array([2., 2., 2.], dtype=float32)
    """
    arrays, others = [], []
    for leaf in tree_flatten(x)[0]:  # (`type(leaf) is Array` first: the slower
        if type(leaf) is Array or isinstance(leaf, Array):  # isinstance admits tracers)
            arrays.append(leaf)
        elif hasattr(leaf, "block_until_ready"):
            others.append(leaf)
    if distributed_watch.current() is not None:
        for a in arrays:  # those of several processes: waited for within the run's bounds
            if not a.is_fully_addressable:
                a.block_until_ready()
    if arrays:
        try:
            xc.batched_block_until_ready([a._impl for a in arrays])
        except xc.XlaRuntimeError:
            for a in arrays:  # a deleted array: say which, as one array's wait would
                a._check_alive()
            raise
    for leaf in others:
        leaf.block_until_ready()
    return x


def copy_to_host_async(x: Any) -> Any:
    """Starts copying the arrays in `x` to host memory, without waiting.

    A later `np.asarray(a)` or `plax.device_get` then finds the data already
    on the host. Leaves that are not Arrays are left alone.

    Args:
        x: a pytree whose leaves may be plax Arrays.

    Returns:
        `x` itself.

    Examples:
        >>> import numpy as np
        >>> import plax, plax.numpy as jnp
        >>> x = plax.copy_to_host_async(jnp.arange(3))
        >>> np.asarray(x)
        array([0, 1, 2], dtype=int32)
    """
    for leaf in tree_flatten(x)[0]:
        copy = getattr(leaf, "copy_to_host_async", None)
        if copy is not None:
            copy()
    return x


def device_get(x: Any) -> Any:
    """Copies the arrays in `x` to the host, as NumPy arrays.

    Every plax Array leaf of the pytree `x` is fetched (the transfers start
    together, then each is read); other leaves are returned unchanged. This is
    an explicit transfer, which the transfer guard allows.

    Args:
        x: a pytree whose leaves may be plax Arrays.

    Returns:
        A pytree like `x` with each Array replaced by a `numpy.ndarray`.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> plax.device_get({"w": jnp.ones(2), "step": 3})
        {'step': 3, 'w': array([1., 1.], dtype=float32)}
    """
    with transfer_guard.explicit():
        leaves, treedef = tree_flatten(copy_to_host_async(x))
        return tree_unflatten(treedef, [np.asarray(leaf) if isinstance(leaf, Array) else leaf
                                        for leaf in leaves])


def live_arrays(platform: str | None = None) -> list[Array]:
    """Lists the plax Arrays whose device buffers are still alive.

    For finding what holds device memory. It walks the objects Python's garbage
    collector tracks, so it takes time in proportion to the heap.

    Args:
        platform: a platform name (default: the default backend's).

    Returns:
        A list of Arrays (deleted and donated arrays are not included).

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> x = jnp.ones(3)
        >>> any(a is x for a in plax.live_arrays())
        True
    """
    devices = set(get_backend(platform).devices())
    return [obj for obj in gc.get_objects()
            if type(obj) is Array and not obj.is_deleted() and obj.devices() <= devices]


def print_environment_info(return_string: bool = False) -> str | None:
    """Prints the versions of plax's packages, jaxlib, NumPy and Python, the
    devices, and the plax/JAX/XLA environment variables: what a bug report
    needs.

    Args:
        return_string: return the text instead of printing it.

    Returns:
        The text with `return_string`, else None.

    Examples:
        >>> import plax
        >>> info = plax.print_environment_info(return_string=True)
        >>> info.splitlines()[1]
        'jaxlib: 0.10.2'
    """
    packages = sorted(f"{dist.metadata['Name']} {dist.version}"
                      for dist in importlib.metadata.distributions()
                      if (dist.metadata["Name"] or "").startswith("plax"))
    first = devices()[0]
    lines = [f"plax:   {', '.join(packages)}",
             f"jaxlib: {importlib.metadata.version('jaxlib')}",
             f"numpy:  {np.__version__}",
             f"python: {sys.version.replace(chr(10), ' ')}",
             f"device info: {first.device_kind}-{device_count()}, "
             f"{local_device_count()} local devices",
             f"process_count: {process_count()}",
             f"platform: {_platform.uname()}"]
    lines += [f"{key}={value}" for key, value in os.environ.items()
              if key.startswith(("PLAX_", "JAX_", "XLA_"))]
    text = "\n".join(lines)
    if return_string:
        return text
    print(text)
    return None


def make_array_from_process_local_data(sharding: Any, local_data: Any,
                                       global_shape: Any = None) -> Any:
    """Builds the global Array of a multi-process program from the part of it this
    process holds.

    Along each dimension, `local_data` is either the whole global extent or the
    concatenation, in global order, of the blocks this process's devices hold
    (in a single process: the whole array). A pytree of local data gives a
    pytree of Arrays; `sharding` and `global_shape` are then pytree prefixes of
    it.

    Args:
        sharding: the global layout (a bare `PartitionSpec` uses the mesh in
            context, `plax.set_mesh`).
        local_data: this process's data (NumPy arrays or array-likes).
        global_shape: the global shape; without it each sharded dimension is
            taken to grow by the ratio of all blocks to this process's blocks.

    Returns:
        A plax Array (or pytree of them) laid out by `sharding`.

    Raises:
        ValueError: `local_data`'s shape does not fit `sharding` and
            `global_shape`.

    Examples:
        >>> import numpy as np
        >>> import plax
        >>> from plax.sharding import NamedSharding, PartitionSpec as P
        >>> mesh = plax.make_mesh((4,), ("x",))
        >>> a = plax.make_array_from_process_local_data(NamedSharding(mesh, P("x")),
        ...                                             np.arange(8.0))
        >>> a.shape, len(a.addressable_shards)
        ((8,), 4)
    """
    leaves, treedef = tree_flatten(local_data)
    shardings = broadcast_prefix(sharding, local_data)
    shapes = broadcast_prefix(global_shape, local_data,
                              is_leaf=lambda x: x is None or isinstance(x, tuple))
    return tree_unflatten(treedef, [_from_process_local_data(*args)
                                    for args in zip(shardings, leaves, shapes)])


def _from_process_local_data(sharding, local_data, global_shape) -> Array:
    """One leaf of `make_array_from_process_local_data`."""
    if not isinstance(sharding, Sharding):
        try:  # a bare PartitionSpec names the axes of the mesh in context
            sharding = sharding_from_spec(sharding, "make_array_from_process_local_data")
        except TypeError:
            raise TypeError(f"make_array_from_process_local_data: sharding must be a plax "
                            f"Sharding or a PartitionSpec, got {type(sharding).__name__}"
                            ) from None
        except RuntimeError:
            raise ValueError(f"make_array_from_process_local_data: the sharding is the "
                             f"PartitionSpec {sharding}, which needs a mesh in context: set "
                             "one with `plax.set_mesh(mesh)`, or pass a NamedSharding(mesh, "
                             "spec)") from None
    value = np.asarray(local_data)
    if global_shape is None:
        global_shape = tuple(n * every // local for n, (every, local)
                             in zip(value.shape, _block_counts(sharding, value.ndim)))
    global_shape = tuple(int(n) for n in global_shape)
    if len(global_shape) != value.ndim:
        raise ValueError(f"global_shape {global_shape} has {len(global_shape)} dimensions "
                         f"but the local data has shape {value.shape}")
    block = sharding.shard_shape(global_shape)
    indices = sharding.addressable_devices_indices_map(global_shape)
    local_starts = [sorted({index[d].indices(n)[0] for index in indices.values()})
                    for d, n in enumerate(global_shape)]
    for d, (n, starts) in enumerate(zip(global_shape, local_starts)):
        if value.shape[d] not in (n, len(starts) * block[d]):
            raise ValueError(
                f"the local data has shape {value.shape} but dimension {d} of the global "
                f"shape {global_shape} needs either all {n} elements or this process's "
                f"{len(starts)} block(s) of {block[d]} (sharding {sharding})")

    def local_piece(index):
        where = []
        for d, part in enumerate(index):
            start, stop, _ = part.indices(global_shape[d])
            if value.shape[d] != global_shape[d]:
                offset = local_starts[d].index(start) * block[d]
                start, stop = offset, offset + stop - start
            where.append(slice(start, stop))
        return value[tuple(where)]

    return make_array_from_callback(global_shape, sharding, local_piece, dtype=value.dtype)


def _block_counts(sharding: Sharding, ndim: int) -> list[tuple[int, int]]:
    """Per dimension, how many blocks `sharding` cuts it into over all devices and
    over this process's devices (probed on a shape every partition count divides)."""
    probe = (sharding.num_devices,) * ndim
    maps = (sharding.devices_indices_map(probe),
            sharding.addressable_devices_indices_map(probe))
    return [tuple(len({index[d].indices(probe[d])[0] for index in m.values()}) for m in maps)
            for d in range(ndim)]

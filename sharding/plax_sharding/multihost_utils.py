"""`plax.experimental.multihost_utils`: host values shared between the processes of a
multi-process run (`plax.distributed.initialize`).

Each function is a collective: every process must call it, in the same order, with
values of the same shapes and dtypes. The values travel as one global array over a
(processes, local devices) mesh whose row p is process p's value, through one jitted
computation; in a single process they work too (one row).
"""
from __future__ import annotations

import functools
import zlib
from typing import Any

import numpy as np

from plax.extend.tree_util import broadcast_prefix, tree_flatten, tree_unflatten
from plax_runtime import api as runtime_api, distributed_watch
from plax_runtime.array import Array, make_array_from_single_device_arrays
from plax_runtime.device_put import device_put
from plax_sharding.mesh import Mesh
from plax_sharding.named_sharding import NamedSharding
from plax_sharding.partition_spec import PartitionSpec
from plax_transforms.jit import jit

__all__ = ["assert_equal", "broadcast_one_to_all", "global_array_to_host_local_array",
           "host_local_array_to_global_array", "process_allgather", "sync_global_devices"]

_PROCESSES = "processes"


@functools.cache
def _process_mesh() -> Mesh:
    """Every device of the default backend, one row per process (the backend's devices
    are fixed once it has started, so this is made once)."""
    devices = sorted(runtime_api.devices(), key=lambda d: (d.process_index, d.id))
    count = runtime_api.process_count()
    if len(devices) % count:
        raise ValueError(f"multihost_utils needs the same number of devices in every "
                         f"process; {len(devices)} devices are spread over {count} processes")
    return Mesh(np.array(devices).reshape(count, -1), (_PROCESSES, "local_devices"))


def _stack_over_processes(value: np.ndarray) -> Array:
    """The global (process_count, *value.shape) array whose row p is process p's value."""
    mesh = _process_mesh()
    sharding = NamedSharding(mesh, PartitionSpec(_PROCESSES))
    return runtime_api.make_array_from_process_local_data(
        sharding, value[None], (mesh.shape[_PROCESSES], *value.shape))


@functools.cache
def _replicated_on(devices: frozenset) -> NamedSharding:
    mesh = Mesh(np.array(sorted(devices, key=lambda d: (d.process_index, d.id))), ("all",))
    return NamedSharding(mesh, PartitionSpec())


def _fetch_everywhere(arrays: list[Array]) -> list[np.ndarray]:
    """The whole values of global `arrays`, read in every process (one computation
    copies them to every device)."""
    if not arrays:
        return []
    shardings = tuple(_replicated_on(frozenset(a.sharding.device_set)) for a in arrays)
    return [np.asarray(c) for c in _replicate(shardings)(arrays)]


@functools.lru_cache(maxsize=64)
def _replicate(shardings: tuple[NamedSharding, ...]):
    """One jitted copy per list of target shardings, so repeated gathers reuse it."""
    return jit(lambda xs: list(xs), out_shardings=list(shardings))


def process_allgather(in_tree: Any, tiled: bool = False) -> Any:
    """Every process's values, in every process, as NumPy arrays.

    A leaf that is a global Array spanning several processes gives its whole value.
    Any other leaf (a host value, or an Array of this process) is this process's piece:
    the result stacks the pieces of all processes on a new leading axis (process p's
    at row p), or with `tiled=True` concatenates them along their first axis (scalars
    are stacked either way).
    """
    with distributed_watch.operation("process_allgather"):
        return _process_allgather(in_tree, tiled)


def _process_allgather(in_tree: Any, tiled: bool) -> Any:
    leaves, treedef = tree_flatten(in_tree)
    is_global = [isinstance(leaf, Array) and not leaf.is_fully_addressable for leaf in leaves]
    pieces = {i: np.asarray(leaf) for i, leaf in enumerate(leaves) if not is_global[i]}
    stacked = {i: _stack_over_processes(v) for i, v in pieces.items()}
    order = [i for i in range(len(leaves)) if is_global[i]] + list(stacked)
    fetched = dict(zip(order, _fetch_everywhere(
        [leaves[i] for i in order if is_global[i]] + list(stacked.values()))))
    out = []
    for i in range(len(leaves)):
        value = fetched[i]
        if not is_global[i] and tiled:
            value = value.reshape(-1, *pieces[i].shape[1:])
        out.append(value)
    return tree_unflatten(treedef, out)


def broadcast_one_to_all(in_tree: Any, is_source: bool | None = None) -> Any:
    """The values of the source process (by default process 0), in every process, as
    NumPy arrays; exactly one process may be the source."""
    if is_source is None:
        is_source = runtime_api.process_index() == 0
    leaves, treedef = tree_flatten(in_tree)
    values = [np.asarray(leaf) for leaf in leaves]
    sent = [v if is_source else np.zeros_like(v) for v in values]
    with distributed_watch.operation("broadcast_one_to_all"):
        rows = process_allgather([np.array(bool(is_source)), *sent])
    sources = int(rows[0].sum())
    if sources != 1:
        raise ValueError(f"broadcast_one_to_all needs exactly one source process, but "
                         f"{sources} processes passed is_source=True")
    source = int(np.argmax(rows[0]))
    return tree_unflatten(treedef, [row[source] for row in rows[1:]])


def sync_global_devices(name: str) -> None:
    """Waits until every process has reached `sync_global_devices(name)`; raises
    AssertionError if the processes passed different names."""
    if not isinstance(name, str):
        raise TypeError(f"sync_global_devices needs a str name, got {type(name).__name__}")
    digest = np.uint32(zlib.crc32(name.encode()))
    with distributed_watch.operation(f"sync_global_devices({name!r})"):
        digests = process_allgather(digest)
    if not (digests == digest).all():
        raise AssertionError(f"sync_global_devices name mismatch ({name!r}): the processes "
                             f"passed names whose digests are {digests.tolist()}")


def assert_equal(in_tree: Any, fail_message: str = "") -> None:
    """Raises AssertionError unless every process passed equal values (and structure)."""
    leaves, _ = tree_flatten(in_tree)
    with distributed_watch.operation("assert_equal"):
        gathered = process_allgather(leaves)
    for i, (mine, every) in enumerate(zip(leaves, gathered)):
        mine = np.asarray(mine)
        if not all(np.array_equal(mine, other, equal_nan=mine.dtype.kind in "fc")
                   for other in every):
            raise AssertionError(f"{fail_message} Expected: {mine}; got: {every} "
                                 f"(leaf {i} differs between processes).".lstrip())


def _spec_leaves(pspecs: Any, tree: Any) -> list[PartitionSpec]:
    specs = broadcast_prefix(pspecs, tree, is_leaf=lambda x: x is None
                             or isinstance(x, PartitionSpec))
    if any(spec is None for spec in specs):
        raise ValueError("`None` is not a valid input to the pspecs argument. Please use "
                         "plax.sharding.PartitionSpec() if you wanted to replicate your "
                         "input.")
    return specs


def host_local_array_to_global_array(local_inputs: Any, global_mesh: Mesh,
                                     pspecs: Any) -> Any:
    """Each process's arrays laid out over its part of `global_mesh` (its local mesh)
    with `pspecs` (a pytree prefix of PartitionSpecs), as the global arrays they are
    pieces of: host values are placed, Arrays keep their buffers when they already sit
    on the local mesh as specified, and global Arrays are returned as they are."""
    leaves, treedef = tree_flatten(local_inputs)
    local_mesh = global_mesh.local_mesh
    out = []
    for leaf, spec in zip(leaves, _spec_leaves(pspecs, local_inputs)):
        sharding = NamedSharding(global_mesh, spec)
        if isinstance(leaf, Array) and not leaf.is_fully_addressable:
            out.append(leaf)  # global already
            continue
        if not isinstance(leaf, Array):
            out.append(runtime_api.make_array_from_process_local_data(sharding, leaf))
            continue
        local = NamedSharding(local_mesh, spec)
        out.append(_rewrap(device_put(leaf, local), local, sharding))
    return tree_unflatten(treedef, out)


def global_array_to_host_local_array(global_inputs: Any, global_mesh: Mesh,
                                     pspecs: Any) -> Any:
    """The inverse of `host_local_array_to_global_array`: each global Array's part in
    this process, as an Array over the local mesh (sharing its buffers); Arrays of
    this process alone are returned as they are, host values are taken as global."""
    leaves, treedef = tree_flatten(global_inputs)
    local_mesh = global_mesh.local_mesh
    out = []
    for leaf, spec in zip(leaves, _spec_leaves(pspecs, global_inputs)):
        if isinstance(leaf, Array) and leaf.is_fully_addressable:
            out.append(leaf)  # host-local already
            continue
        sharding = NamedSharding(global_mesh, spec)
        leaf = device_put(leaf if isinstance(leaf, Array) else np.asarray(leaf), sharding)
        out.append(_rewrap(leaf, sharding, NamedSharding(local_mesh, spec)))
    return tree_unflatten(treedef, out)


def _rewrap(array: Array, source: NamedSharding, target: NamedSharding) -> Array:
    """The Array whose shards under `target` are `array`'s buffers under `source`
    (the same spec over the global mesh and over this process's part of it)."""
    block = source.shard_shape(array.shape)
    probe = tuple(n * target.num_devices for n in block)  # every partition count divides
    shape = tuple(b * (n // piece) for b, n, piece in zip(block, probe,
                                                          target.shard_shape(probe)))
    by_device = {shard.device: shard.data for shard in array.addressable_shards}
    return make_array_from_single_device_arrays(
        shape, target, [by_device[d] for d in target.addressable_devices_indices_map(shape)])

"""The runtime's public functions, as the `plax` facade exposes them (`plax.devices`...).

Backends are reached through the registry (`plax_runtime.backends`), which the
`plax.backends` entry points fill.
"""
from __future__ import annotations

from typing import Any

from jaxlib import xla_client as xc

import numpy as np

from plax.extend.sharding import Sharding
from plax.extend.tree_util import tree_flatten, tree_unflatten
from plax_runtime.array import Array
from plax_runtime.backends import get_backend
from plax_runtime.device_put import device_put

__all__ = ["devices", "local_devices", "device_count", "local_device_count",
           "default_backend", "process_index", "process_count", "get_backend",
           "device_put", "device_get", "block_until_ready",
           "make_array_from_process_local_data"]

Backend = str | xc.Client | None


def devices(backend: Backend = None) -> list[xc.Device]:
    """All devices of `backend` (default: the default backend), over all processes."""
    return get_backend(backend).devices()


def local_devices(process_index: int | None = None, backend: Backend = None) -> list[xc.Device]:
    """The devices of one process (default: this one)."""
    client = get_backend(backend)
    if process_index is None:
        process_index = client.process_index()
    return [d for d in client.devices() if d.process_index == process_index]


def device_count(backend: Backend = None) -> int:
    return get_backend(backend).device_count()


def local_device_count(backend: Backend = None) -> int:
    return get_backend(backend).local_device_count()


def default_backend() -> str:
    """The platform name of the default backend (`cpu`, `cuda`, `tpu`)."""
    return get_backend().platform


def process_index(backend: Backend = None) -> int:
    return get_backend(backend).process_index()


def process_count(backend: Backend = None) -> int:
    return max(d.process_index for d in get_backend(backend).devices()) + 1


def block_until_ready(x: Any) -> Any:
    """Waits until every Array leaf of `x` is computed; returns `x`."""
    leaves, _ = tree_flatten(x)
    arrays = [leaf for leaf in leaves if isinstance(leaf, Array)]
    for a in arrays:
        a._check_alive()
    if arrays:
        xc.batched_block_until_ready([a._impl for a in arrays])
    for leaf in leaves:
        if not isinstance(leaf, Array) and hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
    return x


def device_get(x: Any) -> Any:
    """`x` with every Array leaf fetched to the host as a NumPy array (copies start
    together, then each is read)."""
    leaves, treedef = tree_flatten(x)
    for leaf in leaves:
        if isinstance(leaf, Array):
            leaf.copy_to_host_async()
    return tree_unflatten(treedef, [np.asarray(leaf) if isinstance(leaf, Array) else leaf
                                    for leaf in leaves])


def make_array_from_process_local_data(sharding: Sharding, local_data: Any,
                                       global_shape: tuple[int, ...] | None = None) -> Array:
    """The global Array laid out by `sharding` from the data this process holds.

    In a single-process program the local data is the whole array.
    """
    value = np.asarray(local_data)
    if global_shape is None:
        global_shape = value.shape
    if process_count() > 1 or not sharding.is_fully_addressable:
        raise NotImplementedError("make_array_from_process_local_data across several "
                                  "processes is not supported yet")
    if tuple(global_shape) != value.shape:
        raise ValueError(f"in a single process the local data is the whole array, but it "
                         f"has shape {value.shape} and global_shape is {tuple(global_shape)}")
    return device_put(value, sharding)

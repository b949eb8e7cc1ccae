"""Functions of `plax` and `plax.sharding` that build meshes and move values between
shardings: `make_mesh`, `make_single_device_sharding`."""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from plax.extend.sharding import Device
from plax_runtime import api as runtime_api
from plax_runtime.sharding_impls import SingleDeviceSharding
from plax_sharding.mesh import AxisType, Mesh


def make_mesh(axis_shapes: Sequence[int], axis_names: Sequence[str],
              axis_types: AxisType | Sequence[AxisType] | None = None, *,
              devices: Sequence[Device] | None = None) -> Mesh:
    """Arranges devices in a named grid: the mesh that shardings and `shard_map` use.

    Args:
        axis_shapes: the size of each mesh axis; their product devices are used.
        axis_names: a name for each axis (`"data"`, `"model"`...).
        axis_types: `AxisType.Explicit` (the default, as in JAX 0.10: values'
            shardings over the axis are part of their types,
            `plax.typeof(x).sharding`), `AxisType.Auto` (the compiler decides) or
            `AxisType.Manual`; one for all axes or one per axis.
        devices: the devices to use (default: all, ordered by process, then id, so
            each process's devices are contiguous along the leading axes).

    Returns:
        A `Mesh`.

    Raises:
        ValueError: fewer devices than the product of `axis_shapes`, or names and
            shapes of different lengths.

    Examples:
        >>> import plax
        >>> mesh = plax.make_mesh((4, 2), ("data", "model"))
        >>> dict(mesh.shape), mesh.axis_types
        ({'data': 4, 'model': 2}, (Explicit, Explicit))
    """
    shape = tuple(axis_shapes) if not isinstance(axis_shapes, int) else (axis_shapes,)
    if not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s >= 1
               for s in shape):
        raise ValueError(f"`axis_shapes` passed to `make_mesh` should be a sequence of "
                         f"positive ints. Got {axis_shapes}")
    names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
    if len(names) != len(shape):
        raise ValueError(f"make_mesh got {len(shape)} axis sizes {shape} for "
                         f"{len(names)} axis names {names}")
    if devices is None:
        devices = sorted(runtime_api.devices(), key=lambda d: (d.process_index, d.id))
    devices = list(devices)
    size = math.prod(shape)
    if size > len(devices):
        raise ValueError(f"Number of devices {len(devices)} must be >= the product of "
                         f"mesh_shape {shape}")
    grid = np.empty(size, dtype=object)
    grid[:] = devices[:size]
    return Mesh(grid.reshape(shape), names,
                AxisType.Explicit if axis_types is None else axis_types)


def make_single_device_sharding(device: Device, *,
                                memory_kind: str | None = None) -> SingleDeviceSharding:
    """The sharding that puts a whole array on one device.

    Args:
        device: the device (from `plax.devices()`).
        memory_kind: the memory space on it (e.g. "device", "pinned_host"); default the
            device's default memory.

    Returns:
        A `SingleDeviceSharding`.

    Examples:
        >>> s = plax.sharding.make_single_device_sharding(plax.devices()[1])
        >>> plax.device_put(jnp.ones(2), s).devices() == {plax.devices()[1]}
        True
    """
    return SingleDeviceSharding(device, memory_kind=memory_kind)

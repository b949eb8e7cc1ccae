"""`colocated_cpu_devices`: the CPU devices on the same hosts as some devices."""
from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from plax_runtime import api as runtime_api
from plax_sharding.mesh import Mesh


def colocated_cpu_devices(devices_or_mesh: Sequence | Mesh) -> list | Mesh:
    """The CPU devices colocated with `devices_or_mesh`, one for each device in order.

    Each device gets a CPU device of its own process, in the order the process lists
    them (a CPU device's own platform's client lists them; an accelerator's come from the
    CPU backend). Given a `Mesh`, returns the mesh of the same shape and axes over them.

    Raises:
        ValueError: a process has fewer CPU devices than devices are given for it.

    Examples:
        >>> from plax.experimental.colocated_python import colocated_cpu_devices
        >>> colocated_cpu_devices(plax.devices()[:2])
        [CpuDevice(id=0), CpuDevice(id=1)]
    """
    if isinstance(devices_or_mesh, Mesh):
        return _colocated_mesh(devices_or_mesh)
    return list(_colocated_devices(tuple(devices_or_mesh)))


@functools.lru_cache(maxsize=1024)
def _colocated_devices(devices: tuple) -> tuple:
    if devices[0].device_kind == "cpu":
        candidates = [d for d in devices[0].client.devices() if d.device_kind == "cpu"]
    else:
        candidates = runtime_api.devices("cpu")
    unused: dict[int, list] = {}
    for device in candidates:
        unused.setdefault(device.process_index, []).append(device)
    colocated = []
    for device in devices:
        if not unused.get(device.process_index):
            raise ValueError(f"Process {device.process_index} does not have enough local "
                             "CPU devices")
        colocated.append(unused[device.process_index].pop(0))
    return tuple(colocated)


@functools.lru_cache(maxsize=1024)
def _colocated_mesh(mesh: Mesh) -> Mesh:
    devices = np.empty(mesh.devices.size, dtype=object)
    devices[:] = _colocated_devices(tuple(mesh.devices.flat))
    return Mesh(devices.reshape(mesh.devices.shape), mesh.axis_names,
                axis_types=mesh.axis_types)

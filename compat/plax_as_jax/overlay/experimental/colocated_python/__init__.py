"""`jax.experimental.colocated_python`: Python run on the CPU devices beside
accelerators, a Pathways (IFRT proxy) feature plax has no backend for. orbax imports
it at start-up and calls it only on Pathways. Here: the CPU devices colocated with
CPU devices are themselves; running a function colocated is refused."""
from __future__ import annotations

PLAX_MODULE = None


def colocated_cpu_devices(devices):
    """The CPU devices colocated with `devices`: themselves, when they are CPU devices."""
    devices = tuple(devices)
    others = sorted({d.platform for d in devices} - {"cpu"})
    if others:
        raise NotImplementedError(f"colocated_cpu_devices: plax has no colocated CPU devices "
                                  f"for {', '.join(others)} devices (a Pathways feature)")
    return devices


def colocated_python(fun):
    raise NotImplementedError("colocated_python runs Python on Pathways' colocated CPU "
                              "devices; plax has no such backend")

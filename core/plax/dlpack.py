"""`plax.dlpack`: exchanging arrays with other libraries through DLPack.

The implementation lives in plax-runtime and is reached through the plugin registry,
so importing this module starts nothing.
"""
from __future__ import annotations

from typing import Any

from plax._src import plugins


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Any:
    """A `plax.Array` holding the data of `x`, any object with `__dlpack__` and
    `__dlpack_device__` (a NumPy array, a torch tensor, a plax Array...).

    Data on a device plax can use is shared unless `copy=True`; `device` (a Device
    or single-device Sharding) chooses where the result lives.
    """
    return plugins.resolve("plax.transforms", "from_dlpack")(x, device=device, copy=copy)


__all__ = ["from_dlpack"]

"""How colocated Python ships a function to the hosts that run it: cloudpickle (which
pickles functions and classes of `__main__` by value), with each device sent as its id
and looked up among the receiving process's CPU devices, so that the meshes and
shardings a function closes over arrive there as the same placements."""
from __future__ import annotations

import functools
import io
import pickle
from typing import Any

from jaxlib import xla_client as xc

from plax_runtime import api as runtime_api

try:
    import cloudpickle
except ImportError:
    cloudpickle = None


def roundtrip(obj: Any) -> Any:
    """What a receiving host gets for `obj`: a copy through the pickle."""
    return deserialize(serialize(obj))


def serialize(obj: Any) -> bytes:
    """`obj` as bytes, devices as their ids."""
    with io.BytesIO() as file:
        _pickler_class()(file).dump(obj)
        return file.getvalue()


def deserialize(data: bytes) -> Any:
    """What `serialize` made, with this process's CPU devices."""
    _pickler_class()
    return pickle.loads(data)


@functools.cache
def _pickler_class() -> type:
    if cloudpickle is None:
        raise ModuleNotFoundError('No module named "cloudpickle"')

    class DevicesByIdPickler(cloudpickle.Pickler):
        def reducer_override(self, obj):
            if isinstance(obj, xc.Device):
                return _cpu_device, (obj.id,)
            return super().reducer_override(obj)

    return DevicesByIdPickler


def _cpu_device(device_id: int) -> xc.Device:
    """The CPU device with id `device_id`."""
    for device in runtime_api.devices("cpu"):
        if device.id == device_id:
            return device
    raise ValueError(f"Invalid device ID {device_id}. Device list must contain only CPU "
                     "devices.")

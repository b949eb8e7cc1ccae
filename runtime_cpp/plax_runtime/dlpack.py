"""`plax.dlpack`: `from_dlpack`, making an Array that holds another library's buffer
(`dlpack_buffers.py` holds the capsule reading and `Array.__dlpack__`)."""
from __future__ import annotations

from typing import Any

from jaxlib import _jax

from plax.extend.sharding import Device, Sharding
from plax_runtime.array import Array
from plax_runtime.backends import get_backend
from plax_runtime.dlpack_buffers import CPU, PLATFORMS, capsule_aval
from plax_runtime.sharding_impls import SingleDeviceSharding


def _import_device(device: Device | Sharding | None, device_type: int,
                   device_id: int) -> Device:
    if isinstance(device, Sharding):
        if device.num_devices != 1:
            raise ValueError(f"from_dlpack places data on one device; got {device}")
        (device,) = device.device_set
    if device is not None:
        return device
    platform = PLATFORMS.get(device_type)
    if platform is None:
        raise BufferError(f"from_dlpack: DLPack device type {device_type} is not supported")
    backend = get_backend(platform)
    if device_type == CPU:
        return backend.local_devices()[0]
    return backend.device_from_local_hardware_id(device_id)


def from_dlpack(x: Any, /, *, device: Device | Sharding | None = None,
                copy: bool | None = None) -> Array:
    """Makes a plax Array from any object that supports the DLPack protocol
    (NumPy arrays, PyTorch and CuPy tensors...).

    The buffer is shared, not copied, when it already lives on a device of a
    plax backend (unless `copy=True`); otherwise it is copied to the device.

    Args:
        x: an object with `__dlpack__` and `__dlpack_device__`.
        device: the `Device` or `Sharding` to place the result on.
        copy: True always copies; False never does (an error when a copy is
            needed); None copies only when needed.

    Returns:
        A plax Array with `x`'s data, shape and dtype.

    Raises:
        ValueError: `copy=False` and a copy is needed.
        TypeError: `x` does not support DLPack.

    Examples:
        >>> import numpy as np
        >>> import plax
        >>> plax.from_dlpack(np.arange(3, dtype=np.float32))
        Array([0., 1., 2.], dtype=float32)
    """
    if not (hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__")):
        raise TypeError(f"from_dlpack expects an object with __dlpack__ and "
                        f"__dlpack_device__, got {type(x).__name__}")
    device_type, device_id = x.__dlpack_device__()
    target = _import_device(device, int(device_type), int(device_id))
    stream = None if device_type == CPU else target.get_stream_for_external_ready_events()
    capsule = x.__dlpack__() if stream is None else x.__dlpack__(stream=stream)
    aval = capsule_aval(capsule)
    impl = _jax.dlpack_managed_tensor_to_buffer(capsule, target, stream, copy)
    sharding = SingleDeviceSharding(target)
    impl = impl._rewrap_with_aval_and_sharding(aval, sharding._to_jaxlib_sharding(aval.ndim))
    return Array._from_impl(impl, aval, sharding)

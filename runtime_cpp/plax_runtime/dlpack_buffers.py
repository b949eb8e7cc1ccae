"""DLPack capsules: reading their headers, `Array.__dlpack__`, and host copies of CPU
buffers (`plax.dlpack.from_dlpack` builds on this).

jaxlib imports a DLPack capsule into a device buffer but, without `jax`, gives it no
aval; the shape and dtype are read from the capsule's `DLTensor` header here, which
works for every device type without copying the data to the host.

The same header lets plax copy a CPU buffer to NumPy itself: jaxlib's own
device-to-host fetch imports the `jax` package when it is installed, which plax must
not cause (DESIGN §9).
"""
from __future__ import annotations

import ctypes
from typing import Any

import ml_dtypes
import numpy as np
from jaxlib import _jax

from plax.extend import dtypes
from plax.extend.core import ShapedArray
from plax.extend.sharding import Device

# DLDeviceType values (dlpack.h) of the platforms plax has backends for.
CPU, CUDA, ROCM = 1, 2, 10
_DEVICE_TYPES = {"cpu": CPU, "cuda": CUDA, "gpu": CUDA, "rocm": ROCM}
PLATFORMS = {CPU: "cpu", CUDA: "cuda", ROCM: "rocm"}

# DLDataTypeCode (dlpack.h) and bit width → dtype.
_INT, _UINT, _FLOAT, _BFLOAT, _COMPLEX, _BOOL = 0, 1, 2, 4, 5, 6
_DTYPES = {(code, np.dtype(t).itemsize * 8): np.dtype(t) for code, types in [
    (_INT, (np.int8, np.int16, np.int32, np.int64)),
    (_UINT, (np.uint8, np.uint16, np.uint32, np.uint64)),
    (_FLOAT, (np.float16, np.float32, np.float64)),
    (_BFLOAT, (ml_dtypes.bfloat16,)),
    (_COMPLEX, (np.complex64, np.complex128)),
    (_BOOL, (np.bool_,))] for t in types}


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _tensor(capsule: Any) -> _DLTensor:
    """The `DLTensor` header of an unconsumed legacy ("dltensor") capsule."""
    return _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))


def capsule_aval(capsule: Any) -> ShapedArray:
    """Shape and dtype from an unconsumed legacy capsule."""
    tensor = _tensor(capsule)
    code, bits, lanes = tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes
    dtype = _DTYPES.get((code, bits))
    if dtype is None or lanes != 1:
        raise TypeError(f"from_dlpack: DLPack dtype (code={code}, bits={bits}, "
                        f"lanes={lanes}) has no plax dtype")
    return ShapedArray([tensor.shape[i] for i in range(tensor.ndim)], dtype)


def can_copy_to_numpy(platform: str, dtype: np.dtype) -> bool:
    """Whether `cpu_buffer_to_numpy` handles buffers of this platform and dtype
    (DLPack has no sub-byte types such as int4)."""
    return platform == "cpu" and dtypes.itemsize_bits(dtype) == 8 * dtype.itemsize


def cpu_buffer_to_numpy(impl: Any, dtype: np.dtype) -> np.ndarray:
    """A NumPy copy of a single-device CPU buffer, read through a DLPack capsule."""
    impl.block_until_ready()
    capsule = _jax.buffer_to_dlpack_managed_tensor(impl)
    tensor = _tensor(capsule)
    shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
    if 0 in shape:
        return np.empty(shape, dtype)
    if tensor.strides:
        strides = tuple(tensor.strides[i] * dtype.itemsize for i in range(tensor.ndim))
    else:  # row-major
        strides = tuple(int(np.prod(shape[i + 1:], dtype=np.int64)) * dtype.itemsize
                        for i in range(len(shape)))
    extent = dtype.itemsize + sum((n - 1) * s for n, s in zip(shape, strides))
    raw = (ctypes.c_char * extent).from_address(tensor.data + tensor.byte_offset)
    view = np.ndarray(shape, dtype, buffer=raw, strides=strides)
    return np.array(view, copy=True, order="C")  # the capsule's buffer goes with it


def _single_device(x, what: str) -> Device:
    devices = x.sharding.device_set
    if len(devices) != 1:
        raise BufferError(f"{what} needs an array on one device, but this one is sharded over "
                          f"{len(devices)} devices")
    (device,) = devices
    return device


def dlpack_device(x) -> tuple[int, int]:
    """`(DLDeviceType, device id)` of a single-device array."""
    device = _single_device(x, "__dlpack_device__")
    device_type = _DEVICE_TYPES.get(device.platform)
    if device_type is None:
        raise BufferError(f"DLPack has no device type for platform {device.platform!r}")
    return (device_type, 0 if device_type == CPU else device.local_hardware_id)


def to_dlpack(x, *, stream: Any = None, dl_device: tuple[int, int] | None = None,
              copy: bool | None = None) -> Any:
    """A legacy DLPack capsule sharing (or, with `copy=True`, copying) `x`'s buffer."""
    x._check_alive()
    own_device = dlpack_device(x)
    if dl_device is not None and tuple(dl_device) != own_device:
        if tuple(dl_device) != (CPU, 0) or copy is False:
            raise BufferError(f"cannot export an array on DLPack device {own_device} to "
                              f"{tuple(dl_device)} without a copy to the host")
        return np.array(x._value).__dlpack__()
    impl = x._impl.clone() if copy else x._impl
    return _jax.buffer_to_dlpack_managed_tensor(impl, stream=stream)

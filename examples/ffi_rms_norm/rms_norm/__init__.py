"""RMS normalization over the last axis by a C++ kernel, called through `plax.ffi`.

`rms_norm(x, eps)` is `x / sqrt(mean(x**2, axis=-1, keepdims=True) + eps)` for float32
`x`. Importing this module registers the kernel's three FFI handlers with XLA's CPU
runtime; `rms_norm` works eagerly and under `jit`, `vmap` (the kernel treats leading
axes as a batch, so vmap hands it the whole batch in one call) and reverse-mode
differentiation, through a `custom_vjp` whose backward pass is the kernel's too.
"""
from __future__ import annotations

import functools

import numpy as np

import plax
import plax.ffi
from rms_norm import _kernels

for _name, _capsule in _kernels.registrations().items():
    plax.ffi.register_ffi_target(_name, _capsule, platform="cpu")


def _check(x) -> None:
    if np.dtype(x.dtype) != np.float32:
        raise TypeError(f"rms_norm: the kernel takes float32 values, got {x.dtype}")
    if np.ndim(x) < 1:
        raise ValueError(f"rms_norm: the input must have at least one axis, got shape "
                         f"{np.shape(x)}")


def _forward(x, eps):
    out = plax.ShapeDtypeStruct(x.shape, x.dtype)
    return plax.ffi.ffi_call("rms_norm", out, vmap_method="broadcast_all")(
        x, eps=np.float32(eps))


@functools.partial(plax.custom_vjp, nondiff_argnums=(1,))
def _rms_norm(x, eps):
    return _forward(x, eps)


def _rms_norm_fwd(x, eps):
    y, scale = plax.ffi.ffi_call(
        "rms_norm_fwd", (plax.ShapeDtypeStruct(x.shape, x.dtype),
                         plax.ShapeDtypeStruct(x.shape[:-1], x.dtype)),
        vmap_method="broadcast_all")(x, eps=np.float32(eps))
    return y, (scale, x)


def _rms_norm_bwd(eps, residuals, ct):
    scale, x = residuals
    dx = plax.ffi.ffi_call("rms_norm_bwd", plax.ShapeDtypeStruct(x.shape, x.dtype),
                           vmap_method="broadcast_all")(scale, x, ct)
    return (dx,)


_rms_norm.defvjp(_rms_norm_fwd, _rms_norm_bwd)


def rms_norm(x, eps: float = 1e-5):
    """`x / sqrt(mean(x**2, axis=-1, keepdims=True) + eps)` by the C++ kernel."""
    x = plax.numpy.asarray(x)
    _check(x)
    return _rms_norm(x, float(eps))


__all__ = ["rms_norm"]

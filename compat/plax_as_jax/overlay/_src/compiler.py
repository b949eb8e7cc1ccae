"""`jax._src.compiler`: `backend_compile_and_load`, JAX's one call that compiles a
StableHLO module on a backend (chex's `restrict_backends` wraps it). plax's own jit
compiles through plax_runtime, not through this name: wrapping it restricts only
callers of this function (so chex's restrict_backends does not stop plax's jit)."""
from __future__ import annotations

from jaxlib import _jax

PLAX_MODULE = None


def backend_compile_and_load(backend, module, executable_devices, options,
                             host_callbacks=()):
    """Compile `module` (StableHLO text or bytecode) on `backend` (a PJRT client) for
    `executable_devices` with `options` (a jaxlib CompileOptions)."""
    devices = executable_devices if isinstance(executable_devices, _jax.DeviceList) \
        else _jax.DeviceList(tuple(executable_devices))
    if host_callbacks:
        return backend.compile_and_load(module, devices, options, list(host_callbacks))
    return backend.compile_and_load(module, devices, options)

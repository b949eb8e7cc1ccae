"""`jax._src.xla_bridge`: `_backends`, the backends started so far by platform (chex
checks that none is before it sets the CPU device count)."""
from plax_runtime import backends as _runtime_backends

PLAX_MODULE = None


def __getattr__(name):
    if name == "_backends":
        return dict(_runtime_backends.clients()) if _runtime_backends.backends_are_initialized() \
            else {}
    raise AttributeError(f"module 'jax._src.xla_bridge' has no attribute {name!r}")

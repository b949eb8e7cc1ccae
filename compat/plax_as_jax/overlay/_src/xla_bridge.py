"""`jax._src.xla_bridge`: `_backends`, the backends started so far by platform (chex
checks that none is before it sets the CPU device count), and `get_backend`, the
client of a platform (JAX's autodidax compiles and runs its programs with it)."""
from plax_runtime import backends as _runtime_backends
from plax_runtime.backends import get_backend  # noqa: F401

PLAX_MODULE = None


def __getattr__(name):
    if name == "_backends":
        return dict(_runtime_backends.clients()) if _runtime_backends.backends_are_initialized() \
            else {}
    raise AttributeError(f"module 'jax._src.xla_bridge' has no attribute {name!r}")

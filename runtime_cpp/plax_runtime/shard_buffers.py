"""The per-device buffers of a jaxlib array, without importing `jax`.

jaxlib's C++ builds the per-shard arrays of `ArrayImpl._arrays` with avals from
`jax.core.ShapedArray`, importing `jax` when it is installed (DESIGN §9; when the
import fails it leaves `aval=None`). plax sets its own avals on the shards, so while
it asks for them the import of `jax` is refused — unless the user has imported JAX
already, in which case nothing changes.
"""
from __future__ import annotations

import importlib.abc
import sys
import threading

from jaxlib import xla_client as xc


class _RefuseJax(importlib.abc.MetaPathFinder):
    """Makes `import jax` fail (for the C++ code running now), and nothing else."""
    active = 0

    def find_spec(self, fullname, path=None, target=None):
        if self.active and (fullname == "jax" or fullname.startswith("jax.")):
            raise ModuleNotFoundError(f"plax keeps {fullname!r} unimported", name=fullname)
        return None


_refuse = _RefuseJax()
_lock = threading.Lock()


def shard_buffers(impl: xc.ArrayImpl) -> list[xc.ArrayImpl]:
    """`impl._arrays`: one single-device array per addressable device (avals unset)."""
    if "jax" in sys.modules:
        return impl._arrays
    with _lock:
        if _refuse not in sys.meta_path:
            sys.meta_path.insert(0, _refuse)
        _refuse.active += 1
        try:
            return impl._arrays
        finally:
            _refuse.active -= 1

"""`plax.experimental`: APIs that are JAX's experimental ones.

The modules come from several packages: each announces `plax.experimental.<name>` as
a `plax.modules` entry point named `experimental.<name>` (plax-transforms gives
`checkify`, `ode` and `sparse`, plax-sharding `mesh_utils` and `shard_map`), and the facade makes
the name an alias of the real module, so `import plax.experimental.checkify` works
and imports only that package. Functions join the same way as `plax.names` entry
points named `experimental.<function>` (`io_callback`). This package itself belongs
to the kernel so that it exists whatever is installed.
"""
from __future__ import annotations

import importlib as _importlib

from plax._src import plugins as _plugins
from plax._src.config import StateContext as _StateContext, enable_x64 as _enable_x64


def enable_x64(new_val: bool = True) -> _StateContext:
    """`with enable_x64():` turns on 64-bit types inside the block (older JAX's
    experimental spelling of `plax.enable_x64(True)`)."""
    return _enable_x64(new_val)


def disable_x64() -> _StateContext:
    """`with disable_x64():` turns 64-bit types off inside the block."""
    return _enable_x64(False)


def _announced() -> list[str]:
    prefix = "experimental."
    return [name[len(prefix):] for name in _plugins.names("plax.modules")
            if name.startswith(prefix) and "." not in name[len(prefix):]]


def __getattr__(name: str):
    if name in _announced():
        return _importlib.import_module(f"{__name__}.{name}")
    if name.startswith("__"):
        raise AttributeError(name)
    value = _plugins.contributed("experimental", name)  # e.g. io_callback
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_announced())
                  | set(_plugins.contributed_names("experimental")))

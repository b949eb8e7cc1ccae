"""`plax.debug`: tools for looking inside running programs.

Several packages contribute to this module, each through `plax.names` entry points
named `debug.<name>`: plax-sharding gives `visualize_array_sharding`,
`visualize_sharding` and `inspect_array_sharding`; callbacks and printing join the
same way. Names are resolved on first use, so importing this module imports none of
them.
"""
from __future__ import annotations

from plax._src import plugins as _plugins


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    value = _plugins.contributed("debug", name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_plugins.contributed_names("debug")))

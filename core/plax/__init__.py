"""plax: composable transformations of array programs, with JAX's public API.

The kernel defines the IR, tracing, primitives, dtypes, pytrees and config. Names
provided by other packages (`jit`, `grad`, `devices`, `device_put`, `Array`...)
are resolved on first use through the `plax.transforms` entry points, and public
modules they provide (`plax.numpy`, `plax.lax`...) through `plax.modules`, so
`import plax` stays light and a missing package is named in the error.
"""
from __future__ import annotations

import os as _os

# XLA's C++ logging reads its level once, when jaxlib first logs: show warnings and
# up (not the INFO lines every client creation prints) unless the user chose a level.
_os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

import importlib  # noqa: E402

from plax._src.abstract import ShapeDtypeStruct  # noqa: E402
from plax._src.api import make_jaxpr  # noqa: E402
from plax._src.config import (  # noqa: E402  (JAX's option context managers)
    checking_leaks, config, debug_infs, debug_nans, default_device, default_matmul_precision,
    disable_jit, enable_checks, enable_x64, explain_cache_misses, log_compiles,
    numpy_dtype_promotion, numpy_rank_promotion)
from plax._src.errors import (  # noqa: E402
    ConcretizationTypeError, TracerArrayConversionError, TracerBoolConversionError,
    TracerIntegerConversionError, UnexpectedTracerError)
from plax._src import plugins as _plugins  # noqa: E402

__version__ = "0.1.0"

_plugins.install_facade_finder()

# The kernel's own public modules.
_SUBMODULES = {"tree_util", "tree", "errors", "extend", "monitoring", "debug"}


def __getattr__(name: str):
    if name in _SUBMODULES or name in _plugins.names("plax.modules"):
        return importlib.import_module(f"plax.{name}")
    if name.startswith("__"):
        raise AttributeError(name)
    try:
        value = _plugins.resolve("plax.transforms", name)
    except _plugins.PluginMissingError as err:
        raise AttributeError(f"module 'plax' has no attribute {name!r} ({err})") from None
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | _SUBMODULES | set(_plugins.names("plax.modules"))
                  | set(_plugins.names("plax.transforms")))


__all__ = ["ShapeDtypeStruct", "make_jaxpr", "checking_leaks", "config", "debug_infs",
           "debug_nans", "default_device", "default_matmul_precision", "disable_jit",
           "enable_checks", "enable_x64", "explain_cache_misses", "log_compiles",
           "numpy_dtype_promotion", "numpy_rank_promotion",
           "ConcretizationTypeError", "TracerArrayConversionError",
           "TracerBoolConversionError", "TracerIntegerConversionError", "UnexpectedTracerError"]

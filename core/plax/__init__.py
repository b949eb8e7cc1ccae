"""plax: composable transformations of array programs, with JAX's public API.

The kernel defines the IR, tracing, primitives, dtypes, pytrees and config. Names
provided by other packages (`jit`, `grad`, `devices`, `device_put`, `Array`...)
are resolved on first use through the `plax.transforms` entry points, and public
modules they provide (`plax.numpy`, `plax.lax`...) through `plax.modules`, so
`import plax` stays light and a missing package is named in the error.
"""

import os as _os

# XLA's C++ logging reads its level once, when jaxlib first logs: show warnings and
# up (not the INFO lines every client creation prints) unless the user chose a level.
_os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

import importlib as _importlib  # noqa: E402

from plax._src.abstract import ShapeDtypeStruct  # noqa: E402
from plax._src.api import make_jaxpr, typeof  # noqa: E402
from plax._src.caches import clear_caches  # noqa: E402
from plax._src import config as _config_module  # noqa: E402
from plax._src.config import config, disable_jit, enable_x64  # noqa: E402
_config_module.document_option(disable_jit, "disable_jit")
_config_module.document_option(enable_x64, "enable_x64")
from plax._src.dtypes import float0  # noqa: E402
from plax._src.name_stack import named_call, named_scope  # noqa: E402
from plax._src.sharding import Device  # noqa: E402
from plax._src.errors import (  # noqa: E402
    ConcretizationTypeError, TracerArrayConversionError, TracerBoolConversionError,
    TracerIntegerConversionError, UnexpectedTracerError)
from plax._src import plugins as _plugins  # noqa: E402

from plax.version import __version__ as __version__  # noqa: E402

_plugins.install_facade_finder()

# The kernel's own public modules.
_SUBMODULES = {"core", "tree_util", "tree", "errors", "extend", "monitoring", "debug", "dtypes",
               "experimental"}

# JAX's top-level context managers and functions for config options, by name. Options
# other packages define (`softmax_custom_jvp` with plax.nn...) appear once defined.
_CONFIG_API = frozenset({
    "allow_f16_reductions", "array_garbage_collection_guard", "auto_pcast", "check_tracer_leaks",
    "checking_leaks", "debug_infs", "debug_key_reuse", "debug_nans", "default_device",
    "default_matmul_precision", "default_prng_impl", "enable_checks", "enable_custom_prng",
    "explain_cache_misses", "jax2tf_associative_scan_reductions", "legacy_prng_key",
    "log_compiles", "make_user_context", "no_execution", "no_tracing", "numpy_dtype_promotion",
    "numpy_rank_promotion", "remove_size_one_mesh_axis_from_type", "softmax_custom_jvp",
    "thread_guard", "threefry_partitionable", "transfer_guard", "transfer_guard_device_to_device",
    "transfer_guard_device_to_host", "transfer_guard_host_to_device"})


def __getattr__(name: str):
    if name in _SUBMODULES or name in _plugins.names("plax.modules"):
        return _importlib.import_module(f"plax.{name}")
    if name.startswith("__"):
        raise AttributeError(name)
    if name in _CONFIG_API:
        try:
            return _config_module.document_option(getattr(_config_module, name), name)
        except AttributeError:
            raise AttributeError(f"module 'plax' has no attribute {name!r} (no installed "
                                 f"package defines the option 'jax_{name}')") from None
    try:
        value = _plugins.resolve("plax.transforms", name)
    except _plugins.PluginMissingError as err:
        raise AttributeError(f"module 'plax' has no attribute {name!r} ({err})") from None
    globals()[name] = value
    return value


def __dir__():
    config_api = {name for name in _CONFIG_API if hasattr(_config_module, name)}
    modules = {name for name in _plugins.names("plax.modules") if "." not in name}
    return sorted(set(globals()) | _SUBMODULES | modules | set(_plugins.names("plax.transforms"))
                  | config_api)


__all__ = ["ConcretizationTypeError", "Device", "ShapeDtypeStruct", "TracerArrayConversionError",
           "TracerBoolConversionError", "TracerIntegerConversionError", "UnexpectedTracerError",
           "clear_caches", "config", "disable_jit", "enable_x64", "float0", "make_jaxpr",
           "named_call", "named_scope", "typeof"]

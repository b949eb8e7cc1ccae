"""Loading PJRT runtimes shipped as shared libraries (CUDA, TPU) for backend plugins.

A plugin package finds its runtime's library, checks its version, and calls
`make_c_api_client`. A missing runtime raises `BackendUnavailableError` naming what
to install (the registry skips that backend unless it was requested); a runtime of
the wrong version raises `RuntimeError` (reported with a warning).
"""
from __future__ import annotations

import importlib.metadata as metadata
import importlib.util
import os
from collections.abc import Mapping
from typing import Any

from jaxlib import _profiler, xla_client as xc
from jaxlib.version import __version__ as jaxlib_version

from plax_runtime import distributed
from plax_runtime.backends import BackendUnavailableError


def runtime_install(distribution: str) -> str:
    """What to `pip install` for the PJRT runtime of the installed plugin `distribution`:
    the requirements of its `runtime` extra, read from its metadata (the plugin itself
    is installed, and its own name is on no package index)."""
    from packaging.requirements import Requirement
    runtime = [Requirement(r) for r in metadata.requires(distribution) or ()]
    runtime = [r for r in runtime if r.marker is not None
               and r.marker.evaluate({"extra": "runtime"}) and not r.marker.evaluate({"extra": ""})]
    spelled = " ".join(f'"{r.name}{r.specifier}"' for r in runtime)
    return f"{spelled} (the runtime extra of {distribution})"


def package_file(module: str, filename: str, *, install: str) -> str:
    """The path of `filename` inside the installed package `module`, without importing it.

    `install` names what to `pip install` when it is missing.
    """
    try:
        spec = importlib.util.find_spec(module)
    except ModuleNotFoundError:
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        path = os.path.join(location, filename)
        if os.path.isfile(path):
            return path
    where = f" (looked in {locations})" if locations else ""
    raise BackendUnavailableError(f"{filename} from the Python package {module!r} was not "
                                  f"found{where}; install it with: pip install {install}")


def check_same_version(distribution: str, *, install: str) -> None:
    """Raises unless `distribution` was released with the installed jaxlib."""
    try:
        version = metadata.version(distribution)
    except metadata.PackageNotFoundError:
        raise BackendUnavailableError(f"{distribution} is not installed; install it with: "
                                      f"pip install {install}") from None
    if version != jaxlib_version:
        raise RuntimeError(f"{distribution} {version} does not match jaxlib "
                           f"{jaxlib_version}; install matching versions with: "
                           f"pip install {install}")


_c_apis: dict[str, Any] = {}  # platform → the loaded plugin's PJRT C API
_profiled: set[str] = set()  # platforms whose plugin profiler joined the sessions


def load_plugin(platform: str, library_path: str) -> Any:
    """Loads and initializes the PJRT plugin library, once per process; its C API (None
    where another library of the process loaded it first)."""
    if not xc.pjrt_plugin_loaded(platform):
        _c_apis[platform] = xc.load_pjrt_plugin_dynamically(platform, library_path)
    if not xc.pjrt_plugin_initialized(platform):
        xc.initialize_pjrt_plugin(platform)
    return _c_apis.get(platform)


def make_c_api_client(platform: str, library_path: str,
                      options: Mapping[str, Any] | None = None) -> xc.Client:
    """Loads the PJRT plugin library and makes its client (this process's part of the
    run after `plax.distributed.initialize`).

    The plugin's profiler joins the process's profiler sessions once a client exists
    (device activity in traces and PGLE profiles), not when the plugin is loaded only
    to describe a topology or a client fails to start: on a host with no chip,
    libtpu's profiler slows profiled programs down until they barely advance."""
    c_api = load_plugin(platform, library_path)
    options, distributed_client = distributed.plugin_client_arguments(platform, options or {})
    client = xc.make_c_api_client(platform, options, distributed_client)
    if c_api is not None and platform not in _profiled:
        _profiler.register_plugin_profiler(c_api)
        _profiled.add(platform)
    return client

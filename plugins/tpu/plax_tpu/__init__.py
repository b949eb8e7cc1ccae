"""plax's TPU backend: libtpu's PJRT runtime.

`pip install "plax-tpu[runtime]"` brings libtpu. `TPU_LIBRARY_PATH` overrides the
library's location, as with JAX.
"""
from __future__ import annotations

import os

from jaxlib import xla_client as xc

from plax_runtime import pjrt_plugins
from plax_runtime.backends import BackendPlugin

_INSTALL = '"plax-tpu[runtime]" (which brings libtpu)'


def _library() -> str:
    return os.environ.get("TPU_LIBRARY_PATH") or pjrt_plugins.package_file(
        "libtpu", "libtpu.so", install=_INSTALL)


def make_tpu_client() -> xc.Client:
    return pjrt_plugins.make_c_api_client("tpu", _library())


def make_tpu_topology(topology_name: str = "", **options) -> xc.DeviceTopology:
    """A TPU slice described by name (`"v5e:2x2"`...) without being attached to it:
    libtpu compiles for its devices ahead of time."""
    pjrt_plugins.load_plugin("tpu", _library())
    return xc.make_tfrt_tpu_c_api_device_topology(topology_name, **options)


backend = BackendPlugin(platform="tpu", make_client=make_tpu_client, priority=300,
                        package="plax-tpu", make_topology=make_tpu_topology)

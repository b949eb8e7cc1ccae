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


def make_tpu_client() -> xc.Client:
    library = os.environ.get("TPU_LIBRARY_PATH") or pjrt_plugins.package_file(
        "libtpu", "libtpu.so", install=_INSTALL)
    return pjrt_plugins.make_c_api_client("tpu", library)


backend = BackendPlugin(platform="tpu", make_client=make_tpu_client, priority=300,
                        package="plax-tpu")

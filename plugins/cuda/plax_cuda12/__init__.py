"""plax's CUDA 12 backend: the PJRT plugin shipped by the `jax-cuda12-pjrt` wheel.

`pip install "plax-cuda12[runtime]"` brings the wheel. Its library is loaded from
the installed `jax_plugins/xla_cuda12` folder without importing that package
(whose `__init__` imports `jax`).
"""
from __future__ import annotations

from jaxlib import xla_client as xc

from plax_runtime import pjrt_plugins
from plax_runtime.backends import BackendPlugin

_INSTALL = '"plax-cuda12[runtime]" (which brings jax-cuda12-pjrt)'


def make_cuda_client() -> xc.Client:
    library = pjrt_plugins.package_file("jax_plugins.xla_cuda12", "xla_cuda_plugin.so",
                                        install=_INSTALL)
    pjrt_plugins.check_same_version("jax-cuda12-pjrt", install=_INSTALL)
    return pjrt_plugins.make_c_api_client("cuda", library,
                                          xc.generate_pjrt_gpu_plugin_options())


backend = BackendPlugin(platform="cuda", make_client=make_cuda_client, priority=200,
                        package="plax-cuda12", aliases=("gpu",))

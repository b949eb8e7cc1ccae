"""plax's CUDA 12 backend: the PJRT plugin shipped by the `jax-cuda12-pjrt` wheel.

Its `runtime` extra (`pip install "./plugins/cuda[runtime]"` in a plax checkout, or
`pip install "jax-cuda12-pjrt==0.10.2"` beside the installed plugin) brings the wheel.
Its library is loaded from the installed `jax_plugins/xla_cuda12` folder without
importing that package (whose `__init__` imports `jax`).
"""
from __future__ import annotations

import os

from jaxlib import xla_client as xc

from plax_runtime import pjrt_plugins
from plax_runtime.backends import BackendPlugin, BackendUnavailableError


def _library() -> str:
    install = pjrt_plugins.runtime_install("plax-cuda12")
    library = pjrt_plugins.package_file("jax_plugins.xla_cuda12", "xla_cuda_plugin.so",
                                        install=install)
    pjrt_plugins.check_same_version("jax-cuda12-pjrt", install=install)
    return library


# Device files of an NVIDIA driver (Linux, containers, WSL2).
_NVIDIA_DEVICE_FILES = ("/dev/nvidia0", "/dev/nvidiactl", "/dev/dxg")


def make_cuda_client() -> xc.Client:
    library = _library()
    if not any(os.path.exists(f) for f in _NVIDIA_DEVICE_FILES):
        raise BackendUnavailableError(
            "no NVIDIA GPU is visible on this host (the CUDA runtime is installed, so "
            "programs can be compiled for GPUs described by plax_cuda12.targets)")
    return pjrt_plugins.make_c_api_client("cuda", library,
                                          xc.generate_pjrt_gpu_plugin_options())


def make_cuda_topology(topology_name: str = "", **options) -> xc.DeviceTopology:
    """GPUs described without being attached, for compiling ahead of time. The plugin
    needs a visible GPU, or `target_config=`: a text-format `GpuTargetConfigProto`
    describing the GPU to compile for (what XLA's `--xla_gpu_target_config_filename`
    reads)."""
    c_api = pjrt_plugins.load_plugin("cuda", _library())
    if c_api is None:
        raise RuntimeError("the CUDA PJRT plugin was loaded by another library of this "
                           "process; plax cannot describe its topologies")
    return xc.make_c_api_device_topology(c_api, topology_name, **options)


backend = BackendPlugin(platform="cuda", make_client=make_cuda_client, priority=200,
                        package="plax-cuda12", aliases=("gpu",),
                        make_topology=make_cuda_topology)

"""Descriptions of GPUs to compile for without one attached.

The CUDA PJRT plugin makes a topology only for visible GPUs, or for the GPU that a
`target_config` describes: a text-format `GpuTargetConfigProto` (the format of XLA's
`--xla_gpu_target_config_filename`). `target_config("a100")` is one, written from
the A100's published figures; XLA needs them close, not exact (they steer its cost
models and its choice of kernels), and the compiled program runs on that GPU.

    from plax.experimental import topologies
    topo = topologies.get_topology_desc(platform="cuda", topology="1x1x1",
                                        target_config=target_config("a100"))
"""
from __future__ import annotations

_A100_SXM4_40GB = """
gpu_device_info {
  cuda_compute_capability { major: 8 minor: 0 }
  core_count: 108
  fpus_per_core: 64
  threads_per_warp: 32
  threads_per_block_limit: 1024
  threads_per_core_limit: 2048
  registers_per_core_limit: 65536
  registers_per_block_limit: 65536
  shared_memory_per_block: 49152
  shared_memory_per_block_optin: 166912
  shared_memory_per_core: 167936
  block_dim_limit_x: 2147483647
  block_dim_limit_y: 65535
  block_dim_limit_z: 65535
  clock_rate_ghz: 1.41
  memory_bandwidth: 1555200000000
  l2_cache_size: 41943040
  device_memory_size: 42298834944
}
platform_name: "CUDA"
dnn_version_info { major: 9 minor: 1 }
device_description_str: "NVIDIA A100-SXM4-40GB"
"""

_TARGETS = {"a100": _A100_SXM4_40GB}


def target_config(gpu: str) -> str:
    """The `target_config` of a GPU by name (`"a100"`)."""
    try:
        return _TARGETS[gpu.lower()]
    except KeyError:
        raise ValueError(f"no target description for GPU {gpu!r}; known: "
                         f"{sorted(_TARGETS)}") from None

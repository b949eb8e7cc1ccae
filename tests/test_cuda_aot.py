"""The CUDA backend ahead of time, with no GPU: with jax-cuda12-pjrt installed (not a
test dependency: a 174 MB wheel, and installing it makes JAX's own processes try CUDA),
a program compiles for an A100 described by `plax_cuda12.targets` through the plugin's
compile-only topology. Skipped without the runtime; run by hand with
`pip install "./plugins/cuda[runtime]"`."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest


def _has_cuda_runtime() -> bool:
    try:
        return importlib.util.find_spec("jax_plugins.xla_cuda12") is not None
    except ModuleNotFoundError:
        return False


@pytest.mark.skipif(not _has_cuda_runtime(), reason="jax-cuda12-pjrt is not installed")
def test_compiles_for_an_a100_without_a_gpu():
    import plax
    import plax.numpy as jnp
    from plax.experimental import topologies
    from plax_cuda12.targets import target_config
    topo = topologies.get_topology_desc(platform="cuda", topology="1x1x1",
                                        target_config=target_config("a100"))
    device, = topo.devices
    assert device.device_kind == "NVIDIA A100-SXM4-40GB"
    x = plax.ShapeDtypeStruct((256, 256), np.float32,
                              sharding=plax.sharding.SingleDeviceSharding(device))
    compiled = plax.jit(lambda a: jnp.tanh(a @ a.T)).lower(x).compile()
    assert "gemm_fusion" in compiled.as_text()
    with pytest.raises(RuntimeError, match="compiled ahead of time"):
        compiled(np.ones((256, 256), np.float32))


def test_unknown_gpu_is_a_value_error():
    from plax_cuda12.targets import target_config
    with pytest.raises(ValueError, match="known: \\['a100'\\]"):
        target_config("h200")

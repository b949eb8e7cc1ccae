"""plax.experimental: the package other packages extend, x64 context managers, and
mesh_utils (device arrays for meshes, against JAX's layout)."""
from __future__ import annotations

import sys

import numpy as np
import pytest
from jax_reference import requires_jax, run_reference

import plax
import plax.experimental
import plax.numpy as jnp
from plax.experimental import mesh_utils


def test_submodules_are_announced_by_packages():
    import plax.experimental.checkify as checkify
    from plax_transforms import checkify as real
    assert checkify is real and plax.experimental.checkify is real
    assert {"checkify", "ode", "sparse", "mesh_utils", "enable_x64"} <= set(
        dir(plax.experimental))
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = plax.experimental.nothing


def test_x64_context_managers():
    with plax.experimental.enable_x64():
        assert jnp.asarray(1.0).dtype == np.float64
        with plax.experimental.disable_x64():
            assert jnp.asarray(1.0).dtype == np.float32
    assert jnp.asarray(1.0).dtype == np.float32


def test_create_device_mesh():
    devices = plax.devices()
    mesh = mesh_utils.create_device_mesh((2, 4))
    assert mesh.shape == (2, 4) and list(mesh.flat) == devices
    assert list(mesh_utils.create_device_mesh([8], devices=devices[::-1]).flat) == devices[::-1]
    named = plax.sharding.Mesh(mesh_utils.create_device_mesh((4, 2)), ("x", "y"))
    assert named.shape == {"x": 4, "y": 2}
    hybrid = mesh_utils.create_hybrid_device_mesh((2, 4), (1, 1), process_is_granule=True)
    assert hybrid.shape == (2, 4) and list(hybrid.flat) == devices
    with pytest.raises(ValueError, match="Number of devices 8 must equal the product"):
        mesh_utils.create_device_mesh((3, 2))
    with pytest.raises(ValueError, match="should be a sequence of ints"):
        mesh_utils.create_device_mesh(3.5)
    with pytest.raises(ValueError, match="does not have attribute slice_index"):
        mesh_utils.create_hybrid_device_mesh((2, 4), (1, 1))
    with pytest.raises(ValueError, match="Number of slices 1 must equal"):
        mesh_utils.create_hybrid_device_mesh((2, 2), (2, 1), process_is_granule=True)


@requires_jax
def test_device_mesh_matches_jax():
    code = """
    if jax.__name__ == "plax":
        from plax.experimental import mesh_utils
    else:
        from jax.experimental import mesh_utils
    result = [[d.id for d in mesh_utils.create_device_mesh(shape).flat] for shape in
              [(8,), (2, 4), (2, 2, 2)]]
    result.append([d.id for d in mesh_utils.create_hybrid_device_mesh(
        (4, 2), (1, 1), process_is_granule=True).flat])
    """
    assert run_reference(code, "plax") == run_reference(code, "jax")


def test_pjit_is_jit_with_positional_shardings_and_warns():
    from plax.experimental import pjit as pjit_module
    from plax.sharding import NamedSharding, PartitionSpec as P
    with pytest.warns(DeprecationWarning, match="pjit is deprecated"):
        pjit = pjit_module.pjit
    mesh = plax.make_mesh((8,), ("x",))
    x = plax.device_put(np.arange(8.0, dtype=np.float32), NamedSharding(mesh, P("x")))
    f = pjit(lambda a: a * 2, NamedSharding(mesh, P("x")), NamedSharding(mesh, P()))
    out = f(x)
    np.testing.assert_array_equal(out, np.arange(8.0) * 2)
    assert out.sharding.spec == P()
    with pytest.raises(AttributeError, match="no attribute 'jit'"):
        _ = pjit_module.jit


def test_topologies(monkeypatch):
    from plax.experimental import topologies
    monkeypatch.delenv("TPU_LIBRARY_PATH", raising=False)
    monkeypatch.setitem(sys.modules, "libtpu", None)  # as if it were not installed
    attached = topologies.get_attached_topology()
    assert attached.devices == plax.devices()
    mesh = topologies.make_mesh(attached, (2, 4), ("x", "y"))
    assert mesh.shape == {"x": 2, "y": 4} and list(mesh.devices.flat) == plax.devices()
    # as in JAX: CPU has no topology factory; TPU needs its plugin's runtime
    with pytest.raises(NotImplementedError, match="topology not implemented for cpu"):
        topologies.get_topology_desc("x", "cpu")
    with pytest.raises(RuntimeError, match="libtpu|plax-tpu"):
        topologies.get_topology_desc("v5e:2x2")


def test_profiled_instructions_of_a_missing_profile_is_the_runtimes_error(tmp_path):
    from plax.experimental import profiler
    with pytest.raises(plax.errors.JaxRuntimeError, match="NOT_FOUND"):
        profiler.get_profiled_instructions_proto(str(tmp_path / "missing"))

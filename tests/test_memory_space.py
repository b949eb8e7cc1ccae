"""`plax.memory.Space`: placing Arrays in device or pinned host memory by space."""
import numpy as np
import pytest

import plax
import plax.memory
from plax.sharding import NamedSharding, PartitionSpec as P

Space = plax.memory.Space


def test_spaces_are_jax_s():
    assert [s.name for s in Space] == ["Device", "Host", "Any"]
    assert repr(Space.Host) == "MemorySpace.Host"
    assert plax.memory.Space is Space and len({Space.Device, Space.Host}) == 2


def test_device_put_moves_between_device_and_host_memory(devs):
    x = plax.numpy.arange(6.0)
    on_host = plax.device_put(x, Space.Host)
    assert on_host.sharding.memory_kind == "pinned_host"
    assert on_host.sharding.device_set == x.sharding.device_set
    back = plax.device_put(on_host, Space.Device)
    assert back.sharding.memory_kind == "device"
    np.testing.assert_array_equal(back, np.arange(6.0))
    host_value = plax.device_put(np.ones(3, np.float32), Space.Host)
    assert host_value.sharding.memory_kind == "pinned_host"


def test_a_sharded_array_keeps_its_layout_in_host_memory(mesh):
    x = plax.device_put(np.arange(16.0, dtype=np.float32).reshape(4, 4),
                        NamedSharding(mesh, P("x", "y")))
    tree = plax.device_put({"a": x, "b": x}, {"a": Space.Host, "b": Space.Device})
    assert tree["a"].sharding == NamedSharding(mesh, P("x", "y"), memory_kind="pinned_host")
    assert tree["b"].sharding.memory_kind == "device"
    np.testing.assert_array_equal(tree["a"], np.arange(16.0).reshape(4, 4))


def test_any_is_no_place_to_put_values():
    with pytest.raises(ValueError, match="Space.Any.*Device or plax.memory.Space.Host"):
        plax.device_put(np.ones(2), Space.Any)
    with pytest.raises(ValueError, match="plax.memory.Space"):  # as JAX
        plax.device_put(np.ones(2), "host")


def test_device_put_of_a_traced_value():
    x = np.arange(3.0, dtype=np.float32)
    # without a target it is the value itself, as in JAX; with a memory space, inside
    # jit on CPU, too (tests/test_device_put_traced.py has the primitive's other cases)
    np.testing.assert_array_equal(plax.jit(lambda v: plax.device_put(v) * 2)(x), x * 2)
    np.testing.assert_array_equal(plax.grad(lambda v: plax.device_put(v).sum())(x), 1.0)
    np.testing.assert_array_equal(plax.jit(lambda v: plax.device_put(v, Space.Host))(x), x)
    np.testing.assert_array_equal(
        plax.grad(lambda v: plax.device_put(v, Space.Host).sum())(x), 1.0)

"""plax.experimental.serialize_executable: compiled functions as bytes, loaded without
compiling, in this process (onto the same or other devices) and in another."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import plax
import plax.numpy as jnp
from plax.experimental import serialize_executable as se
from plax.sharding import Mesh, NamedSharding, PartitionSpec as P

f32 = np.float32
# a device array closed over: the module takes it as a hoisted constant
_TABLE = jnp.linspace(0, 1, 4096, dtype=f32).reshape(64, 64)


def _program(x, y):
    return {"mm": x @ _TABLE[: x.shape[1], : y.shape[1]] + y, "sum": (x * 2).sum()}


@pytest.fixture(scope="module")
def compiled():
    x, y = np.ones((2, 4), f32), np.arange(6, dtype=f32).reshape(2, 3)
    return plax.jit(_program, donate_argnums=1).lower(x, y).compile(), (x, y)


def test_round_trip_runs_the_same_computation(compiled):
    c, (x, y) = compiled
    assert len(c._compiled.const_args) == 1
    payload, in_tree, out_tree = se.serialize(c)
    loaded = se.deserialize_and_load(payload, in_tree, out_tree)
    got, want = loaded(x, y), c(x, y)
    np.testing.assert_allclose(got["mm"], want["mm"], rtol=1e-6)
    assert float(got["sum"]) == 16.0
    assert loaded.in_avals == c.in_avals and loaded.args_info == c.args_info
    assert loaded.out_info == c.out_info and loaded.donate_argnums == (1,)
    assert loaded.fun_name == c.fun_name
    with pytest.raises(TypeError, match=r"x compiled with f32\[2,4\] and called with "
                                         r"f32\[3,4\]"):
        loaded(np.ones((3, 4), f32), y)


def test_loaded_onto_other_devices(compiled):
    c, (x, y) = compiled
    payload, in_tree, out_tree = se.serialize(c)
    target = plax.devices()[5]
    loaded = se.deserialize_and_load(payload, in_tree, out_tree, execution_devices=[target])
    out = loaded(plax.device_put(x, target), plax.device_put(y, target))
    assert out["mm"].devices() == {target}
    np.testing.assert_allclose(out["mm"], c(x, y)["mm"], rtol=1e-6)


def test_sharded_executable_moves_with_its_mesh():
    devices = plax.devices()
    mesh = Mesh(np.array(devices[:4]), ("x",))
    fn = plax.jit(lambda v: jnp.sin(v) * 2, in_shardings=NamedSharding(mesh, P("x")),
                  out_shardings=NamedSharding(mesh, P("x")))
    v = np.arange(8, dtype=f32)
    payload, in_tree, out_tree = se.serialize(fn.lower(v).compile())
    loaded = se.deserialize_and_load(payload, in_tree, out_tree,
                                     execution_devices=devices[4:])
    out = loaded(plax.device_put(v, NamedSharding(Mesh(np.array(devices[4:]), ("x",)),
                                                  P("x"))))
    assert out.sharding.spec == P("x") and out.devices() == set(devices[4:])
    np.testing.assert_allclose(out, np.sin(v) * 2, rtol=1e-6)


_SERIALIZE_IN_ANOTHER_PROCESS = """
    import sys
    import numpy as np
    import plax, plax.numpy as jnp
    from plax.experimental import serialize_executable as se
    from plax.sharding import Mesh, NamedSharding, PartitionSpec as P
    mesh = Mesh(np.array(plax.devices()[:8]).reshape(4, 2), ("x", "y"))
    fn = plax.jit(lambda a, b: (a * 3 + jnp.arange(2.0), a @ b.T),
                  in_shardings=(NamedSharding(mesh, P("x", "y")), NamedSharding(mesh, P())))
    payload, _, _ = se.serialize(fn.lower(np.ones((8, 2), np.float32),
                                          np.ones((3, 2), np.float32)).compile())
    open(sys.argv[1], "wb").write(payload)
"""


def test_payload_from_another_process(tmp_path):
    path = tmp_path / "payload.bin"
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(_SERIALIZE_IN_ANOTHER_PROCESS),
                           str(path)], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr[-2000:]
    a, b = np.arange(16, dtype=f32).reshape(8, 2), np.ones((3, 2), f32)
    in_tree = plax.tree_util.tree_structure(((a, b), {}))
    out_tree = plax.tree_util.tree_structure((a, a))
    loaded = se.deserialize_and_load(path.read_bytes(), in_tree, out_tree)
    scaled, product = loaded(a, b)
    np.testing.assert_allclose(scaled, a * 3 + np.arange(2.0))
    np.testing.assert_allclose(product, a @ b.T)
    assert scaled.sharding.spec == P("x", "y") and len(scaled.devices()) == 8


def test_what_cannot_be_serialized_or_loaded(compiled):
    c, _ = compiled
    payload, in_tree, out_tree = se.serialize(c)
    with pytest.raises(TypeError, match="serialize takes a Compiled"):
        se.serialize(plax.jit(_program))
    printing = plax.jit(lambda v: plax.debug.print("{}", v) or v).lower(1.0).compile()
    with pytest.raises(ValueError, match="cannot be serialized"):
        se.serialize(printing)
    with pytest.raises(ValueError, match="not a serialized plax executable"):
        se.deserialize_and_load(b"not a payload", in_tree, out_tree)
    with pytest.raises(ValueError, match="runs on 1 devices, got 2 execution_devices"):
        se.deserialize_and_load(payload, in_tree, out_tree,
                                execution_devices=plax.devices()[:2])
    with pytest.raises(ValueError, match="in_tree has 1 leaves but the executable takes 2"):
        se.deserialize_and_load(payload, plax.tree_util.tree_structure(((1,), {})), out_tree)

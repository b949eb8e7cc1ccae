"""plax.experimental.shard_alike on the 8 virtual CPU devices: the partner of a
sharded or constrained value ends with its sharding (Shardy and GSPMD, against JAX in
one subprocess); it is linear (jvp, grad) and batches as JAX's; bad inputs raise
JAX's ValueErrors."""
import importlib.util
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import plax
from plax import lax
from plax import numpy as jnp
from plax.experimental.shard_alike import shard_alike
from plax.extend import config
from plax.sharding import NamedSharding, PartitionSpec as P

XV = np.arange(32, dtype=np.float32).reshape(8, 4)
ONES = np.ones((8, 4), np.float32)


@pytest.fixture(scope="module")
def specs(mesh):
    """The specs of the outputs in each case the JAX side computes too (values checked)."""
    x = plax.device_put(XV, NamedSharding(mesh, P("x", "y")))

    @plax.jit
    def constrained(u, v):
        v = lax.with_sharding_constraint(v, NamedSharding(mesh, P(None, "y")))
        return shard_alike(u * 2, v + 1)

    outs = {"eager": shard_alike(x, ONES), "jit": plax.jit(shard_alike)(x, ONES),
            "constrained": constrained(ONES, ONES)}
    with config.use_shardy_partitioner(False):
        outs["gspmd"] = plax.jit(lambda u, v: shard_alike(u, v * 2))(ONES, x)
    expected = {"eager": (XV, ONES), "jit": (XV, ONES), "constrained": (2 * ONES, 2 * ONES),
                "gspmd": (ONES, 2 * XV)}
    for name, pair in outs.items():
        for got, want in zip(pair, expected[name]):
            np.testing.assert_allclose(np.asarray(got), want)
    return {name: [repr(o.sharding.spec) for o in pair] for name, pair in outs.items()}


_JAX_SIDE = """
    import json
    import numpy as np
    import jax
    from jax.experimental.shard_alike import shard_alike
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
    XV = np.arange(32, dtype=np.float32).reshape(8, 4)
    ONES = np.ones((8, 4), np.float32)
    x = jax.device_put(XV, NamedSharding(mesh, P("x", "y")))

    @jax.jit
    def constrained(u, v):
        v = jax.lax.with_sharding_constraint(v, NamedSharding(mesh, P(None, "y")))
        return shard_alike(u * 2, v + 1)

    specs = {"eager": shard_alike(x, ONES), "jit": jax.jit(shard_alike)(x, ONES),
             "constrained": constrained(ONES, ONES)}
    from jax._src import config as jax_config
    with jax_config.use_shardy_partitioner(False):
        specs["gspmd"] = jax.jit(lambda u, v: shard_alike(u, v * 2))(ONES, x)
    print(json.dumps({k: [repr(o.sharding.spec) for o in v] for k, v in specs.items()}))
"""


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="JAX is not installed")
def test_partners_end_with_the_same_sharding_as_in_jax(specs):
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(_JAX_SIDE)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    theirs = json.loads(proc.stdout.strip().splitlines()[-1])
    assert specs == theirs


def test_partners_share_a_sharding(specs):
    assert specs["jit"] == [repr(P("x", "y"))] * 2  # the numpy side took the sharded one's
    assert specs["constrained"] == [repr(P(None, "y"))] * 2  # the unconstrained side followed
    assert specs["gspmd"] == [repr(P("x", "y"))] * 2


def test_it_is_linear_and_batches_as_jax(mesh):
    x = plax.device_put(XV, NamedSharding(mesh, P("x", "y")))

    def loss(u, v):
        a, b = shard_alike(u * u, v)
        return jnp.sum(a) + 3 * jnp.sum(b)

    du, dv = plax.jit(plax.grad(loss, argnums=(0, 1)))(x, ONES)
    np.testing.assert_allclose(np.asarray(du), 2 * XV)
    np.testing.assert_allclose(np.asarray(dv), 3 * ONES)
    (pa, pb), (ta, tb) = plax.jvp(shard_alike, (XV, ONES), (ONES, 2 * ONES))
    np.testing.assert_allclose(np.asarray(ta), ONES)
    np.testing.assert_allclose(np.asarray(tb), 2 * ONES)
    # a symbolic-zero cotangent on one side leaves both as they are
    _, pullback = plax.vjp(lambda u, v: shard_alike(u, v)[0], XV, ONES)
    du, dv = pullback(ONES)
    np.testing.assert_allclose(np.asarray(du), ONES)
    np.testing.assert_allclose(np.asarray(dv), 0 * ONES)

    rows = np.arange(6, dtype=np.float32).reshape(3, 2)
    for in_axes, y in (((0, 1), rows.T), ((0, None), rows[0]), ((None, 0), rows)):
        x_in = rows if in_axes[0] == 0 else rows[0]
        a, b = plax.vmap(shard_alike, in_axes=in_axes)(x_in, y)
        assert a.shape == b.shape == (3, 2)
        np.testing.assert_allclose(np.asarray(b), rows if in_axes[1] is not None
                                   else np.broadcast_to(rows[0], (3, 2)))
    assert "shard_alike" in str(plax.make_jaxpr(shard_alike)(1.0, 2.0))


def test_bad_inputs():
    with pytest.raises(ValueError, match="leaves shapes of `x` and `y` should match"):
        shard_alike(jnp.ones(3), jnp.ones(4))
    with pytest.raises(ValueError, match="Trees should be equal"):
        shard_alike((jnp.ones(3),), jnp.ones(3))

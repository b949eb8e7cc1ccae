"""The config states of JAX 0.10 that change shard_map and sharding-in-types
(`auto_pcast`, `remove_size_one_mesh_axis_from_type`) and how `debug_key_reuse` is
set (tests/test_key_reuse.py checks what it does). The expected answers are JAX
0.10.2's for the same programs."""
import numpy as np
import pytest

import plax
from plax import lax
from plax import numpy as jnp
from plax.sharding import AxisType, PartitionSpec as P

X = np.arange(32.0, dtype=np.float32).reshape(8, 4)


@pytest.fixture(scope="module")
def grid(devs):
    return plax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)


@pytest.fixture(scope="module")
def thin(devs):
    """A mesh whose first axis has size 1."""
    return plax.make_mesh((1, 8), ("a", "b"), axis_types=(AxisType.Explicit,) * 2)


def _smap(f, mesh, **kw):
    return plax.shard_map(f, mesh=mesh, in_specs=(P("x"), P()), out_specs=P("x"), **kw)


@pytest.mark.parametrize("body, prim", [
    (lambda a, b: a + b, "add"), (lambda a, b: a * 2.0, "mul"),
    (lambda a, b: jnp.where(a > 0, a, b), "gt"), (lambda a, b: a @ b.T, "dot_general"),
    (lambda a, b: jnp.concatenate([a, b]), "concatenate")])
def test_without_auto_pcast_operands_must_vary_alike(grid, body, prim):
    np.asarray(_smap(body, grid)(X, X[:4]))  # on (the default): the union
    with plax.auto_pcast(False):
        with pytest.raises(ValueError, match=f"Primitive {prim} requires varying manual "
                                             r"axes to match, but got \[\{'x'\}, set\(\)\]"):
            _smap(body, grid)(X, X[:4])
        # the fixes: make them vary alike, or do not check
        fixed = _smap(lambda a, b: a + lax.pvary(b, "x"), grid)(X, X[:4])
        np.testing.assert_allclose(fixed, X + np.tile(X[:4], (2, 1)))
        np.asarray(_smap(body, grid, check_vma=False)(X, X[:4]))


def test_auto_pcast_off_reaches_jitted_bodies_and_retraces(grid):
    f = plax.jit(_smap(lambda a, b: a + b, grid))
    np.asarray(f(X, X[:4]))
    with plax.auto_pcast(False), pytest.raises(ValueError, match="Primitive add"):
        f(X, X[:4])


def test_size_one_axes_leave_types(thin):
    with plax.set_mesh(thin):
        y = plax.reshard(X, P(("a", "b"), None))
        z = plax.reshard(X, P("b", "a"))
        assert plax.typeof(y).sharding.spec == P(("a", "b"), None)
        assert plax.typeof(z.T).sharding.spec == P("a", "b")
    with plax.remove_size_one_mesh_axis_from_type(True), plax.set_mesh(thin):
        y = plax.reshard(X, P(("a", "b"), None))
        z = plax.reshard(X, P("b", "a"))
        assert plax.typeof(y).sharding.spec == P("b", None)
        assert plax.typeof(z * 2).sharding.spec == P("b", None)
        assert plax.typeof(z.T).sharding.spec == P(None, "b")
        assert plax.typeof(plax.jit(lambda v: v.sum(0))(z)).sharding.spec == P(None)
        np.testing.assert_array_equal(z, X)


def test_size_one_axes_do_not_vary_in_shard_map(devs):
    mesh = plax.make_mesh((1, 8), ("a", "b"), axis_types=(AxisType.Auto,) * 2)
    ident = plax.shard_map(lambda v: v, mesh=mesh, in_specs=P("a"), out_specs=P())
    with pytest.raises(ValueError, match=r"only varying across mesh axes \{\} and not \{a\}"):
        ident(X)
    with plax.remove_size_one_mesh_axis_from_type(True):
        np.testing.assert_array_equal(ident(X), X)


def test_debug_key_reuse_can_be_enabled():
    key = plax.random.key(0)
    with plax.debug_key_reuse(True):
        assert plax.config.jax_debug_key_reuse is True
        plax.random.normal(key)
        with pytest.raises(plax.errors.KeyReuseError):
            plax.random.normal(key)
    assert plax.config.jax_debug_key_reuse is False
    plax.config.update("jax_debug_key_reuse", True)
    try:
        assert plax.config.jax_debug_key_reuse is True
    finally:
        plax.config.update("jax_debug_key_reuse", False)
    plax.random.normal(key)  # off: not checked


def test_the_states_have_jax_s_names_and_defaults():
    for name, default in [("auto_pcast", True), ("remove_size_one_mesh_axis_from_type", False),
                          ("debug_key_reuse", False), ("thread_guard", False)]:
        assert plax.config.read(f"jax_{name}") is default
        assert name in dir(plax)


def test_debug_key_reuse_from_the_environment():
    import os
    import subprocess
    import sys
    env = dict(os.environ, JAX_DEBUG_KEY_REUSE="1")
    code = ("import plax; k = plax.random.key(0); print(plax.config.jax_debug_key_reuse)\n"
            "plax.random.bits(k)\n"
            "try:\n    plax.random.bits(k)\nexcept plax.errors.KeyReuseError:\n"
            "    print('refused')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "refused"]

"""`plax.smap`: shard_map over one axis of the context mesh, with vmap-style axes."""
import numpy as np
import pytest

import plax
from plax import lax
from plax.sharding import AxisType, PartitionSpec as P
from jax_differential import assert_same_as_jax, requires_jax

X = np.arange(32.0, dtype=np.float32).reshape(8, 4)


@pytest.fixture(scope="module")
def auto_mesh(devs):
    return plax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)


def test_in_axes_and_out_axes_choose_the_split_dimension(auto_mesh):
    def f(b, c):
        return lax.psum(b, "x") * c, b.sum(axis=0, keepdims=True)
    with plax.set_mesh(auto_mesh):
        summed, partial_sums = plax.smap(f, in_axes=(0, None), out_axes=(0, 0),
                                         axis_name="x")(X, 2.0)
        by_columns = plax.jit(plax.smap(lambda b: lax.psum(b, "x"), in_axes=1, out_axes=1,
                                        axis_name="x"))(X)
        from_the_end = plax.smap(lambda b: b * 1, in_axes=-1, out_axes=1, axis_name="x")(X)
    halves = X.reshape(2, 4, 4)
    np.testing.assert_allclose(summed, np.tile(halves.sum(0), (2, 1)) * 2)
    np.testing.assert_allclose(partial_sums, halves.sum(1))
    cols = X.reshape(8, 2, 2)
    np.testing.assert_allclose(by_columns, np.tile(cols.sum(1), (1, 2)))
    np.testing.assert_allclose(from_the_end, X)  # -1 is the last axis, as documented


def test_nested_smaps_map_one_axis_at_a_time(auto_mesh):
    def outer(a):
        return plax.smap(lambda b: lax.psum(b, "y"), in_axes=1, out_axes=1, axis_name="y")(a)
    with plax.set_mesh(auto_mesh):
        out = plax.jit(plax.smap(outer, in_axes=0, out_axes=0, axis_name="x"))(X)
    want = np.tile(X.reshape(8, 4, 1).sum(1, keepdims=True), (1, 4, 1)).reshape(8, 4)
    np.testing.assert_allclose(out, want)


def test_without_in_axes_explicit_axes_split_as_typed(devs):
    mesh = plax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
    with plax.set_mesh(mesh):
        xs = plax.reshard(X, P("x", None))
        out = plax.smap(lambda b: b - lax.pmin(b, "x"), out_axes=0, axis_name="x")(xs)
    np.testing.assert_allclose(out, X - np.tile(X[:4], (2, 1)))


def test_bad_smap_calls(auto_mesh):
    ident = lambda b: b  # noqa: E731
    with pytest.raises(TypeError, match="in_axes must be an int"):
        plax.smap(ident, in_axes=0.5, out_axes=0, axis_name="x")
    with pytest.raises(TypeError, match="out_axes must be an int"):
        plax.smap(ident, in_axes=0, out_axes="a", axis_name="x")
    with pytest.raises(TypeError, match="axis_name should be"):
        plax.smap(ident, in_axes=0, out_axes=0, axis_name=("x",))
    with pytest.raises(ValueError, match="out_axes must be non-negative"):
        plax.smap(ident, in_axes=0, out_axes=-1, axis_name="x")
    with pytest.raises(ValueError, match="context mesh cannot be empty"):
        plax.smap(ident, in_axes=0, out_axes=0, axis_name="x")(X)
    with plax.set_mesh(auto_mesh):
        with pytest.raises(TypeError, match="in_axes was not specified.*Auto"):
            plax.smap(ident, out_axes=0, axis_name="x")(X)
        with pytest.raises(ValueError, match="replicated"):
            plax.smap(ident, in_axes=0, out_axes=None, axis_name="x")(X)
        with pytest.raises(ValueError, match="subset"):
            plax.smap(ident, in_axes=0, out_axes=0, axis_name="z")(X)
        with pytest.raises(ValueError, match="out of range"):
            plax.smap(ident, in_axes=-3, out_axes=0, axis_name="x")(X)


@requires_jax
def test_smap_as_jax():
    body = """
import importlib
sharding = importlib.import_module(lib.__name__ + ".sharding")
mesh = lib.make_mesh((2, 4), ("x", "y"), axis_types=(sharding.AxisType.Auto,) * 2)
x = inputs["x"]
with lib.set_mesh(mesh):
    a, b = lib.smap(lambda v, c: (lax.psum(v, "x") * c, v.sum(0, keepdims=True)),
                    in_axes=(0, None), out_axes=(0, 0), axis_name="x")(x, 2.0)
    c = lib.jit(lib.smap(lambda v: lax.pmax(v, "y"), in_axes=1, out_axes=1, axis_name="y"))(x)
    d = lib.smap(lambda v: v - lax.pmean(v, "y"), in_axes=0, out_axes=1, axis_name="y")(x)
results.update(a=a, b=b, c=c, d=d)
"""
    assert_same_as_jax(body, {"x": X})

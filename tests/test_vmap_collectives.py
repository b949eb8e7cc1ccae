"""Collectives over vmap's named axes, checked against NumPy on the stacked values."""
import numpy as np
import pytest

import plax
from plax import lax

RNG = np.random.default_rng(2)
X = RNG.normal(size=(3, 4)).astype(np.float32)


def vmap_i(f, **kw):
    return plax.jit(plax.vmap(f, axis_name="i", **kw))


def test_reductions():
    out = vmap_i(lambda a: (lax.psum(a, "i"), lax.pmean(a, "i"), lax.pmax(a, "i"),
                            lax.pmin(a, "i")))(X)
    for got, want in zip(out, (X.sum(0), X.mean(0), X.max(0), X.min(0))):
        np.testing.assert_allclose(got, np.broadcast_to(want, X.shape), rtol=1e-5, atol=1e-6)


def test_unmapped_values_and_the_axis_size_idiom():
    out = vmap_i(lambda a, b: (lax.psum(b, "i"), lax.psum(1, "i"), lax.pmean(b, "i")),
                 in_axes=(0, None))(X, np.float32(2))
    np.testing.assert_allclose(out[0], [6, 6, 6])
    np.testing.assert_array_equal(out[1], [3, 3, 3])
    np.testing.assert_allclose(out[2], [2, 2, 2])
    # As JAX's: a Python scalar is summed on the spot, into a weakly typed scalar.
    assert plax.vmap(lambda a: lax.psum(1.0, "i"), axis_name="i")(X).weak_type


def test_collectives_over_a_tuple_of_names_in_nested_vmaps():
    x = RNG.normal(size=(2, 3)).astype(np.float32)
    inner = lambda a: (lax.psum(a, ("i", "j")), lax.psum(a, "i"),  # noqa: E731
                       lax.axis_index(("i", "j")), lax.all_gather(a, ("i", "j")))
    total, over_i, index, gathered = plax.vmap(plax.vmap(inner, axis_name="j"),
                                               axis_name="i")(x)
    np.testing.assert_allclose(total, np.full((2, 3), x.sum()), rtol=1e-5)
    np.testing.assert_allclose(over_i, np.broadcast_to(x.sum(0), (2, 3)), rtol=1e-5)
    np.testing.assert_array_equal(index, np.arange(6).reshape(2, 3))
    np.testing.assert_allclose(gathered, np.broadcast_to(x.reshape(6), (2, 3, 6)))


def test_axis_index_and_all_gather():
    index, stacked, tiled = vmap_i(lambda a: (lax.axis_index("i"),
                                              lax.all_gather(a, "i", axis=1),
                                              lax.all_gather(a, "i", tiled=True)))(X)
    np.testing.assert_array_equal(index, [0, 1, 2])
    np.testing.assert_allclose(stacked, np.broadcast_to(X.T, (3, 4, 3)))
    np.testing.assert_allclose(tiled, np.broadcast_to(X.reshape(12), (3, 12)))


def test_psum_scatter():
    x = RNG.normal(size=(3, 2, 6)).astype(np.float32)
    tiled = vmap_i(lambda a: lax.psum_scatter(a, "i", scatter_dimension=1, tiled=True))(x)
    total = x.sum(0)
    np.testing.assert_allclose(tiled, np.stack([total[:, 2 * j:2 * j + 2] for j in range(3)]),
                               rtol=1e-5)
    y = RNG.normal(size=(3, 3, 2)).astype(np.float32)
    untiled = vmap_i(lambda a: lax.psum_scatter(a, "i"))(y)
    np.testing.assert_allclose(untiled, y.sum(0), rtol=1e-5)


def _all_to_all_reference(x, split, concat):
    """Member j gets chunk j (along split) of every member i, concatenated along concat."""
    n = x.shape[0]
    chunks = [np.split(x[i], n, axis=split) for i in range(n)]
    return np.stack([np.concatenate([chunks[i][j] for i in range(n)], axis=concat)
                     for j in range(n)])


@pytest.mark.parametrize("split,concat", [(0, 0), (0, 1), (1, 0)])
def test_all_to_all(split, concat):
    x = RNG.normal(size=(3, 3, 6)).astype(np.float32)
    out = vmap_i(lambda a: lax.all_to_all(a, "i", split, concat, tiled=True))(x)
    np.testing.assert_allclose(out, _all_to_all_reference(x, split, concat))
    if split == 0:  # untiled: split_axis has the axis size; stacked at concat_axis
        out = vmap_i(lambda a: lax.all_to_all(a, "i", 0, concat))(x)
        expected = np.moveaxis(np.swapaxes(x, 0, 1), 1, concat + 1)
        np.testing.assert_allclose(out, expected)


@pytest.mark.parametrize("axis", [0, 1])
def test_pswapaxes(axis):
    x = RNG.normal(size=(3, 3, 3)).astype(np.float32)
    out = vmap_i(lambda a: lax.pswapaxes(a, "i", axis))(x)
    np.testing.assert_allclose(out, np.swapaxes(x, 0, axis + 1))
    with pytest.raises(ValueError, match="must equal the axis size 3"):
        vmap_i(lambda a: lax.pswapaxes(a, "i", 0))(x[:, :2])


def test_ppermute():
    out = vmap_i(lambda a: lax.ppermute(a, "i", [(0, 1), (1, 2)]))(X)
    np.testing.assert_allclose(out, np.stack([np.zeros(4, np.float32), X[0], X[1]]))
    with pytest.raises(ValueError, match="distinct members"):
        vmap_i(lambda a: lax.ppermute(a, "i", [(0, 1), (2, 1)]))(X)


def test_collectives_inside_jit_inside_vmap():
    summed = plax.jit(lambda c: lax.psum(c, "i"))
    out = plax.vmap(lambda a, b: (summed(a), summed(b)), in_axes=(0, None),
                    axis_name="i")(X, np.float32(1.5))
    np.testing.assert_allclose(out[0], np.broadcast_to(X.sum(0), X.shape), rtol=1e-5)
    np.testing.assert_allclose(out[1], [4.5, 4.5, 4.5])


def test_collective_of_an_outer_axis_on_a_value_mapped_by_an_inner_vmap():
    x = RNG.normal(size=(2, 3)).astype(np.float32)
    f = plax.vmap(lambda row: plax.vmap(lambda a: lax.pmax(a, "i"))(row), axis_name="i")
    np.testing.assert_allclose(f(x), np.broadcast_to(x.max(0), (2, 3)))


def test_batched_reduction_reduces_a_positional_axis():
    """As JAX's: vmap's own axis joins the psum's axes as the batch dimension."""
    jaxpr = plax.make_jaxpr(plax.vmap(lambda a: lax.psum(a, "i"), axis_name="i"))(X)
    psum, broadcast = jaxpr.jaxpr.eqns
    assert (psum.primitive.name, psum.params["axes"]) == ("psum", (0,))
    assert broadcast.primitive.name == "broadcast_in_dim"
    np.testing.assert_allclose(plax.vmap(lambda a: lax.psum(a, "i"), axis_name="i")(X),
                               np.broadcast_to(X.sum(0), X.shape), rtol=1e-5)


def test_axis_index_groups_over_the_vmaps_own_axis():
    """Groups of a vmap's members have no batching rule (none in JAX), for mapped and
    unmapped operands alike; a value that is not traced is summed on the spot, each
    group counting it once per member of the first group, as JAX's. (Groups of
    another axis pass through: see test_shard_map_vs_jax.py.)"""
    x = RNG.normal(size=(4, 3)).astype(np.float32)
    halves = [[0, 1], [2, 3]]
    for fn in (lax.psum, lax.pmax, lax.pmean, lax.all_gather, lax.psum_scatter):
        with pytest.raises(NotImplementedError,
                           match="axis_index_groups over the axis 'i' of a vmap"):
            vmap_i(lambda a, fn=fn: fn(a[:2], "i", axis_index_groups=halves))(x)
    with pytest.raises(NotImplementedError, match="all_to_all: axis_index_groups"):
        vmap_i(lambda a: lax.all_to_all(a[:2], "i", 0, 0, axis_index_groups=halves))(x)
    for fn in (lax.psum, lax.pmax):
        with pytest.raises(NotImplementedError, match="over the axis 'i' of a vmap"):
            vmap_i(lambda a, b, fn=fn: fn(b, "i", axis_index_groups=halves),
                   in_axes=(0, None))(x, np.float32(1.5))
    out = vmap_i(lambda a: lax.psum(1.0, "i", axis_index_groups=[[0, 1, 2], [3]]))(x)
    np.testing.assert_array_equal(out, [3.0] * 4)

"""Collectives inside shard_map over 1-D (8) and 2-D (2 x 4) meshes, against NumPy on
the stacked blocks; their jvp against finite differences and their transposes by the
dot-product test; unbound axis names and bad arguments."""
import numpy as np
import pytest

import plax
from plax import lax
from plax import numpy as jnp
from plax.sharding import Mesh, NamedSharding, PartitionSpec as P
from plax.test_util import check_grads

RNG = np.random.default_rng(0)


@pytest.fixture(scope="module")
def line(devs):
    return Mesh(np.array(devs), ("i",))


def smap(f, mesh, in_specs, out_specs, **kw):
    return plax.jit(plax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, **kw))


def blocks(x, n):
    """The n blocks of x along axis 0, stacked: what the members of a 1-D mesh hold."""
    return x.reshape(n, x.shape[0] // n, *x.shape[1:])


X = RNG.normal(size=(16, 3)).astype(np.float32)


# --- 1-D mesh, each collective against NumPy ------------------------------------------------

def test_reductions(line):
    out = smap(lambda b: (lax.psum(b, "i"), lax.pmean(b, "i"), lax.pmax(b, "i"),
                          lax.pmin(b, "i")), line, P("i"), P())(X)
    per = blocks(X, 8)
    for got, want in zip(out, (per.sum(0), per.mean(0), per.max(0), per.min(0))):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_psum_of_bools_and_ints_and_a_replicated_value(line):
    flags, ints, rep = smap(lambda b, k: (lax.psum(b > 0, "i"), lax.psum(k, "i"),
                                          lax.psum(np.float32(1.5), "i")),
                            line, (P("i"), P("i")), P())(X, np.arange(8, dtype=np.int32))
    np.testing.assert_array_equal(flags, (blocks(X, 8) > 0).sum(0))
    assert ints.dtype == np.int32 and int(ints[0]) == 28
    assert float(rep) == 12.0  # a value every member holds, summed over the 8 of them


def test_axis_index_size_and_pbroadcast(line):
    idx, size, bcast = smap(lambda b: (lax.axis_index("i")[None], lax.axis_size("i") + 0 * b,
                                       lax.pbroadcast(b, "i", 5)),
                            line, P("i"), (P("i"), P("i"), P("i")))(X)
    np.testing.assert_array_equal(idx, np.arange(8))
    np.testing.assert_array_equal(size, np.full(X.shape, 8))
    np.testing.assert_allclose(bcast, np.tile(blocks(X, 8)[5], (8, 1)))


def test_all_gather_variants(line):
    stacked, tiled, axis1 = smap(
        lambda b: (lax.all_gather(b, "i", to="invarying"),
                   lax.all_gather(b, "i", tiled=True, to="invarying"),
                   lax.all_gather(b, "i", axis=1, tiled=True)),
        line, P("i"), (P(), P(), P("i")))(X)
    np.testing.assert_allclose(stacked, blocks(X, 8))
    np.testing.assert_allclose(tiled, X)
    per = blocks(X, 8)
    want = np.concatenate([np.concatenate(list(per), axis=1)] * 8)  # every member's copy
    np.testing.assert_allclose(axis1, want)


def test_psum_scatter(line):
    y = RNG.normal(size=(8, 16, 2)).astype(np.float32)  # member m holds y[m]
    tiled = smap(lambda b: lax.psum_scatter(b[0], "i", tiled=True), line, P("i"), P("i"))(y)
    np.testing.assert_allclose(tiled, y.sum(0), rtol=1e-5, atol=1e-6)
    z = RNG.normal(size=(8, 2, 8)).astype(np.float32)
    untiled = smap(lambda b: lax.psum_scatter(b[0], "i", scatter_dimension=1)[None],
                   line, P("i"), P("i"))(z)
    np.testing.assert_allclose(untiled, z.sum(0).T, rtol=1e-5, atol=1e-6)


def test_all_to_all(line):
    y = np.arange(8 * 8 * 2, dtype=np.float32).reshape(8, 8, 2)  # member m holds y[m]
    out = smap(lambda b: lax.all_to_all(b, "i", 1, 0, tiled=True), line, P("i"), P("i"))(y)
    # member j receives chunk j (row j) of every member i, in order i
    want = np.stack([y[:, j] for j in range(8)]).reshape(64, 1, 2)
    np.testing.assert_allclose(out, want)
    untiled = smap(lambda b: lax.all_to_all(b[0], "i", 0, 0)[None], line, P("i"), P("i"))(y)
    np.testing.assert_allclose(untiled, np.swapaxes(y, 0, 1))


def test_ppermute_and_pshuffle(line):
    ring = [(i, (i + 1) % 8) for i in range(8)]
    shifted, partial, shuffled = smap(
        lambda b: (lax.ppermute(b, "i", ring), lax.ppermute(b, "i", [(0, 3), (5, 1)]),
                   lax.pshuffle(b, "i", [7, 6, 5, 4, 3, 2, 1, 0])),
        line, P("i"), P("i"))(X)
    per = blocks(X, 8)
    np.testing.assert_allclose(blocks(np.asarray(shifted), 8), np.roll(per, 1, axis=0))
    want = np.zeros_like(per)
    want[3], want[1] = per[0], per[5]  # members that receive nothing get zeros
    np.testing.assert_allclose(blocks(np.asarray(partial), 8), want)
    np.testing.assert_allclose(blocks(np.asarray(shuffled), 8), per[::-1])


# --- 2-D mesh: one axis, the other, and both ----------------------------------------------------

def test_collectives_over_one_axis_or_both_of_a_grid(mesh):
    x = RNG.normal(size=(4, 8)).astype(np.float32)  # blocks (2, 2): member (r, c)
    per = x.reshape(2, 2, 4, 2).transpose(0, 2, 1, 3)  # [r, c] -> block
    f = smap(lambda b: (lax.psum(b, "y"), lax.psum(b, ("x", "y")), lax.pmax(b, "x"),
                        lax.axis_index(("x", "y"))[None, None] + 0 * b[:1, :1],
                        lax.all_gather(b, ("x", "y"), tiled=True, to="invarying")),
             mesh, P("x", "y"), (P("x"), P(), P(None, "y"), P("x", "y"), P()))
    over_y, total, max_x, index, gathered = f(x)
    np.testing.assert_allclose(over_y, np.concatenate(list(per.sum(1))), rtol=1e-5)
    np.testing.assert_allclose(total, per.sum((0, 1)), rtol=1e-5)
    np.testing.assert_allclose(max_x, np.concatenate(list(per.max(0)), axis=1))
    np.testing.assert_array_equal(index, np.arange(8).reshape(2, 4))
    np.testing.assert_allclose(gathered, np.concatenate(list(per.reshape(8, 2, 2))))


def test_ppermute_psum_scatter_and_all_to_all_over_both_axes(mesh):
    y = np.arange(8 * 8, dtype=np.float32).reshape(8, 8)  # member (r, c) holds y[4r + c]
    rev = [(i, 7 - i) for i in range(8)]
    f = smap(lambda b: (lax.ppermute(b, ("x", "y"), rev),
                        lax.psum_scatter(b[0], ("x", "y"), tiled=True)[None],
                        lax.all_to_all(b, ("x", "y"), 1, 0, tiled=True)),
             mesh, P(("x", "y")), P(("x", "y")))
    permuted, scattered, exchanged = f(y)
    np.testing.assert_allclose(permuted, y[::-1])
    np.testing.assert_allclose(scattered.reshape(8), y.sum(0))
    np.testing.assert_allclose(exchanged, y.T.reshape(64, 1))


# --- derivatives: jvp against finite differences, vjp by the dot-product test -------------------

GRAD_CASES = {
    "psum": (lambda b: lax.psum(b, "i"), P()),
    "pmean": (lambda b: lax.pmean(b, "i"), P()),
    "pmax": (lambda b: lax.pmax(b, "i"), P()),
    "all_gather": (lambda b: lax.all_gather(b, "i", tiled=True, to="invarying"), P()),
    "psum_scatter": (lambda b: lax.psum_scatter(jnp.tile(b, (8, 1)), "i", tiled=True), P("i")),
    "ppermute": (lambda b: lax.ppermute(b, "i", [(i, (i + 3) % 8) for i in range(8)]), P("i")),
    "all_to_all": (lambda b: lax.all_to_all(jnp.tile(b, (8, 1)), "i", 0, 1, tiled=True),
                   P("i")),
    "pbroadcast": (lambda b: lax.pbroadcast(b, "i", 2), P("i")),
    "pvary": (lambda b: lax.pvary(jnp.sin(b), "i"), P("i")),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_derivatives(line, name):
    fn, out_spec = GRAD_CASES[name]
    f = smap(lambda b: jnp.cos(fn(b * b)), line, P("i"), out_spec)
    check_grads(f, (X[:8],), order=1, atol=2e-2, rtol=2e-2)


def test_pmax_shares_the_tangent_among_tied_members(line):
    x = np.array([1, 3, 3, 2, 0, 3, 1, 1], np.float32)[:, None]
    f = smap(lambda b: lax.pmax(b, "i"), line, P("i"), P())
    _, t = plax.jvp(f, (x,), (np.arange(8, dtype=np.float32)[:, None],))
    np.testing.assert_allclose(t, [[(1 + 2 + 5) / 3]])


# --- errors -------------------------------------------------------------------------------------

def test_unbound_axis_names_raise_name_error(line):
    with pytest.raises(NameError, match="unbound axis name: i"):
        lax.psum(1.0, "i")
    with pytest.raises(NameError, match="unbound axis name: i"):
        plax.jit(lambda v: lax.all_gather(v, "i"))(X)
    with pytest.raises(NameError, match="unbound axis name: j"):
        smap(lambda b: lax.ppermute(b, "j", [(0, 1)]), line, P("i"), P("i"))(X)
    with pytest.raises(NameError, match="unbound axis name: i"):
        lax.axis_size("i")


def test_bad_collective_arguments(line):
    cases = [(lambda b: lax.ppermute(b, "i", [(0, 1), (2, 1)]), "destinations"),
             (lambda b: lax.ppermute(b, "i", [(0, 8)]), "distinct members"),
             (lambda b: lax.pshuffle(b, "i", [0, 0, 1, 2, 3, 4, 5, 6]), "permutation"),
             (lambda b: lax.pbroadcast(b, "i", 8), "source 8"),
             (lambda b: lax.all_gather(b, "i", to="reduced"), "`to` must be one of"),
             (lambda b: lax.psum_scatter(b, "i"), "must equal the axis size 8")]
    for fn, message in cases:
        with pytest.raises(ValueError, match=message):
            smap(fn, line, P("i"), P("i"), check_vma=False)(X)


def test_bad_axis_index_groups_name_the_function_and_the_groups(line):
    cases = [(ValueError, lambda b: lax.pmax(b, "i", axis_index_groups=[[0, 1], [1, 2]]),
              r"pmax: axis_index_groups must cover all indices exactly once, got \[\[0, 1\]"),
             (TypeError, lambda b: lax.psum(b, "i", axis_index_groups=[[0.0, 1.0]]),
              "psum: axis_index_groups must hold integers"),
             (TypeError, lambda b: lax.all_to_all(b, "i", 0, 0, axis_index_groups=[0, 1]),
              "all_to_all: axis_index_groups must be a sequence of sequences"),
             (IndexError, lambda b: lax.psum(b, "i", axis_index_groups=[[*range(5)],
                                                                         [*range(5, 10)]]),
              "name members beyond the 8 of axis 'i'"),
             (ValueError, lambda b: lax.all_gather(b, "i", axis_index_groups=[[*range(7)], [7]]),
              "all_gather: the groups of axis_index_groups must all be the same size"),
             (ValueError, lambda b: lax.psum_scatter(b, "i", axis_index_groups=[[0, 1, 2, 3],
                                                                                 [4, 5, 6, 7]]),
              "must equal the group size 4"),
             (NotImplementedError, lambda b: lax.all_gather(b, "i", axis_index_groups=[[0]],
                                                            to="invarying"), "invarying")]
    for error, fn, message in cases:
        with pytest.raises(error, match=message):
            smap(fn, line, P("i"), P("i"), check_vma=False)(X)
    with pytest.raises(NotImplementedError, match="pass check_vma=False"):
        smap(lambda b: lax.psum(b, "i", axis_index_groups=[[*range(8)]]), line, P("i"), P())(X)


def test_axis_index_groups_split_the_replica_groups(devs):
    """Positions along the axis pick devices from each of its replica groups; groups
    of several sizes are padded with -1 (XLA:CPU reduces within them), refused for TPU."""
    grid = Mesh(np.array(devs).reshape(4, 2), ("x", "y"))
    text = smap(lambda b: lax.psum(b, "x", axis_index_groups=[[0, 2], [3, 1]]), grid,
                P("x", "y"), P("x", "y"), check_vma=False).lower(np.zeros((4, 2))).as_text()
    assert "replica_groups = dense<[[0, 4], [6, 2], [1, 5], [7, 3]]>" in text
    four = Mesh(np.array(devs[:4]), ("i",))
    f = smap(lambda b: lax.psum(b, "i", axis_index_groups=[[0, 1, 2], [3]]), four, P("i"),
             P("i"), check_vma=False)
    np.testing.assert_array_equal(f(np.float32([1, 2, 3, 4])), [6, 6, 6, 4])
    arg = plax.ShapeDtypeStruct((4,), np.float32, sharding=NamedSharding(four, P("i")))
    assert "[3, -1, -1]" in plax.export.export(f, platforms=["cpu"])(arg).mlir_module()
    with pytest.raises(ValueError, match="psum: the groups of axis_index_groups must all be "
                                         "the same size on TPU"):
        plax.export.export(f, platforms=["tpu"])(arg)


def test_a_reduction_within_groups_still_varies_over_the_axis(line):
    """With check_vma, what pmax gives each group differs from group to group: out_specs
    must say so (JAX types it as the same on every member, and returns group 0's)."""
    groups = [[0, 1, 2, 3], [4, 5, 6, 7]]
    with pytest.raises(ValueError, match="replication"):
        smap(lambda b: lax.pmax(b, "i", axis_index_groups=groups), line, P("i"), P())(X)
    out = smap(lambda b: lax.pmax(b, "i", axis_index_groups=groups), line, P("i"), P("i"))(X)
    per = blocks(X, 8)
    want = np.concatenate([np.tile(per[:4].max(0), (4, 1)), np.tile(per[4:].max(0), (4, 1))])
    np.testing.assert_array_equal(out, want)


def test_differentiating_psum_inside_a_checked_body_is_refused(line):
    inner = lambda b: plax.grad(lambda v: lax.psum(jnp.sum(v), "i"))(b)  # noqa: E731
    with pytest.raises(NotImplementedError, match="check_vma=True"):
        smap(inner, line, P("i"), P("i"))(X)
    # Without the check, psum transposes to psum (pmap's and JAX's check_vma=False answer).
    np.testing.assert_allclose(smap(inner, line, P("i"), P("i"), check_vma=False)(X),
                               np.full(X.shape, 8.0))

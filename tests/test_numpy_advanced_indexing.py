"""Advanced indexing against NumPy: integer arrays (mixed with slices, None and
Ellipsis, broadcast together), concrete boolean masks, `take`/`take_along_axis`
with traced indices, and `x.at[...]` updates; under jit and grad, with errors."""
import numpy as np
import pytest

import plax
import plax.numpy as jnp

X = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
M = np.arange(12, dtype=np.float32).reshape(3, 4)

INDICES = [
    np.array([0, 2]), np.array([2, -1, 2]), (np.array([0, 2]), np.array([1, -3])),
    (slice(None), [1, -1]),
    (0, slice(None), [1, 2]),  # separated advanced indices: their dims go first
    ([[0], [2]], slice(1, 3), [1, 2, 3]), (Ellipsis, [0, -1]), (None, [1], None, slice(None), [2]),
    X[:, :, 0] > 20, (slice(None), X[0] > 7), np.array([True, False, True]),
    (1, [0, 1], [2, 3]), ([0, 1], 1, [2, 3]), (True,), (False, 0), np.zeros((0,), np.int32),
    (np.array([[0, 1]]), slice(None, None, -1)), (np.array([0, 1], np.uint8), 2),
]


def test_values_shapes_and_dtypes_match_numpy_under_jit():
    for dtype in (np.float32, np.int32):
        x = X.astype(dtype)
        outs = plax.jit(lambda v: [v[i] for i in INDICES])(x)
        for index, out in zip(INDICES, outs):
            assert out.shape == x[index].shape and out.dtype == x.dtype, repr(index)
            np.testing.assert_array_equal(out, x[index], err_msg=repr(index))


def test_traced_index_arrays_and_clamping():
    f = plax.jit(lambda x, i: (x[i, :, i], x[i], x[..., i]))
    i = np.array([2, -1, 0], np.int32)
    a, b, c = f(X, i)
    np.testing.assert_array_equal(a, X[i, :, i])
    np.testing.assert_array_equal(b, X[i])
    np.testing.assert_array_equal(c, X[..., i])
    # Out of bounds: clamped, like JAX's gather (NumPy would raise).
    np.testing.assert_array_equal(f(X, np.array([7, -9], np.int32))[1], X[[2, 0]])
    assert [e.primitive.name for e in plax.make_jaxpr(lambda x: x[np.array([0, 2])])(X)
            .jaxpr.eqns] == ["gather"]


def test_grad_scatters_ones_and_masks_must_be_concrete():
    idx = np.array([0, 0, 2])
    g = plax.grad(lambda x: x[idx].sum())(M)
    np.testing.assert_array_equal(g, np.array([2, 0, 1], np.float32)[:, None] * np.ones(4))
    g = plax.jit(plax.grad(lambda x, i: x[i, 1:].sum()))(M, np.array([1, 1], np.int32))
    np.testing.assert_array_equal(g, np.array([[0, 0, 0, 0], [0, 2, 2, 2], [0, 0, 0, 0]]))
    np.testing.assert_array_equal(jnp.asarray(M)[jnp.asarray(M) > 5], M[M > 5])  # concrete
    with pytest.raises(plax.errors.NonConcreteBooleanIndexError,
                       match=r"boolean indices must be concrete; got the abstract bool\[3,4\]"):
        plax.jit(lambda x: x[x > 5])(M)


@pytest.mark.parametrize("index,error,match", [
    ((np.array([0, 1]), np.array([0, 1, 2])), ValueError, r"\(2,\) \(3,\)"),
    (np.ones((3, 5), bool), IndexError, r"size there is \(3, 4\).*shape \(3, 5\)"),
    (([0], [0], [0]), IndexError, "too many indices"),
    ((0, [0.5]), TypeError, "float64"),
    ([0, 1], TypeError, "non-tuple sequence"),  # as in JAX: x[np.array(seq)]
])
def test_bad_indices(index, error, match):
    with pytest.raises(error, match=match):
        jnp.asarray(M)[index]


def test_take_and_take_along_axis_with_traced_indices():
    idx = np.array([[1, -1], [4, 0]], np.int32)
    out = plax.jit(lambda x, i: (jnp.take(x, i, axis=2), jnp.take(x, i, axis=1, mode="wrap"),
                                 jnp.take(x, i, mode="clip")))(X, idx)
    np.testing.assert_array_equal(out[0], np.take(X, idx, axis=2))
    np.testing.assert_array_equal(out[1], np.take(X, idx, axis=1, mode="wrap"))
    np.testing.assert_array_equal(out[2], np.take(X, idx, mode="clip"))
    filled = plax.jit(lambda x, i: jnp.take(x, i, axis=0))(M, np.array([1, 3, -4], np.int32))
    np.testing.assert_array_equal(filled[0], M[1])
    assert np.isnan(filled[1:]).all()
    ii = np.array([[0, 3], [3, 1], [1, 1]], np.int32)
    along = plax.jit(lambda a, i: (jnp.take_along_axis(a, i, 1),
                                   jnp.take_along_axis(a, i[1:, 1:], 0)))(M, ii)
    np.testing.assert_array_equal(along[0], np.take_along_axis(M, ii, 1))
    np.testing.assert_array_equal(along[1], np.take_along_axis(M, ii[1:, 1:], 0))
    flat = np.array([11, 0, 5], np.int32)
    np.testing.assert_array_equal(jnp.take_along_axis(M, flat, None),
                                  np.take_along_axis(M, flat, None))
    with pytest.raises(ValueError, match=r"same number of dimensions.*\(2,\).*\(3, 4\)"):
        jnp.take_along_axis(M, ii[0], 1)
    with pytest.raises(TypeError, match="indices must be integers"):
        jnp.take_along_axis(M, ii.astype(np.float32), 1)


def test_at_updates_match_numpy():
    x = jnp.asarray(M)
    ref = M.copy()
    ref[[0, 2], 1:] = 7
    np.testing.assert_array_equal(x.at[[0, 2], 1:].set(7), ref)
    ref = M.copy()
    np.add.at(ref, ([0, 0, 2],), 1.0)
    np.testing.assert_array_equal(x.at[np.array([0, 0, 2])].add(1.0), ref)
    ref = M.copy()
    np.multiply.at(ref, (1, [0, 0]), 3)
    np.testing.assert_array_equal(x.at[1, [0, 0]].multiply(3), ref)
    np.testing.assert_array_equal(x.at[:, -1].min(0), np.where(np.arange(4) == 3, 0, M))
    np.testing.assert_array_equal(x.at[M > 6].max(100), np.where(M > 6, 100, M))
    np.testing.assert_array_equal(x.at[::2, ::-1].get(), M[::2, ::-1])
    np.testing.assert_array_equal(x.at[np.array([5, -4])].set(-1), M)  # out of bounds: dropped
    clipped = x.at[np.array([5])].set(-1, mode="clip")
    np.testing.assert_array_equal(clipped, np.concatenate([M[:2], -np.ones((1, 4))]))
    assert x.at[0].set(2.5).dtype == np.float32
    with pytest.warns(FutureWarning, match="cannot safely cast value from dtype=float32"):
        assert jnp.arange(4).at[1].set(2.7)[1] == 2  # values take x's dtype, as JAX warns
    with pytest.raises(ValueError, match=r"shape \(3,\).*indexed shape \(2, 4\)"):
        x.at[np.array([0, 1])].set(np.ones(3))
    with pytest.raises(ValueError, match="invalid mode"):
        x.at[0].set(1.0, mode="wrap")


def test_at_under_jit_and_grad():
    f = plax.jit(lambda x, i, v: x.at[i].set(v))
    out = f(M, np.array([2, 0], np.int32), np.ones(4, np.float32))
    ref = M.copy()
    ref[[2, 0]] = 1
    np.testing.assert_array_equal(out, ref)
    g = plax.grad(lambda x: (x.at[1].set(0.0) * x).sum())(M)
    np.testing.assert_array_equal(g, np.where(np.arange(3)[:, None] == 1, 0, 2 * M))
    # Repeated indices add up, so their cotangents are gathered twice.
    g = plax.grad(lambda v: (jnp.zeros(3).at[np.array([0, 0, 1])].add(v) ** 2).sum())(
        np.array([1.0, 2.0, 3.0], np.float32))
    np.testing.assert_allclose(g, [6.0, 6.0, 6.0])


def test_vmap_of_indexing_and_updates_with_per_example_indices():
    ii = np.array([[0, 2], [1, 1]], np.int32)
    np.testing.assert_array_equal(plax.vmap(lambda i: jnp.asarray(M)[i])(ii),
                                  np.stack([M[i] for i in ii]))
    out = plax.vmap(lambda x, i: x.at[i].add(1.0))(np.stack([M, M]), ii)
    for k in range(2):
        ref = M.copy()
        np.add.at(ref, ii[k], 1.0)
        np.testing.assert_array_equal(out[k], ref)
    g = plax.vmap(plax.grad(lambda x, i: x[i].sum()), in_axes=(None, 0))(M, ii)
    np.testing.assert_array_equal(g[:, :, 0], [[1, 0, 1], [0, 2, 0]])


def test_updates_of_empty_arrays_check_the_index_as_jax():
    """Nothing is updated in an empty array, but a bad index is still an error, as a
    read with it would be (JAX checks the index first)."""
    empty = jnp.zeros((0, 4))
    with pytest.raises(IndexError, match="size 0"):
        empty.at[0].set(1.0)
    with pytest.raises(IndexError, match="size 0"):
        jnp.zeros((0,)).at[0].mul(2.0, mode="drop")
    with pytest.raises(TypeError, match="integer or boolean"):
        empty.at[1.5].add(1.0)
    with pytest.raises(TypeError, match="string"):
        empty.at["a"].max(1.0)
    with pytest.raises(ValueError, match="step cannot be zero"):
        empty.at[::0].max(1.0)
    with pytest.raises(IndexError, match="too many"):
        empty.at[0:, 1, 2].set(1.0)
    # What reads nothing is fine: an integer array along an empty axis, and (JAX's
    # order) an unknown mode is only looked at when an element is updated.
    assert jnp.zeros(0).at[..., jnp.array([1, 2, 3])].set(1.0).shape == (0,)
    assert empty.at[:, 1].set(1.0, mode="bogus").shape == (0, 4)
    with pytest.raises(plax.errors.NonConcreteBooleanIndexError):
        plax.jit(lambda x, m: x.at[m].mul(-1))(jnp.zeros((1, 0), jnp.int8),
                                              jnp.zeros((1, 0), bool))
    assert empty.at[:, 1].set(1.0).shape == (0, 4)


def test_take_mode_raise_is_not_implemented_as_jax():
    with pytest.raises(NotImplementedError, match="raise"):
        jnp.take(jnp.ones(3), jnp.int32(0), mode="raise")
    with pytest.raises(NotImplementedError, match="raise"):
        jnp.take_along_axis(jnp.ones(3), jnp.zeros(1, jnp.int32), axis=0, mode="raise")
    with pytest.raises(ValueError, match="bogus"):
        jnp.take(jnp.ones(3), jnp.int32(0), mode="bogus")


def test_take_along_an_empty_axis_gives_zeros_as_jax():
    got = plax.jit(lambda i: jnp.take_along_axis(np.zeros((2, 0), np.int32), i, axis=1))(
        jnp.ones((2, 3), jnp.int32))
    assert got.shape == (2, 3) and got.dtype == np.int32
    np.testing.assert_array_equal(got, np.zeros((2, 3)))
    # take keeps NumPy's shape there (JAX returns the operand itself).
    assert jnp.take(jnp.zeros((4, 0, 0)), jnp.zeros((4, 0, 0), jnp.int32), axis=-1).shape == \
        np.take(np.zeros((4, 0, 0)), np.zeros((4, 0, 0), int), axis=-1).shape


def test_index_arrays_that_do_not_broadcast_are_a_value_error_as_jax():
    x = jnp.zeros((3, 3, 3), bool)
    with pytest.raises(ValueError, match="broadcast"):
        x[None, ..., jnp.zeros(0, jnp.int32), jnp.array([0, 1])]
    with pytest.raises(ValueError, match="broadcast"):
        plax.jit(lambda i: x[i, jnp.array([0, 1])])(jnp.zeros(3, jnp.int32))

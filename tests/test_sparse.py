"""plax.experimental.sparse: BCOO against dense NumPy, sparsify, gradients, transforms,
bad inputs, and JAX's BCOO."""
from __future__ import annotations

import numpy as np
import pytest
from jax_reference import requires_jax, run_reference

import plax
import plax.numpy as jnp
from plax.errors import ConcretizationTypeError
from plax.experimental import sparse

RNG = np.random.RandomState(0)
DENSE = (RNG.rand(4, 5) * (RNG.rand(4, 5) < 0.4)).astype(np.float32)
M = sparse.BCOO.fromdense(DENSE)
V = RNG.randn(5).astype(np.float32)
W = RNG.randn(4, 3).astype(np.float32)


def test_fromdense_todense_roundtrip():
    assert M.nse == np.count_nonzero(DENSE) and M.shape == (4, 5) and M.dtype == np.float32
    np.testing.assert_array_equal(M.todense(), DENSE)
    np.testing.assert_array_equal(sparse.todense(M), DENSE)
    rows, cols = np.nonzero(DENSE)
    np.testing.assert_array_equal(M.indices, np.stack([rows, cols], 1))
    padded = sparse.BCOO.fromdense(DENSE, nse=M.nse + 3)
    np.testing.assert_array_equal(padded.todense(), DENSE)
    assert padded.nse == M.nse + 3 and not np.asarray(padded.data)[M.nse:].any()
    jitted = plax.jit(lambda m: sparse.BCOO.fromdense(m, nse=8).todense())(DENSE)
    np.testing.assert_array_equal(jitted, DENSE)
    repeated = sparse.BCOO((np.array([1.0, 2.0]), np.array([[0, 1], [0, 1]])), shape=(2, 2))
    np.testing.assert_array_equal(repeated.todense(), [[0.0, 3.0], [0.0, 0.0]])


def test_products_and_operators():
    np.testing.assert_allclose(M @ V, DENSE @ V, rtol=1e-6)
    np.testing.assert_allclose(M.T @ W, DENSE.T @ W, rtol=1e-6)
    np.testing.assert_allclose(W.T @ M, W.T @ DENSE, rtol=1e-6)
    np.testing.assert_allclose(np.ones(4, np.float32) @ M, DENSE.sum(0), rtol=1e-6)
    np.testing.assert_allclose(M @ M.T, DENSE @ DENSE.T, rtol=1e-6)
    dims = (((0,), (0,)), ((), ()))
    np.testing.assert_allclose(sparse.bcoo_dot_general(M, W, dimension_numbers=dims),
                               DENSE.T @ W, rtol=1e-6)
    np.testing.assert_allclose((M * 2.0 - M / 4.0).todense(), DENSE * 1.75, rtol=1e-6)
    np.testing.assert_allclose((M * DENSE).todense(), DENSE * DENSE, rtol=1e-6)
    np.testing.assert_allclose((M + M).todense(), 2 * DENSE, rtol=1e-6)
    np.testing.assert_allclose(M + np.ones((4, 5)), DENSE + 1, rtol=1e-6)
    np.testing.assert_allclose(M.sum(1).todense(), DENSE.sum(1), rtol=1e-6)
    np.testing.assert_allclose(M.sum(), DENSE.sum(), rtol=1e-6)
    assert M.astype(np.float16).dtype == np.float16


def test_sparsify_runs_dense_code_on_bcoo():
    def model(A, x):
        return jnp.tanh(A * 3.0).T @ x, (-A).sum(0), A.T
    out, col_sums, transposed = sparse.sparsify(model)(M, W[:, 0])
    np.testing.assert_allclose(out, np.tanh(DENSE * 3.0).T @ W[:, 0], rtol=1e-5)
    assert isinstance(col_sums, sparse.BCOO) and isinstance(transposed, sparse.BCOO)
    np.testing.assert_allclose(col_sums.todense(), -DENSE.sum(0), rtol=1e-6)
    np.testing.assert_array_equal(transposed.todense(), DENSE.T)
    inner = plax.jit(lambda A, x: A @ x)
    np.testing.assert_allclose(sparse.sparsify(lambda A, x: inner(A, x))(M, V), DENSE @ V,
                               rtol=1e-6)
    with pytest.raises(NotImplementedError, match="no sparse rule for the primitive 'exp'"):
        sparse.sparsify(jnp.exp)(M)


def test_gradients_and_transformations():
    cols = np.asarray(M.indices)[:, 1]
    g = sparse.grad(lambda A: (A @ V).sum())(M)
    assert isinstance(g, sparse.BCOO)
    np.testing.assert_allclose(g.data, V[cols], rtol=1e-6)
    value, (g_a, g_v) = sparse.value_and_grad(lambda A, x: jnp.sum((A @ x) ** 2),
                                              argnums=(0, 1))(M, V)
    np.testing.assert_allclose(value, np.sum((DENSE @ V) ** 2), rtol=1e-5)
    np.testing.assert_allclose(g_v, 2 * DENSE.T @ (DENSE @ V), rtol=1e-5)
    np.testing.assert_allclose(g_a.todense(), 2 * np.outer(DENSE @ V, V) * (DENSE != 0),
                               rtol=1e-5)
    rebuilt = plax.grad(lambda d: (sparse.BCOO((d, M.indices), shape=M.shape) @ V).sum())(
        M.data)
    np.testing.assert_allclose(rebuilt, V[cols], rtol=1e-6)
    batch = RNG.randn(3, 5).astype(np.float32)
    np.testing.assert_allclose(plax.vmap(lambda x: M @ x)(batch), batch @ DENSE.T, rtol=1e-5)
    np.testing.assert_allclose(plax.jit(lambda A, x: (A @ x, A.T))(M, V)[0], DENSE @ V,
                               rtol=1e-6)


def test_bad_inputs():
    with pytest.raises(ValueError, match=r"data must have shape \(nse,\) and indices"):
        sparse.BCOO((np.ones(3), np.zeros((2, 2), np.int32)), shape=(2, 2))
    with pytest.raises(TypeError, match="indices must be integers"):
        sparse.BCOO((np.ones(1), np.zeros((1, 2))), shape=(2, 2))
    with pytest.raises(NotImplementedError, match="n_batch, n_dense"):
        sparse.BCOO.fromdense(DENSE, n_batch=1)
    with pytest.raises(ConcretizationTypeError, match="pass nse="):
        plax.jit(lambda m: sparse.BCOO.fromdense(m).data)(DENSE)
    with pytest.raises(TypeError, match="contracting dimensions"):
        M @ np.ones(4)
    with pytest.raises(ValueError, match="shapes"):
        M + sparse.BCOO.fromdense(DENSE.T)
    with pytest.raises(NotImplementedError, match="division of a BCOO by a scalar"):
        M / np.ones((4, 5))
    with pytest.raises(ValueError, match="not a permutation"):
        M.transpose((0, 0))


@requires_jax
def test_matches_jax():
    code = """
    if jax.__name__ == "plax":
        from plax.experimental import sparse
    else:
        from jax.experimental import sparse
    rng = np.random.RandomState(3)
    dense = (rng.rand(3, 4) * (rng.rand(3, 4) < 0.5)).astype(np.float32)
    x = rng.randn(4).astype(np.float32)
    m = sparse.BCOO.fromdense(dense)
    f = sparse.sparsify(lambda a, v: jnp.sin(a * 2.0) @ v)
    g = sparse.grad(lambda a: jnp.sum((a @ x) ** 2))(m)
    result = {"data": np.asarray(m.data).tolist(), "indices": np.asarray(m.indices).tolist(),
              "matvec": np.asarray(m @ x).tolist(),
              "vecmat": np.asarray(jnp.asarray(x[:3]) @ m).tolist(),
              "padded": np.asarray(sparse.BCOO.fromdense(dense, nse=9).indices).tolist()[:7],
              "sparsify": np.asarray(f(m, x)).tolist(), "grad": np.asarray(g.data).tolist()}
    """
    theirs, mine = run_reference(code, "jax"), run_reference(code, "plax")
    assert theirs.keys() == mine.keys()
    for key in theirs:
        np.testing.assert_allclose(np.array(mine[key]), np.array(theirs[key]), rtol=1e-5,
                                   err_msg=key)

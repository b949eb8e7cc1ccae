"""`plax.numpy.linalg` against NumPy: every function on float32, float64 (x64) and
complex inputs, batches and empty shapes, under jit; derivatives of solve, inv,
det, slogdet and pinv (`check_grads`, orders 1 and 2, both modes); the NaNs and
infinities singular matrices give; and ValueErrors naming the shape."""
from __future__ import annotations

import numpy as np
import pytest
from matrix_samples import sample

import plax
import plax.numpy as jnp
from plax.test_util import check_grads

X64 = {np.dtype(np.float64), np.dtype(np.complex128)}
TOL = {np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-10,
       np.dtype(np.complex64): 1e-4, np.dtype(np.complex128): 1e-10}


def close(got, want, dtype, scale=1.0):
    tol = TOL[np.dtype(dtype)] * scale
    np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol)


def _everything(a, b, tall, hpd):
    la = jnp.linalg
    return {
        "solve": la.solve(a, b), "solve_vector": la.solve(a[0], b[0, :, 0]),
        "solve_broadcast": la.solve(a[0], b), "inv": la.inv(a), "det": la.det(a),
        "slogdet": la.slogdet(a), "pinv": la.pinv(tall), "lstsq": la.lstsq(tall[0], tall[1]),
        "matrix_power": la.matrix_power(a, 3), "matrix_power_neg": la.matrix_power(a, -2),
        "matrix_power_0": la.matrix_power(a, 0), "matrix_rank": la.matrix_rank(tall),
        "cholesky": la.cholesky(hpd), "cholesky_upper": la.cholesky(hpd, upper=True),
        "qr": la.qr(tall), "qr_complete": la.qr(tall, mode="complete"),
        "qr_r": la.qr(tall, mode="r"), "eigh": la.eigh(hpd), "eigvalsh": la.eigvalsh(hpd),
        "eigvals": la.eigvals(a), "svd": la.svd(tall, full_matrices=False),
        "svd_hermitian": la.svd(hpd, hermitian=True), "svdvals": la.svdvals(tall),
        "cond": la.cond(a), "cond_fro": la.cond(a, "fro"),
        "norms": [la.norm(a[0], o) for o in (None, "fro", "nuc", 1, -1, 2, -2, np.inf,
                                              -np.inf)],
        "vector_norms": [la.norm(b[0, :, 0], o) for o in (None, 1, -1, 2, 3, 0.5, np.inf,
                                                          -np.inf, 0)],
        "norm_axis": la.norm(tall, axis=1, keepdims=True),
        "vector_norm": la.vector_norm(tall, ord=3), "matrix_norm": la.matrix_norm(tall, ord=1),
        "tensorinv": la.tensorinv(jnp.reshape(a[0], (2, 2, 4)), 2),
        "tensorsolve": la.tensorsolve(jnp.concatenate([a, hpd], -1), b[:, :, 0]),
        "multi_dot": la.multi_dot([b[0, :, 0], a[0], a[1], b[1]]),
        "vecdot": la.vecdot(a, b[..., :1], axis=-2), "trace": la.trace(a, offset=1),
        "diagonal": la.diagonal(tall), "matrix_transpose": la.matrix_transpose(tall),
        "outer": la.outer(b[0, :, 0], b[1, :, 1]),
        "tensordot": la.tensordot(a, tall, axes=([0], [0])),
    }


@pytest.fixture(scope="module", params=[np.float32, np.float64, np.complex64],
                ids=lambda d: np.dtype(d).name)
def computed(request):
    dtype = request.param
    a = sample(dtype, (2, 4, 4)) + 2 * np.eye(4, dtype=dtype)
    b = sample(dtype, (2, 4, 2), 1)
    tall = sample(dtype, (2, 5, 3), 2)
    x = sample(dtype, (2, 4, 4), 3)
    hpd = (x @ np.conj(np.swapaxes(x, -1, -2)) + 4 * np.eye(4)).astype(dtype)
    with plax.enable_x64(np.dtype(dtype) in X64):
        out = plax.tree_util.tree_map(np.asarray, plax.jit(_everything)(a, b, tall, hpd))
    return dtype, (a, b, tall, hpd), out


def test_solvers(computed):
    dtype, (a, b, tall, hpd), out = computed
    la = np.linalg
    close(out["solve"], la.solve(a, b), dtype, 10)
    close(out["solve_vector"], la.solve(a[0], b[0, :, 0]), dtype, 10)
    close(out["solve_broadcast"], la.solve(a[0], b), dtype, 10)
    close(out["inv"], la.inv(a), dtype, 10)
    close(out["det"], la.det(a), dtype, 10)
    close(out["slogdet"][0], la.slogdet(a)[0], dtype, 10)
    close(out["slogdet"][1], la.slogdet(a)[1], dtype, 10)
    close(out["pinv"], la.pinv(tall), dtype, 10)
    x, residuals, rank, s = out["lstsq"]
    xn, rn, rankn, sn = la.lstsq(tall[0], tall[1], rcond=None)
    close(x, xn, dtype, 10)
    close(residuals, rn, dtype, 10)
    assert rank == rankn
    close(s, sn, dtype, 10)
    close(out["matrix_power"], la.matrix_power(a, 3), dtype, 10)
    close(out["matrix_power_neg"], la.matrix_power(a, -2), dtype, 10)
    np.testing.assert_array_equal(out["matrix_power_0"], np.broadcast_to(np.eye(4), a.shape))
    np.testing.assert_array_equal(out["matrix_rank"], la.matrix_rank(tall))
    close(out["tensorinv"], la.tensorinv(a[0].reshape(2, 2, 4), 2), dtype, 10)
    close(out["tensorsolve"], la.tensorsolve(np.concatenate([a, hpd], -1), b[:, :, 0]), dtype, 100)


def test_decompositions(computed):
    dtype, (a, b, tall, hpd), out = computed
    la = np.linalg
    close(out["cholesky"], la.cholesky(hpd), dtype, 10)
    close(out["cholesky_upper"], np.conj(np.swapaxes(la.cholesky(hpd), -1, -2)), dtype, 10)
    q, r = out["qr"]
    assert q.shape == (2, 5, 3) and r.shape == (2, 3, 3)
    close(q @ r, tall, dtype, 10)
    assert out["qr_complete"][0].shape == (2, 5, 5) and out["qr_r"].shape == (2, 3, 3)
    w, v = out["eigh"]
    close(w, la.eigvalsh(hpd), dtype, 100)
    close(hpd @ v, v * w[..., None, :], dtype, 100)
    close(out["eigvalsh"], la.eigvalsh(hpd), dtype, 100)
    for i in range(2):
        close(np.sort_complex(out["eigvals"][i]), np.sort_complex(la.eigvals(a[i])), dtype, 10)
    u, s, vh = out["svd"]
    close(s, la.svd(tall, compute_uv=False), dtype, 10)
    close((u * s[..., None, :]) @ vh, tall, dtype, 10)
    u, s, vh = out["svd_hermitian"]
    close(s, la.svd(hpd, compute_uv=False), dtype, 100)
    close((u * s[..., None, :]) @ vh, hpd, dtype, 100)
    close(out["svdvals"], la.svd(tall, compute_uv=False), dtype, 10)


def test_norms_and_products(computed):
    dtype, (a, b, tall, hpd), out = computed
    la = np.linalg
    close(out["cond"], la.cond(a), dtype, 100)
    close(out["cond_fro"], la.cond(a, "fro"), dtype, 100)
    for got, o in zip(out["norms"], (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf)):
        close(got, la.norm(a[0], o), dtype, 10)
    for got, o in zip(out["vector_norms"], (None, 1, -1, 2, 3, 0.5, np.inf, -np.inf, 0)):
        close(got, la.norm(b[0, :, 0], o), dtype, 10)
    close(out["norm_axis"], la.norm(tall, axis=1, keepdims=True), dtype, 10)
    close(out["vector_norm"], la.vector_norm(tall, ord=3), dtype, 10)
    close(out["matrix_norm"], la.matrix_norm(tall, ord=1), dtype, 10)
    close(out["multi_dot"], la.multi_dot([b[0, :, 0], a[0], a[1], b[1]]), dtype, 10)
    close(out["vecdot"], la.vecdot(a, b[..., :1], axis=-2), dtype, 10)
    close(out["trace"], la.trace(a, offset=1), dtype, 10)
    np.testing.assert_array_equal(out["diagonal"], la.diagonal(tall))
    np.testing.assert_array_equal(out["matrix_transpose"], la.matrix_transpose(tall))
    close(out["outer"], la.outer(b[0, :, 0], b[1, :, 1]), dtype)
    close(out["tensordot"], la.tensordot(a, tall, axes=([0], [0])), dtype, 10)


def test_cross_and_integer_inputs():
    x, y = sample(np.float32, (2, 3)), sample(np.float32, (3,), 1)
    close(jnp.linalg.cross(x, y), np.linalg.cross(x, y), np.float32)
    close(jnp.linalg.cross(x.T, y[:, None], axis=0), np.cross(x.T, y[:, None], axis=0),
          np.float32)
    ints = np.array([[2, 1], [1, 3]], np.int32)
    assert jnp.linalg.inv(ints).dtype == np.float32
    assert jnp.linalg.matrix_power(ints, 3).dtype == np.int32
    np.testing.assert_array_equal(jnp.linalg.matrix_power(ints, 3),
                                  np.linalg.matrix_power(ints, 3))


@pytest.mark.parametrize("shape", [(0, 0), (3, 0, 0)], ids=str)
def test_empty_matrices(shape):
    x = np.zeros(shape, np.float32)
    batch = shape[:-2]
    np.testing.assert_array_equal(jnp.linalg.det(x), np.ones(batch))
    assert jnp.linalg.inv(x).shape == shape
    assert jnp.linalg.slogdet(x).logabsdet.shape == batch
    assert jnp.linalg.pinv(np.zeros((*batch, 0, 2), np.float32)).shape == (*batch, 2, 0)
    assert jnp.linalg.svd(x, compute_uv=False).shape == (*batch, 0)
    assert jnp.linalg.eigh(x).eigenvalues.shape == (*batch, 0)


# --- singular matrices: JAX's NaNs and infinities ------------------------------------------------

def test_singular_matrices():
    zero = np.zeros((2, 2), np.float32)
    inverse = np.asarray(jnp.linalg.inv(zero))
    assert np.isnan(inverse[0]).all() and np.isnan(inverse[1, 0]) and np.isinf(inverse[1, 1])
    assert jnp.linalg.det(zero) == 0
    sign, logdet = jnp.linalg.slogdet(zero)
    assert sign == 0 and logdet == -np.inf
    np.testing.assert_array_equal(jnp.linalg.pinv(zero), zero)
    assert np.isnan(jnp.linalg.cholesky(-np.eye(2, dtype=np.float32))[1, 1])
    assert jnp.linalg.cond(np.array([[1, 2], [0, 0]], np.float32)) == np.inf
    assert jnp.linalg.matrix_rank(np.ones((3, 3), np.float32)) == 1


# --- derivatives ----------------------------------------------------------------------------------

def _grads(f, *args, order=2):
    with plax.enable_x64(True):
        check_grads(plax.jit(f), args, order)


def test_solver_derivatives():
    a = sample(np.float64, (2, 3, 3)) + 3 * np.eye(3)
    b = sample(np.float64, (2, 3, 2), 1)
    _grads(jnp.linalg.solve, a, b)
    _grads(jnp.linalg.solve, a[0], b[0, :, 0], order=1)
    _grads(jnp.linalg.solve, a[0], b, order=1)  # one matrix, a batch of right-hand sides
    _grads(jnp.linalg.inv, a, order=1)
    _grads(jnp.linalg.det, a)
    _grads(lambda x: jnp.linalg.slogdet(x).logabsdet, a, order=1)
    _grads(jnp.linalg.pinv, sample(np.float64, (4, 2), 2), order=1)
    _grads(jnp.linalg.pinv, sample(np.float64, (2, 4), 3), order=1)
    _grads(lambda x: jnp.linalg.norm(x, "nuc"), sample(np.float64, (3, 3), 4), order=1)


def test_complex_slogdet_derivative():
    re, im = sample(np.float64, (3, 3)), sample(np.float64, (3, 3), 1)

    def f(re, im):
        sign, logdet = jnp.linalg.slogdet(plax.lax.complex(re, im) + 3 * jnp.eye(3))
        return jnp.real(sign), jnp.imag(sign), logdet
    _grads(f, re, im, order=1)


def test_vmap_of_solvers_matches_a_loop():
    a = sample(np.float32, (3, 3, 3)) + 3 * np.eye(3, dtype=np.float32)
    b = sample(np.float32, (3, 3), 1)
    mapped = plax.vmap(jnp.linalg.solve)(a, b)
    np.testing.assert_allclose(mapped, np.stack([np.linalg.solve(a[i], b[i]) for i in range(3)]),
                               rtol=1e-5, atol=1e-5)
    shared = plax.vmap(jnp.linalg.solve, in_axes=(None, 0))(a[0], b)
    np.testing.assert_allclose(shared, np.linalg.solve(a[0], b.T).T, rtol=1e-5, atol=1e-5)
    for f, ref in ((jnp.linalg.det, np.linalg.det), (jnp.linalg.inv, np.linalg.inv),
                   (lambda x: jnp.linalg.slogdet(x).logabsdet,
                    lambda x: np.linalg.slogdet(x).logabsdet)):
        np.testing.assert_allclose(plax.vmap(f, in_axes=2)(a), ref(np.moveaxis(a, 2, 0)),
                                   rtol=1e-4, atol=1e-5)


# --- bad input ------------------------------------------------------------------------------------

BAD = [
    (jnp.linalg.inv, (np.ones((2, 3)),), r"Argument to inv must have shape \[\.\.\., n, n\], "
                                         r"got \(2, 3\)"),
    (jnp.linalg.det, (np.ones(3),), r"jnp.linalg.det: a must be a matrix .* shape \(3,\)"),
    (jnp.linalg.cholesky, (np.ones(3),), r"shape \(3,\)"),
    (jnp.linalg.eigh, (np.ones((2, 3)),), r"got shape \(2, 3\)"),
    (jnp.linalg.svd, (np.ones(3),), r"shape \(3,\)"),
    (jnp.linalg.qr, (np.ones((3, 3)), "bad"), "unsupported mode 'bad'"),
    (jnp.linalg.eigh, (np.eye(2), "X"), "UPLO must be one of"),
    (jnp.linalg.solve, (np.eye(3), np.ones(2)), "inconsistent size for core dimension 'm': 2 vs 3"),
    (jnp.linalg.solve, (np.ones((2, 3)), np.ones(2)), "core dimension 'm': 3 vs 2"),
    (jnp.linalg.norm, (np.ones((3, 3)), 3), "Invalid order 3 for matrix norm"),
    (jnp.linalg.norm, (np.ones(3), "fro"), "Invalid order 'fro' for vector norm"),
    (jnp.linalg.norm, (np.ones((2, 2, 2)), None, (0, 1, 2)), "one axis .* or two"),
    (jnp.linalg.cross, (np.ones(4), np.ones(4)), "needs 3-vectors"),
    (jnp.linalg.outer, (np.ones((2, 2)), np.ones(2)), "takes 1-D arrays"),
    (jnp.linalg.tensorinv, (np.ones((2, 3)), 1), "must equal that of the rest"),
    (jnp.linalg.lstsq, (np.ones(3), np.ones(3)), "a must be two-dimensional"),
    (jnp.linalg.slogdet, (np.eye(2),), None),
]


@pytest.mark.parametrize("fun,args,match", BAD, ids=lambda x: getattr(x, "__name__", ""))
def test_bad_input_is_a_value_error_naming_the_shape(fun, args, match):
    if match is None:
        fun(*args)
        return
    with pytest.raises(ValueError, match=match):
        fun(*(np.asarray(a, np.float32) if isinstance(a, np.ndarray) else a for a in args))


def test_matrix_power_takes_integer_exponents():
    with pytest.raises(TypeError, match="exponent must be an integer"):
        jnp.linalg.matrix_power(np.eye(2, dtype=np.float32), 2.5)
    with pytest.raises(ValueError, match="square"):
        jnp.linalg.matrix_power(np.ones((2, 3), np.float32), 2)

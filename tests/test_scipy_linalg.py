"""`plax.scipy.linalg` against `scipy.linalg` (float32 and float64 under x64, some
complex), under jit; derivatives of expm and of the Cholesky and LU solves; the
`plax.scipy` package and its entry point."""
from __future__ import annotations

import numpy as np
import pytest
from jax_reference import requires_jax, run_reference
from matrix_samples import sample
import scipy.linalg as sla

import plax
from plax.test_util import check_grads

X64 = {np.dtype(np.float64), np.dtype(np.complex128)}


def _everything(a, spd, b):
    import plax.scipy.linalg as psl
    out = {"cholesky": psl.cholesky(spd), "cholesky_lower": psl.cholesky(spd, lower=True),
           "lu_factor": psl.lu_factor(a), "lu": psl.lu(a), "lu_wide": psl.lu(a[:3]),
           "lu_permute_l": psl.lu(a, permute_l=True), "solve": psl.solve(a, b),
           "solve_pos": psl.solve(spd, b, assume_a="pos"),
           "solve_pos_lower": psl.solve(spd, b[:, 0], assume_a="pos", lower=True),
           "inv": psl.inv(a), "det": psl.det(a), "eigh": psl.eigh(spd),
           "eigvals_only": psl.eigh(spd, lower=False, eigvals_only=True),
           "svd": psl.svd(a, compute_uv=False), "svd_gesvd": psl.svd(a, lapack_driver="gesvd"),
           "qr": psl.qr(a[:, :3]), "qr_economic": psl.qr(a[:, :3], mode="economic"),
           "qr_r": psl.qr(a, mode="r"), "qr_pivoting": psl.qr(a, pivoting=True),
           "schur": psl.schur(a), "schur_complex": psl.schur(a, output="complex"),
           "hessenberg": psl.hessenberg(a, calc_q=True),
           "expm_small": psl.expm(0.01 * a), "expm": psl.expm(a), "expm_large": psl.expm(20 * a),
           "sqrtm": psl.sqrtm(spd), "sqrtm_general": psl.sqrtm(a),
           "block_diag": psl.block_diag(a[:2, :3], 1.5, b[:, 0])}
    for lower in (False, True):
        out[f"cho_solve_{lower}"] = psl.cho_solve(psl.cho_factor(spd, lower=lower), b)
    for trans in (0, 1, 2):
        out[f"lu_solve_{trans}"] = psl.lu_solve(psl.lu_factor(a), b, trans=trans)
    for trans in (0, 1, 2, "T", "C"):
        out[f"solve_triangular_{trans}"] = psl.solve_triangular(spd, b[:, 0], trans=trans,
                                                                lower=True)
    return out


@pytest.fixture(scope="module", params=[np.float32, np.float64, np.complex64],
                ids=lambda d: np.dtype(d).name)
def computed(request):
    dtype = np.dtype(request.param)
    a = sample(dtype, (4, 4))
    spd = (a @ np.conj(a.T) + 4 * np.eye(4)).astype(dtype)
    b = sample(dtype, (4, 2), 1)
    with plax.enable_x64(dtype in X64):
        out = plax.tree_util.tree_map(np.asarray, plax.jit(_everything)(a, spd, b))
    return dtype, a, spd, b, out


def close(got, want, dtype, scale=10.0):
    tol = (1e-4 if dtype in (np.float32, np.complex64) else 1e-10) * scale
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_factorizations_and_solves(computed):
    dtype, a, spd, b, out = computed
    close(out["cholesky"], sla.cholesky(spd), dtype)
    close(out["cholesky_lower"], sla.cholesky(spd, lower=True), dtype)
    for lower in (False, True):
        close(out[f"cho_solve_{lower}"], sla.cho_solve(sla.cho_factor(spd, lower=lower), b), dtype)
    packed, pivots = out["lu_factor"]
    want_lu, want_pivots = sla.lu_factor(a)
    close(packed, want_lu, dtype)
    np.testing.assert_array_equal(pivots, want_pivots)
    for trans in (0, 1, 2):
        close(out[f"lu_solve_{trans}"], sla.lu_solve(sla.lu_factor(a), b, trans=trans), dtype)
    for trans in (0, 1, 2, "T", "C"):
        close(out[f"solve_triangular_{trans}"],
              sla.solve_triangular(spd, b[:, 0], trans=trans, lower=True), dtype)
    for name, x in (("lu", a), ("lu_wide", a[:3])):
        for got, want in zip(out[name], sla.lu(x)):
            close(got, want, dtype)
    pl, u = out["lu_permute_l"]
    close(pl @ u, a, dtype)
    close(out["solve"], sla.solve(a, b), dtype)
    close(out["solve_pos"], sla.solve(spd, b, assume_a="pos"), dtype)
    close(out["solve_pos_lower"], sla.solve(spd, b[:, 0], assume_a="pos", lower=True), dtype)
    close(out["inv"], sla.inv(a), dtype)
    close(out["det"], sla.det(a), dtype)


def test_decompositions(computed):
    dtype, a, spd, b, out = computed
    close(out["eigh"][0], sla.eigh(spd)[0], dtype, 100)
    close(out["eigvals_only"], sla.eigh(spd, lower=False, eigvals_only=True), dtype, 100)
    close(out["svd"], sla.svd(a, compute_uv=False), dtype)
    u, s, vh = out["svd_gesvd"]
    close((u * s) @ vh, a, dtype)
    q, r = out["qr"]
    assert q.shape == (4, 4) and r.shape == (4, 3)
    close(q @ r, a[:, :3], dtype)
    assert out["qr_economic"][0].shape == (4, 3)
    r, = out["qr_r"]
    close(np.abs(r), np.abs(sla.qr(a, mode="r")[0]), dtype)
    q, r, p = out["qr_pivoting"]
    np.testing.assert_array_equal(p, sla.qr(a, pivoting=True)[2])
    close(q @ r, a[:, p], dtype)
    for name in ("schur", "schur_complex"):
        t, z = out[name]
        close(z @ t @ np.conj(z.T), a, dtype, 100)
    assert out["schur_complex"][0].dtype.kind == "c"
    np.testing.assert_allclose(np.tril(out["schur_complex"][0], -1), 0, atol=1e-5)
    h, q = out["hessenberg"]
    want_h, want_q = sla.hessenberg(a, calc_q=True)
    close(h, want_h, dtype)
    close(q, want_q, dtype)


def test_matrix_functions_and_block_diag(computed):
    dtype, a, spd, b, out = computed
    for name, x in (("expm_small", 0.01 * a), ("expm", a), ("expm_large", 20 * a)):
        want = sla.expm(x)
        close(out[name] / np.abs(want).max(), want / np.abs(want).max(), dtype, 100)
    close(out["sqrtm"], sla.sqrtm(spd), dtype, 100)
    close(out["sqrtm_general"], sla.sqrtm(a.astype(np.result_type(dtype, np.complex64))),
          dtype, 100)
    assert out["sqrtm"].dtype.kind == "c"
    close(out["block_diag"], sla.block_diag(a[:2, :3], 1.5, b[:, 0]), dtype)


def test_batched_expm_and_derivatives():
    import plax.scipy.linalg as psl
    a = sample(np.float32, (2, 3, 3))
    np.testing.assert_allclose(psl.expm(a), np.stack([sla.expm(x) for x in a]), rtol=1e-4,
                               atol=1e-4)
    with plax.enable_x64(True):
        x = sample(np.float64, (3, 3))
        check_grads(plax.jit(psl.expm), (3 * x,), 1)  # with squarings
        spd = x @ x.T + 3 * np.eye(3)
        rhs = sample(np.float64, (3, 2), 1)
        check_grads(plax.jit(lambda m, r: psl.cho_solve(psl.cho_factor(m), r)), (spd, rhs), 1)
        check_grads(plax.jit(lambda m, r: psl.lu_solve(psl.lu_factor(m), r, trans=1)),
                    (spd, rhs), 1)


def test_the_scipy_package_is_a_plax_module():
    import plax.scipy
    import plax_stdlib.scipy.linalg
    assert plax.scipy.linalg is plax_stdlib.scipy.linalg
    with pytest.raises(AttributeError, match="has no attribute 'nonexistent'"):
        plax.scipy.nonexistent  # noqa: B018


def test_bad_input():
    import plax.scipy.linalg as psl
    with pytest.raises(ValueError, match="assume_a must be one of"):
        psl.solve(np.eye(2), np.ones(2), assume_a="diagonal")
    with pytest.raises(ValueError, match="trans must be"):
        psl.solve_triangular(np.eye(2), np.ones(2), trans=3)
    with pytest.raises(ValueError, match=r"square matrix, got A.shape=\(2, 3\)"):
        psl.expm(np.ones((2, 3)))
    with pytest.raises(NotImplementedError, match="generalized eigenproblem"):
        psl.eigh(np.eye(2), np.eye(2))
    with pytest.raises(ValueError, match="at most 2 dimensions"):
        psl.block_diag(np.ones((2, 2, 2)))


def test_polar_against_scipy_and_its_definition():
    sl, pl = sla, plax.scipy.linalg
    rng = np.random.default_rng(5)
    a = rng.normal(size=(4, 3)).astype(np.float32)
    for side, p_shape in (("right", (3, 3)), ("left", (4, 4))):
        for method in ("qdwh", "svd"):
            x = a.T if method == "qdwh" and side == "left" else a  # QDWH's pairings, as JAX's
            u, p = pl.polar(x, side, method=method)
            us, ps = sl.polar(x, side)
            assert u.shape == x.shape and p.shape == (p_shape if x is a else (3, 3))
            np.testing.assert_allclose(u, us, atol=1e-5)
            np.testing.assert_allclose(p, ps, atol=1e-5)
    with pytest.raises(NotImplementedError, match="only supports"):
        pl.polar(a, "left")  # a tall matrix's left decomposition: not by QDWH, as in JAX
    b = (rng.normal(size=(2, 3, 3)) + 1j * rng.normal(size=(2, 3, 3))).astype(np.complex64)
    u, p = pl.polar(b)
    np.testing.assert_allclose(u @ p, b, atol=1e-5)
    np.testing.assert_allclose(np.conj(np.swapaxes(u, -1, -2)) @ u,
                               np.broadcast_to(np.eye(3), b.shape), atol=1e-5)
    assert np.all(np.linalg.eigvalsh(np.asarray(p)) > -1e-5)
    for bad, match in (({"side": "up"}, "side"), ({"method": "newton"}, "Unknown polar")):
        with pytest.raises(ValueError, match=match):
            pl.polar(a, **bad)
    with pytest.raises(ValueError):
        pl.polar(a[0])


def test_expm_frechet_against_scipy_and_the_jvp_of_expm():
    sl, pl = sla, plax.scipy.linalg
    rng = np.random.default_rng(6)
    A, E = rng.normal(size=(2, 3, 3)).astype(np.float32)
    expm_a, frechet = pl.expm_frechet(A, E)
    want_expm, want_frechet = sl.expm_frechet(A, E)
    np.testing.assert_allclose(expm_a, want_expm, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(frechet, want_frechet, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(plax.jvp(pl.expm, (A,), (E,))[1], want_frechet, rtol=1e-4,
                               atol=1e-5)
    batched = pl.expm_frechet(np.stack([A, E]), np.stack([E, A]), compute_expm=False)
    np.testing.assert_allclose(batched[1], sl.expm_frechet(E, A)[1], rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="same shape"):
        pl.expm_frechet(A, np.eye(2, dtype=np.float32))
    with pytest.raises(ValueError):
        pl.expm_frechet(A[0], E[0])


def test_eigh_tridiagonal_against_scipy():
    pl = plax.scipy.linalg
    rng = np.random.default_rng(7)
    d, e = rng.normal(size=6).astype(np.float32), rng.normal(size=5).astype(np.float32)
    np.testing.assert_allclose(pl.eigh_tridiagonal(d, e, eigvals_only=True),
                               sla.eigh_tridiagonal(d, e, eigvals_only=True), atol=1e-5)
    w, v = pl.eigh_tridiagonal(d, e, select="i", select_range=(1, 3))
    ws, vs = sla.eigh_tridiagonal(d, e, select="i", select_range=(1, 3))
    np.testing.assert_allclose(w, ws, atol=1e-5)
    np.testing.assert_allclose(np.abs(v), np.abs(vs), atol=1e-5)  # up to each vector's sign
    dc, ec = d.astype(np.complex64), (e + 1j * e[::-1]).astype(np.complex64)
    w, v = pl.eigh_tridiagonal(dc, ec)
    t = np.diag(dc) + np.diag(ec, 1) + np.diag(ec.conj(), -1)
    assert w.dtype == np.float32
    np.testing.assert_allclose(t @ v, v * np.asarray(w), atol=1e-5)
    for kwargs, error, match in [
            ({"select": "i"}, ValueError, "select_range must be specified"),
            ({"select": "i", "select_range": (3, 1)}, ValueError, "empty index range"),
            ({"select": "v", "select_range": (0.0, 1.0)}, NotImplementedError, "select='v'"),
            ({"select": "x"}, ValueError, "select must")]:
        with pytest.raises(error, match=match):
            pl.eigh_tridiagonal(d, e, **kwargs)
    with pytest.raises(TypeError, match="same dtype"):
        pl.eigh_tridiagonal(d, e.astype(np.float16))
    with pytest.raises(TypeError, match="float32 and float64"):
        pl.eigh_tridiagonal(d.astype(np.int32), e.astype(np.int32))
    with pytest.raises(ValueError, match="shape"):
        pl.eigh_tridiagonal(d, e[:3])


def test_eigh_tridiagonal_as_jax_computes_it():
    """Bisection and inverse iteration (test_bits_vs_jax.py checks the bits): a cluster
    of equal eigenvalues gets orthonormal vectors; `key` draws the starting vectors, so
    another key may flip signs only; a 1x1 problem returns at once (any `select`)."""
    pl = plax.scipy.linalg
    d = np.array([2.0, 2.0, 2.0, 2.0, 5.0], np.float32)
    e = np.array([0.0, 0.0, 1e-8, 0.0], np.float32)
    w, v = pl.eigh_tridiagonal(d, e)
    np.testing.assert_allclose(w, [2, 2, 2, 2, 5], atol=1e-6)
    np.testing.assert_allclose(np.asarray(v).T @ np.asarray(v), np.eye(5), atol=1e-6)
    d, e = np.arange(1.0, 6.0, dtype=np.float32), np.ones(4, np.float32)
    _, v1 = pl.eigh_tridiagonal(d, e, key=plax.random.key(0))
    _, v2 = pl.eigh_tridiagonal(d, e, key=plax.random.key(1))
    np.testing.assert_allclose(np.abs(v1), np.abs(v2), atol=1e-5)
    w, v = pl.eigh_tridiagonal(np.array([3.0], np.float32), np.zeros(0, np.float32),
                               select="v")
    assert w.tolist() == [3.0] and v.tolist() == [[1.0]]


@pytest.mark.parametrize("method", ["schur", "eigen"])
def test_solve_sylvester_against_scipy(method):
    pl = plax.scipy.linalg
    rng = np.random.default_rng(8)
    A, B, C = (rng.normal(size=s).astype(np.float32) for s in ((3, 3), (2, 2), (3, 2)))
    X = pl.solve_sylvester(A, B, C, method=method)
    assert X.dtype == np.float32
    np.testing.assert_allclose(X, sla.solve_sylvester(A, B, C), rtol=1e-4, atol=1e-5)
    Ac = (A + 1j * A.T).astype(np.complex64)
    Xc = np.asarray(pl.solve_sylvester(Ac, B, C, method=method))
    np.testing.assert_allclose(Ac @ Xc + Xc @ B, C, atol=1e-5)
    batched = pl.solve_sylvester(np.stack([A, 2 * A]), B, C, method=method)
    np.testing.assert_allclose(batched[1], sla.solve_sylvester(2 * A, B, C), rtol=1e-4,
                               atol=1e-5)
    # λ(A) + μ(B) = 0: no unique solution, NaN as JAX
    eye = np.eye(2, dtype=np.float32)
    assert np.isnan(pl.solve_sylvester(eye, -eye, np.ones((2, 2), np.float32),
                                       method=method)).all()
    with pytest.raises(ValueError, match="Incompatible shapes"):
        pl.solve_sylvester(A, B, C.T, method=method)


def test_solve_sylvester_bad_method():
    with pytest.raises(ValueError, match="Unrecognized method"):
        plax.scipy.linalg.solve_sylvester(np.eye(2), np.eye(2), np.eye(2), method="kron")


@pytest.mark.parametrize("shape", [(4, 3), (3, 4)])
def test_qr_multiply_against_scipy(shape):
    pl = plax.scipy.linalg
    rng = np.random.default_rng(9)
    a = rng.normal(size=shape).astype(np.float32)
    m, k = shape[0], min(shape)
    for mode, c_shape in [("left", (k, 2)), ("right", (2, m)), ("left", (k,)), ("right", (m,))]:
        c = rng.normal(size=c_shape).astype(np.float32)
        for pivoting in (False, True):
            for conjugate in (False, True):
                got = pl.qr_multiply(a, c, mode, pivoting=pivoting, conjugate=conjugate)
                want = sla.qr_multiply(a, c, mode, pivoting=pivoting, conjugate=conjugate)
                assert len(got) == len(want)
                for g, w in zip(got, want):
                    np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    ac = (a + 1j * a[::-1]).astype(np.complex64)
    q, _ = np.linalg.qr(ac)
    got, _ = pl.qr_multiply(ac, np.eye(k, dtype=np.complex64), "left", conjugate=True)
    np.testing.assert_allclose(np.abs(got), np.abs(np.conj(q)), atol=1e-5)
    with pytest.raises(ValueError, match="mode must be"):
        pl.qr_multiply(a, a, "both")
    with pytest.raises(ValueError, match="not compatible for c @ Q"):
        pl.qr_multiply(a, np.ones((2, m + 1), np.float32))
    with pytest.raises(ValueError, match="not compatible for Q @ c"):
        pl.qr_multiply(a, np.ones((k + 1, 2), np.float32), "left")


def test_rsf2csf_against_scipy():
    pl = plax.scipy.linalg
    rng = np.random.default_rng(10)
    a = rng.normal(size=(5, 5))
    t, z = sla.schur(a)
    tc, zc = (np.asarray(x) for x in pl.rsf2csf(t.astype(np.float32), z.astype(np.float32)))
    want_t, want_z = sla.rsf2csf(t, z)
    assert tc.dtype == np.complex64
    assert np.abs(np.tril(tc, -1)).max() == 0
    np.testing.assert_allclose(zc @ tc @ zc.conj().T, a, atol=1e-5)
    np.testing.assert_allclose(tc, want_t, atol=1e-5)
    np.testing.assert_allclose(zc, want_z, atol=1e-5)
    batched, _ = pl.rsf2csf(np.stack([t, t]).astype(np.float32), z.astype(np.float32))
    np.testing.assert_allclose(batched[1], want_t, atol=1e-5)
    np.testing.assert_allclose(plax.jit(pl.rsf2csf)(t, z)[0], want_t, atol=1e-5)
    with pytest.raises(ValueError, match="'T' must be square"):
        pl.rsf2csf(t[:3], z)
    with pytest.raises(ValueError, match="shapes must match"):
        pl.rsf2csf(t, z[:3, :3])


def test_funm_against_scipy_and_known_functions():
    pl, jnp = plax.scipy.linalg, plax.numpy
    rng = np.random.default_rng(11)
    a = (rng.normal(size=(5, 5)) / 2).astype(np.float32)
    f = pl.funm(a, jnp.exp)
    assert f.dtype == np.complex64  # as JAX's
    np.testing.assert_allclose(f, sla.expm(a), rtol=1e-5, atol=2e-6)
    np.testing.assert_allclose(pl.funm(a, lambda x: x ** 2), a @ a, rtol=1e-5, atol=2e-6)
    f, err = pl.funm(a, jnp.sin, disp=False)
    want, want_err = sla.funm(a, np.sin, disp=False)
    np.testing.assert_allclose(f, want, rtol=1e-5, atol=2e-6)
    np.testing.assert_allclose(err, want_err, rtol=0.1)
    np.testing.assert_allclose(plax.jit(lambda m: pl.funm(m, jnp.exp))(a), sla.expm(a),
                               rtol=1e-5, atol=2e-6)
    np.testing.assert_allclose(pl.funm(np.eye(3, dtype=np.float32), jnp.exp),
                               np.e * np.eye(3), rtol=1e-6)
    with pytest.raises(ValueError):
        pl.funm(np.ones((2, 3), np.float32), jnp.exp)
    with pytest.raises(ValueError, match="square array_like"):
        pl.funm(np.ones((2, 2, 2), np.float32), jnp.exp)


_MATRIX_FUNCTION_ERRORS = """
import importlib
sla = importlib.import_module(jax.__name__ + ".scipy.linalg")
qdwh = importlib.import_module(jax.__name__ + ".lax.linalg").qdwh
a, wide = np.ones((3, 3), np.float32), np.ones((2, 4), np.float32)
cases = {
    "expm_vector": lambda: sla.expm(np.ones(3, np.float32)),
    "expm_not_square": lambda: sla.expm(wide),
    "expm_float16": lambda: sla.expm(np.eye(2, dtype=np.float16)),
    "expm_frechet_shapes": lambda: sla.expm_frechet(a, a[:2, :2]),
    "expm_frechet_E_vector": lambda: sla.expm_frechet(a, a[0]),
    "polar_vector": lambda: sla.polar(a[0]),
    "polar_side": lambda: sla.polar(a, side="up"),
    "polar_method": lambda: sla.polar(a, method="newton"),
    "polar_int": lambda: sla.polar(np.eye(3, dtype=np.int32)),
    "polar_qdwh_wide_right": lambda: sla.polar(wide),
    "polar_qdwh_tall_left": lambda: sla.polar(wide.T, side="left"),
    "qdwh_wide": lambda: qdwh(wide),
    "rsf2csf_T": lambda: sla.rsf2csf(a[:2], a),
    "rsf2csf_Z": lambda: sla.rsf2csf(a, a[:, :2]),
    "rsf2csf_shapes": lambda: sla.rsf2csf(a, np.eye(2, dtype=np.float32)),
    "schur_output": lambda: sla.schur(a, output="quasi"),
    "sylvester_shapes": lambda: sla.solve_sylvester(a, a[:2, :2], a),
    "sylvester_method": lambda: sla.solve_sylvester(a, a, a, method="kron"),
}
result = {}
for name, case in cases.items():
    try:
        case()
        result[name] = "no error"
    except Exception as e:
        result[name] = [type(e).__name__, str(e).splitlines()[0]]
"""


@requires_jax
def test_matrix_function_errors_match_jax():
    """JAX's classes and messages for bad input to expm, expm_frechet, polar, qdwh,
    rsf2csf, schur and solve_sylvester."""
    assert run_reference(_MATRIX_FUNCTION_ERRORS, library="plax") == run_reference(
        _MATRIX_FUNCTION_ERRORS)

"""plax.scipy.sparse.linalg against SciPy and NumPy (converged and stopped by maxiter,
preconditioned, complex, pytrees, non-symmetric A for bicgstab and gmres), implicit
derivatives against their closed forms and finite differences, jit and vmap, bad
input, and JAX's non-converged answers and info in one subprocess."""
import functools

import numpy as np
import pytest
from jax_differential import assert_same_as_jax, requires_jax

import plax
from plax import numpy as jnp
from plax.experimental import sparse
from plax.scipy.sparse import linalg as psl

ssl = pytest.importorskip("scipy.sparse.linalg")

RNG = np.random.default_rng(5)
N = 5
_Q = RNG.normal(size=(N, N))
SPD = _Q @ _Q.T + N * np.eye(N)
GENERAL = RNG.normal(size=(N, N)) + 3 * np.eye(N)
_H = RNG.normal(size=(N, N)) + 1j * RNG.normal(size=(N, N))
HPD = _H @ _H.conj().T + N * np.eye(N)
B = RNG.normal(size=N)
BC = B + 1j * RNG.normal(size=N)
JACOBI = np.diag(1 / np.diag(SPD))
GENERAL_JACOBI = np.diag(1 / np.diag(GENERAL))


def _close(got, want, tol=1e-9):
    np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol)


def _stopped(scipy_solver, A, b, **kwargs):
    """SciPy's iterate after the iterations asked for (a tolerance it cannot reach)."""
    x, info = scipy_solver(A, b, rtol=1e-300, atol=0.0, **kwargs)
    assert info > 0  # not converged: the iteration count decided
    return x


def test_cg_and_bicgstab_against_scipy():
    with plax.enable_x64(True):
        x, info = psl.cg(SPD, B, tol=1e-12)
        assert info is None
        _close(x, np.linalg.solve(SPD, B))
        _close(psl.cg(SPD, B, maxiter=2)[0], _stopped(ssl.cg, SPD, B, maxiter=2))
        _close(psl.cg(SPD, B, maxiter=2, M=JACOBI, x0=B)[0],
               _stopped(ssl.cg, SPD, B, maxiter=2, M=JACOBI, x0=B))
        _close(psl.cg(HPD, BC, tol=1e-12)[0], np.linalg.solve(HPD, BC))
        x, info = psl.bicgstab(GENERAL, B, tol=1e-12)
        assert info is None
        _close(x, np.linalg.solve(GENERAL, B))
        _close(psl.bicgstab(GENERAL, B, maxiter=2)[0],
               _stopped(ssl.bicgstab, GENERAL, B, maxiter=2))
        _close(psl.bicgstab(HPD + GENERAL, BC, maxiter=2, M=GENERAL_JACOBI)[0],
               _stopped(ssl.bicgstab, HPD + GENERAL, BC, maxiter=2, M=GENERAL_JACOBI))
        # tol and atol: stops once |r| <= max(tol |b|, atol), SciPy's rule
        for tol, atol in ((0.0, 0.1), (0.1, 0.0)):
            x = psl.cg(SPD, B, tol=tol, atol=atol)[0]
            _close(x, ssl.cg(SPD, B, rtol=tol, atol=atol)[0])
            assert 1e-6 < np.linalg.norm(SPD @ x - B) <= max(tol * np.linalg.norm(B), atol)


def _blocks(t):
    """A block-diagonal operator on a pytree: SPD on 'a', 2 I on 'b'."""
    return {"a": jnp.dot(SPD, t["a"]), "b": 2 * t["b"]}


def test_pytrees_and_functions():
    b = {"a": B, "b": np.arange(1.0, 4.0)}
    want = {"a": np.linalg.solve(SPD, B), "b": np.arange(1.0, 4.0) / 2}
    with plax.enable_x64(True):
        for solver in (psl.cg, psl.bicgstab):
            x, _ = solver(_blocks, b, tol=1e-12)
            for key in want:
                _close(x[key], want[key])
        with pytest.raises(ValueError, match="matching tree structure"):
            psl.cg(_blocks, b, x0={"a": B})
        assert float(psl.cg(lambda v: 4 * v, 2.0)[0]) == pytest.approx(0.5)
        # any operand with @, as a sparse matrix
        _close(psl.cg(sparse.BCOO.fromdense(SPD), B, tol=1e-12)[0], np.linalg.solve(SPD, B))


def test_gmres_against_scipy():
    with plax.enable_x64(True):
        batched = plax.jit(functools.partial(psl.gmres, restart=2, maxiter=1))
        x, info = batched(GENERAL, B)
        assert int(info) == 0
        _close(x, _stopped(ssl.gmres, GENERAL, B, restart=2, maxiter=1))
        incremental = plax.jit(functools.partial(psl.gmres, restart=3, maxiter=2,
                                                 solve_method="incremental"))
        x, _ = incremental(HPD + GENERAL, BC)
        _close(x, _stopped(ssl.gmres, HPD + GENERAL, BC, restart=3, maxiter=2))
        # converged, preconditioned, on a pytree and a function, stopping inside a cycle
        x, info = psl.gmres(_blocks, {"a": B, "b": np.ones(2)}, tol=1e-11, restart=4,
                            M=lambda t: {"a": jnp.dot(JACOBI, t["a"]), "b": t["b"]},
                            solve_method="incremental")
        _close(x["a"], np.linalg.solve(SPD, B))
        _close(x["b"], np.full(2, 0.5))
        # b = 0 from a nonzero x0, no atol: x goes to 0 (JAX's stays at x0)
        x, _ = psl.gmres(2 * np.eye(3), np.zeros(3), x0=np.ones(3), solve_method="incremental")
        _close(x, np.zeros(3))
        # a singular A: no least-squares point, NaN and info -1 (as in JAX)
        x, info = batched(np.zeros((3, 3)), np.ones(3))
        assert np.isnan(x).all() and int(info) == -1


@pytest.mark.parametrize("solver,A", [(psl.cg, SPD), (psl.bicgstab, GENERAL),
                                      (psl.gmres, GENERAL)], ids=["cg", "bicgstab", "gmres"])
def test_implicit_derivatives(solver, A):
    """d/db and d/ds of |x|² for (A + s I) x = b, A a function closing over s: the
    closed forms 2 (A+sI)⁻ᵀ x and -2 xᵀ (A+sI)⁻¹ x, and finite differences."""
    def loss(b, s):
        x, _ = solver(lambda v: jnp.dot(A, v) + s * v, b, tol=1e-12)
        return jnp.sum(x * x)

    s = 0.5
    shifted = A + s * np.eye(N)
    x = np.linalg.solve(shifted, B)

    def loss_np(s):
        return np.sum(np.linalg.solve(A + s * np.eye(N), B) ** 2)

    with plax.enable_x64(True):
        grad_b, grad_s = plax.jit(plax.grad(loss, argnums=(0, 1)))(B, s)
        _close(grad_b, 2 * np.linalg.solve(shifted.T, x), 1e-7)
        _close(grad_s, -2 * x @ np.linalg.solve(shifted, x), 1e-7)
        _close(grad_s, (loss_np(s + 1e-6) - loss_np(s - 1e-6)) / 2e-6, 1e-6)
        tangent = plax.jvp(lambda b: solver(A, b, tol=1e-12)[0], (B,), (B,))[1]
        _close(tangent, np.linalg.solve(A, B), 1e-7)


def test_derivative_in_the_matrix():
    """d/dA of Σ x for A x = b: -λ xᵀ with Aᵀ λ = 1."""
    with plax.enable_x64(True):
        grad = plax.grad(lambda A: jnp.sum(psl.cg(A, B, tol=1e-12)[0]))(SPD)
    _close(grad, -np.outer(np.linalg.solve(SPD.T, np.ones(N)), np.linalg.solve(SPD, B)))


def test_vmap_over_b_and_A():
    bs = RNG.normal(size=(3, N)).astype(np.float32)
    As = np.stack([SPD, SPD + np.eye(N)]).astype(np.float32)
    for solver in (psl.cg, psl.gmres):
        x = plax.vmap(lambda b, solver=solver: solver(SPD.astype(np.float32), b)[0])(bs)
        np.testing.assert_allclose(x, np.linalg.solve(SPD, bs.T).T, rtol=1e-4, atol=1e-4)
    x = plax.vmap(lambda a: psl.bicgstab(a, B.astype(np.float32))[0])(As)
    np.testing.assert_allclose(x, np.linalg.solve(As, B), rtol=1e-4, atol=1e-4)


def test_bad_input():
    b = np.ones(3, np.float32)
    for solver in (psl.cg, psl.bicgstab, psl.gmres):
        with pytest.raises(TypeError, match=r"A of shape \(3, 3\) cannot multiply b of "
                                            r"shape\(s\) \[\(4,\)\]"):
            solver(np.eye(3), np.ones(4))
        with pytest.raises(ValueError, match=r"must be a square matrix, but has shape: \(3, 4\)"):
            solver(np.ones((3, 4)), b)
        with pytest.raises(TypeError, match="must be either a function or ndarray"):
            solver([[1.0, 0.0], [0.0, 1.0]], np.ones(2))
        with pytest.raises(ValueError, match=r"matching shapes: \[\(4,\)\] vs \[\(3,\)\]"):
            solver(np.eye(3), b, x0=np.ones(4))
        with pytest.raises(ValueError, match="matching tree structure"):
            solver(np.eye(3), b, x0=(b,))
        with pytest.raises(TypeError, match="floating or complex dtypes, got int"):
            solver(np.eye(3), np.arange(3))
        with pytest.raises(TypeError, match=r"M of shape \(2, 2\) cannot multiply"):
            solver(np.eye(3), b, M=np.eye(2))
        with pytest.raises(TypeError, match="matvec output and b must have identical types"):
            solver(lambda v: v[:2], b)
    with pytest.raises(ValueError, match="invalid solve_method 'qr'"):
        psl.gmres(np.eye(3), b, solve_method="qr")


_JAX_BODY = """
import importlib
sl = importlib.import_module(lib.__name__ + ".scipy.sparse.linalg")
A, G, b = inputs["A"], inputs["G"], inputs["b"]
x, info = sl.cg(A, b, maxiter=2)
results["cg"] = x
results["cg_info_is_none"] = np.asarray(info is None)
x, info = sl.bicgstab(G, b, maxiter=1, M=np.diag(1 / np.diag(G)))
results["bicgstab"] = x
results["bicgstab_info_is_none"] = np.asarray(info is None)
x, info = sl.gmres(G, b, restart=2, maxiter=1, solve_method="incremental")
results["gmres"], results["gmres_info"] = x, info
x, info = sl.gmres(lambda v: 0 * v, b, restart=2, maxiter=1)
results["singular"], results["singular_info"] = x, info
results["grad_b"] = lib.grad(lambda c: jnp.sum(sl.cg(A, c)[0] ** 2))(b)
"""


@requires_jax
def test_matches_jax():
    inputs = {"A": SPD.astype(np.float32), "G": GENERAL.astype(np.float32),
              "b": B.astype(np.float32)}
    assert_same_as_jax(_JAX_BODY, inputs, rtol=1e-4, atol=1e-5)

"""lax.custom_linear_solve and lax.custom_root against NumPy's solutions and closed-form
derivatives (x = A⁻¹b: dx = A⁻¹(db - dA x); x = √a: dx = da / 2√a), with solvers that
cannot be differentiated themselves (while loops)."""
import numpy as np
import pytest

import plax
from plax import lax
from plax import numpy as jnp
from plax.test_util import check_grads

F32 = np.float32
RNG = np.random.default_rng(5)
A = (RNG.normal(size=(3, 3)) + 4 * np.eye(3)).astype(F32)
B = RNG.normal(size=(3,)).astype(F32)


def _jacobi(matvec, b, diag, steps=60):
    """x with matvec(x) = b by Jacobi iterations in a while_loop (which reverse mode
    cannot differentiate: only the implicit rule can)."""
    def body(state):
        i, x = state
        return i + 1, x + (b - matvec(x)) / diag
    return lax.while_loop(lambda s: s[0] < steps, body, (0, jnp.zeros_like(b)))[1]


def solve_with(a, b, symmetric=False):
    diag = jnp.diagonal(a)
    matvec = lambda x: a @ x  # noqa: E731
    solve = lambda mv, r: _jacobi(mv, r, diag)  # noqa: E731
    transpose = None if symmetric else (lambda vm, r: _jacobi(vm, r, diag))
    return lax.custom_linear_solve(matvec, b, solve, transpose, symmetric=symmetric)


def test_solution_and_derivatives():
    x = np.linalg.solve(A.astype(np.float64), B)
    np.testing.assert_allclose(solve_with(A, B), x, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(plax.jit(solve_with)(A, B), x, rtol=1e-5, atol=1e-5)
    inv = np.linalg.inv(A.astype(np.float64))
    # d(sum x)/db = A⁻ᵀ 1 and d(sum x)/dA = -A⁻ᵀ 1 xᵀ
    ga, gb = plax.grad(lambda a, b: solve_with(a, b).sum(), (0, 1))(A, B)
    np.testing.assert_allclose(gb, inv.T @ np.ones(3), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ga, -np.outer(inv.T @ np.ones(3), x), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(plax.jacfwd(solve_with, 1)(A, B), inv, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(plax.jacrev(solve_with, 1)(A, B), inv, rtol=1e-4, atol=1e-5)
    check_grads(lambda b: solve_with(A, b), (B,), order=2, modes=("fwd", "rev"),
                atol=1e-2, rtol=1e-2)


def test_symmetric_and_pytrees():
    s = (A @ A.T + np.eye(3, dtype=F32)).astype(F32)
    inv = np.linalg.inv(s.astype(np.float64))
    grad = plax.grad(lambda b: lax.custom_linear_solve(
        lambda x: s @ x, b, lambda mv, r: jnp.linalg.solve(s, r), symmetric=True).sum())(B)
    np.testing.assert_allclose(grad, inv @ np.ones(3), rtol=1e-4, atol=1e-5)
    # b as a pytree: two blocks of a block-diagonal system
    tree = {"u": B[:2], "v": B[2:]}
    out = lax.custom_linear_solve(lambda t: {"u": t["u"] * 2.0, "v": t["v"] * 4.0}, tree,
                                  lambda mv, t: {"u": t["u"] / 2.0, "v": t["v"] / 4.0},
                                  symmetric=True)
    np.testing.assert_allclose(out["u"], B[:2] / 2)
    np.testing.assert_allclose(out["v"], B[2:] / 4)


def test_vmap_over_the_matrix_and_the_right_side():
    bs = np.stack([B, 2 * B - 1])
    as_ = np.stack([A, A.T])
    want = np.stack([np.linalg.solve(a, b) for a, b in zip(as_, bs)])
    np.testing.assert_allclose(plax.vmap(solve_with)(as_, bs), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(plax.vmap(solve_with, (None, 0))(A, bs),
                               np.linalg.solve(A, bs.T).T, rtol=1e-4, atol=1e-5)
    grads = plax.vmap(plax.grad(lambda a, b: solve_with(a, b).sum()))(as_, bs)
    for a, b, g in zip(as_, bs, grads):
        np.testing.assert_allclose(g, plax.grad(lambda a, b: solve_with(a, b).sum())(a, b),
                                   rtol=1e-4, atol=1e-5)


def test_bad_uses():
    solve = lambda mv, r: jnp.linalg.solve(A, r)  # noqa: E731
    with pytest.raises(TypeError, match="transpose_solve required"):
        plax.grad(lambda b: lax.custom_linear_solve(lambda x: A @ x, b, solve).sum())(B)
    with pytest.raises(TypeError, match="matvec output"):
        lax.custom_linear_solve(lambda x: x[:2], B, solve)
    with pytest.raises(TypeError, match="solve output"):
        lax.custom_linear_solve(lambda x: A @ x, B, lambda mv, r: r[:2])
    with pytest.raises(TypeError, match="matvec must be callable"):
        lax.custom_linear_solve(A, B, solve)
    with pytest.raises(NotImplementedError, match="has_aux"):
        lax.custom_linear_solve(lambda x: A @ x, B, solve, has_aux=True)


def _newton(f, x0):
    def body(state):
        i, x = state
        return i + 1, x - f(x) / plax.grad(f)(x)
    return lax.while_loop(lambda s: s[0] < 30, body, (0, x0))[1]


def sqrt_by_newton(a):
    return lax.custom_root(lambda x: x * x - a, F32(1.0), _newton, lambda g, y: y / g(1.0))


def test_custom_root_scalar():
    a = np.array([0.5, 2.0, 9.0], F32)
    np.testing.assert_allclose(plax.vmap(sqrt_by_newton)(a), np.sqrt(a), rtol=1e-6)
    np.testing.assert_allclose(plax.jit(plax.vmap(plax.grad(sqrt_by_newton)))(a),
                               0.5 / np.sqrt(a), rtol=1e-5)
    np.testing.assert_allclose(plax.grad(plax.grad(sqrt_by_newton))(F32(4.0)),
                               -0.25 * 4.0 ** -1.5, rtol=1e-4)
    np.testing.assert_allclose(plax.jacfwd(sqrt_by_newton)(F32(4.0)), 0.25, rtol=1e-5)


def test_custom_root_of_a_linear_system():
    def root_solve(b, a):
        tangent_solve = lambda g, y: jnp.linalg.solve(plax.jacfwd(g)(y), y)  # noqa: E731
        return lax.custom_root(lambda x: a @ x - b, jnp.zeros(3, F32),
                               lambda f, x0: _jacobi(lambda x: a @ x, b, jnp.diagonal(a)),
                               tangent_solve)
    inv = np.linalg.inv(A.astype(np.float64))
    x = inv @ B
    np.testing.assert_allclose(root_solve(B, A), x, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(plax.jacrev(root_solve)(B, A), inv, rtol=1e-4, atol=1e-5)
    ga = plax.grad(lambda b, a: root_solve(b, a).sum(), 1)(B, A)
    np.testing.assert_allclose(ga, -np.outer(inv.T @ np.ones(3), x), rtol=1e-4, atol=1e-5)


def test_custom_root_bad_uses():
    with pytest.raises(TypeError, match="f output and initial_guess"):
        lax.custom_root(lambda x: x[:2], B, _newton, lambda g, y: y)
    with pytest.raises(TypeError, match="tangent_solve must be callable"):
        lax.custom_root(lambda x: x, B, _newton, None)
    with pytest.raises(NotImplementedError, match="has_aux"):
        lax.custom_root(lambda x: x, B, _newton, lambda g, y: y, has_aux=True)

"""BiCGSTAB (van der Vorst) for any nonsingular A: a bi-conjugate gradient step
against the shadow residual r̂ = r₀, then a one-dimensional minimal-residual step
that smooths the convergence."""
from __future__ import annotations

from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.scipy.sparse.linalg import problem
from plax_stdlib.scipy.sparse.linalg.vectors import add, real_vdot, scale, sub, vdot, where


def _iterate(A, b, x0, *, tol, atol, maxiter, M):
    """Until |r|² ≤ max(tol²|b|², atol²), maxiter steps, or a breakdown (ρ, α or ω
    zero: the recurrence cannot go on)."""
    threshold = jnp.maximum(jnp.square(tol) * real_vdot(b, b), jnp.square(atol))
    precondition = problem.preconditioner(M)

    def unconverged(state):
        _, r, *_, k, broken = state
        return (real_vdot(r, r) > threshold) & (k < maxiter) & ~broken

    def step(state):
        x, r, shadow, rho, alpha, omega, p, v, k, _ = state
        rho_next = vdot(shadow, r)
        beta = (rho_next / rho) * (alpha / omega)
        p = add(r, scale(beta, sub(p, scale(omega, v))))
        p_hat = precondition(p)
        v = A(p_hat)
        alpha = rho_next / vdot(shadow, v)
        s = sub(r, scale(alpha, v))
        half_step = add(x, scale(alpha, p_hat))
        s_small = real_vdot(s, s) < threshold
        s_hat = precondition(s)
        t = A(s_hat)
        omega = vdot(t, s) / vdot(t, t)
        x = where(s_small, half_step, add(half_step, scale(omega, s_hat)))
        r = where(s_small, s, sub(s, scale(omega, t)))
        broken = (rho_next == 0) | (alpha == 0) | (omega == 0)
        return x, r, shadow, rho_next, alpha, omega, p, v, k + 1, broken

    r = sub(b, A(x0))
    one = jnp.ones((), problem.scalar_dtype(b))
    zeros = scale(0, r)
    x, *_ = lax.while_loop(unconverged, step,
                           (x0, r, r, one, one, one, zeros, zeros, 0, jnp.bool_(False)))
    return x


def bicgstab(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """Solve A x = b by BiCGSTAB, A any nonsingular matrix or linear function, M an
    approximate inverse of A. Returns (x, None): as in JAX, no convergence information
    is reported."""
    system = problem.system("bicgstab", A, b, x0, M)
    maxiter = problem.default_maxiter(maxiter, system.size)

    def solve(matvec, rhs):
        return _iterate(matvec, rhs, system.x0, tol=tol, atol=atol, maxiter=maxiter,
                        M=system.M)

    return problem.solve_implicitly(system, solve, symmetric=False), None

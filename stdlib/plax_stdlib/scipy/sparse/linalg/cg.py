"""Conjugate gradients for Hermitian positive definite A: x moves along directions
that are A-conjugate, each step minimizing the A-norm of the error."""
from __future__ import annotations

from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.scipy.sparse.linalg import problem
from plax_stdlib.scipy.sparse.linalg.vectors import add, real_vdot, scale, sub


def _iterate(A, b, x0, *, tol, atol, maxiter, M):
    """Until |r|² ≤ max(tol²|b|², atol²) (with M None, the γ = <r, r> the step has
    anyway) or maxiter steps."""
    threshold = jnp.maximum(jnp.square(tol) * real_vdot(b, b), jnp.square(atol))
    precondition = problem.preconditioner(M)

    def unconverged(state):
        _, r, gamma, _, k = state
        residual = gamma if M is None else real_vdot(r, r)
        return (residual > threshold) & (k < maxiter)

    def step(state):
        x, r, gamma, p, k = state
        Ap = A(p)
        alpha = gamma / real_vdot(p, Ap)
        x, r = add(x, scale(alpha, p)), sub(r, scale(alpha, Ap))
        z = precondition(r)
        gamma_next = real_vdot(r, z)
        return x, r, gamma_next, add(z, scale(gamma_next / gamma, p)), k + 1

    r = sub(b, A(x0))
    z = precondition(r)
    x, *_ = lax.while_loop(unconverged, step, (x0, r, real_vdot(r, z), z, 0))
    return x


def cg(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """Solve A x = b by conjugate gradients, A Hermitian positive definite (a matrix or a
    linear function), M an approximate inverse of A. Returns (x, None): as in JAX, no
    convergence information is reported."""
    system = problem.system("cg", A, b, x0, M)
    maxiter = problem.default_maxiter(maxiter, system.size)

    def solve(matvec, rhs):
        return _iterate(matvec, rhs, system.x0, tol=tol, atol=atol, maxiter=maxiter,
                        M=system.M)

    return problem.solve_implicitly(system, solve, symmetric=problem.all_real(system.b)), None

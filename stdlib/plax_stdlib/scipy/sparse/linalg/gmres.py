"""Restarted GMRES for any nonsingular A, left-preconditioned by M: each cycle builds
an orthonormal basis of the Krylov space of M A (Arnoldi, classical Gram-Schmidt done
twice), reduces its Hessenberg matrix to triangular by Givens rotations as it grows,
and moves x to the point of least preconditioned residual in that space.

'incremental' ends a cycle early once the rotations' residual estimate reaches the
tolerance; 'batched' always fills the basis (unless it becomes invariant). Both give
the least-squares solution over the space they built.
"""
from __future__ import annotations


from plax.extend import dtypes, tree_util
from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.scipy.sparse.linalg import problem
from plax_stdlib.scipy.sparse.linalg.vectors import add, norm, sub

_HIGHEST = lax.Precision.HIGHEST
_SOLVE_METHODS = ("incremental", "batched")


def _at(v, i):
    """v[i] for a traced i, as a dynamic slice (indexing would make a gather)."""
    return lax.dynamic_index_in_dim(v, i, keepdims=False)


def _put(v, i, x):
    """v with v[i] = x for a traced i (a dynamic update, not a scatter)."""
    return lax.dynamic_update_index_in_dim(v, x, i, 0)


def _row(basis, k):
    """Basis vector k: each leaf's row k."""
    return tree_util.tree_map(lambda leaf: _at(leaf, k), basis)


def _overlaps(basis, w):
    """<V_j, w> for every basis vector j (zero rows give zero)."""
    return sum(jnp.tensordot(jnp.conj(leaf), x, axes=x.ndim, precision=_HIGHEST)
               for leaf, x in zip(tree_util.tree_leaves(basis), tree_util.tree_leaves(w)))


def _combination(coefficients, basis):
    """Σ_j c_j V_j."""
    return tree_util.tree_map(
        lambda leaf: jnp.tensordot(coefficients.astype(leaf.dtype), leaf, axes=1,
                                   precision=_HIGHEST), basis)


def _orthogonalized(basis, w):
    """w less its projection on the basis, twice over (once loses orthogonality in
    floating point), and the coefficients removed."""
    h = _overlaps(basis, w)
    w = sub(w, _combination(h, basis))
    h2 = _overlaps(basis, w)
    return sub(w, _combination(h2, basis)), h + h2


def _rotation(a, b):
    """(c, s) with |c|² + |s|² = 1 taking (a, b) to (r, 0) by a' = c̄a + s̄b,
    b' = -sa + cb."""
    r = jnp.sqrt(jnp.square(jnp.abs(a)) + jnp.square(jnp.abs(b)))
    safe = jnp.where(r == 0, 1, r).astype(a.dtype)
    return jnp.where(r == 0, 1, a / safe), jnp.where(r == 0, 0, b / safe)


def _rotate(v, i, c, s):
    """The rotation (c, s) applied to entries i, i+1 of v."""
    a, b = _at(v, i), _at(v, i + 1)
    pair = jnp.stack([jnp.conj(c) * a + jnp.conj(s) * b, -s * a + c * b])
    return lax.dynamic_update_slice_in_dim(v, pair, i, 0)


def _back_substitution(triangle, g):
    """y with triangle @ y = g, triangle upper triangular: one row at a time from the
    last (for the few rows of a cycle, XLA compiles this loop about three times
    faster than its general triangular solve)."""
    n = g.shape[0]

    def solve_row(j, y):
        i = n - 1 - j
        row = _at(triangle, i)
        return _put(y, i, (_at(g, i) - jnp.dot(row, y, precision=_HIGHEST)) / _at(row, i))

    return lax.fori_loop(0, n, solve_row, jnp.zeros_like(g))


def _cycle(A, M, x, r, r_norm, *, restart, ptol, incremental):
    """One restart: x plus the Krylov-space correction of least residual |M(b - A x)|,
    from the preconditioned residual r of norm r_norm > 0."""
    dtype = problem.scalar_dtype(r)
    eps = dtypes.finfo(dtype).eps
    basis = tree_util.tree_map(
        lambda leaf: jnp.zeros((restart + 1,) + leaf.shape, leaf.dtype).at[0].set(
            leaf / r_norm.astype(leaf.dtype)), r)
    columns = jnp.zeros((restart, restart), dtype)  # row j: column j of the triangle R
    rotations = jnp.zeros((restart, 2), dtype)
    residuals = jnp.zeros(restart + 1, dtype).at[0].set(r_norm.astype(dtype))

    def growing(state):
        k, _, _, _, residuals, invariant = state
        going = (k < restart) & ~invariant
        return going & (jnp.abs(_at(residuals, k)) > ptol) if incremental else going

    def arnoldi_step(state):
        k, basis, columns, rotations, residuals, _ = state
        w = M(A(_row(basis, k)))
        w_norm = norm(w)
        w, h = _orthogonalized(basis, w)
        remaining = norm(w)
        invariant = remaining <= eps * w_norm
        inverse = jnp.where(invariant, 0, 1 / jnp.where(invariant, 1, remaining))
        basis = tree_util.tree_map(lambda leaf, x: _put(leaf, k + 1, x * inverse.astype(x.dtype)),
                                   basis, w)
        h = _put(h, k + 1, jnp.where(invariant, 0, remaining).astype(dtype))
        h = lax.fori_loop(0, k, lambda i, h: _rotate(h, i, *_at(rotations, i)), h)
        c, s = _rotation(_at(h, k), _at(h, k + 1))
        h = _rotate(h, k, c, s)
        columns = _put(columns, k, h[:restart])
        rotations = _put(rotations, k, jnp.stack([c, s]))
        return k + 1, basis, columns, rotations, _rotate(residuals, k, c, s), invariant

    k, basis, columns, _, residuals, _ = lax.while_loop(
        growing, arnoldi_step, (0, basis, columns, rotations, residuals, jnp.bool_(False)))
    triangle = columns.T
    built = jnp.arange(restart) < k
    # the columns not built stay out: a unit diagonal there and no right-hand side
    pivots = jnp.diagonal(triangle)
    triangle = triangle + jnp.diag(jnp.where(built, 0, 1).astype(dtype))
    y = _back_substitution(triangle, jnp.where(built, residuals[:restart], 0))
    # a zero pivot: M A is singular on the space built, and no least-squares point is
    # unique; NaN marks the failure (info = -1), as a failed factorization would
    y = jnp.where(jnp.any(built & (pivots == 0)), jnp.nan, y)
    correction = _combination(y, tree_util.tree_map(lambda leaf: leaf[:restart], basis))
    return add(x, correction)


def _iterate(A, b, x0, *, tol, atol, restart, maxiter, M, incremental):
    """Cycles until the preconditioned residual's norm is ≤ max(tol |b|, atol) or
    maxiter cycles; within a cycle, 'incremental' stops at |M b| min(1, that / |b|)."""
    precondition = problem.preconditioner(M)
    b_norm = norm(b)
    atol = jnp.maximum(tol * b_norm, atol)
    # with b = 0 and atol = 0, the ratio is 1 (JAX's 0/0 here stops every cycle at
    # once, and it returns a nonzero x0 unchanged)
    ratio = jnp.where(b_norm == 0, 1.0, atol / jnp.where(b_norm == 0, 1.0, b_norm))
    ptol = norm(precondition(b)) * jnp.minimum(1.0, ratio)

    def residual(x):
        r = precondition(sub(b, A(x)))
        return r, norm(r)

    def unconverged(state):
        _, k, _, r_norm = state
        return (k < maxiter) & (r_norm > atol)

    def restart_cycle(state):
        x, k, r, r_norm = state
        x = _cycle(A, precondition, x, r, r_norm, restart=restart, ptol=ptol,
                   incremental=incremental)
        return (x, k + 1, *residual(x))

    x, *_ = lax.while_loop(unconverged, restart_cycle, (x0, 0, *residual(x0)))
    return x


def gmres(A, b, x0=None, *, tol=1e-5, atol=0.0, restart=20, maxiter=None, M=None,
          solve_method="batched"):
    """Solve A x = b by GMRES restarted every `restart` steps, for at most `maxiter`
    cycles (default 10 per unknown), A a matrix or linear function, M an approximate
    inverse of A. Returns (x, info): info is -1 when x has a NaN, else 0 (as in JAX,
    non-convergence is not reported)."""
    if solve_method not in _SOLVE_METHODS:
        raise ValueError(f"gmres: invalid solve_method {solve_method!r}, must be either "
                         "'incremental' or 'batched'")
    system = problem.system("gmres", A, b, x0, M)
    maxiter = problem.default_maxiter(maxiter, system.size)
    restart = min(restart, system.size)

    def solve(matvec, rhs):
        return _iterate(matvec, rhs, system.x0, tol=tol, atol=atol, restart=restart,
                        maxiter=maxiter, M=system.M,
                        incremental=solve_method == "incremental")

    x = problem.solve_implicitly(system, solve, symmetric=False)
    return x, jnp.where(jnp.isnan(norm(x)), -1, 0)

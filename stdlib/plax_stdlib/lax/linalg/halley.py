"""`qdwh`: the polar decomposition x = U H by the QR-based dynamically weighted
Halley iteration (Nakatsukasa, Bai and Gygi 2010), as `jax.lax.linalg.qdwh`.

x is scaled so that its singular values lie in (0, 1]; each iteration maps them
towards 1 by a rational function whose weights (a, b, c) depend only on ℓ, a lower
bound on the smallest of them. Starting from ℓ = eps, the weights are the same for
every matrix: they are computed here in Python and the iterations run in two
`fori_loop`s, first the QR-based ones (c > 100, where forming I + c UᴴU for a
Cholesky factorization would lose accuracy), then the Cholesky-based ones. If U has
not converged by then, a `while_loop` continues with Halley's fixed weights (3, 1, 3)
up to `max_iterations`. The formulation (and so the printed Jaxpr and the values) is
JAX 0.10.2's; it is built from `plax.numpy`, which is why `plax.lax.linalg` loads
this module on first use.
"""
from __future__ import annotations

import functools

import numpy as np

import plax
from plax.extend import dtypes
from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.lax.linalg.cholesky import cholesky
from plax_stdlib.lax.linalg.qr import qr
from plax_stdlib.lax.linalg.triangular_solve import triangular_solve

# Above this c, an iteration factors [√c U; I] by QR instead of I + c UᴴU by Cholesky.
_CHOLESKY_BELOW = 100


def _within(x, dims, outside=0):
    """x where each index is below the (possibly traced) size in `dims` for its axis,
    `outside` elsewhere: the true matrix inside a padded one."""
    inside = None
    for axis, size in enumerate(dims):
        if size is not None:
            axis_inside = lax.broadcasted_iota(np.int32, x.shape, axis) < size
            inside = axis_inside if inside is None else inside & axis_inside
    return x if inside is None else jnp.where(inside, x, outside)


def _stack_rows(top, bottom, top_rows):
    """[top[:top_rows]; bottom]: bottom written at row `top_rows` of top padded below
    with as many rows as bottom has."""
    padding = [(0, 0, 0)] * top.ndim
    padding[0] = (0, bottom.shape[0], 0)
    padded = lax.pad(top, jnp.array(0, top.dtype), padding)
    return lax.dynamic_update_slice_in_dim(padded, bottom, top_rows, 0)


def _qr_iteration(u, m, n, weights):
    """U ← e U + (a - e)/√c · Q₁ Q₂ᴴ, with [√c U; I] = [Q₁; Q₂] R and e = b/c."""
    scale, sqrt_c, e = weights
    rows, cols = u.shape
    q, _ = qr(_stack_rows(sqrt_c * u, jnp.eye(cols, dtype=u.dtype), m), full_matrices=False)
    q1 = _within(lax.slice(q, (0, 0), (rows, cols)), (m, n))
    q2 = _within(lax.dynamic_slice_in_dim(q, m, cols, axis=0), (n, n)).T.conj()
    return e * u + scale * (q1 @ q2)


def _cholesky_iteration(u, m, n, weights):
    """U ← e U + (a - e) U (I + c UᴴU)⁻¹, the inverse applied through the Cholesky
    factor of I + c UᴴU (two triangular solves on Uᴴ)."""
    a_minus_e, c, e = weights
    cols = u.shape[1]
    gram = c * (u.T.conj() @ u) + jnp.eye(cols, dtype=u.dtype)
    factor = cholesky(_within(gram, (n, n), jnp.eye(cols, dtype=gram.dtype)),
                      symmetrize_input=False)
    z = triangular_solve(factor, u.T, left_side=True, lower=True, conjugate_a=True).conj()
    z = triangular_solve(factor, z, left_side=True, lower=True, transpose_a=True,
                         conjugate_a=True).T.conj()
    return e * u + a_minus_e * z


def _qr_weights(a, b, c):
    e = b / c
    sqrt_c = c ** (1 / 2)
    return ((a - e) / sqrt_c, sqrt_c, e)


def _cholesky_weights(a, b, c):
    e = b / c
    return (a - e, c, e)


def _weight_schedule(eps: float, max_iterations: int):
    """The weights of the QR-based and of the Cholesky-based iterations, from ℓ = eps
    until ℓ is within 5 eps of 1 (or `max_iterations` of them)."""
    qr_weights, cholesky_weights = [], []
    lower, tolerance = eps, 10.0 * eps / 2.0
    while lower + tolerance < 1 and len(qr_weights) + len(cholesky_weights) < max_iterations:
        l2 = lower * lower
        dd = (4 * (1 / l2 - 1) / l2) ** (1 / 3)
        sqd = (1.0 + dd) ** (1 / 2)
        a = sqd + (2 - dd + 2 * (2 - l2) / (l2 * sqd)) ** (1 / 2)
        b = (a - 1) ** 2 / 4
        c = a + b - 1
        lower = lower * (a + b * l2) / (1 + c * l2)
        if c > _CHOLESKY_BELOW:
            qr_weights.append(_qr_weights(a, b, c))
        else:
            cholesky_weights.append(_cholesky_weights(a, b, c))
    return qr_weights, cholesky_weights


def _polar_by_qdwh(x, m, n, max_iterations: int, eps: float | None):
    if eps is None:
        eps = float(dtypes.finfo(x.dtype).eps)
    one_norm = jnp.linalg.norm(x, ord=1)
    inf_norm = jnp.linalg.norm(x, ord=np.inf)
    inverse_scale = lax.rsqrt(one_norm) * lax.rsqrt(inf_norm)
    inverse_scale = jnp.where(one_norm == 0, 1, inverse_scale)
    u = x * inverse_scale.astype(x.dtype)
    # ‖U_k - U_{k-1}‖_F below ∛(5 eps) means converged (Nakatsukasa and Higham)
    tolerance = jnp.cbrt(10.0 * eps / 2.0)

    def iteration(k, state, update, weights, check):
        u, _ = state
        step = (_cholesky_weights(3, 1, 3) if weights is None
                else lax.dynamic_index_in_dim(weights, k, keepdims=False))
        new = update(u, m, n, step)
        return new, (jnp.linalg.norm(new - u) > tolerance) if check else True

    def iterations(u, weights, update, check):
        if not weights:
            return u, True
        body = functools.partial(iteration, update=update, check=check,
                                 weights=jnp.array(weights).astype(x.dtype))
        return lax.fori_loop(0, len(weights), body, (u, True))
    qr_weights, cholesky_weights = _weight_schedule(eps, max_iterations)
    u, _ = iterations(u, qr_weights, _qr_iteration, check=False)
    u, not_converged = iterations(u, cholesky_weights, _cholesky_iteration, check=True)

    def more(state):
        k, _, not_converged = state
        return jnp.logical_and(not_converged, k < max_iterations)

    def halley(state):
        k, u, not_converged = state
        u, not_converged = iteration(k, (u, not_converged), _cholesky_iteration, None, True)
        return k + 1, u, not_converged
    done = len(qr_weights) + len(cholesky_weights)
    num_iters, u, not_converged = lax.while_loop(more, halley, (done, u, not_converged))
    u = 1.5 * u - 0.5 * u @ (u.T.conj() @ u)  # one Newton-Schulz step: nearer unitary
    h = u.T.conj() @ x
    h = (h + h.T.conj()) / 2
    return u, h, num_iters, jnp.logical_not(not_converged)


@functools.partial(plax.jit, static_argnames=("is_hermitian", "max_iterations", "eps"))
def qdwh(x, *, is_hermitian: bool = False, max_iterations: int | None = None,
         eps: float | None = None, dynamic_shape: tuple[int, int] | None = None):
    """`(u, h, num_iters, is_converged)`: the polar decomposition x = u h of an m×n
    matrix x (m ≥ n, full rank), u with orthonormal columns and h Hermitian positive
    definite, by QDWH. It stops when successive iterates differ by less than
    ∛(5 eps) relative to ‖u‖ (eps: the dtype's by default), or after
    `max_iterations` (default 10); `is_converged` says which. `dynamic_shape` (m, n)
    is the true shape of x padded to its static one. `is_hermitian` is accepted and
    unused, as in JAX."""
    del is_hermitian  # unused, as in JAX
    max_iterations = 10 if max_iterations is None else int(max_iterations)
    if x.ndim != 2:
        raise ValueError(f"qdwh: the input must be a matrix, got shape {x.shape}")
    rows, cols = x.shape
    if rows < cols:
        raise ValueError("The input matrix of shape M x N must have M >= N.")
    if dynamic_shape is None:
        m, n = rows, cols
    else:
        m, n = dynamic_shape
        x = _within(x, (m, n))
    with plax.default_matmul_precision("float32"):
        return _polar_by_qdwh(x, m, n, max_iterations, eps)

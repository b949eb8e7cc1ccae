"""The SVD TPU lowers `svd` to, having no LAPACK: the polar decomposition x = U_p H
by `qdwh`, then H's eigendecomposition H = V diag(s) Vᴴ, so x = (U_p V) diag(s) Vᴴ.

The formulation is JAX 0.10.2's (so TPU programs compile as JAX's): a wide matrix is
decomposed through its conjugate transpose; a tall one is first reduced to its square
R by QR (always with `full_matrices`, whose extra columns of U are Q's, and past 1.15
times as many rows as columns otherwise); U is re-orthonormalized by QR when x is
numerically rank deficient; a matrix with a non-finite entry gives NaNs. It is built
from `plax.numpy`, which imports this package: `svd` loads it when lowering.
"""
from __future__ import annotations

import functools

import numpy as np

import plax
from plax.extend import dtypes
from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.lax.linalg.eigh import eigh
from plax_stdlib.lax.linalg.halley import qdwh
from plax_stdlib.lax.linalg.qr import qr


def _orthonormalized(u):
    """u's Q factor with R's diagonal made non-negative: U_p V stays unitary when x is
    rank deficient (Nakatsukasa and Higham 2013, section 5.5)."""
    q, r = qr(u, full_matrices=False)
    return q @ jnp.diag(jnp.where(jnp.diag(r) >= 0, 1, -1))


@functools.partial(plax.jit, static_argnums=(1, 2, 3, 4))
def _svd_tall_and_square_input(a, hermitian: bool, compute_uv: bool, max_iterations: int,
                               subset_by_index=None):
    """`s` or `(u, s, v)` of an m×n matrix with m ≥ n: s descending, a = u diag(s) vᴴ."""
    u_p, h, _, _ = qdwh(a, is_hermitian=hermitian, max_iterations=max_iterations)
    v, s = eigh(h, subset_by_index=subset_by_index, sort_eigenvalues=False)
    s = jnp.maximum(s, 0.0)  # H is positive semidefinite: rounding may dip below 0
    order = jnp.argsort(s, descending=True)
    s = s[order]
    if not compute_uv:
        return s
    v = v[:, order]
    u = u_p @ v
    rank_deficient = s[-1] <= a.shape[1] * float(dtypes.finfo(a.dtype).eps) * s[0]
    u, _ = lax.while_loop(lambda state: state[1],
                          lambda state: (_orthonormalized(state[0]), False),
                          (u, rank_deficient))
    return u, s, v


def _ascending_subset(subset_by_index, shape, full_matrices: bool):
    """`subset_by_index` (singular values, descending) checked and turned into the
    indices of H's eigenvalues (ascending)."""
    if len(subset_by_index) != 2:
        raise ValueError(f"svd: subset_by_index must be a pair (start, end), got "
                         f"{subset_by_index}")
    lo, hi = (int(i) for i in subset_by_index)
    rank = min(shape)
    if not 0 <= lo < hi <= rank:
        raise ValueError(f"svd: subset_by_index {(lo, hi)} must satisfy 0 <= start < end <= "
                         f"{rank}, the rank of a {shape[0]}x{shape[1]} matrix")
    if full_matrices and (lo, hi) != (0, rank):
        raise ValueError("svd: full_matrices and subset_by_index cannot both be set")
    return rank - hi, rank - lo


@functools.partial(plax.jit, static_argnums=(1, 2, 3, 4, 5))
def svd(a, full_matrices: bool, compute_uv: bool = True, hermitian: bool = False,
        max_iterations: int = 10, subset_by_index=None):
    """`s` or `(u, s, vh)` of one m×n matrix, as `lax.linalg.svd` (see the module)."""
    if subset_by_index is not None:
        subset_by_index = _ascending_subset(subset_by_index, a.shape, full_matrices)
    flipped = a.shape[0] < a.shape[1]
    if flipped:
        a = a.T.conj()
    m, n = a.shape
    q = null_space = None
    if full_matrices and m > n:
        q_full, r_full = qr(a, full_matrices=True)
        q, null_space, a = q_full[:, :n], q_full[:, n:], r_full[:n, :]
    elif m > 1.15 * n:
        q, a = qr(a, full_matrices=False)
    with plax.default_matmul_precision("float32"):
        out = _svd_tall_and_square_input(a, hermitian, compute_uv, max_iterations,
                                         subset_by_index)
        if not compute_uv:
            return out
        u, s, v = out
        if q is not None:
            u = q @ u
    if null_space is not None:
        u = jnp.hstack((u, null_space))
    _, u, s, v = lax.while_loop(
        lambda state: jnp.logical_not(state[0]),
        lambda state: (jnp.array(True), *(jnp.full_like(x, np.nan) for x in state[1:])),
        (jnp.all(jnp.isfinite(a)), u, s, v))
    return (v, s, u.T.conj()) if flipped else (u, s, v.T.conj())


def svd_by_polar(x, *, full_matrices: bool, compute_uv: bool, subset_by_index) -> list:
    """`svd_p`'s results `[s]` or `[s, u, vt]` for matrices `[..., m, n]`, each by `svd`."""
    decompose = functools.partial(svd, full_matrices=full_matrices, compute_uv=compute_uv,
                                  subset_by_index=subset_by_index)
    for _ in range(x.ndim - 2):
        decompose = plax.vmap(decompose)
    if not compute_uv:
        return [decompose(x)]
    u, s, vh = decompose(x)
    return [s, u, vh]

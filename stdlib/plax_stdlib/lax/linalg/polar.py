"""The polar decomposition A = U H by QDWH (dynamically weighted Halley iteration,
Nakatsukasa, Bai and Gygi 2010), and the SVD built on it: what TPU computes `svd`
with, since it has no LAPACK (H's eigendecomposition H = V diag(s) Vᴴ gives
A = (U V) diag(s) Vᴴ).

Each iteration maps the singular values of A/α (α ≥ ‖A‖₂) towards 1 through a
rational function whose weights (a, b, c) depend only on ℓ, a lower bound on the
smallest of them, which the iteration itself updates. Starting from ℓ = ε (no
estimate of A's conditioning), the weights are the same for every matrix: they are
computed here once, in float64, and the iterations are unrolled, each a QR-based step
while c is large (where the Cholesky-based one would lose accuracy) and a
Cholesky-based step after.
"""
from __future__ import annotations

import functools

import numpy as np

from plax.extend.core import get_aval
from plax_stdlib.lax.comparison import eq, select
from plax_stdlib.lax.conversion import convert_element_type
from plax_stdlib.lax.elementwise import abs as abs_, add, div, max as max_, mul, sqrt
from plax_stdlib.lax.linalg.cholesky import cholesky
from plax_stdlib.lax.linalg.eigh import eigh
from plax_stdlib.lax.linalg.matrices import eye_like, matmul, mH, real_dtype_of
from plax_stdlib.lax.linalg.qr import qr
from plax_stdlib.lax.linalg.triangular_solve import triangular_solve
from plax_stdlib.lax.reductions import reduce_max, reduce_sum
from plax_stdlib.lax.shape_ops import broadcast_in_dim, concatenate, rev
from plax_stdlib.lax.slicing import slice as slice_

# Above this c, a step factors [√c U; I] by QR instead of I + c UᴴU by Cholesky.
_QR_ABOVE = 100.0


@functools.lru_cache
def weights(eps: float) -> tuple[tuple[float, float, float], ...]:
    """The (a, b, c) of each iteration, from ℓ = eps until ℓ is 1 to within 10·eps."""
    steps, lo = [], eps
    while abs(1 - lo) > 10 * eps and len(steps) < 20:
        d = np.cbrt(4 * (1 - lo ** 2) / lo ** 4)
        a = np.sqrt(1 + d) + 0.5 * np.sqrt(8 - 4 * d + 8 * (2 - lo ** 2)
                                           / (lo ** 2 * np.sqrt(1 + d)))
        b = (a - 1) ** 2 / 4
        c = a + b - 1
        steps.append((float(a), float(b), float(c)))
        lo = lo * (a + b * lo ** 2) / (1 + c * lo ** 2)
    return tuple(steps)


def _scalar(value: float, like) -> np.ndarray:
    return np.array(value, get_aval(like).dtype)


def _qr_step(u, a: float, b: float, c: float):
    """U ← (b/c) U + (a - b/c)/√c · Q₁ Q₂ᴴ, with [√c U; I] = [Q₁; Q₂] R."""
    aval = get_aval(u)
    m = aval.shape[-2]
    q, _ = qr(concatenate([mul(u, _scalar(np.sqrt(c), u)), eye_like(matmul(mH(u), u))],
                          aval.ndim - 2), full_matrices=False)
    batch = aval.shape[:-2]
    nb = len(batch)
    q1 = slice_(q, (0,) * aval.ndim, (*batch, m, aval.shape[-1]))
    q2 = slice_(q, (0,) * nb + (m, 0), get_aval(q).shape)
    return add(mul(u, _scalar(b / c, u)),
               mul(matmul(q1, mH(q2)), _scalar((a - b / c) / np.sqrt(c), u)))


def _cholesky_step(u, a: float, b: float, c: float):
    """U ← (b/c) U + (a - b/c) U (I + c UᴴU)⁻¹, the inverse applied through the
    Cholesky factor L of I + c UᴴU (U L⁻ᴴ L⁻¹)."""
    gram = matmul(mH(u), u)
    factor = cholesky(add(eye_like(gram), mul(gram, _scalar(c, gram))), symmetrize_input=False)
    y = triangular_solve(factor, u, left_side=False, lower=True, transpose_a=True,
                         conjugate_a=True)
    x = triangular_solve(factor, y, left_side=False, lower=True)
    return add(mul(u, _scalar(b / c, u)), mul(x, _scalar(a - b / c, u)))


def _norm_bound(x):
    """√(‖x‖₁ ‖x‖∞) ≥ ‖x‖₂ for each matrix of x (1 for a zero matrix), shaped to divide it."""
    aval = get_aval(x)
    nd = aval.ndim
    magnitude = abs_(x)
    one = reduce_max(reduce_sum(magnitude, (nd - 2,)), (nd - 2,))
    inf = reduce_max(reduce_sum(magnitude, (nd - 1,)), (nd - 2,))
    bound = sqrt(mul(one, inf))
    bound = select(eq(bound, np.zeros((), get_aval(bound).dtype)),
                   broadcast_in_dim(np.ones((), get_aval(bound).dtype), get_aval(bound).shape, ()),
                   bound)
    return broadcast_in_dim(bound, aval.shape, tuple(range(nd - 2)))


def polar_unitary(x):
    """The unitary factor U of x = U H, for matrices `[..., m, n]` with m ≥ n."""
    dtype = get_aval(x).dtype
    u = div(x, convert_element_type(_norm_bound(x), dtype))
    for a, b, c in weights(float(np.finfo(real_dtype_of(dtype)).eps)):
        u = _qr_step(u, a, b, c) if c > _QR_ABOVE else _cholesky_step(u, a, b, c)
    return u


def svd_by_polar(x, *, full_matrices: bool, compute_uv: bool, subset_by_index,
                 algorithm=None) -> list:
    """`svd_p`'s results `[s]` or `[s, u, vt]` for matrices `[..., m, n]`: U_p H = x by
    QDWH, then H = V diag(s) Vᴴ (s descending), so x = (U_p V) diag(s) Vᴴ."""
    aval = get_aval(x)
    m, n = aval.shape[-2:]
    if m < n:  # the SVD of xᴴ, its factors swapped
        outs = svd_by_polar(mH(x), full_matrices=full_matrices, compute_uv=compute_uv,
                            subset_by_index=subset_by_index)
        return outs if not compute_uv else [outs[0], mH(outs[2]), mH(outs[1])]
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError(
            f"svd of a {aval.str_short()} matrix with full_matrices=True on TPU: the polar "
            "algorithm gives the thin factors only; use full_matrices=False")
    u = polar_unitary(x)
    h = matmul(mH(u), x)
    h = mul(add(h, mH(h)), np.array(0.5, dtype=aval.dtype))
    v, w = eigh(h, symmetrize_input=False)  # ascending
    last = aval.ndim - 1
    s = rev(w, (last - 1,))
    s = max_(s, broadcast_in_dim(np.zeros((), get_aval(s).dtype), get_aval(s).shape, ()))
    v = rev(v, (last,))
    if subset_by_index is not None:
        lo, hi = (min(n, i) for i in subset_by_index)
        s = slice_(s, (0,) * (last - 1) + (lo,), (*get_aval(s).shape[:-1], hi))
        v = slice_(v, (0,) * last + (lo,), (*get_aval(v).shape[:-1], hi))
    if not compute_uv:
        return [s]
    return [s, matmul(u, v), mH(v)]

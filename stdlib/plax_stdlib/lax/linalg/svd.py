"""`svd`: A = U diag(s) Vᴴ with descending singular values s >= 0.

The primitive returns `(s,)` or `(s, u, vt)` (`compute_uv`); `lax.linalg.svd`
reorders them as `(u, s, vt)`. `subset_by_index=(lo, hi)` keeps singular triples
lo..hi-1. On CPU, LAPACK's gesdd (divide and conquer) or gesvd (`SvdAlgorithm.QR`);
matrices where it fails become NaNs. On TPU, the polar algorithm (`svd_polar`: QDWH,
then an eigendecomposition).
"""
from __future__ import annotations

import enum

import numpy as np

from plax.extend.ad import Zero
from plax.extend.constructors import standard_primitive
from plax.extend.core import ShapedArray, get_aval, min_dim
from plax.extend.mlir import mu
from plax_stdlib.lax.comparison import eq
from plax_stdlib.lax.conversion import convert_element_type
from plax_stdlib.lax.elementwise import add, div, mul, real, sub
from plax_stdlib.lax.linalg import lapack
from plax_stdlib.lax.linalg.matrices import (check_matrix, diag_matrix, diagonal, eye_like,
                                             is_complex, leading_batch, lower_function, matmul,
                                             mH, real_dtype_of, slice_hlo)
from plax_stdlib.lax.shape_ops import broadcast_in_dim


class SvdAlgorithm(enum.Enum):
    """Which algorithm computes `svd`."""
    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"
    DIVIDE_AND_CONQUER = "divide_and_conquer"


def _rank(m: int, n: int, full_matrices: bool, subset_by_index) -> int:
    k = min_dim(m, n)
    if subset_by_index is None:
        return k
    lo, hi = subset_by_index
    if not 0 <= lo <= hi:
        raise ValueError(f"svd: subset_by_index {tuple(subset_by_index)} must satisfy "
                         "0 <= start <= end")
    if full_matrices and (lo, hi) != (0, k):
        raise ValueError("svd: full_matrices and subset_by_index cannot both be set")
    return min_dim(k, hi) - min_dim(k, lo)


def _svd_abstract_eval(a, *, full_matrices, compute_uv, subset_by_index, algorithm):
    batch = check_matrix("svd", a)
    m, n = a.shape[-2:]
    r = _rank(m, n, full_matrices, subset_by_index)
    s = ShapedArray((*batch, r), real_dtype_of(a.dtype))
    if not compute_uv:
        return [s]
    return [s, ShapedArray((*batch, m, m if full_matrices else r), a.dtype),
            ShapedArray((*batch, n if full_matrices else r, n), a.dtype)]


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv, subset_by_index, algorithm):
    """With Ȧ' = Uᴴ Ȧ V (thin factors): ṡ = Re diag(Ȧ'); U̇ and V̇ from the
    antisymmetric parts of Ȧ' S and S Ȧ' over the gaps s_j² - s_i², plus, for
    non-square A, the part of Ȧ outside the span of U (or V)."""
    (a,), (a_dot,) = primals, tangents
    params = dict(full_matrices=full_matrices, compute_uv=compute_uv,
                  subset_by_index=subset_by_index, algorithm=algorithm)
    outs = svd_p.bind(a, **params)
    if isinstance(a_dot, Zero):
        return outs, [Zero(get_aval(o)) for o in outs]
    m, n = get_aval(a).shape[-2:]
    if subset_by_index is not None and tuple(subset_by_index) != (0, min_dim(m, n)):
        raise NotImplementedError("svd: derivatives of a partial SVD (subset_by_index) are "
                                  "not implemented")
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError("svd: derivatives of the full U, Vᴴ of a non-square matrix "
                                  "are not implemented; use full_matrices=False")
    s, u, vt = svd_p.bind(a, full_matrices=False, compute_uv=True,
                          subset_by_index=subset_by_index, algorithm=algorithm)
    v = mH(vt)
    projected = matmul(matmul(mH(u), a_dot), v)
    s_dot = real(diagonal(projected)) if is_complex(projected) else diagonal(projected)
    if not compute_uv:
        return outs, [s_dot]
    dtype = get_aval(a).dtype
    real_dt = get_aval(s).dtype
    shape = get_aval(projected).shape
    nb = len(shape) - 2

    def columns(vec, like):  # vec[..., j] at [..., i, j]
        return convert_element_type(broadcast_in_dim(vec, get_aval(like).shape,
                                                     (*range(nb), nb + 1)), dtype)

    s_j = broadcast_in_dim(s, shape, (*range(nb), nb + 1))
    s_i = broadcast_in_dim(s, shape, tuple(range(nb + 1)))
    eye = eye_like(s_j)
    gaps = mul(add(s_j, s_i), sub(s_j, s_i))  # s_j² - s_i², 0 on the diagonal
    f = convert_element_type(sub(div(np.ones((), real_dt), add(gaps, eye)), eye), dtype)
    is_zero = convert_element_type(eq(s, np.zeros((), real_dt)), real_dt)
    s_inv = sub(div(np.ones((), real_dt), add(s, is_zero)), is_zero)  # 0 where s is 0
    right = mul(projected, columns(s, projected))  # Ȧ' S
    left = mul(convert_element_type(s_i, dtype), projected)  # S Ȧ'
    phase = mul(mul(sub(projected, mH(projected)), np.array(0.5, dtype)),
                convert_element_type(diag_matrix(s_inv), dtype))
    u_dot = matmul(u, add(mul(f, add(right, mH(right))), phase))
    v_dot = matmul(v, mul(f, add(left, mH(left))))
    if m > n:  # the part of Ȧ V outside the span of U
        a_dot_v = matmul(a_dot, v)
        rest = sub(a_dot_v, matmul(u, matmul(mH(u), a_dot_v)))
        u_dot = add(u_dot, mul(rest, columns(s_inv, rest)))
    if n > m:
        a_dot_h_u = matmul(mH(a_dot), u)
        rest = sub(a_dot_h_u, matmul(v, matmul(vt, a_dot_h_u)))
        v_dot = add(v_dot, mul(rest, columns(s_inv, rest)))
    return outs, [s_dot, u_dot, mH(v_dot)]


def _empty_svd(a, *, full_matrices, compute_uv, subset_by_index, algorithm):
    aval = get_aval(a)
    batch = aval.shape[:-2]
    m, n = aval.shape[-2:]
    s = broadcast_in_dim(np.zeros((), real_dtype_of(aval.dtype)), (*batch, 0), ())
    if not compute_uv:
        return [s]

    def eye(rows, cols):
        zeros = broadcast_in_dim(np.zeros((), aval.dtype), (*batch, rows, cols), ())
        return eye_like(zeros)
    if full_matrices:
        return [s, eye(m, m), eye(n, n)]
    return [s, eye(m, 0), eye(0, n)]


def _svd_lower_cpu(ctx, a, *, full_matrices, compute_uv, subset_by_index, algorithm):
    aval, = ctx.avals_in
    batch = aval.shape[:-2]
    m, n = aval.shape[-2:]
    params = dict(full_matrices=full_matrices, compute_uv=compute_uv,
                  subset_by_index=subset_by_index, algorithm=algorithm)
    if 0 in batch:  # no matrices: results of the right shapes, with nothing in them
        return [mu.splat(0, o) for o in ctx.avals_out]
    if m == 0 or n == 0:
        return lower_function(ctx, _empty_svd, ctx.avals_in, a, **params)
    if algorithm in (None, SvdAlgorithm.DEFAULT, SvdAlgorithm.DIVIDE_AND_CONQUER):
        routine = "gesdd"
    elif algorithm == SvdAlgorithm.QR:
        routine = "gesvd"
    else:
        raise NotImplementedError(f"svd: the {algorithm} algorithm is not available on CPU")
    k = min_dim(m, n)
    ucols, vrows = (m, n) if full_matrices else (k, k)
    s_aval = ShapedArray((*batch, k), real_dtype_of(aval.dtype))
    u_aval = ShapedArray((*batch, m, ucols), aval.dtype)
    vt_aval = ShapedArray((*batch, vrows, n), aval.dtype)
    mode = "N" if not compute_uv else ("A" if full_matrices else "S")
    _, s, u, vt, info = lapack.call(
        lapack.target(routine, aval.dtype), [a], [aval],
        [aval, s_aval, u_aval, vt_aval, lapack.info_aval(batch)], aliases={0: 0},
        mode=lapack.char(mode))
    ok = lapack.succeeded(info, batch)
    s = lapack.nan_where(ok, s, s_aval, batch)
    lo, hi = (0, k) if subset_by_index is None else (min_dim(k, subset_by_index[0]),
                                                     min_dim(k, subset_by_index[1]))
    keep = (lo, hi) != (0, k)
    if keep:
        s = slice_hlo(s, s_aval, -1, lo, hi)
    if not compute_uv:
        return [s]
    u = lapack.nan_where(ok, u, u_aval, batch)
    vt = lapack.nan_where(ok, vt, vt_aval, batch)
    if keep:
        u = slice_hlo(u, u_aval, -1, lo, hi)
        vt = slice_hlo(vt, vt_aval, -2, lo, hi)
    return [s, u, vt]


def _svd_lower_tpu(ctx, a, *, full_matrices, compute_uv, subset_by_index, algorithm):
    if algorithm not in (None, SvdAlgorithm.DEFAULT, SvdAlgorithm.POLAR):
        raise NotImplementedError(f"svd: the {algorithm} algorithm is not available on TPU "
                                  "(only the polar one)")
    aval, = ctx.avals_in
    params = dict(full_matrices=full_matrices, compute_uv=compute_uv,
                  subset_by_index=subset_by_index)
    if 0 in aval.shape[-2:]:
        return lower_function(ctx, _empty_svd, ctx.avals_in, a, algorithm=algorithm, **params)
    from plax_stdlib.lax.linalg.svd_polar import svd_by_polar  # built from plax.numpy
    return lower_function(ctx, svd_by_polar, ctx.avals_in, a, **params)


svd_p = standard_primitive("lax.svd", _svd_abstract_eval, None, multiple_results=True,
                           jvp=_svd_jvp, batching=leading_batch())
svd_p.def_lowering(_svd_lower_cpu, platform="cpu")
svd_p.def_lowering(_svd_lower_tpu, platform="tpu")


def svd(x, *, full_matrices: bool = True, compute_uv: bool = True,
        subset_by_index: tuple[int, int] | None = None, algorithm: SvdAlgorithm | None = None):
    """`(u, s, vh)` of each matrix of `x` `[..., m, n]` (just `s` without
    `compute_uv`): s descending, u `[..., m, m]` and vh `[..., n, n]` with
    `full_matrices`, else `[..., m, k]` and `[..., k, n]`."""
    if subset_by_index is not None:
        subset_by_index = tuple(int(i) for i in subset_by_index)
    outs = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv),
                      subset_by_index=subset_by_index, algorithm=algorithm)
    if compute_uv:
        s, u, vt = outs
        return u, s, vt
    return outs[0]

"""`eigh`: eigenvectors V and (real, ascending) eigenvalues w of Hermitian matrices,
A V = V diag(w).

The primitive reads one triangle of A (`lower`). `subset_by_index=(lo, hi)` keeps
eigenpairs lo..hi-1 of the ascending order. On CPU, LAPACK's syevd/heevd;
matrices where it fails become NaNs.
"""
from __future__ import annotations

import enum

import numpy as np

from plax.extend.ad import Zero
from plax.extend.constructors import standard_primitive
from plax.extend.core import ShapedArray, get_aval
from plax.extend.mlir import mu
from plax_stdlib.lax.conversion import convert_element_type
from plax_stdlib.lax.elementwise import add, div, mul, real, sub
from plax_stdlib.lax.linalg import lapack, xla_targets
from plax_stdlib.lax.linalg.matrices import (check_matrix, diagonal, eye_like,
                                             hermitian_from_triangle, is_complex, leading_batch,
                                             matmul, mH,
                                             real_dtype_of, slice_hlo, symmetrize)
from plax_stdlib.lax.shape_ops import broadcast_in_dim


class EighImplementation(enum.Enum):
    """Which algorithm computes `eigh` (CPU has LAPACK's divide and conquer only)."""
    QR = "qr"
    JACOBI = "jacobi"
    QDWH = "qdwh"


def _subset(n: int, subset_by_index) -> tuple[int, int]:
    if subset_by_index is None:
        return 0, n
    lo, hi = subset_by_index
    if not 0 <= lo <= hi <= n:
        raise ValueError(f"eigh: subset_by_index {tuple(subset_by_index)} must satisfy "
                         f"0 <= start <= end <= {n}")
    return lo, hi


def _eigh_abstract_eval(a, *, lower, sort_eigenvalues, subset_by_index, algorithm):
    batch = check_matrix("eigh", a, square=True)
    n = a.shape[-1]
    lo, hi = _subset(n, subset_by_index)
    return [ShapedArray((*batch, n, hi - lo), a.dtype),
            ShapedArray((*batch, hi - lo), real_dtype_of(a.dtype))]


def _eigh_jvp(primals, tangents, *, lower, sort_eigenvalues, subset_by_index, algorithm):
    """First-order perturbation theory for distinct eigenvalues: with Ȧ' = Vᴴ Ȧ V,
    ẇ = diag(Ȧ'), V̇ = V (F ∘ Ȧ'), F_ij = 1 / (w_j - w_i) off the diagonal."""
    (a,), (a_dot,) = primals, tangents
    n = get_aval(a).shape[-1]
    params = dict(lower=lower, sort_eigenvalues=sort_eigenvalues,
                  subset_by_index=subset_by_index, algorithm=algorithm)
    v, w = eigh_p.bind(a, **params)
    if isinstance(a_dot, Zero):
        return [v, w], [Zero(get_aval(v)), Zero(get_aval(w))]
    if _subset(n, subset_by_index) != (0, n):
        raise NotImplementedError("eigh: derivatives of a partial eigendecomposition "
                                  "(subset_by_index) are not implemented")
    a_dot = hermitian_from_triangle(a_dot, lower)
    projected = matmul(matmul(mH(v), a_dot), v)
    w_dot = real(diagonal(projected)) if is_complex(projected) else diagonal(projected)
    dtype = get_aval(v).dtype
    wc = convert_element_type(w, dtype)
    shape = get_aval(v).shape
    nb = len(shape) - 2
    gaps = sub(broadcast_in_dim(wc, shape, (*range(nb), nb + 1)),
               broadcast_in_dim(wc, shape, tuple(range(nb + 1))))
    eye = eye_like(v)
    inverse_gaps = sub(div(np.ones((), dtype), add(gaps, eye)), eye)  # 0 on the diagonal
    return [v, w], [matmul(v, mul(inverse_gaps, projected)), w_dot]


def _eigh_lower_cpu(ctx, a, *, lower, sort_eigenvalues, subset_by_index, algorithm):
    if algorithm not in (None, EighImplementation.QR):
        raise NotImplementedError(f"eigh: the {algorithm} algorithm is not available on CPU")
    aval, = ctx.avals_in
    v_aval, w_aval = ctx.avals_out
    batch = aval.shape[:-2]
    n = aval.shape[-1]
    full_w = ShapedArray((*batch, n), w_aval.dtype)
    if 0 in aval.shape:
        return [slice_hlo(a, aval, -1, 0, v_aval.shape[-1]), mu.splat(0, w_aval)]
    routine = "heevd" if aval.dtype.kind == "c" else "syevd"
    v, w, info = lapack.call(lapack.target(routine, aval.dtype), [a], [aval],
                             [aval, full_w, lapack.info_aval(batch)], aliases={0: 0},
                             mode=lapack.char("V"), uplo=lapack.char("L" if lower else "U"))
    ok = lapack.succeeded(info, batch)
    v = lapack.nan_where(ok, v, aval, batch)
    w = lapack.nan_where(ok, w, full_w, batch)
    return _subset_of(v, w, aval, full_w, subset_by_index)


def _subset_of(v, w, aval, full_w, subset_by_index):
    """The eigenpairs `subset_by_index` selects from a whole (ascending) decomposition."""
    n = aval.shape[-1]
    lo, hi = _subset(n, subset_by_index)
    if (lo, hi) != (0, n):
        v = slice_hlo(v, aval, -1, lo, hi)
        w = slice_hlo(w, full_w, -1, lo, hi)
    return [v, w]


def _eigh_lower_tpu(ctx, a, *, lower, sort_eigenvalues, subset_by_index, algorithm):
    """XLA's TPU eigensolver (the `Eigh` custom call, Jacobi sweeps), at every size: JAX
    takes it up to 256 and a QDWH divide and conquer above, which plax does not have.
    A subset is sliced from the whole decomposition, sorted."""
    if algorithm == EighImplementation.QR:
        raise NotImplementedError("eigh: the QR algorithm is not available on TPU")
    aval, = ctx.avals_in
    v_aval, w_aval = ctx.avals_out
    n = aval.shape[-1]
    if n == 0:
        return [a, mu.splat(0, w_aval)]
    full_w = ShapedArray((*aval.shape[:-2], n), w_aval.dtype)
    sort = sort_eigenvalues or subset_by_index is not None
    # (lower, sort, maximum sweeps, tolerance): XLA's Eigh backend config
    config = f"{int(lower)},{int(sort)},100,1e-6"
    v, w = xla_targets.call("Eigh", [a], [aval, full_w], config)
    return _subset_of(v, w, aval, full_w, subset_by_index)


eigh_p = standard_primitive("lax.eigh", _eigh_abstract_eval, None, multiple_results=True,
                            jvp=_eigh_jvp, batching=leading_batch())
eigh_p.def_lowering(_eigh_lower_cpu, platform="cpu")
eigh_p.def_lowering(_eigh_lower_tpu, platform="tpu")


def eigh(x, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index: tuple[int, int] | None = None,
         implementation: EighImplementation | None = None):
    """`(v, w)`: eigenvectors (columns of `v`) and ascending real eigenvalues of each
    Hermitian matrix of `x` `[..., n, n]`. With `symmetrize_input`, (x + xᴴ)/2 is
    decomposed; otherwise only the `lower` (or upper) triangle is read."""
    if subset_by_index is not None:
        subset_by_index = tuple(int(i) for i in subset_by_index)
    v, w = eigh_p.bind(symmetrize(x) if symmetrize_input else x, lower=bool(lower),
                       sort_eigenvalues=bool(sort_eigenvalues), subset_by_index=subset_by_index,
                       algorithm=implementation)
    return v, w

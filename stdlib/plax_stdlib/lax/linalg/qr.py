"""`qr`: A = Q R with unitary Q and upper-triangular R, built from LAPACK's pieces.

* `geqrf` (and the column-pivoted `geqp3`) leave R above the diagonal and the
  Householder reflectors that make Q below it, with their scale factors `taus`;
* `householder_product` multiplies the reflectors out into Q (orgqr/ungqr);
* `qr` is their composition (lowered as a function of the two, so a platform
  that lowers those lowers it too), with its derivative rule.
"""
from __future__ import annotations

import numpy as np

from plax.extend.ad import Zero, tangent_aval
from plax.extend.constructors import check_dtype, check_same_dtypes, describe, standard_primitive
from plax.extend.core import ShapedArray, get_aval, min_dim
from plax.extend.mlir import mu
from plax_stdlib.lax.conversion import convert_element_type
from plax_stdlib.lax.creation import broadcasted_iota
from plax_stdlib.lax.elementwise import add, mul, real, sub
from plax_stdlib.lax.linalg import lapack, xla_targets
from plax_stdlib.lax.linalg.matrices import (check_matrix, eye_like, is_complex, leading_batch,
                                             lowering_from, matmul, mH, mT, take_rows, tril,
                                             triu)
from plax_stdlib.lax.linalg.triangular_solve import triangular_solve
from plax_stdlib.lax.shape_ops import broadcast_in_dim, concatenate, pad
from plax_stdlib.lax.slicing import slice as slice_


def _block(x, rows: tuple[int, int], cols: tuple[int, int]):
    """x[..., r0:r1, c0:c1]."""
    aval = get_aval(x)
    batch = aval.shape[:-2]
    return slice_(x, (0,) * len(batch) + (rows[0], cols[0]), (*batch, rows[1], cols[1]))


# --- geqrf and geqp3 -----------------------------------------------------------------------

def _geqrf_abstract_eval(a):
    batch = check_matrix("geqrf", a)
    m, n = a.shape[-2:]
    return [a.update(weak_type=False), ShapedArray((*batch, min_dim(m, n)), a.dtype)]


def _geqrf_lower_cpu(ctx, a):
    aval, = ctx.avals_in
    if 0 in aval.shape:
        return [a, mu.splat(0, ctx.avals_out[1])]
    return lapack.call(lapack.target("geqrf", aval.dtype), [a], [aval], list(ctx.avals_out),
                       aliases={0: 0})


geqrf_p = standard_primitive("lax.geqrf", _geqrf_abstract_eval, None, multiple_results=True,
                             batching=leading_batch())
geqrf_p.def_lowering(_geqrf_lower_cpu, platform="cpu")
geqrf_p.def_lowering(xla_targets.lowering("Qr"), platform="tpu")


def geqrf(a):
    """`(a, taus)`: R in the upper triangle of `a`, Q as Householder reflectors below it
    with scale factors `taus` `[..., min(m, n)]`."""
    return tuple(geqrf_p.bind(a))


def _geqp3_abstract_eval(a, jpvt):
    batch = check_matrix("geqp3", a)
    check_dtype("geqp3", jpvt, frozenset({"int32"}), "jpvt")
    m, n = a.shape[-2:]
    if jpvt.shape != (*batch, n):
        raise TypeError(f"geqp3 requires jpvt of shape {(*batch, n)} for a {describe(a)}, got "
                        f"{describe(jpvt)}")
    return [a.update(weak_type=False), jpvt, ShapedArray((*batch, min_dim(m, n)), a.dtype)]


def _geqp3_lower_cpu(ctx, a, jpvt):
    aval, jpvt_aval = ctx.avals_in
    if 0 in aval.shape:
        return [a, jpvt, mu.splat(0, ctx.avals_out[2])]
    return lapack.call(lapack.target("geqp3", aval.dtype), [a, jpvt], [aval, jpvt_aval],
                       list(ctx.avals_out), aliases={0: 0, 1: 1})


geqp3_p = standard_primitive("lax.geqp3", _geqp3_abstract_eval, None, multiple_results=True,
                             batching=leading_batch())
geqp3_p.def_lowering(_geqp3_lower_cpu, platform="cpu")


def geqp3(a, jpvt):
    """Column-pivoted `geqrf`: `(a, jpvt, taus)` with a[..., :, jpvt - 1] = Q R. Columns
    with a nonzero `jpvt` entry on input are moved to the front (LAPACK counts from 1)."""
    return tuple(geqp3_p.bind(a, jpvt))


# --- householder_product ----------------------------------------------------------------------

def _householder_abstract_eval(a, taus):
    batch = check_matrix("householder_product", a)
    check_same_dtypes("householder_product", a, taus)
    m, n = a.shape[-2:]
    if m < n:
        raise ValueError(f"householder_product requires a with at least as many rows as "
                         f"columns, got shape {a.shape}")
    if taus.shape[:-1] != batch or taus.ndim != a.ndim - 1 or taus.shape[-1] > n:
        raise TypeError(f"householder_product requires taus [..., k] with k <= {n} and the "
                        f"batch dimensions of a {describe(a)}, got {describe(taus)}")
    return a.update(weak_type=False)


def _householder_lower_cpu(ctx, a, taus):
    aval, taus_aval = ctx.avals_in
    if 0 in aval.shape:
        return [a]
    routine = "ungqr" if np.dtype(aval.dtype).kind == "c" else "orgqr"
    return lapack.call(lapack.target(routine, aval.dtype), [a, taus], [aval, taus_aval],
                       [aval], aliases={0: 0})


householder_product_p = standard_primitive(
    "lax.householder_product", _householder_abstract_eval, None, batching=leading_batch())
householder_product_p.def_lowering(_householder_lower_cpu, platform="cpu")
householder_product_p.def_lowering(
    xla_targets.lowering("ProductOfElementaryHouseholderReflectors"), platform="tpu")


def householder_product(a, taus):
    """The unitary matrix `[..., m, n]` that the Householder reflectors below the
    diagonal of `a` and their `taus` make."""
    return householder_product_p.bind(a, taus)


# --- qr ---------------------------------------------------------------------------------------

def _qr_abstract_eval(a, *, pivoting, full_matrices, use_magma):
    batch = check_matrix("qr", a)
    m, n = a.shape[-2:]
    k = m if full_matrices else min_dim(m, n)
    dtype = a.dtype
    outs = [ShapedArray((*batch, m, k), dtype), ShapedArray((*batch, k, n), dtype)]
    if pivoting:
        outs.append(ShapedArray((*batch, n), np.dtype(np.int32)))
    return outs


def _qr_from_householder(a, *, pivoting, full_matrices, use_magma):
    """Q and R from geqrf (geqp3) and householder_product."""
    aval = get_aval(a)
    batch = aval.shape[:-2]
    m, n = aval.shape[-2:]
    k = m if full_matrices else min_dim(m, n)
    if m == 0 or n == 0:
        q = eye_like(broadcast_in_dim(np.zeros((), aval.dtype), (*batch, m, k), ()))
        r = broadcast_in_dim(np.zeros((), aval.dtype), (*batch, k, n), ())
        p = broadcasted_iota(np.int32, (*batch, n), len(batch))
        return (q, r, p) if pivoting else (q, r)
    if pivoting:
        factors, p, taus = geqp3(a, broadcast_in_dim(np.int32(0), (*batch, n), ()))
        p = sub(p, np.int32(1))
    else:
        factors, taus = geqrf(a)
    if m < n:
        q = householder_product(_block(factors, (0, m), (0, m)), taus)
    elif full_matrices and m > n:
        none = [(0, 0, 0)] * len(batch)
        q = householder_product(pad(factors, np.zeros((), aval.dtype),
                                    [*none, (0, 0, 0), (0, m - n, 0)]), taus)
    else:
        q = householder_product(factors, taus)
    r = triu(_block(factors, (0, k), (0, n)))
    return (q, r, p) if pivoting else (q, r)


def _thin_qr_jvp(q, r, x_dot):
    """Q̇, Ṙ of a thin QR (Q [..., m, n], R [..., n, n], m >= n): with C = Qᴴ Ẋ R⁻¹,
    Qᴴ Q̇ = Ω is skew-Hermitian and Ṙ R⁻¹ = C - Ω upper triangular, so Ω is C's strict
    lower part minus its Hermitian transpose, plus the imaginary part of C's
    diagonal (complex inputs)."""
    x_dot_rinv = triangular_solve(r, x_dot, left_side=False, lower=False)
    c = matmul(mH(q), x_dot_rinv)
    lower = tril(c, -1)
    omega = sub(lower, mH(lower))
    if is_complex(c):
        dtype = get_aval(c).dtype
        imaginary = sub(c, convert_element_type(real(c), dtype))
        omega = add(omega, mul(imaginary, eye_like(c)))
    q_dot = add(matmul(q, sub(omega, c)), x_dot_rinv)
    r_dot = matmul(sub(c, omega), r)
    return q_dot, r_dot


def _qr_jvp(primals, tangents, *, pivoting, full_matrices, use_magma):
    (a,), (a_dot,) = primals, tangents
    params = dict(pivoting=pivoting, full_matrices=full_matrices, use_magma=use_magma)
    outs = qr_p.bind(a, **params)
    q, r = outs[:2]
    m, n = get_aval(a).shape[-2:]
    int_zero = [Zero(tangent_aval(get_aval(outs[2])))] if pivoting else []
    if isinstance(a_dot, Zero):
        return outs, [Zero(get_aval(q)), Zero(get_aval(r)), *int_zero]
    if pivoting:
        a_dot = mT(take_rows(mT(a_dot), outs[2]))
    if m < n:  # A = Q [R1 R2]: the square block is a QR of A's first m columns
        q_dot, r1_dot = _thin_qr_jvp(q, _block(r, (0, m), (0, m)), _block(a_dot, (0, m), (0, m)))
        x2 = _block(mT(take_rows(mT(a), outs[2])) if pivoting else a, (0, m), (m, n))
        r2_dot = add(matmul(mH(q_dot), x2), matmul(mH(q), _block(a_dot, (0, m), (m, n))))
        return outs, [q_dot, concatenate([r1_dot, r2_dot], get_aval(r).ndim - 1), *int_zero]
    if full_matrices and m > n:
        raise NotImplementedError(
            "qr: derivatives of the full (m x m) Q of a tall matrix are not implemented; use "
            "full_matrices=False (jnp.linalg.qr's default 'reduced' mode)")
    q_dot, r_dot = _thin_qr_jvp(q, r, a_dot)
    return outs, [q_dot, r_dot, *int_zero]


qr_p = standard_primitive("lax.qr", _qr_abstract_eval, lowering_from(_qr_from_householder),
                          multiple_results=True, jvp=_qr_jvp, batching=leading_batch())


def qr(x, *, pivoting: bool = False, full_matrices: bool = True, use_magma: bool | None = None):
    """`(q, r)` (and the column permutation `p` if `pivoting`: x[..., :, p] = q r) of
    each matrix of `x` `[..., m, n]`; q is `[..., m, m]` and r `[..., m, n]` with
    `full_matrices`, else `[..., m, k]` and `[..., k, n]` for k = min(m, n)."""
    return tuple(qr_p.bind(x, pivoting=bool(pivoting), full_matrices=bool(full_matrices),
                           use_magma=use_magma))

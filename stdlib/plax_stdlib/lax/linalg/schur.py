"""Reductions to a similar matrix of simpler form (CPU only, through LAPACK; no
derivatives, as in JAX):

* `schur`: A = Q T Qᴴ with T upper (quasi-)triangular — gees;
* `hessenberg`: A = Q H Qᴴ with H upper Hessenberg, Q as Householder reflectors
  below H's first subdiagonal and their `taus` — gehrd.
"""
from __future__ import annotations

from plax.extend.constructors import standard_primitive
from plax.extend.core import ShapedArray
from plax.extend.mlir import mu
from plax_stdlib.lax.linalg import lapack
from plax_stdlib.lax.linalg.matrices import check_matrix, leading_batch


def _schur_abstract_eval(a, *, compute_schur_vectors, sort_eig_vals, select_callable):
    check_matrix("schur", a, square=True)
    out = a.update(weak_type=False)
    return [out, out] if compute_schur_vectors else [out]


def _schur_lower_cpu(ctx, a, *, compute_schur_vectors, sort_eig_vals, select_callable):
    if sort_eig_vals or select_callable is not None:
        raise NotImplementedError("schur: sorting eigenvalues (sort_eig_vals, "
                                  "select_callable) is not implemented")
    from jaxlib import lapack as jaxlib_lapack
    aval, = ctx.avals_in
    batch = aval.shape[:-2]
    if 0 in aval.shape:
        return [a, a] if compute_schur_vectors else [a]
    values = ShapedArray(aval.shape[:-1], aval.dtype)
    value_avals = [values, values] if aval.dtype.kind == "f" else [values]
    info = lapack.info_aval(batch)
    mode = jaxlib_lapack.schur.ComputationMode
    form, vectors, *_, status = lapack.call(
        lapack.target("gees", aval.dtype), [a], [aval],
        [aval, aval, *value_avals, info, info], aliases={0: 0},
        mode=lapack.enum(mode.kComputeSchurVectors if compute_schur_vectors
                         else mode.kNoComputeSchurVectors),
        sort=lapack.enum(jaxlib_lapack.schur.Sort.kNoSortEigenvalues))
    ok = lapack.succeeded(status, batch)
    outs = [lapack.nan_where(ok, form, aval, batch)]
    if compute_schur_vectors:
        outs.append(lapack.nan_where(ok, vectors, aval, batch))
    return outs


schur_p = standard_primitive("lax.schur", _schur_abstract_eval, None, multiple_results=True,
                             batching=leading_batch())
schur_p.def_lowering(_schur_lower_cpu, platform="cpu")


def schur(x, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False,
          select_callable=None):
    """`(t, q)` (just `t` without `compute_schur_vectors`): the Schur form and Schur
    vectors of each square matrix of `x`, x = q t qᴴ."""
    outs = schur_p.bind(x, compute_schur_vectors=bool(compute_schur_vectors),
                        sort_eig_vals=bool(sort_eig_vals), select_callable=select_callable)
    return tuple(outs) if compute_schur_vectors else outs[0]


def _hessenberg_abstract_eval(a):
    batch = check_matrix("hessenberg", a, square=True)
    return [a.update(weak_type=False), ShapedArray((*batch, max(a.shape[-1] - 1, 0)), a.dtype)]


def _hessenberg_lower_cpu(ctx, a):
    aval, = ctx.avals_in
    a_out, taus_aval = ctx.avals_out
    batch = aval.shape[:-2]
    n = aval.shape[-1]
    if 0 in aval.shape:
        return [a, mu.splat(0, taus_aval)]
    h, taus, info = lapack.call(lapack.target("gehrd", aval.dtype), [a], [aval],
                                [a_out, taus_aval, lapack.info_aval(batch)], aliases={0: 0},
                                low=lapack.int32(1), high=lapack.int32(n))
    ok = lapack.succeeded(info, batch)
    return [lapack.nan_where(ok, h, a_out, batch), lapack.nan_where(ok, taus, taus_aval, batch)]


hessenberg_p = standard_primitive("lax.hessenberg", _hessenberg_abstract_eval, None,
                                  multiple_results=True, batching=leading_batch())
hessenberg_p.def_lowering(_hessenberg_lower_cpu, platform="cpu")


def hessenberg(a):
    """`(a, taus)`: the upper Hessenberg form of each square matrix in the upper
    triangle and first subdiagonal of `a`, and the Householder reflectors of Q
    below it with their scale factors `taus` `[..., n - 1]`."""
    return tuple(hessenberg_p.bind(a))

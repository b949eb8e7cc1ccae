"""`eig`: eigenvalues and (optionally) left and right eigenvectors of general square
matrices, all complex: A vr = vr diag(w), vlᴴ A = diag(w) vlᴴ.

Eigenvectors are normalised as LAPACK's geev does (unit 2-norm, largest component
real), which is what their derivative (opt-in, `enable_eigvec_derivs`) follows;
it is valid for distinct eigenvalues. Eigenvalue derivatives are always defined.
On CPU, LAPACK's geev; matrices where it fails become NaNs.
"""
from __future__ import annotations

import enum

import numpy as np

from plax.extend.ad import Zero
from plax.extend.constructors import complex_dtype, standard_primitive
from plax.extend.core import ShapedArray, get_aval
from plax.extend.mlir import hlo, mu
from plax_stdlib.lax.comparison import eq
from plax_stdlib.lax.conversion import convert_element_type
from plax_stdlib.lax.creation import broadcasted_iota
from plax_stdlib.lax.elementwise import abs as abs_, add, complex as make_complex, conj, div, \
    imag, mul, neg, real, sub
from plax_stdlib.lax.linalg import lapack
from plax_stdlib.lax.linalg.matrices import (check_matrix, diagonal, eye_like, leading_batch,
                                             matmul, mH, mT)
from plax_stdlib.lax.reductions import argmax, reduce_sum
from plax_stdlib.lax.shape_ops import broadcast_in_dim, expand_dims


class EigImplementation(enum.Enum):
    """Which library computes `eig`."""
    LAPACK = "lapack"
    MAGMA = "magma"
    CUSOLVER = "cusolver"


def _eig_abstract_eval(a, *, compute_left_eigenvectors, compute_right_eigenvectors,
                       enable_eigvec_derivs, implementation):
    batch = check_matrix("eig", a, square=True)
    n = a.shape[-1]
    dtype = complex_dtype(a.dtype)
    count = int(compute_left_eigenvectors) + int(compute_right_eigenvectors)
    return [ShapedArray((*batch, n), dtype)] + [ShapedArray(a.shape, dtype)] * count


def _solve(a, b):
    """A⁻¹ B for square A: JAX's solve (LU with pivoting, in `custom_linear_solve`)."""
    from plax_stdlib.numpy.linalg.lu_solves import solve_square
    return solve_square(a, b)


def _eigenvector_jvp(w, v, a_dot):
    """ẇ and v̇ for A v = v diag(w), with v normalised as geev does: v̇_j = u_j + c_j v_j,
    u = v (F ∘ v⁻¹ Ȧ v), where c_j keeps |v_j| = 1 and the largest entry of v_j real."""
    projected = matmul(_solve(v, a_dot), v)
    shape = get_aval(v).shape
    nb = len(shape) - 2
    eye = eye_like(v)
    gaps = sub(broadcast_in_dim(w, shape, (*range(nb), nb + 1)),
               broadcast_in_dim(w, shape, tuple(range(nb + 1))))  # w_j - w_i
    f = sub(div(np.ones((), get_aval(v).dtype), add(gaps, eye)), eye)
    u = matmul(v, mul(f, projected))
    largest = argmax(abs_(v), nb, np.int32)  # [..., n]: row of each column's largest entry
    rows = broadcasted_iota(np.int32, shape, nb)
    at_largest = convert_element_type(eq(rows, expand_dims(largest, (nb,))), get_aval(v).dtype)

    def along(x):  # the sum over each column's entries
        return reduce_sum(x, (nb,))
    norm_fix = neg(real(along(mul(conj(v), u))))
    phase_fix = neg(div(imag(along(mul(at_largest, u))), real(along(mul(at_largest, v)))))
    c = make_complex(norm_fix, phase_fix)
    return diagonal(projected), add(u, mul(v, expand_dims(c, (nb,))))


def _eig_jvp(primals, tangents, *, compute_left_eigenvectors, compute_right_eigenvectors,
             enable_eigvec_derivs, implementation):
    (a,), (a_dot,) = primals, tangents
    params = dict(compute_left_eigenvectors=compute_left_eigenvectors,
                  compute_right_eigenvectors=compute_right_eigenvectors,
                  enable_eigvec_derivs=enable_eigvec_derivs, implementation=implementation)
    outs = eig_p.bind(a, **params)
    if isinstance(a_dot, Zero) or 0 in get_aval(a).shape:  # empty: nothing to perturb
        return outs, [Zero(get_aval(o)) for o in outs]
    vectors = compute_left_eigenvectors or compute_right_eigenvectors
    if vectors and not enable_eigvec_derivs:
        raise NotImplementedError(
            "eig: derivatives of eigenvectors are only valid for distinct eigenvalues and "
            "under LAPACK's normalisation, which plax cannot check; pass "
            "enable_eigvec_derivs=True to lax.linalg.eig to opt in")
    # Eigenvalue derivatives do not depend on how eigenvectors are scaled, so theirs
    # may be taken to any order.
    full = eig_p.bind(a, **dict(params, compute_right_eigenvectors=True,
                                enable_eigvec_derivs=True))
    w, vr = full[0], full[-1]
    a_dot = convert_element_type(a_dot, get_aval(vr).dtype)
    if not vectors:
        w_dot = reduce_sum(mul(_solve(vr, a_dot), mT(vr)), (get_aval(vr).ndim - 1,))
        return outs, [w_dot]
    w_dot, vr_dot = _eigenvector_jvp(w, vr, a_dot)
    tangents_out = [w_dot]
    if compute_left_eigenvectors:
        tangents_out.append(_eigenvector_jvp(conj(w), full[1], mH(a_dot))[1])
    if compute_right_eigenvectors:
        tangents_out.append(vr_dot)
    return outs, tangents_out


def _eig_lower_cpu(ctx, a, *, compute_left_eigenvectors, compute_right_eigenvectors,
                   enable_eigvec_derivs, implementation):
    if implementation not in (None, EigImplementation.LAPACK):
        raise NotImplementedError(f"eig: the {implementation} implementation is not "
                                  "available on CPU")
    from jaxlib import lapack as jaxlib_lapack
    aval, = ctx.avals_in
    batch = aval.shape[:-2]
    n = aval.shape[-1]
    w_aval = ctx.avals_out[0]
    vectors_aval = ShapedArray(aval.shape, w_aval.dtype)
    real_input = aval.dtype.kind == "f"
    modes = jaxlib_lapack.eig.ComputationMode

    def mode(compute):
        return lapack.enum(modes.kComputeEigenvectors if compute else modes.kNoEigenvectors)
    if 0 in aval.shape:
        return [mu.splat(0, o) for o in ctx.avals_out]
    values = [ShapedArray((*batch, n), aval.dtype)] * (2 if real_input else 1)
    *w, vl, vr, info = lapack.call(
        lapack.target("geev", aval.dtype), [a], [aval],
        [*values, vectors_aval, vectors_aval, lapack.info_aval(batch)],
        compute_left=mode(compute_left_eigenvectors),
        compute_right=mode(compute_right_eigenvectors))
    w = hlo.complex(*w) if real_input else w[0]
    ok = lapack.succeeded(info, batch)
    outs = [lapack.nan_where(ok, w, w_aval, batch)]
    for compute, vectors in ((compute_left_eigenvectors, vl), (compute_right_eigenvectors, vr)):
        if compute:
            outs.append(lapack.nan_where(ok, vectors, vectors_aval, batch))
    return outs


eig_p = standard_primitive("lax.eig", _eig_abstract_eval, None, multiple_results=True,
                           jvp=_eig_jvp, batching=leading_batch())
eig_p.def_lowering(_eig_lower_cpu, platform="cpu")


def eig(x, *, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True,
        enable_eigvec_derivs: bool = False, implementation: EigImplementation | None = None,
        use_magma: bool | None = None):
    """`[w, vl, vr]` (the eigenvectors only where asked for) of each square matrix of
    `x` `[..., n, n]`, as complex arrays."""
    if use_magma is not None:
        implementation = EigImplementation.MAGMA if use_magma else EigImplementation.LAPACK
    return eig_p.bind(x, compute_left_eigenvectors=bool(compute_left_eigenvectors),
                      compute_right_eigenvectors=bool(compute_right_eigenvectors),
                      enable_eigvec_derivs=bool(enable_eigvec_derivs),
                      implementation=implementation)

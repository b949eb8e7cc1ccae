"""`cholesky`: the lower-triangular L with A = L Lᴴ, for Hermitian positive-definite A.

The primitive reads the lower triangle of A only and returns L with a zero upper
triangle; a matrix that is not positive definite gives NaNs. On CPU it calls
LAPACK's potrf; elsewhere it lowers to `stablehlo.cholesky` (XLA expands it).
"""
from __future__ import annotations

import numpy as np

from plax.extend.ad import Zero
from plax.extend.constructors import standard_primitive
from plax.extend.core import get_aval
from plax.extend.mlir import hlo, ir
from plax_stdlib.lax.elementwise import add, mul
from plax_stdlib.lax.linalg import lapack
from plax_stdlib.lax.linalg.matrices import (check_matrix, eye_like, hermitian_from_triangle,
                                             leading_batch, matmul, symmetrize, tril, tril_hlo)
from plax_stdlib.lax.linalg.triangular_solve import triangular_solve


def _cholesky_abstract_eval(a):
    check_matrix("cholesky", a, square=True)
    return a.update(weak_type=False)


def _cholesky_jvp(primals, tangents):
    """L̇ = L Φ(L⁻¹ Ȧ L⁻ᴴ), Φ keeping the lower triangle with a halved diagonal (Ȧ is
    the Hermitian tangent that the lower triangle describes)."""
    (a,), (a_dot,) = primals, tangents
    L = cholesky_p.bind(a)
    if isinstance(a_dot, Zero):
        return L, a_dot
    a_dot = hermitian_from_triangle(a_dot, lower=True)
    right = triangular_solve(L, a_dot, left_side=False, lower=True, transpose_a=True,
                             conjugate_a=True)
    inner = triangular_solve(L, right, left_side=True, lower=True)
    half_diagonal = mul(eye_like(inner), np.array(0.5, get_aval(L).dtype))
    phi = add(tril(inner, -1), mul(inner, half_diagonal))
    return L, matmul(L, phi)


def _cholesky_lower_cpu(ctx, a):
    aval, = ctx.avals_in
    batch = aval.shape[:-2]
    if 0 in aval.shape:
        return [a]
    factor, info = lapack.call(lapack.target("potrf", aval.dtype), [a], [aval],
                               [aval, lapack.info_aval(batch)], aliases={0: 0},
                               uplo=lapack.char("L"))
    factor = lapack.nan_where(lapack.succeeded(info, batch), factor, aval, batch)
    return [tril_hlo(factor, aval)]


def _cholesky_lower(ctx, a):
    aval, = ctx.avals_in
    return [tril_hlo(hlo.cholesky(a, lower=ir.BoolAttr.get(True)), aval)]


cholesky_p = standard_primitive("lax.cholesky", _cholesky_abstract_eval, _cholesky_lower,
                                jvp=_cholesky_jvp, batching=leading_batch())
cholesky_p.def_lowering(_cholesky_lower_cpu, platform="cpu")


def cholesky(x, *, symmetrize_input: bool = True):
    """The Cholesky factor L (lower triangular, A = L Lᴴ) of each matrix of `x`
    `[..., n, n]`; NaNs where a matrix is not positive definite. With
    `symmetrize_input`, (x + xᴴ)/2 is factored; otherwise only the lower triangle
    of `x` is read."""
    return tril(cholesky_p.bind(symmetrize(x) if symmetrize_input else x))  # as JAX's

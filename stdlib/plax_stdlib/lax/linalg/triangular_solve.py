"""`triangular_solve`: X with op(A) X = B (`left_side`) or X op(A) = B, for triangular A.

op(A) is A, Aᵀ, conj(A) or Aᴴ (`transpose_a`, `conjugate_a`); only the `lower` (or
upper) triangle of A is read, and its diagonal is taken as ones when
`unit_diagonal`. The solve is linear in B: its transpose solves with the
transposed op(A). On CPU it calls LAPACK's trsm; elsewhere it lowers to
`stablehlo.triangular_solve`.
"""
from __future__ import annotations

from plax.extend.ad import Zero, add_tangents, is_undefined_primal
from plax.extend.batching import bdim_at_front, moveaxis, not_mapped
from plax.extend.constructors import INEXACT, check_same_dtypes, describe, standard_primitive
from plax.extend.core import get_aval
from plax.extend.mlir import chlo, hlo, ir
from plax_stdlib.lax.elementwise import conj, neg
from plax_stdlib.lax.linalg import lapack
from plax_stdlib.lax.linalg.matrices import check_matrix, is_complex, matmul, mT, tril, triu
from plax_stdlib.lax.shape_ops import expand_dims, reshape
from plax_stdlib.lax.slicing import index_in_dim


def _triangular_solve_abstract_eval(a, b, *, left_side, lower, transpose_a, conjugate_a,
                                    unit_diagonal):
    batch = check_matrix("triangular_solve", a, "a", square=True, kinds=INEXACT)
    check_matrix("triangular_solve", b, "b", kinds=INEXACT)
    check_same_dtypes("triangular_solve", a, b)
    m = a.shape[-1]
    if b.shape[:-2] != batch or b.shape[-2 if left_side else -1] != m:
        side = "[..., m, n]" if left_side else "[..., n, m]"
        raise ValueError(f"triangular_solve with left_side={left_side} requires b of shape "
                         f"{side} for a [..., m, m] with the same batch dimensions; got a "
                         f"{describe(a)} and b {describe(b)}")
    return b.update(weak_type=False)


def _solve_with(a, params):
    return lambda rhs: triangular_solve_p.bind(a, rhs, **params)


def _triangular_solve_jvp(primals, tangents, **params):
    """Linear in B; for A: d(op(A)⁻¹ B) = -op(A)⁻¹ op(Ȧ) X, with Ȧ restricted to the
    triangle the solve reads (X on the other side when solving from the right)."""
    (a, b), (a_dot, b_dot) = primals, tangents
    solve = _solve_with(a, params)
    x = triangular_solve_p.bind(a, b, **params)
    x_dot = Zero(get_aval(x)) if isinstance(b_dot, Zero) else solve(b_dot)
    if isinstance(a_dot, Zero):
        return x, x_dot
    strict = 1 if params["unit_diagonal"] else 0
    a_dot = tril(a_dot, -strict) if params["lower"] else triu(a_dot, strict)
    if params["transpose_a"]:
        a_dot = mT(a_dot)
    if params["conjugate_a"]:
        a_dot = conj(a_dot)
    m, n = get_aval(x).shape[-2:]
    # Solves cost about as much as products: take the cheaper association.
    if params["left_side"]:
        step = solve(matmul(a_dot, x)) if m > n else matmul(solve(a_dot), x)
    else:
        step = solve(matmul(x, a_dot)) if m < n else matmul(x, solve(a_dot))
    return x, add_tangents(x_dot, neg(step))


def _triangular_solve_transpose(ct, a, b, **params):
    assert not is_undefined_primal(a) and is_undefined_primal(b)
    if isinstance(ct, Zero):
        return [None, Zero(b.aval)]
    flipped = dict(params, transpose_a=not params["transpose_a"])
    return [None, triangular_solve_p.bind(a, ct, **flipped)]


def _triangular_solve_batching(axis_data, args, dims, **params):
    """With A shared, the batch of right-hand sides joins B's free dimension (one
    solve with more columns, or rows); otherwise both are batched in front."""
    (a, b), (da, db) = args, dims
    if da is not_mapped:
        ndim = get_aval(b).ndim
        if params["left_side"]:  # [..., m, n, B] solved as [..., m, n*B]
            b = moveaxis(b, db, ndim - 1)
            moved = get_aval(b).shape
            flat, out_dim = reshape(b, (*moved[:-2], moved[-2] * moved[-1])), ndim - 1
        else:  # [..., B, n, m] solved as [..., B*n, m]
            b = moveaxis(b, db, ndim - 3)
            moved = get_aval(b).shape
            flat, out_dim = reshape(b, (*moved[:-3], moved[-3] * moved[-2], moved[-1])), ndim - 3
        return reshape(triangular_solve_p.bind(a, flat, **params), moved), out_dim
    a = bdim_at_front(a, da, axis_data.size)
    b = bdim_at_front(b, db, axis_data.size)
    return triangular_solve_p.bind(a, b, **params), 0


def _trans(transpose_a: bool, conjugate_a: bool) -> str:
    return ("C" if conjugate_a else "T") if transpose_a else "N"


def _triangular_solve_lower_cpu(ctx, a, b, *, left_side, lower, transpose_a, conjugate_a,
                                unit_diagonal):
    a_aval, b_aval = ctx.avals_in
    if 0 in b_aval.shape:
        return [b]
    if a_aval.dtype not in lapack.LAPACK_DTYPES:  # float16, bfloat16: XLA's own solve
        return _triangular_solve_lower(ctx, a, b, left_side=left_side, lower=lower,
                                       transpose_a=transpose_a, conjugate_a=conjugate_a,
                                       unit_diagonal=unit_diagonal)
    if conjugate_a and not transpose_a:  # trsm conjugates only with a transpose
        a, conjugate_a = chlo.conj(a), False
    return lapack.call(lapack.target("trsm", a_aval.dtype), [a, b], [a_aval, b_aval],
                       [b_aval], aliases={1: 0}, side=lapack.char("L" if left_side else "R"),
                       uplo=lapack.char("L" if lower else "U"),
                       trans_x=lapack.char(_trans(transpose_a, conjugate_a)),
                       diag=lapack.char("U" if unit_diagonal else "N"))


def _triangular_solve_lower(ctx, a, b, *, left_side, lower, transpose_a, conjugate_a,
                            unit_diagonal):
    if conjugate_a and not transpose_a:
        a, conjugate_a = chlo.conj(a), False
    kind = {"N": "NO_TRANSPOSE", "T": "TRANSPOSE", "C": "ADJOINT"}[_trans(transpose_a,
                                                                         conjugate_a)]
    return [hlo.triangular_solve(a, b, ir.BoolAttr.get(left_side), ir.BoolAttr.get(lower),
                                 ir.BoolAttr.get(unit_diagonal), hlo.TransposeAttr.get(kind))]


triangular_solve_p = standard_primitive(
    "lax.triangular_solve", _triangular_solve_abstract_eval, _triangular_solve_lower,
    jvp=_triangular_solve_jvp, transpose=_triangular_solve_transpose,
    batching=_triangular_solve_batching)
triangular_solve_p.def_lowering(_triangular_solve_lower_cpu, platform="cpu")


def triangular_solve(a, b, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False):
    """X solving op(a) X = b (`left_side`) or X op(a) = b for triangular `a`
    `[..., m, m]`; `b` is `[..., m, n]` (or `[..., n, m]`), or a batch of vectors
    `[..., m]` (one rank below `a`)."""
    vector = get_aval(b).ndim == get_aval(a).ndim - 1
    if vector:
        b = expand_dims(b, (get_aval(b).ndim if left_side else get_aval(b).ndim - 1,))
    params = dict(left_side=bool(left_side), lower=bool(lower), transpose_a=bool(transpose_a),
                  conjugate_a=bool(conjugate_a) and is_complex(a),
                  unit_diagonal=bool(unit_diagonal))
    out = triangular_solve_p.bind(a, b, **params)
    if vector:
        n = get_aval(out).ndim
        out = index_in_dim(out, 0, n - 1 if left_side else n - 2, keepdims=False)
    return out

"""Tridiagonal matrices:

* `tridiagonal`: A = Q T Qᴴ for Hermitian A, with T real symmetric tridiagonal
  (sytrd/hetrd; no derivatives, as in JAX);
* `tridiagonal_solve`: X with T X = B for T given by its three diagonals (gtsv),
  linear in B, differentiable in all four operands.
"""
from __future__ import annotations

import numpy as np

from plax.extend.ad import Zero, add_tangents, instantiate, is_undefined_primal
from plax.extend.batching import bdim_at_front, moveaxis, not_mapped
from plax.extend.constructors import check_dtype, check_same_dtypes, describe, standard_primitive
from plax.extend.core import ShapedArray, get_aval
from plax.extend.mlir import mu
from plax_stdlib.lax.elementwise import add, mul, neg
from plax_stdlib.lax.linalg import lapack
from plax_stdlib.lax.linalg.matrices import (LAPACK_KINDS, check_matrix, leading_batch,
                                             real_dtype_of)
from plax_stdlib.lax.shape_ops import broadcast_in_dim, pad, reshape
from plax_stdlib.lax.slicing import slice_in_dim

# --- tridiagonal -------------------------------------------------------------------------------

def _tridiagonal_abstract_eval(a, *, lower):
    batch = check_matrix("tridiagonal", a, square=True)
    n = a.shape[-1]
    if n == 0:
        raise ValueError("tridiagonal requires non-empty square matrices, got shape "
                         f"{a.shape}")
    real = real_dtype_of(a.dtype)
    return [a.update(weak_type=False), ShapedArray((*batch, n), real),
            ShapedArray((*batch, n - 1), real), ShapedArray((*batch, n - 1), a.dtype)]


def _tridiagonal_lower_cpu(ctx, a, *, lower):
    aval, = ctx.avals_in
    batch = aval.shape[:-2]
    if 0 in batch:
        return [a, *(mu.splat(0, o) for o in ctx.avals_out[1:])]
    routine = "hetrd" if aval.dtype.kind == "c" else "sytrd"
    *outs, info = lapack.call(lapack.target(routine, aval.dtype), [a], [aval],
                              [*ctx.avals_out, lapack.info_aval(batch)], aliases={0: 0},
                              uplo=lapack.char("L" if lower else "U"))
    ok = lapack.succeeded(info, batch)
    return [lapack.nan_where(ok, x, o, batch) for x, o in zip(outs, ctx.avals_out)]


tridiagonal_p = standard_primitive("lax.tridiagonal", _tridiagonal_abstract_eval, None,
                                   multiple_results=True, batching=leading_batch())
tridiagonal_p.def_lowering(_tridiagonal_lower_cpu, platform="cpu")


def tridiagonal(a, *, lower: bool = True):
    """`(a, d, e, taus)`: each Hermitian matrix of `a` reduced to tridiagonal form,
    reading its `lower` (or upper) triangle: `d` the diagonal, `e` the off-diagonal,
    the Householder reflectors of Q in `a` beyond it, with scale factors `taus`."""
    return tuple(tridiagonal_p.bind(a, lower=bool(lower)))


# --- tridiagonal_solve ---------------------------------------------------------------------------

def _tridiagonal_solve_abstract_eval(dl, d, du, b, *, perturb_singular):
    for what, x in (("dl", dl), ("d", d), ("du", du), ("b", b)):
        check_dtype("tridiagonal_solve", x, LAPACK_KINDS, what)
    check_same_dtypes("tridiagonal_solve", dl, d, du, b)
    if not (dl.shape == d.shape == du.shape) or d.ndim < 1:
        raise TypeError("tridiagonal_solve requires diagonals dl, d, du of one shape [..., m], "
                        f"got {describe(dl)}, {describe(d)}, {describe(du)}")
    if b.ndim != d.ndim + 1 or b.shape[:-1] != d.shape:
        raise TypeError(f"tridiagonal_solve requires b of shape [..., m, n] matching diagonals "
                        f"{describe(d)}, got {describe(b)}")
    return b.update(weak_type=False)


def _shift(x, by: int):
    """x[..., i - by] along the last axis, zeros shifted in."""
    n = get_aval(x).ndim
    config = [(0, 0, 0)] * (n - 1) + [(by, -by, 0)]
    return pad(x, np.zeros((), get_aval(x).dtype), config)


def _tridiagonal_product(dl, d, du, x):
    """T X for T with diagonals dl (dl[i] = T[i, i-1]), d and du (du[i] = T[i, i+1])."""
    n = get_aval(x).ndim

    def column(v):  # [..., m] against [..., m, k]
        return broadcast_in_dim(v, get_aval(x).shape, tuple(range(n - 1)))
    rows = n - 2
    below = pad(slice_in_dim(x, 0, get_aval(x).shape[rows] - 1, axis=rows),
                np.zeros((), get_aval(x).dtype), [(0, 0, 0)] * rows + [(1, 0, 0), (0, 0, 0)])
    above = pad(slice_in_dim(x, 1, get_aval(x).shape[rows], axis=rows),
                np.zeros((), get_aval(x).dtype), [(0, 0, 0)] * rows + [(0, 1, 0), (0, 0, 0)])
    return add(add(mul(column(d), x), mul(column(dl), below)), mul(column(du), above))


def _tridiagonal_solve_jvp(primals, tangents, *, perturb_singular):
    """X = T⁻¹ B gives Ẋ = T⁻¹ (Ḃ - Ṫ X)."""
    *diagonals, b = primals
    *diagonal_dots, b_dot = tangents
    x = tridiagonal_solve_p.bind(*primals, perturb_singular=perturb_singular)
    rhs = b_dot
    if not all(isinstance(t, Zero) for t in diagonal_dots):
        t_dot = [instantiate(t) for t in diagonal_dots]
        rhs = add_tangents(b_dot, neg(_tridiagonal_product(*t_dot, x)))
    if isinstance(rhs, Zero):
        return x, rhs
    return x, tridiagonal_solve_p.bind(*diagonals, rhs, perturb_singular=perturb_singular)


def _tridiagonal_solve_transpose(ct, dl, d, du, b, *, perturb_singular):
    """Solving with Tᵀ, whose sub-diagonal is T's super-diagonal shifted by one."""
    assert is_undefined_primal(b) and not any(map(is_undefined_primal, (dl, d, du)))
    if isinstance(ct, Zero):
        return [None, None, None, Zero(b.aval)]
    n = get_aval(d).shape[-1]
    dl_t = _shift(du, 1) if n else du
    du_t = _shift(dl, -1) if n else dl
    return [None, None, None,
            tridiagonal_solve_p.bind(dl_t, d, du_t, ct, perturb_singular=perturb_singular)]


def _tridiagonal_solve_batching(axis_data, args, dims, *, perturb_singular):
    """With shared diagonals, the batch of right-hand sides becomes more columns."""
    *diagonals, b = args
    *diagonal_dims, b_dim = dims
    if all(dim is not_mapped for dim in diagonal_dims):
        ndim = get_aval(b).ndim
        b = moveaxis(b, b_dim, ndim - 1)
        moved = get_aval(b).shape
        flat = reshape(b, (*moved[:-2], moved[-2] * moved[-1]))
        out = tridiagonal_solve_p.bind(*diagonals, flat, perturb_singular=perturb_singular)
        return reshape(out, moved), ndim - 1
    args = [bdim_at_front(x, dim, axis_data.size) for x, dim in zip(args, dims)]
    return tridiagonal_solve_p.bind(*args, perturb_singular=perturb_singular), 0


def _tridiagonal_solve_lower_cpu(ctx, dl, d, du, b, *, perturb_singular):
    avals = list(ctx.avals_in)
    b_aval = avals[-1]
    batch = b_aval.shape[:-2]
    if 0 in b_aval.shape:
        return [b]
    if perturb_singular:
        return lapack.call("tridiagonal_solve_perturbed_ffi", [dl, d, du, b], avals, [b_aval])
    *_, x, info = lapack.call(lapack.target("gtsv", b_aval.dtype), [dl, d, du, b], avals,
                              [*avals, lapack.info_aval(batch)],
                              aliases={0: 0, 1: 1, 2: 2, 3: 3})
    return [lapack.nan_where(lapack.succeeded(info, batch), x, b_aval, batch)]


tridiagonal_solve_p = standard_primitive(
    "lax.tridiagonal_solve", _tridiagonal_solve_abstract_eval, None,
    jvp=_tridiagonal_solve_jvp, transpose=_tridiagonal_solve_transpose,
    batching=_tridiagonal_solve_batching)
tridiagonal_solve_p.def_lowering(_tridiagonal_solve_lower_cpu, platform="cpu")


def tridiagonal_solve(dl, d, du, b, *, perturb_singular: bool = False):
    """X with T X = b, T the tridiagonal matrices of sub-diagonal `dl` (dl[..., 0] is
    ignored), diagonal `d` and super-diagonal `du` (du[..., m-1] ignored), each
    `[..., m]`; `b` is `[..., m, n]`. With `perturb_singular`, tiny pivots are
    perturbed so that singular systems get a finite answer."""
    return tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=bool(perturb_singular))

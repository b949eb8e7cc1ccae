"""`lu`: LU decomposition with partial pivoting, P A = L U, and the row swaps as a
permutation (`lu_pivots_to_permutation`); `plax.numpy.linalg.lu_solves` solves with
the factors.

`lu` returns the factors packed in one matrix (L below the diagonal, its unit
diagonal implied; U on and above it), the pivots (row i was swapped with row
pivots[i]) and the permutation they amount to. An exactly singular matrix gives
a U with a zero on its diagonal (LAPACK's positive `info` is not a failure);
NaNs appear only where the kernel fails. On CPU, LAPACK's getrf.
"""
from __future__ import annotations

import numpy as np

from plax.extend.ad import Zero, tangent_aval
from plax.extend.constructors import check_dtype, describe, standard_primitive
from plax.extend.core import ShapedArray, canonical_dim, get_aval, min_dim
from plax.extend.mlir import hlo, mu
from plax_stdlib.lax.comparison import eq, ge, select
from plax_stdlib.lax.control_flow import fori_loop
from plax_stdlib.lax.creation import broadcasted_iota
from plax_stdlib.lax.conversion import convert_element_type
from plax_stdlib.lax.dimensions import size_scalar
from plax_stdlib.lax.elementwise import add, mul
from plax_stdlib.lax.linalg import lapack, xla_targets
from plax_stdlib.lax.linalg.matrices import (check_matrix, eye_like, leading_batch,
                                             lower_function, lowering_from, matmul, take_rows,
                                             tril, triu)
from plax_stdlib.lax.linalg.triangular_solve import triangular_solve
from plax_stdlib.lax.reductions import reduce_sum
from plax_stdlib.lax.shape_ops import broadcast_in_dim, expand_dims, pad
from plax_stdlib.lax.slicing import dynamic_index_in_dim, slice as slice_

# --- lu_pivots_to_permutation ----------------------------------------------------------------

def _pivots_abstract_eval(pivots, *, permutation_size):
    check_dtype("lu_pivots_to_permutation", pivots, frozenset({"int32"}), "pivots")
    if pivots.ndim < 1:
        raise TypeError(f"lu_pivots_to_permutation requires pivots of rank at least 1, got "
                        f"{describe(pivots)}")
    if permutation_size < pivots.shape[-1]:
        raise ValueError(f"lu_pivots_to_permutation: permutation_size {permutation_size} must "
                         f"be at least the number of pivots {pivots.shape[-1]}")
    return ShapedArray((*pivots.shape[:-1], permutation_size), np.dtype(np.int32))


def _apply_swaps(pivots, *, permutation_size):
    """Start from the identity and swap entries i and pivots[i] in turn, for every
    batch member at once (the swaps are selects against an iota, not scatters)."""
    shape = (*get_aval(pivots).shape[:-1], permutation_size)
    positions = broadcasted_iota(np.int32, shape, len(shape) - 1)
    k = get_aval(pivots).shape[-1]
    if k == 0 or permutation_size == 0:
        return positions

    def swap(i, perm):
        target = expand_dims(dynamic_index_in_dim(pivots, i, len(shape) - 1, keepdims=False),
                             (len(shape) - 1,))
        at_i, at_target = eq(positions, i), eq(positions, target)
        value_i = _pick(perm, at_i)
        value_target = _pick(perm, at_target)
        return select(at_i, value_target, select(at_target, value_i, perm))
    return fori_loop(np.int32(0), size_scalar(k, np.int32), swap, positions)


def _pick(x, where):
    """The entry of each row of `x` where `where` holds (exactly one), kept as a size-1
    trailing dimension so it broadcasts back."""
    n = get_aval(x).ndim
    picked = reduce_sum(select(where, x, broadcast_in_dim(np.int32(0), get_aval(x).shape, ())),
                        (n - 1,))
    return broadcast_in_dim(picked, get_aval(x).shape, tuple(range(n - 1)))


lu_pivots_to_permutation_p = standard_primitive(
    "lax.lu_pivots_to_permutation", _pivots_abstract_eval, lowering_from(_apply_swaps),
    batching=leading_batch())


def lu_pivots_to_permutation(pivots, permutation_size: int):
    """The permutation `[..., permutation_size]` made by swapping entries i and
    pivots[..., i] of the identity for each i in turn."""
    return lu_pivots_to_permutation_p.bind(pivots,
                                            permutation_size=canonical_dim(permutation_size))


# --- lu ----------------------------------------------------------------------------------------

def _lu_abstract_eval(a):
    batch = check_matrix("lu", a)
    m, n = a.shape[-2:]
    i32 = np.dtype(np.int32)
    return [a.update(weak_type=False), ShapedArray((*batch, min_dim(m, n)), i32),
            ShapedArray((*batch, m), i32)]


def _unpack(lu_matrix):
    """L `[..., m, m]` (unit lower, the identity beyond the first min(m, n) columns)
    and U `[..., n, n]` (the identity below the first min(m, n) rows) from packed
    factors, so both are square and invertible when A has full rank."""
    aval = get_aval(lu_matrix)
    m, n = aval.shape[-2:]
    k = min_dim(m, n)
    batch = aval.shape[:-2]
    zero = np.zeros((), aval.dtype)
    none = [(0, 0, 0)] * len(batch)
    low = pad(slice_(lu_matrix, (0,) * aval.ndim, (*batch, m, k)), zero,
              [*none, (0, 0, 0), (0, m - k, 0)])
    low = add(tril(low, -1), eye_like(low))
    up = pad(slice_(lu_matrix, (0,) * aval.ndim, (*batch, k, n)), zero,
             [*none, (0, n - k, 0), (0, 0, 0)])
    return low, add(triu(up), _identity_from(up, k))


def _identity_from(x, k: int):
    """Ones on the diagonal from position k on, zeros elsewhere."""
    aval = get_aval(x)
    cols = broadcasted_iota(np.int32, aval.shape, aval.ndim - 1)
    return mul(eye_like(x), convert_element_type(ge(cols, size_scalar(k, np.int32)), aval.dtype))


def _lu_jvp(primals, tangents):
    """With P A = L U: L⁻¹ P Ȧ U⁻¹ = L⁻¹L̇ + U̇U⁻¹, whose strict lower part is L⁻¹L̇
    and upper part U̇U⁻¹ (De Hoog, Anderssen and Lukas)."""
    (a,), (a_dot,) = primals, tangents
    lu_matrix, pivots, permutation = lu_p.bind(a)
    outs = [lu_matrix, pivots, permutation]
    int_zeros = [Zero(tangent_aval(get_aval(pivots))), Zero(tangent_aval(get_aval(permutation)))]
    if isinstance(a_dot, Zero):
        return outs, [Zero(get_aval(lu_matrix)), *int_zeros]
    low, up = _unpack(lu_matrix)
    m, n = get_aval(a).shape[-2:]
    inner = triangular_solve(low, take_rows(a_dot, permutation), left_side=True, lower=True,
                             unit_diagonal=True)
    inner = triangular_solve(up, inner, left_side=False, lower=False)
    lu_dot = add(matmul(low, tril(inner, -1)), matmul(triu(inner), up))
    return outs, [lu_dot, *int_zeros]


def _lu_lower_cpu(ctx, a):
    aval, = ctx.avals_in
    lu_aval, pivots_aval, perm_aval = ctx.avals_out
    batch = aval.shape[:-2]
    if 0 in aval.shape:
        return [a, mu.splat(0, pivots_aval), _identity_permutation(perm_aval)]
    factors, pivots, info = lapack.call(lapack.target("getrf", aval.dtype), [a], [aval],
                                        [lu_aval, pivots_aval, lapack.info_aval(batch)],
                                        aliases={0: 0})
    pivots = hlo.subtract(pivots, mu.splat(1, pivots_aval))  # LAPACK counts from 1
    factors = lapack.nan_where(lapack.succeeded(info, batch, allow_positive=True), factors,
                               lu_aval, batch)
    perm, = lower_function(ctx, lambda p: lu_pivots_to_permutation(p, aval.shape[-2]),
                           [pivots_aval], pivots)
    return [factors, pivots, perm]


def _identity_permutation(aval: ShapedArray):
    return mu.iota(aval, aval.ndim - 1)


lu_p = standard_primitive("lax.lu", _lu_abstract_eval, None, multiple_results=True,
                          jvp=_lu_jvp, batching=leading_batch())
lu_p.def_lowering(_lu_lower_cpu, platform="cpu")
lu_p.def_lowering(xla_targets.lowering("LuDecomposition"), platform="tpu")


def lu(x):
    """`(lu, pivots, permutation)` of each matrix of `x` `[..., m, n]`: the packed
    factors, the int32 row swaps `[..., min(m, n)]` and the permutation `[..., m]`
    with x[..., permutation, :] = L U."""
    return tuple(lu_p.bind(x))

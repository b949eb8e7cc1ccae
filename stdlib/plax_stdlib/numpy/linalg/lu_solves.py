"""Solving with LU factors, formulated as JAX's `lax.linalg` does, so that Jaxprs and
derivatives are JAX's: `lu_solve` (a jitted `_lu_solve`, mapped with `vmap` over
batch dimensions) and `solve_square` (`custom_linear_solve` around `lu_solve`: a
derivative solves with the factors of the primal solve, not through the solve).

They are in `plax.numpy.linalg` rather than `plax.lax.linalg`, where JAX has them,
because they index arrays (`x[permutation, :]`) and call `jit` and `vmap`.
"""
from __future__ import annotations

import functools
import math

import numpy as np

import plax
from plax_stdlib import lax
from plax_stdlib.lax import linalg as lax_linalg
from plax_stdlib.lax.control_flow import custom_linear_solve
from plax_stdlib.numpy import util


def _lu_solve_matrix(lu, permutation, b, trans: int):
    """X with A X = b (trans 0), Aᵀ X = b (1) or Aᴴ X = b (2) for one matrix A = P L U
    (`lu` packed, `permutation` its rows), b's trailing axes taken as columns."""
    m = lu.shape[0]
    x = lax.reshape(b, (m, math.prod(b.shape[1:])))
    if trans == 0:
        x = x[permutation, :]
        x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True)
        x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=False)
    elif trans in (1, 2):
        conjugate = trans == 2
        x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=False, transpose_a=True,
                                        conjugate_a=conjugate)
        x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True,
                                        transpose_a=True, conjugate_a=conjugate)
        _, inverse = lax.sort_key_val(permutation, lax.iota(np.int32, permutation.shape[0]))
        x = x[inverse, :]
    else:
        raise ValueError(f"'trans' value must be 0, 1, or 2, got {trans}")
    return lax.reshape(x, b.shape)


def _broadcast_to(x, shape):
    return lax.broadcast_in_dim(x, shape, tuple(range(len(shape) - x.ndim, len(shape))))


def _lu_solve(lu, permutation, b, trans: int):
    """`lu_solve`'s body: b is one vector per matrix (an axis fewer than `lu`) or
    matrices; batch axes broadcast."""
    if lu.ndim < 2 or lu.shape[-1] != lu.shape[-2]:
        raise ValueError(f"last two dimensions of LU decomposition must be equal, got shape "
                         f"{lu.shape}")
    if b.ndim < 1:
        raise ValueError(f"b matrix must have rank >= 1, got shape {b.shape}")
    vector = lu.ndim == b.ndim + 1
    if vector:
        if b.shape[-1] != lu.shape[-1]:
            raise ValueError(f"When LU decomposition matrix and b have the same number of "
                             f"dimensions, last axis of LU decomposition matrix (shape "
                             f"{lu.shape}) and b array (shape {b.shape}) must match")
        b = b[..., np.newaxis]
    elif b.shape[-2] != lu.shape[-1]:
        raise ValueError(f"When LU decomposition matrix and b different numbers of dimensions, "
                         f"last axis of LU decomposition matrix (shape {lu.shape}) and second "
                         f"to last axis of b array (shape {b.shape}) must match")
    batch = util.broadcast_shapes(lu.shape[:-2], permutation.shape[:-1], b.shape[:-2])
    lu = _broadcast_to(lu, (*batch, *lu.shape[-2:]))
    permutation = _broadcast_to(permutation, (*batch, permutation.shape[-1]))
    b = _broadcast_to(b, (*batch, *b.shape[-2:]))
    fn = _lu_solve_matrix
    for _ in batch:
        fn = plax.vmap(fn, in_axes=(0, 0, 0, None))
    x = fn(lu, permutation, b, trans)
    return x[..., 0] if vector else x


@functools.cache
def _lu_solve_jit():
    return plax.jit(_lu_solve, static_argnums=(3,))


def lu_solve(lu, permutation, b, trans: int = 0):
    """X with A X = b (trans 0), Aᵀ X = b (1) or Aᴴ X = b (2), from `lax.linalg.lu`'s
    packed factors and permutation of A; b is `[..., m]` or `[..., m, k]`."""
    return _lu_solve_jit()(lu, permutation, b, trans)


def _broadcasted_matvec(a, x):
    """a `(..., n, m)` times x `(..., m)`, batch axes broadcast, at full precision."""
    batch = util.broadcast_shapes(a.shape[:-2], x.shape[:-1])
    a = _broadcast_to(a, (*batch, *a.shape[-2:]))
    x = _broadcast_to(x, (*batch, x.shape[-1]))
    axes = list(range(len(batch)))
    return lax.dot_general(a, x, (([a.ndim - 1], [x.ndim - 1]), (axes, axes)),
                           precision=lax.Precision.HIGHEST)


def solve_square(a, b):
    """x with a x = b for square `a` `(..., m, m)` and b `(..., m)` or `(..., m, k)`: one
    LU factorization of `a` (its derivative stopped) serves the solve and, through
    `custom_linear_solve`, the derivatives."""
    if not (a.ndim >= 2 and b.ndim in (a.ndim, a.ndim - 1)
            and a.shape[-1] == a.shape[-2] == b.shape[a.ndim - 2]):
        raise ValueError(f"The arguments to solve must have shapes a=[..., m, m] and "
                         f"b=[..., m, k] or b=[..., m]; got a={a.shape} and b={b.shape}")
    # b's unit leading axes broadcast to a's, as custom_linear_solve needs
    shape = tuple(d_a if d_b == 1 else d_b for d_a, d_b in zip((*a.shape[:-1], 1), b.shape))
    b = lax.broadcast_in_dim(b, shape, tuple(range(b.ndim)))
    lu, _, permutation = lax_linalg.lu(lax.stop_gradient(a))

    def solved(rhs):
        return custom_linear_solve(
            lambda x: _broadcasted_matvec(a, x), rhs,
            solve=lambda _, x: lu_solve(lu, permutation, x, trans=0),
            transpose_solve=lambda _, x: lu_solve(lu, permutation, x, trans=1))
    if a.ndim == b.ndim + 1:
        return solved(b)
    return plax.vmap(solved, b.ndim - 1, max(a.ndim, b.ndim) - 1)(b)

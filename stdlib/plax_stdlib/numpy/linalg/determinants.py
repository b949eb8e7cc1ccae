"""Determinants of `plax.numpy.linalg`: `det` and `slogdet`, computed as JAX computes
them, so that their values are JAX's bit for bit on the CPU.

`det` of a 2x2 or 3x3 matrix is its closed-form expansion; of any other size it is
`sign * exp(logabsdet)` from `slogdet`, which reads both off the diagonal of the LU
factors (or of the QR factors: `method="qr"`), and uses the closed forms for 1x1 and
2x2 matrices. Both are jitted functions, so an eager call rounds as a compiled one.

Derivatives (`plax.custom_jvp`): log|det A| has the tangent tr(A⁻¹ Ȧ), its sign none
(a real one) or i·Im tr(A⁻¹ Ȧ) times itself (a complex one); det A has tr(adj(A) Ȧ),
with the adjugate solved from the LU factors so that it is finite for a matrix of
rank n - 1 (where A⁻¹ is not) and 0 for lower ranks.
"""
from __future__ import annotations

import functools
import operator
from typing import NamedTuple

import numpy as np

import plax
from plax.extend import dtypes
from plax.extend.core import get_aval
from plax_stdlib import lax
from plax_stdlib.lax import linalg as lax_linalg
from plax_stdlib.lax.linalg.matrices import take_rows
from plax_stdlib.numpy import creation, reductions, shape_ops, ufuncs, util
from plax_stdlib.numpy.linalg.operands import matrices


class SlogdetResult(NamedTuple):
    """What `slogdet` returns: a named tuple `(sign, logabsdet)`, `det = sign *
    exp(logabsdet)`.

    Examples:
        >>> sign, logabsdet = jnp.linalg.slogdet(2 * jnp.eye(2))
        >>> sign, logabsdet
        (Array(1., dtype=float32), Array(1.3862..., dtype=float32))
    """
    sign: object
    logabsdet: object


def _entry(a, i: int, j: int):
    return a[..., i, j]


def _det_2x2(a):
    return _entry(a, 0, 0) * _entry(a, 1, 1) - _entry(a, 0, 1) * _entry(a, 1, 0)


# The rule of Sarrus: the products a[0, p0] a[1, p1] a[2, p2] over the even column
# permutations p, less those over the odd ones, summed in this order.
_EVEN_3x3 = ((0, 1, 2), (1, 2, 0), (2, 0, 1))
_ODD_3x3 = ((2, 1, 0), (0, 2, 1), (1, 0, 2))


def _det_3x3(a):
    def term(columns):
        return functools.reduce(operator.mul, (_entry(a, i, j) for i, j in enumerate(columns)))
    total = functools.reduce(operator.add, map(term, _EVEN_3x3))
    return functools.reduce(operator.sub, map(term, _ODD_3x3), total)


def _parity_sign(count, dtype):
    """(-1)**count, in `dtype`."""
    return creation.array(-2 * (count % 2) + 1, dtype=dtype)


def _swap_count(pivots):
    """How many rows the LU factorization's pivots exchanged."""
    unmoved = lax.expand_dims(creation.arange(get_aval(pivots).shape[-1],
                                              dtype=get_aval(pivots).dtype),
                              range(get_aval(pivots).ndim - 1))
    return reductions.count_nonzero(pivots != unmoved, axis=-1)


# --- slogdet -------------------------------------------------------------------------------

def _slogdet_small(a):
    """slogdet of a 1x1 or 2x2 matrix from its determinant's closed form."""
    if get_aval(a).shape[-1] == 1:
        det = _entry(a, 0, 0)
    else:
        a00, a01, a10, a11 = (_entry(a, i, j) for i in range(2) for j in range(2))
        det = a00 * a11 - a01 * a10
    magnitude = ufuncs.abs(det)
    return ufuncs.sign(det), ufuncs.real(ufuncs.log(magnitude))


def _slogdet_small_jvp(primals, tangents):
    """d log det = tr(A⁻¹ Ȧ), with A⁻¹ the closed-form inverse (the adjugate over det)."""
    (x,), (g,) = primals, tangents
    sign, logabsdet = _slogdet_small(x)
    if get_aval(x).shape[-1] == 1:
        t = _entry(g, 0, 0) / _entry(x, 0, 0)
    else:
        t = (_entry(g, 0, 0) * _entry(x, 1, 1) - _entry(g, 0, 1) * _entry(x, 1, 0)
             - _entry(g, 1, 0) * _entry(x, 0, 1) + _entry(g, 1, 1) * _entry(x, 0, 0)
             ) / _det_2x2(x)
    return (sign, logabsdet), _sign_and_log_tangents(x, sign, t)


def _slogdet_lu(a):
    """The sign and log|det| from the diagonal u of A's LU factors: a real sign counts
    the negative u and the row swaps; a complex one multiplies the phases u/|u|."""
    dtype = util.dtype_of(a)
    factors, pivots, _ = lax_linalg.lu(a)
    u = shape_ops.diagonal(factors, axis1=-2, axis2=-1)
    singular = reductions.any(u == creation.array(0, dtype=dtype), axis=-1)
    swaps = _swap_count(pivots)
    if dtypes.is_complex(dtype):
        sign = reductions.prod(u / ufuncs.abs(u).astype(dtype), axis=-1)
    else:
        sign = creation.array(1, dtype=dtype)
        swaps = swaps + reductions.count_nonzero(u < 0, axis=-1)
    sign = ufuncs.where(singular, creation.array(0, dtype=dtype),
                        sign * _parity_sign(swaps, dtype))
    logabsdet = ufuncs.where(singular, creation.array(-np.inf, dtype=dtype),
                             reductions.sum(ufuncs.log(ufuncs.abs(u)).astype(dtype), axis=-1))
    return sign, ufuncs.real(logabsdet)


def _slogdet_qr(a):
    """The sign and log|det| from A = QR: R's diagonal, and a factor -1 for each
    Householder reflection Q is made of (those with a nonzero tau)."""
    if dtypes.is_complex(util.dtype_of(a)):
        raise NotImplementedError("slogdet method='qr' not implemented for complex inputs")
    n = get_aval(a).shape[-1]
    r, taus = lax_linalg.geqrf(a)
    r_diagonal = shape_ops.diagonal(r, axis1=-2, axis2=-1)
    logabsdet = reductions.sum(ufuncs.log(ufuncs.abs(r_diagonal)), axis=-1)
    sign = reductions.prod(ufuncs.sign(r_diagonal), axis=-1)
    reflections = reductions.prod(ufuncs.where(taus[..., :n - 1] != 0, -1, 1), axis=-1)
    return sign * reflections.astype(util.dtype_of(sign)), logabsdet


def _sign_and_log_tangents(x, sign, t):
    """The tangents of (sign, log|det|) given t = tr(A⁻¹ Ȧ)."""
    if dtypes.is_complex(util.dtype_of(x)):
        return (t - ufuncs.real(t).astype(util.dtype_of(t))) * sign, ufuncs.real(t)
    return creation.zeros_like(sign), t


def _slogdet_jvp(primals, tangents):
    from plax_stdlib.numpy.linalg.solvers import solve
    (x,), (g,) = primals, tangents
    sign, logabsdet = slogdet(x)
    t = shape_ops.trace(solve(x, g), axis1=-1, axis2=-2)
    return (sign, logabsdet), _sign_and_log_tangents(x, sign, t)


def _with_jvp(fun, jvp):
    """`fun` with the derivative rule `jvp` (made on first use: `custom_jvp` is a
    transform, reached through the facade)."""
    rule = plax.custom_jvp(fun)
    rule.defjvp(jvp)
    return rule


_small_rule = functools.cache(lambda: _with_jvp(_slogdet_small, _slogdet_small_jvp))
_lu_rule = functools.cache(lambda: _with_jvp(_slogdet_lu, _slogdet_jvp))
_SLOGDET_METHODS = {None: _lu_rule, "lu": _lu_rule,
                    "qr": functools.cache(lambda: _with_jvp(_slogdet_qr, _slogdet_jvp))}


@util.compiled(name="slogdet", static_argnames=("method",))
def slogdet(a, *, method: str | None = None) -> SlogdetResult:
    """The sign and the log of the absolute value of the determinant of each square
    matrix: `det = sign * exp(logabsdet)`, without overflow for large matrices.

    Follows `numpy.linalg.slogdet`; a singular matrix gives sign 0 and logabsdet
    -inf. JAX's `method` picks the factorization: "lu" (None, the default) or "qr".

    Args:
        a: `(..., n, n)` matrices.
        method: the factorization: None or "lu" (LU), "qr" (Householder QR).

    Returns:
        `SlogdetResult(sign, logabsdet)`.

    Raises:
        ValueError: matrices that are not square; an unknown `method`.

    Examples:
        >>> a = jnp.array([[4.0, 2.0], [2.0, 3.0]])
        >>> jnp.linalg.slogdet(a).sign
        Array(1., dtype=float32)
    """
    a = matrices("jnp.linalg.slogdet", a, square=True)
    if method not in _SLOGDET_METHODS:
        raise ValueError(f"Unknown slogdet method {method!r}. Supported methods are 'lu' "
                         "(None) and 'qr'.")
    n = get_aval(a).shape[-1]
    if n == 0:
        batch = get_aval(a).shape[:-2]
        return SlogdetResult(lax.full(batch, 1, get_aval(a).dtype),
                             lax.full(batch, 0, dtypes.finfo(get_aval(a).dtype).dtype))
    if method in (None, "lu") and n <= 2:
        return SlogdetResult(*_small_rule()(a))
    return SlogdetResult(*_SLOGDET_METHODS[method]()(a))


# --- det -------------------------------------------------------------------------------------

def _det(a):
    sign, logabsdet = slogdet(a)
    return sign * ufuncs.exp(logabsdet).astype(util.dtype_of(sign))


def _cofactor_solve(a, b):
    """(det A, adj(A) B) for square A (possibly singular) and B of A's shape.

    With A = P L U, adj(A) B = det(A) U⁻¹ L⁻¹ Pᵀ B. The last row of that product only
    needs det(A) / u_nn, the product of U's other diagonal entries; so U's corner entry
    is replaced by the inverse of that partial product, rows above the last are scaled
    by det(A), and the solve stays finite when only u_nn is 0 (rank n - 1). Where a
    solve with the modified U still overflows (rank below n - 1), the adjugate is 0.
    """
    if get_aval(a).shape[-1] == 1:
        return _entry(a, 0, 0), b
    dtype = util.dtype_of(a)
    factors, pivots, permutation = lax_linalg.lu(a)
    u = shape_ops.diagonal(factors, axis1=-2, axis2=-1)
    partial_dets = reductions.cumprod(u, axis=-1) * _parity_sign(_swap_count(pivots),
                                                                  dtype)[..., None]
    factors = factors.at[..., -1, -1].set(1.0 / partial_dets[..., -2])
    probe = lax_linalg.triangular_solve(factors, creation.ones(get_aval(b).shape[:-1], dtype),
                                        left_side=True, lower=False)
    deficient = reductions.any(ufuncs.logical_or(ufuncs.isnan(probe), ufuncs.isinf(probe)),
                               axis=-1)[..., None, None]
    x = take_rows(ufuncs.where(deficient, creation.zeros_like(b), b), permutation)
    x = lax_linalg.triangular_solve(factors, x, left_side=True, lower=True, unit_diagonal=True)
    x = shape_ops.concatenate((x[..., :-1, :] * partial_dets[..., -1, None, None],
                               x[..., -1:, :]), axis=-2)
    x = lax_linalg.triangular_solve(factors, x, left_side=True, lower=False)
    return partial_dets[..., -1], ufuncs.where(deficient, creation.zeros_like(x), x)


def _det_jvp(primals, tangents):
    (a,), (a_dot,) = primals, tangents
    det_a, adjugate_a_dot = _cofactor_solve(a, a_dot)
    return det_a, shape_ops.trace(adjugate_a_dot, axis1=-1, axis2=-2)


_det_rule = functools.cache(lambda: _with_jvp(_det, _det_jvp))


@util.compiled(name="det")
def det(a):
    """The determinant of each square matrix.

    Follows `numpy.linalg.det`, batched over leading axes: 2x2 and 3x3 matrices by
    their expansion, others as `sign * exp(logabsdet)` of `slogdet`.

    Args:
        a: `(..., n, n)` matrices.

    Returns:
        The determinants, `(...)`.

    Raises:
        ValueError: matrices that are not square.

    Examples:
        >>> a = jnp.array([[4.0, 2.0], [2.0, 3.0]])
        >>> jnp.linalg.det(a)
        Array(8., dtype=float32)
    """
    a = matrices("jnp.linalg.det", a, square=True)
    n = get_aval(a).shape[-1]
    if n == 0:
        return lax.full(get_aval(a).shape[:-2], 1, get_aval(a).dtype)
    if n == 2:
        return _det_2x2(a)
    if n == 3:
        return _det_3x3(a)
    return _det_rule()(a)

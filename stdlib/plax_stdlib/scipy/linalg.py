"""`plax.scipy.linalg`: SciPy's linear algebra with `jax.scipy.linalg`'s semantics.

Factorizations come from `plax.lax.linalg` and batch over leading axes as its
primitives do. `overwrite_*`, `check_finite` and similar SciPy arguments are
accepted and ignored (arrays are immutable; nothing is checked for finiteness).
`sqrtm` is the Schur method (Björck and Hammarling); `expm` (in
`matrix_exponential`), `polar`, `rsf2csf` and `solve_sylvester` are formulated as
JAX's, jitted helpers, loops and conds alike, so that they print and compute as JAX's.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np

import plax
from plax.extend import dtypes
from plax.extend.core import get_aval
from plax_stdlib import jax_jits, lax
from plax_stdlib import numpy as jnp
from plax_stdlib.lax import linalg as lax_linalg
from plax_stdlib.lax.linalg import halley
from plax_stdlib.lax.linalg.matrices import diagonal as matrix_diagonal
from plax_stdlib.lax.linalg.matrices import eye_like, matmul, mH, triu
from plax_stdlib.numpy import util
from plax_stdlib.numpy.linalg import decompositions as np_decompositions
from plax_stdlib.numpy.linalg import determinants as np_determinants
from plax_stdlib.numpy.linalg import lu_solves
from plax_stdlib.numpy.linalg import solvers as np_solvers
from plax_stdlib.numpy.linalg.operands import check_matrices, inexact, matrices
from plax_stdlib.scipy.matrix_exponential import expm as expm, expm_frechet as expm_frechet
from plax_stdlib.scipy.special_matrices import (  # noqa: F401 - part of this module's API
    circulant, companion, convolution_matrix, dft, fiedler, fiedler_companion, hadamard,
    hankel, helmert, hilbert, invhilbert, invpascal, leslie, pascal, toeplitz)
from plax_stdlib.scipy.tridiagonal import eigh_tridiagonal as eigh_tridiagonal

# --- Cholesky ------------------------------------------------------------------------------

def cholesky(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """The Cholesky factor of each Hermitian positive-definite matrix: upper (Uᴴ U = a)
    by default, lower with `lower`."""
    a = matrices("scipy.linalg.cholesky", a, square=True)
    factor = lax_linalg.cholesky(a)
    return factor if lower else mH(factor)


def cho_factor(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """`(c, lower)` for `cho_solve`: c holds the Cholesky factor in its `lower` (or
    upper) triangle and zeros elsewhere."""
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower, b, overwrite_b: bool = False, check_finite: bool = True):
    """x with a x = b from `cho_factor(a)`; b is `[..., n]` or `[..., n, k]`."""
    c, lower = c_and_lower
    c, b = inexact("scipy.linalg.cho_solve", c, b)
    check_matrices("scipy.linalg.cho_solve", c, square=True, what="c")

    def solve(rhs, **kw):
        return lax_linalg.triangular_solve(c, rhs, left_side=True, lower=lower, **kw)
    rhs, vector = _as_columns("scipy.linalg.cho_solve", c, b)
    if lower:  # L Lᴴ x = b
        x = solve(solve(rhs), transpose_a=True, conjugate_a=True)
    else:  # Uᴴ U x = b
        x = solve(solve(rhs, transpose_a=True, conjugate_a=True))
    return _from_columns(x, vector)


def _as_columns(fun_name: str, a, b):
    """`b` as a batch of matrices matching `a` `[..., n, n]`: a vector per matrix when
    it has one axis fewer than `a`, else matrices; and whether it was vectors."""
    a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
    n = a_shape[-1]
    vector = len(b_shape) == len(a_shape) - 1
    if not b_shape or b_shape[-1 if vector else -2] != n:
        raise ValueError(f"{fun_name}: b of shape {b_shape} does not match a of shape {a_shape}")
    if vector:
        b = lax.expand_dims(b, (len(b_shape),))
    batch = util.broadcast_shapes(a_shape[:-2], get_aval(b).shape[:-2])
    if get_aval(b).shape[:-2] != batch or a_shape[:-2] != batch:
        raise ValueError(f"{fun_name}: the batch dimensions of a {a_shape} and b {b_shape} "
                         "must be equal")
    return b, vector


def _from_columns(x, vector: bool):
    return lax.squeeze(x, (get_aval(x).ndim - 1,)) if vector else x


# --- LU -------------------------------------------------------------------------------------

def lu_factor(a, overwrite_a: bool = False, check_finite: bool = True):
    """`(lu, piv)`: the packed factors and LAPACK-style pivots (row i was swapped with
    row piv[i]) for `lu_solve`."""
    a = matrices("scipy.linalg.lu_factor", a)
    factors, pivots, _ = lax_linalg.lu(a)
    return factors, pivots


def lu_solve(lu_and_piv, b, trans: int = 0, overwrite_b: bool = False,
             check_finite: bool = True):
    """x with a x = b (trans 0), aᵀ x = b (1) or aᴴ x = b (2) from `lu_factor(a)`; b is
    `[..., n]` or `[..., n, k]`."""
    factors, pivots = lu_and_piv
    factors, b = util.promote_dtypes_inexact(jnp.asarray(factors), jnp.asarray(b))
    permutation = lax_linalg.lu_pivots_to_permutation(pivots, factors.shape[-2])
    if b.ndim == 1:
        signature = "(n,n),(n),(n)->(n)"
    elif factors.ndim == b.ndim + 1 and factors.shape[-1] == b.shape[-1]:
        warnings.warn("jax.scipy.linalg.lu_solve: batched 1D solves with b.ndim > 1 are "
                      "deprecated, and in the future will be treated as a batched 2D solve. "
                      "Use lu_solve(lu_and_piv, b[..., None]).squeeze(-1) to avoid this "
                      "warning.", FutureWarning, stacklevel=2)
        signature = "(n,n),(n),(n)->(n)"
    else:
        signature = "(n,n),(n),(n,k)->(n,k)"
    return jnp.vectorize(functools.partial(lu_solves.lu_solve, trans=trans),
                         signature=signature)(factors, permutation, b)


@util.compiled(static_argnums=(1,))
def _lu(a, permute_l: bool):
    """`lu`'s body (one matrix): the permutation as a matrix, the triangles sliced."""
    a, = util.promote_dtypes_inexact(jnp.asarray(a))
    if a.ndim != 2:
        raise ValueError(f"scipy.linalg.lu: a must be a matrix, got shape {a.shape}")
    factors, _, permutation = lax_linalg.lu(a)
    m, n = a.shape
    k = min(m, n)
    p = jnp.real(jnp.array(permutation[None, :] == jnp.arange(m, dtype=permutation.dtype)[:, None],
                           dtype=a.dtype))
    low = jnp.tril(factors, -1)[:, :k] + jnp.eye(m, k, dtype=a.dtype)
    up = jnp.triu(factors)[:k, :]
    if permute_l:
        return jnp.matmul(p, low, precision=lax.Precision.HIGHEST), up
    return p, low, up


def lu(a, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """`(p, l, u)` with a = p l u (`(p l, u)` with `permute_l`): p a permutation matrix,
    l unit lower trapezoidal `[m, k]`, u upper trapezoidal `[k, n]`."""
    return _lu(a, permute_l)


# --- triangular and general solves ------------------------------------------------------------

_TRANS = {0: (False, False), "N": (False, False), 1: (True, False), "T": (True, False),
          2: (True, True), "C": (True, True)}


def solve_triangular(a, b, trans=0, lower: bool = False, unit_diagonal: bool = False,
                     overwrite_b: bool = False, debug=None, check_finite: bool = True):
    """x with op(a) x = b for triangular a, op per `trans` (0/'N', 1/'T', 2/'C')."""
    a, b = inexact("scipy.linalg.solve_triangular", a, b)
    check_matrices("scipy.linalg.solve_triangular", a, square=True)
    if trans not in _TRANS:
        raise ValueError(f"scipy.linalg.solve_triangular: trans must be 0, 1, 2, 'N', 'T' or "
                         f"'C', got {trans!r}")
    transpose_a, conjugate_a = _TRANS[trans]
    rhs, vector = _as_columns("scipy.linalg.solve_triangular", a, b)
    x = lax_linalg.triangular_solve(a, rhs, left_side=True, lower=lower,
                                    transpose_a=transpose_a, conjugate_a=conjugate_a,
                                    unit_diagonal=unit_diagonal)
    return _from_columns(x, vector)


_ASSUME = ("gen", "sym", "her", "pos")


def solve(a, b, lower: bool = False, overwrite_a: bool = False, overwrite_b: bool = False,
          debug: bool = False, check_finite: bool = True, assume_a: str = "gen"):
    """x with a x = b: by LU, or by Cholesky when `assume_a='pos'` (reading the `lower`
    or upper triangle)."""
    if assume_a not in _ASSUME:
        raise ValueError(f"scipy.linalg.solve: assume_a must be one of {_ASSUME}, got "
                         f"{assume_a!r}")
    a, b = inexact("scipy.linalg.solve", a, b)
    check_matrices("scipy.linalg.solve", a, square=True)
    if assume_a != "pos":
        rhs, vector = _as_columns("scipy.linalg.solve", a, b)
        return _from_columns(np_solvers.solve(a, rhs), vector)
    triangle = a if lower else mH(a)
    factor = lax_linalg.cholesky(triangle, symmetrize_input=False)
    return cho_solve((factor, True), b)


def inv(a, overwrite_a: bool = False, check_finite: bool = True):
    """The inverse of each square matrix."""
    return np_solvers.inv(a)


def det(a, overwrite_a: bool = False, check_finite: bool = True):
    """The determinant of each square matrix."""
    return np_determinants.det(a)


# --- eigen, singular value and QR decompositions -------------------------------------------

def eigh(a, b=None, lower: bool = True, eigvals_only: bool = False, overwrite_a: bool = False,
         overwrite_b: bool = False, turbo: bool = True, eigvals=None, type: int = 1,  # noqa: A002 - SciPy's name
         check_finite: bool = True):
    """`(w, v)` (or `w` with `eigvals_only`) of each Hermitian matrix, reading the
    `lower` (or upper) triangle. The generalized problem (`b`) is not supported."""
    if b is not None:
        raise NotImplementedError("scipy.linalg.eigh: the generalized eigenproblem (b) is not "
                                  "implemented")
    if eigvals is not None:
        raise NotImplementedError("scipy.linalg.eigh: eigvals is not implemented; use "
                                  "plax.lax.linalg.eigh(subset_by_index=...)")
    w, v = np_decompositions.eigh(a, UPLO="L" if lower else "U", symmetrize_input=False)
    return w if eigvals_only else (w, v)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False,
        check_finite: bool = True, lapack_driver: str = "gesdd"):
    """`(u, s, vh)` (or `s` without `compute_uv`); `lapack_driver` 'gesdd' or 'gesvd'."""
    drivers = {"gesdd": lax_linalg.SvdAlgorithm.DIVIDE_AND_CONQUER,
               "gesvd": lax_linalg.SvdAlgorithm.QR}
    if lapack_driver not in drivers:
        raise ValueError(f"scipy.linalg.svd: lapack_driver must be 'gesdd' or 'gesvd', got "
                         f"{lapack_driver!r}")
    a = matrices("scipy.linalg.svd", a)
    return lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv,
                          algorithm=drivers[lapack_driver])


_QR_MODES = ("full", "r", "economic", "raw")


def qr(a, overwrite_a: bool = False, lwork=None, mode: str = "full", pivoting: bool = False,
       check_finite: bool = True):
    """`(q, r)` (`(q, r, p)` with `pivoting`, a[:, p] = q r); `(r,)` for mode 'r';
    mode 'economic' gives the reduced factors and 'raw' LAPACK's packed reflectors
    and their taus (as JAX does)."""
    if mode not in _QR_MODES:
        raise ValueError(f"scipy.linalg.qr: mode must be one of {_QR_MODES}, got {mode!r}")
    a = matrices("scipy.linalg.qr", a)
    if mode == "raw":
        if pivoting:
            raise NotImplementedError("scipy.linalg.qr: mode='raw' with pivoting")
        return lax_linalg.geqrf(a)
    out = lax_linalg.qr(a, pivoting=pivoting, full_matrices=mode != "economic")
    if mode == "r":
        return (out[1], out[2]) if pivoting else (out[1],)
    return out


def qr_multiply(a, c, mode: str = "right", pivoting: bool = False, conjugate: bool = False,
                overwrite_a: bool = False, overwrite_c: bool = False):
    """`(Q @ c, R)` ('left') or `(c @ Q, R)` ('right') for the economic QR a = Q R
    (`(…, R, P)` with `pivoting`, a[:, P] = Q R), Q conjugated if `conjugate`; a 1-D
    `c` is a column ('left') or a row ('right')."""
    if mode not in ("right", "left"):
        raise ValueError(f"mode must be 'right' or 'left', got {mode!r}")
    a, c = inexact("scipy.linalg.qr_multiply", a, c)
    check_matrices("scipy.linalg.qr_multiply", a)
    vector = get_aval(c).ndim == 1
    if vector:
        c = lax.expand_dims(c, (1,) if mode == "left" else (0,))
    m, n = get_aval(a).shape[-2:]
    k = min(m, n)
    cshape = get_aval(c).shape
    if mode == "left" and cshape[-2] != k:
        raise ValueError(f"Array shapes are not compatible for Q @ c operation: a has shape "
                         f"{(m, n)} so Q has {k} columns, but c has {cshape[-2]} rows "
                         f"(expected {k}).")
    if mode == "right" and cshape[-1] != m:
        raise ValueError(f"Array shapes are not compatible for c @ Q operation: a has shape "
                         f"{(m, n)} so Q has {m} rows, but c has {cshape[-1]} columns "
                         f"(expected {m}).")
    q, r, *perm = lax_linalg.qr(a, pivoting=pivoting, full_matrices=False)
    if conjugate:
        q = lax.conj(q) if util.dtype_category(get_aval(q).dtype) == "c" else q
    product = matmul(q, c) if mode == "left" else matmul(c, q)
    if vector:
        product = lax.squeeze(product, (get_aval(product).ndim - (1 if mode == "left" else 2),))
    return (product, r, *perm)


@functools.partial(plax.jit, static_argnames=("output",))
def _schur(a, output: str):
    a = matrices("scipy.linalg.schur", a, square=True)
    if output == "complex":
        a = a.astype(dtypes.to_complex_dtype(a.dtype))
    return lax_linalg.schur(a)


def schur(a, output: str = "real"):
    """`(t, z)` with a = z t zᴴ: t quasi-triangular ('real') or triangular ('complex')."""
    if output not in ("real", "complex"):
        raise ValueError(f"Expected 'output' to be either 'real' or 'complex', got {output=}.")
    return _schur(a, output)


@plax.jit
def _rsf2csf_2d(T, Z):
    """From the bottom up, each 2×2 diagonal block of T whose subdiagonal entry is above
    rounding level is triangularized by the Givens rotation that brings one of its
    eigenvalues to the top, applied to T's rows and columns and to Z's columns."""
    T, Z = util.promote_dtypes_complex(T, Z)
    eps = dtypes.finfo(T.dtype).eps
    n = T.shape[0]
    if n == 1:
        return T, Z

    def rotate(m, T, Z):
        mu = jnp.linalg.eigvals(lax.dynamic_slice(T, (m - 1, m - 1), (2, 2))) - T[m, m]
        r = jnp.linalg.norm(jnp.array([mu[0], T[m, m - 1]])).astype(T.dtype)
        c, s = mu[0] / r, T[m, m - 1] / r
        G = jnp.array([[c.conj(), s], [-s, c]], dtype=T.dtype)
        # rows m-1, m of T, from column m-1 on (the rest is zero in both rows)
        rows = lax.dynamic_slice_in_dim(T, m - 1, 2, axis=0)
        right = jnp.arange(n) >= m - 1
        rotated = G @ jnp.where(right, rows, 0)
        T = lax.dynamic_update_slice_in_dim(T, jnp.where(~right, rows, rotated), m - 1, axis=0)
        # columns m-1, m of T, down to row m
        cols = lax.dynamic_slice_in_dim(T, m - 1, 2, axis=1)
        above = jnp.arange(n)[:, np.newaxis] < m + 1
        rotated = jnp.where(above, cols, 0) @ G.conj().T
        T = lax.dynamic_update_slice_in_dim(T, jnp.where(~above, cols, rotated), m - 1, axis=1)
        z_cols = lax.dynamic_slice_in_dim(Z, m - 1, 2, axis=1)
        return T, lax.dynamic_update_slice_in_dim(Z, z_cols @ G.conj().T, m - 1, axis=1)

    def step(i, TZ):
        m = n - i
        T, Z = TZ
        split = jnp.abs(T[m, m - 1]) > eps * (jnp.abs(T[m - 1, m - 1]) + jnp.abs(T[m, m]))
        T, Z = lax.cond(split, rotate, lambda m, T, Z: (T, Z), m, T, Z)
        return T.at[m, m - 1].set(0.0), Z
    return lax.fori_loop(1, n, step, (T, Z))


def rsf2csf(T, Z, check_finite: bool = True):
    """The complex Schur form `(T', Z')` (T' upper triangular, Z' T' Z'ᴴ = Z T Zᴴ) of
    the real Schur form `(T, Z)`, for each pair of (broadcast) matrices."""
    T, Z = jnp.asarray(T), jnp.asarray(Z)
    for name, x in (("T", T), ("Z", Z)):
        if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
            raise ValueError(f"Input '{name}' must be square.")
    if T.shape[-1] != Z.shape[-1]:
        raise ValueError(f"Input array shapes must match: Z: {Z.shape} vs. T: {T.shape}")
    return jnp.vectorize(_rsf2csf_2d, signature="(n,n),(n,n)->(n,n),(n,n)")(T, Z)


def funm(A, func, disp: bool = True):
    """The matrix function f(A) for `func` f (called once, elementwise, on A's
    eigenvalues): A = Z T Zᴴ in complex Schur form, then F = f(T) by Parlett's
    recurrence, one superdiagonal at a time (each needs only the ones below it), and
    Z F Zᴴ (complex, as JAX's). With `disp=False`, also JAX's estimate of the
    relative error (large when eigenvalues nearly coincide)."""
    A = matrices("scipy.linalg.funm", A, square=True)
    if get_aval(A).ndim != 2:
        raise ValueError("expected square array_like input")
    T, Z = rsf2csf(*schur(A))
    eigenvalues = matrix_diagonal(T)
    F = jnp.diag(lax.convert_element_type(jnp.asarray(func(eigenvalues)), get_aval(T).dtype))
    F, minden = _parlett(T, F)
    F = matmul(matmul(Z, F), mH(Z))
    if disp:
        return F
    real_dtype = dtypes.finfo(get_aval(T).dtype).dtype
    tol = np.asarray(dtypes.finfo(real_dtype).eps, real_dtype)
    minden = jnp.where(minden == 0, tol, minden)
    estimate = jnp.minimum(1, jnp.maximum(tol, tol / minden * jnp.abs(triu(T, 1)).sum(0).max()))
    return F, jnp.where(jnp.isinf(F).any(), np.inf, estimate)


@plax.jit
def _parlett(T, F):
    """F = f(T) for upper triangular T, from F holding f(diag T); and the smallest
    |T_jj - T_ii| the recurrence divided by (how near it came to dividing by zero)."""
    n = get_aval(T).shape[-1]
    eigenvalues = matrix_diagonal(T)
    strict = triu(T, 1)
    real_dtype = dtypes.finfo(get_aval(T).dtype).dtype
    minden = lax.abs(T[0, 0]) if n else np.zeros((), real_dtype)
    # F[i, i+p] (T_jj - T_ii) = Σ_k T_ik F_kj - F_ik T_kj (j = i+p, T strictly upper):
    # the terms name F only at distances below p, filled already, and F_ii, F_jj.
    for p in range(1, n):
        s = (strict[:n - p] * F[:, p:].T).sum(-1) - (F[:n - p] * strict[:, p:].T).sum(-1)
        den = eigenvalues[p:] - eigenvalues[:n - p]
        s = jnp.where(den != 0, s / jnp.where(den != 0, den, 1), s)
        minden = jnp.minimum(minden, jnp.abs(den).min())
        F = F + jnp.diag(s, p)
    return F, minden


def hessenberg(a, *, calc_q: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """The upper Hessenberg form h of each square matrix (and q with a = q h qᴴ when
    `calc_q`)."""
    n = np.shape(a)[-1]
    if n == 0:
        return (jnp.zeros_like(a), jnp.zeros_like(a)) if calc_q else jnp.zeros_like(a)
    packed, taus = lax_linalg.hessenberg(a)
    h = jnp.triu(packed, -1)
    if not calc_q:
        return h
    # Below the first subdiagonal, packed[1:, :n-1] holds the reflectors in geqrf's
    # layout: they make Q's trailing (n-1)x(n-1) block (LAPACK's orghr does the same).
    q = lax_linalg.householder_product(packed[..., 1:, :-1], taus)
    batch, dtype = packed.shape[:-2], packed.dtype
    q = jnp.block([[jnp.ones(batch + (1, 1), dtype=dtype),
                    jnp.zeros(batch + (1, n - 1), dtype=dtype)],
                   [jnp.zeros(batch + (n - 1, 1), dtype=dtype), q]])
    return h, q


# --- matrix functions ---------------------------------------------------------------------------

def sqrtm(A, blocksize: int = 1):
    """The principal square root of each square matrix (complex, as in JAX): with the
    complex Schur form A = Z T Zᴴ, R = √T is upper triangular, found one column at a
    time from R R = T (each column a triangular solve), and √A = Z R Zᴴ."""
    if blocksize != 1:
        raise NotImplementedError("scipy.linalg.sqrtm: only blocksize=1 is implemented")
    A = matrices("scipy.linalg.sqrtm", A, square=True)
    A = lax.convert_element_type(A, dtypes.to_complex_dtype(get_aval(A).dtype))
    t, z = lax_linalg.schur(A)
    return matmul(matmul(z, _sqrt_upper_triangular(t)), mH(z))


def _sqrt_upper_triangular(t):
    aval = get_aval(t)
    n = aval.shape[-1]
    nb = aval.ndim - 2
    diagonal = lax.sqrt(matrix_diagonal(t))
    rows = lax.broadcasted_iota(np.int32, aval.shape, nb)
    cols = lax.broadcasted_iota(np.int32, aval.shape, nb + 1)
    eye = eye_like(t)
    zeros = lax.full(aval.shape, 0, aval.dtype)

    def column(j, r):
        # Column j above the diagonal solves (R[:j, :j] + r_jj I) x = T[:j, j].
        r_jj = lax.dynamic_index_in_dim(diagonal, j, nb, keepdims=False)
        r_jj = lax.broadcast_in_dim(r_jj, aval.shape, tuple(range(nb)))
        inside = lax.bitwise_and(lax.lt(rows, j), lax.lt(cols, j))
        system = lax.select(inside, lax.add(r, lax.mul(eye, r_jj)), eye)
        t_j = lax.dynamic_index_in_dim(t, j, nb + 1, keepdims=True)
        above = lax.lt(lax.slice_in_dim(rows, 0, 1, axis=nb + 1), j)
        rhs = lax.select(above, t_j, lax.full_like(t_j, 0))
        x = lax_linalg.triangular_solve(system, rhs, left_side=True, lower=False)
        x = lax.add(x, lax.select(lax.eq(lax.slice_in_dim(rows, 0, 1, axis=nb + 1), j),
                                  lax.slice_in_dim(r_jj, 0, 1, axis=nb + 1),
                                  lax.full_like(t_j, 0)))
        return lax.dynamic_update_index_in_dim(r, x, j, nb + 1)
    return lax.fori_loop(np.int32(0), np.int32(n), column, zeros)


@functools.partial(plax.jit, static_argnames=("side", "method"))
@plax.default_matmul_precision("float32")
def _polar_2d(a, side: str, method: str, eps, max_iterations):
    """The polar decomposition of one matrix. QDWH wants at least as many rows as
    columns: the left decomposition of a wide matrix is the right one of its adjoint,
    adjoined back (JAX implements no other pairing of side and shape)."""
    rows, cols = a.shape
    if method == "qdwh":
        if rows >= cols and side == "right":
            unitary, posdef, _, _ = halley.qdwh(a, is_hermitian=False, eps=eps)
        elif rows < cols and side == "left":
            unitary, posdef, _, _ = halley.qdwh(a.T.conj(), is_hermitian=False, eps=eps)
            posdef, unitary = posdef.T.conj(), unitary.T.conj()
        else:
            raise NotImplementedError(
                "method='qdwh' only supports mxn matrices where m < n where side='right' "
                f"and m >= n side='left', got {a.shape} with {side=}")
    elif method == "svd":
        w, s, vh = lax_linalg.svd(a, full_matrices=False)
        s = s.astype(w.dtype)
        unitary = w @ vh
        if side == "right":  # V Σ Vᴴ
            posdef = (vh.T.conj() * s[None, :]) @ vh
        else:  # W Σ Wᴴ
            posdef = (w * s[None, :]) @ w.T.conj()
    else:
        raise ValueError(f"Unknown polar decomposition method {method}.")
    return unitary, posdef


def polar(a, side: str = "right", *, method: str = "qdwh", eps: float | None = None,
          max_iterations: int | None = None):
    """The polar decomposition of each matrix: `(u, p)` with a = u p (side 'right', p
    n×n) or a = p u ('left', p m×m), u with orthonormal columns (rows) and p Hermitian
    positive semi-definite. `method` 'qdwh' (the default: `lax.linalg.qdwh`, to the
    tolerance `eps`) or 'svd' (from a = W Σ Vᴴ: u = W Vᴴ, p = V Σ Vᴴ or W Σ Wᴴ).
    `max_iterations` is accepted and, as in JAX, unused."""
    arr = jnp.asarray(a)
    if arr.ndim < 2:
        raise ValueError("The input `a` must be at least a 2-D array.")
    if side not in ("right", "left"):
        raise ValueError("The argument `side` must be either 'right' or 'left'.")
    posdef_shape = "(n,n)" if side == "right" else "(m,m)"
    return jnp.vectorize(functools.partial(_polar_2d, side=side, method=method, eps=eps,
                                           max_iterations=max_iterations),
                         signature=f"(m,n)->(m,n),{posdef_shape}")(arr)


def _sylvester_triangular(R, S, F):
    """Y with R Y + Y Sᵀ = F for upper-triangular R and S (Bartels-Stewart's inner
    solve): entry by entry from the bottom right, each entry needing only those below
    it in its column and right of it in its row."""
    R, S, F = util.promote_dtypes_inexact(R, S, F)
    m, n = F.shape

    def solve_entry(Y_flat, flat_index):
        i, j = flat_index // n, flat_index % n
        Y = Y_flat.reshape((m, n))
        rhs = F[i, j]
        below = jnp.sum(jnp.where(jnp.arange(m) > i, R[i, :] * Y[:, j], 0.0))
        right = jnp.sum(jnp.where(jnp.arange(n) > j, Y[i, :] * S[:, j], 0.0))
        rhs -= below + right
        entry = rhs / (R[i, i] + S[j, j])
        return Y_flat.at[i * n + j].set(entry), None
    backwards = jnp.arange(m * n - 1, -1, -1)
    Y_flat, _ = lax.scan(solve_entry, jnp.zeros((m * n,), dtype=F.dtype), backwards)
    return Y_flat.reshape((m, n))


@functools.partial(plax.jit, static_argnames=("method",))
def _solve_sylvester_2d(A, B, C, *, method: str, tol):
    m, n = C.shape[-2:]
    if method == "schur":  # A = U R Uᴴ and Bᴴ = V S Vᴴ: R Y + Y Sᴴ = Uᴴ C V, X = U Y Vᴴ
        R, U = schur(A, output="complex")
        S, V = schur(B.conj().T, output="complex")
        F = U.conj().T @ C.astype(R.dtype) @ V
        X = U @ _sylvester_triangular(R, S.conj().T, F) @ V.conj().T
    elif method == "eigen":  # in the eigenbases, each entry divided by λ_i(A) + μ_j(B)
        RA, UA = jnp.linalg.eig(A)
        RB, UB = jnp.linalg.eig(B)
        F = solve(UA, C.astype(RA.dtype) @ UB)
        Y = F / (RA[:, None] + RB[None, :])
        X = UA[:m, :m] @ Y[:m, :n] @ inv(UB)[:n, :n]
    else:
        raise ValueError(f'Unrecognized method {method}. The two valid methods are either '
                         f'"schur" or "eigen".')
    if not jnp.issubdtype(C.dtype, np.complexfloating):
        X = X.real
    sums = jnp.linalg.eigvals(A)[:, None] + jnp.linalg.eigvals(B)[None, :]
    return lax.cond(jnp.any(jnp.abs(sums) < tol),
                    lambda: jnp.zeros_like(X) * np.nan, lambda: X)


def solve_sylvester(A, B, C, *, method: str = "schur", tol: float = 1e-8):
    """X with A X + X B = C, for each (broadcast) A [m, m], B [n, n], C [m, n]: by
    Bartels-Stewart ('schur') or in the eigenbases of A and B ('eigen'). Where some
    eigenvalue sum λ_i(A) + μ_j(B) is below `tol` in magnitude there is no unique
    solution: the result is NaN, as JAX's."""
    A, B, C = util.promote_dtypes_inexact(jnp.asarray(A), jnp.asarray(B), jnp.asarray(C))
    if any(x.ndim < 2 for x in (A, B, C)) or A.shape[-2:] != (C.shape[-2],) * 2 \
            or B.shape[-2:] != (C.shape[-1],) * 2:
        raise ValueError(f"Incompatible shapes for Sylvester equation:\nA: {A.shape}\n"
                         f"B: {B.shape}\nC: {C.shape}")
    return jnp.vectorize(functools.partial(_solve_sylvester_2d, method=method, tol=tol),
                         signature="(m,m),(n,n),(m,n)->(m,n)")(A, B, C)


# --- building matrices ---------------------------------------------------------------------------

def block_diag(*arrs):
    """The block-diagonal matrix of the given arrays (0-D and 1-D ones become 1×1 and
    1×n blocks), in their promoted dtype: each block padded to the full width, then
    stacked, as JAX's."""
    if not arrs:
        arrs = (jnp.zeros((1, 0)),)
    blocks = util.promote_dtypes(*arrs)
    for i, block in enumerate(blocks):
        if np.ndim(block) > 2:
            raise ValueError("Arguments to jax.scipy.linalg.block_diag must have at most 2 "
                             f"dimensions, got {block} at argument {i}.")
    blocks = [jnp.atleast_2d(block) for block in blocks]
    zero = util.dtype_of(blocks[0]).type(0)
    total = sum(util.shape_of(block)[1] for block in blocks)
    rows, before = [], 0
    for block in blocks:
        width = util.shape_of(block)[1]
        rows.append(lax.pad(block, zero, ((0, 0, 0), (before, total - before - width, 0))))
        before += width
    return jnp.concatenate(rows, axis=0)


jax_jits.apply(globals(), "scipy.linalg")  # JAX's jitted functions become jit functions

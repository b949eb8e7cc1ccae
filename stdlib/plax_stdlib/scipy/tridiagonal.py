"""`scipy.linalg.eigh_tridiagonal` as JAX computes it, so that its values are JAX's bit
for bit on the CPU: the eigenvalues by bisection on Sturm sequence counts (LAPACK's
xSTEBZ), all of them at once, and the eigenvectors by inverse iteration (xSTEIN) from
random starting vectors, those of clustered eigenvalues orthonormalized together."""
from __future__ import annotations

import operator

import numpy as np

from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib import random
from plax_stdlib.lax import linalg as lax_linalg
from plax_stdlib.numpy import util

_DTYPES = tuple(map(np.dtype, (np.float32, np.float64, np.complex64, np.complex128)))
_FUDGE = 2.1  # how far beyond Gershgorin's bounds the bisection starts
_INVERSE_ITERATIONS = 5  # at most (xSTEIN's), while the norms still grow by 10%


def _targets(n: int, select: str, select_range):
    """The indices of the eigenvalues asked for (static)."""
    if select == "a":
        return 0, n - 1
    if select == "i":
        if select_range is None:
            raise ValueError("for select='i', select_range must be specified.")
        first, last = map(operator.index, select_range)
        if first > last:
            raise ValueError("Got empty index range in select_range.")
        return first, last
    if select == "v":
        raise NotImplementedError("eigh_tridiagonal(..., select='v') is not implemented: "
                                  "the number of eigenvalues in a range is not static")
    raise ValueError("'select must have a value in {'a', 'i', 'v'}.")


def _sturm_counts(alpha, beta_sq, pivmin, alpha0_perturbation, x):
    """How many eigenvalues lie below each shift in `x`: the negative pivots of the LDLᵀ
    factorization of T - x (pivots at most `pivmin` count as negative and are moved
    away from 0; a first pivot of exactly 0 becomes `alpha0_perturbation`)."""
    q = alpha[0] - x
    count = jnp.where(q < 0, jnp.ones(x.shape, np.int32), jnp.zeros(x.shape, np.int32))
    q = jnp.where(alpha[0] == x, alpha0_perturbation, q)

    def step(i, carry):
        q, count = carry
        q = alpha[i] - beta_sq[i - 1] / q - x
        small = q <= pivmin
        return jnp.where(small, jnp.minimum(q, -pivmin), q), jnp.where(small, count + 1, count)
    return lax.fori_loop(1, alpha.shape[0], step, (q, count))[1]


def _eigenvalues(alpha, beta_abs, beta_sq, targets, tol):
    """The eigenvalues of indices `targets`, bisected in parallel from an interval a
    little wider than Gershgorin's until it is `tol` (at least eps·‖T‖) narrow."""
    n = alpha.shape[0]
    finfo = np.finfo(alpha.dtype)
    row_sums = jnp.concatenate([beta_abs[:1], beta_abs[:-1] + beta_abs[1:], beta_abs[-1:]])
    highest = jnp.max(alpha + row_sums)
    lowest = jnp.min(alpha - row_sums)
    t_norm = jnp.maximum(jnp.abs(lowest), jnp.abs(highest))
    one = np.ones([], alpha.dtype)
    safemin = np.maximum(one / finfo.max, (one + finfo.eps) * finfo.tiny)
    pivmin = safemin * jnp.maximum(1, jnp.max(beta_sq))
    alpha0_perturbation = jnp.square(finfo.eps * beta_abs[0])
    abs_tol = finfo.eps * t_norm
    if tol is not None:
        abs_tol = jnp.maximum(tol, abs_tol)
    slack = jnp.array(n, alpha.dtype) * _FUDGE * finfo.eps * t_norm
    shape = targets.shape
    lower = jnp.broadcast_to(lowest - slack - 2 * _FUDGE * pivmin, shape)
    upper = jnp.broadcast_to(highest + slack + _FUDGE * pivmin, shape)
    pivmin = jnp.broadcast_to(pivmin, shape)
    alpha0_perturbation = jnp.broadcast_to(alpha0_perturbation, shape)

    def unfinished(state):
        i, lower, _, upper = state
        return jnp.logical_and(i < finfo.nmant + 1, abs_tol < jnp.max(upper - lower))

    def halve(state):
        i, lower, mid, upper = state
        counts = _sturm_counts(alpha, beta_sq, pivmin, alpha0_perturbation, mid)
        lower = jnp.where(counts <= targets, mid, lower)
        upper = jnp.where(counts > targets, mid, upper)
        return i + 1, lower, 0.5 * (lower + upper), upper
    return lax.while_loop(unfinished, halve, (0, lower, 0.5 * (upper + lower), upper))[2]


def _orthonormalize_clusters(v, starts, ends, count):
    """Rows starts[c]:ends[c] of `v` (c < count) replaced by an orthonormal basis of their
    span (by QR)."""
    k, n = v.shape
    rows = jnp.arange(k)

    def one(c, v):
        start, end = starts[c], ends[c]
        inside = (rows < end - start).astype(v.dtype)
        block = lax.dynamic_slice(jnp.pad(v, ((0, k), (0, 0))), (start, 0), (k, n))
        basis = jnp.linalg.qr((block * inside[:, None]).T)[0].T * inside[:, None]
        placed = lax.dynamic_update_slice(jnp.zeros((2 * k, n), v.dtype), basis, (start, 0))
        return jnp.where(((rows >= start) & (rows < end))[:, None], placed[:k, :], v)
    return lax.fori_loop(0, count, one, v)


def _eigenvectors(alpha, beta, eigvals, key):
    """Inverse iteration with T - λ for every λ of `eigvals` (ascending) at once, from
    normalized Gaussian vectors drawn with `key`; vectors of eigenvalues closer than
    √eps·‖T‖ are orthonormalized together after each step."""
    n, k = alpha.shape[0], eigvals.shape[0]
    dl, du = jnp.pad(jnp.conj(beta), (1, 0)), jnp.pad(beta, (0, 1))
    t_norm = jnp.maximum(jnp.abs(eigvals[0]), jnp.abs(eigvals[-1]))
    close = eigvals[1:] - eigvals[:-1] < jnp.sqrt(np.finfo(eigvals.dtype).eps) * t_norm
    after_close = jnp.pad(close, (1, 0), constant_values=False)
    before_close = jnp.pad(close, (0, 1), constant_values=False)
    first = jnp.logical_and(jnp.logical_not(after_close), before_close)
    last = jnp.logical_and(after_close, jnp.logical_not(before_close))
    starts = jnp.nonzero(first, size=k // 2 + 1)[0]
    ends = jnp.nonzero(last, size=k // 2 + 1)[0] + 1
    count = jnp.sum(first)
    dtype = np.result_type(alpha.dtype, beta.dtype)
    v = random.normal(key, (k, n), dtype=np.finfo(dtype).dtype).astype(dtype)
    v = v / jnp.linalg.norm(v, axis=-1, keepdims=True).astype(dtype)
    shifted = alpha[None, :] - eigvals[:, None]
    dl, du = (jnp.broadcast_to(x[None, :], (k, n)) for x in (dl, du))

    def growing(state):
        i, _, norms, previous = state
        return jnp.logical_and(i < _INVERSE_ITERATIONS, jnp.any(norms >= 1.1 * previous))

    def iterate(state):
        i, v, norms, _ = state
        v_new = lax_linalg.tridiagonal_solve(dl.astype(dtype), shifted.astype(dtype),
                                             du.astype(dtype), v[:, :, None].astype(dtype),
                                             perturb_singular=True)[:, :, 0]
        norms_new = jnp.linalg.norm(v_new, axis=-1, keepdims=True)
        v_new = _orthonormalize_clusters(v_new / norms_new.astype(v_new.dtype), starts, ends,
                                         count)
        return i + 1, v_new, norms_new[:, 0], norms
    start = (0, v, jnp.ones(k, eigvals.dtype), jnp.zeros(k, eigvals.dtype))
    return lax.while_loop(growing, iterate, start)[1]


@util.compiled(static_argnames=("eigvals_only", "select", "select_range"))
def eigh_tridiagonal(d, e, *, eigvals_only: bool = False, select: str = "a",
                     select_range: tuple[float, float] | None = None, tol: float | None = None,
                     key=None):
    """Eigenvalues (ascending, real) and, unless `eigvals_only`, eigenvectors (columns) of
    the Hermitian tridiagonal matrix with diagonal `d` and superdiagonal `e`; all of
    them (select='a') or those of indices select_range[0]..select_range[1] ('i').
    `tol` is the bisection's absolute tolerance (at least eps·‖T‖); `key` draws the
    inverse iteration's starting vectors (default `random.key(42)`, as JAX)."""
    util.check_arraylike("scipy.linalg.eigh_tridiagonal", d, e)
    alpha, beta = jnp.asarray(d), jnp.asarray(e)
    if alpha.dtype != beta.dtype:
        raise TypeError(f"diagonal and off-diagonal values must have same dtype, got "
                        f"{alpha.dtype} and {beta.dtype}")
    if alpha.dtype not in _DTYPES:
        raise TypeError(f"Only float32 and float64 inputs are supported as inputs to "
                        f"plax.scipy.linalg.eigh_tridiagonal, got {alpha.dtype} and "
                        f"{beta.dtype}")
    n = alpha.shape[0] if alpha.ndim else -1
    if alpha.ndim != 1 or beta.shape != (max(n - 1, 0),):
        raise ValueError(f"eigh_tridiagonal takes a diagonal of shape (n,) and an "
                         f"off-diagonal of shape (n - 1,), got {alpha.shape} and {beta.shape}")
    if n <= 1:
        values = jnp.real(alpha)
        return values if eigvals_only else (values, jnp.eye(n, dtype=alpha.dtype))
    first, last = _targets(n, select, select_range)
    if jnp.iscomplexobj(alpha):
        alpha, beta_sq = jnp.real(alpha), jnp.real(beta * jnp.conj(beta))
        beta_abs = jnp.sqrt(beta_sq)
    else:
        beta_abs, beta_sq = jnp.abs(beta), jnp.square(beta)
    eigvals = _eigenvalues(alpha, beta_abs, beta_sq,
                           jnp.arange(first, last + 1, dtype=np.int32), tol)
    if eigvals_only:
        return eigvals
    key = random.key(42) if key is None else key
    return eigvals, _eigenvectors(alpha, beta, eigvals, key).T

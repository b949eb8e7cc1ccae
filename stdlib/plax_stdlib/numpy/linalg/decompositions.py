"""Matrix decompositions of `plax.numpy.linalg`: cholesky, qr, eigh/eigvalsh,
eig/eigvals, svd/svdvals, on `plax.lax.linalg`'s primitives (so they batch over
leading dimensions and differentiate as those do)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from plax.extend.core import get_aval
from plax_stdlib import jax_jits, lax
from plax_stdlib.lax import linalg as lax_linalg
from plax_stdlib.lax.linalg.matrices import mH, mT, take_rows
from plax_stdlib.numpy.linalg.operands import matrices


class EighResult(NamedTuple):
    """What `eigh` returns: a named tuple of the eigenvalues (ascending) and the
    eigenvectors (as columns), which also unpacks as a pair.

    Examples:
        >>> w, v = jnp.linalg.eigh(jnp.diag(jnp.array([3.0, 1.0])))
        >>> w
        Array([1., 3.], dtype=float32)
    """
    eigenvalues: object
    eigenvectors: object


class EigResult(NamedTuple):
    """What `eig` returns: a named tuple of the complex eigenvalues and eigenvectors (as
    columns), which also unpacks as a pair.

    Examples:
        >>> jnp.linalg.eig(jnp.eye(2))._fields
        ('eigenvalues', 'eigenvectors')
    """
    eigenvalues: object
    eigenvectors: object


class QRResult(NamedTuple):
    """What `qr` returns (modes "reduced" and "complete"): a named tuple `(Q, R)`.

    Examples:
        >>> jnp.linalg.qr(jnp.eye(2))._fields
        ('Q', 'R')
    """
    Q: object
    R: object


class SVDResult(NamedTuple):
    """What `svd` returns with `compute_uv`: a named tuple `(U, S, Vh)`, `a = U @
    diag(S) @ Vh`.

    Examples:
        >>> u, s, vh = jnp.linalg.svd(jnp.eye(2))
        >>> s
        Array([1., 1.], dtype=float32)
    """
    U: object
    S: object
    Vh: object


def cholesky(a, *, upper: bool = False, symmetrize_input: bool = True):
    """The Cholesky factor of each Hermitian positive-definite matrix: lower-triangular
    `L` with `a = L @ L.conj().T` (or, with `upper`, `L.conj().T`).

    Follows `numpy.linalg.cholesky` (with NumPy 2's `upper`), batched over leading
    axes. A matrix that is not positive definite gives NaNs instead of an error (a
    traced program cannot raise on values). `symmetrize_input` uses `(a + aᴴ) / 2`,
    which makes the gradient symmetric.

    Args:
        a: `(..., n, n)` Hermitian positive-definite matrices.
        upper: return the upper factor.
        symmetrize_input: symmetrize `a` first.

    Returns:
        `(..., n, n)` triangular factors.

    Examples:
        >>> a = jnp.array([[4.0, 2.0], [2.0, 3.0]])
        >>> jnp.linalg.cholesky(a)
        Array([[2.    , 0.    ],
               [1.    , 1.4142...]], dtype=float32)
    """
    a = matrices("jnp.linalg.cholesky", a, square=True)
    factor = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
    return mH(factor) if upper else factor


_QR_FULL_MATRICES = {"reduced": False, "r": False, "full": False, "complete": True}


def qr(a, mode: str = "reduced"):
    """The QR decomposition of each matrix: `a = Q @ R` with orthonormal columns in `Q`
    and upper-triangular `R`.

    Follows `numpy.linalg.qr`: `mode` "reduced" (default: `Q` is `(m, k)`, `R` is
    `(k, n)`, `k = min(m, n)`), "complete" (`Q` square), "r" (just `R`) or "raw"
    (LAPACK's packed reflectors and tau, as NumPy gives them).

    Args:
        a: `(..., m, n)` matrices.
        mode: "reduced", "complete", "r" or "raw".

    Returns:
        `QRResult(Q, R)`, or `R` for "r", or `(h, tau)` for "raw".

    Raises:
        ValueError: an unknown mode.

    Examples:
        >>> q, r = jnp.linalg.qr(jnp.ones((3, 2)))
        >>> q.shape, r.shape
        ((3, 2), (2, 2))
    """
    a = matrices("jnp.linalg.qr", a)
    if mode == "raw":
        packed, taus = lax_linalg.geqrf(a)
        return QRResult(mT(packed), taus)
    if mode not in _QR_FULL_MATRICES:
        raise ValueError(f"jnp.linalg.qr: unsupported mode {mode!r}; use 'reduced', "
                         "'complete', 'r' or 'raw'")
    q, r = lax_linalg.qr(a, full_matrices=_QR_FULL_MATRICES[mode])
    return r if mode == "r" else QRResult(q, r)


def _lower(fun_name: str, uplo) -> bool:
    if uplo in (None, "L"):
        return True
    if uplo == "U":
        return False
    raise ValueError(f"{fun_name}: UPLO must be one of None, 'L' or 'U', got {uplo!r}")


def eigh(a, UPLO: str | None = None, symmetrize_input: bool = True) -> EighResult:
    """The eigenvalues (ascending) and orthonormal eigenvectors of each Hermitian
    (real symmetric) matrix.

    Follows `numpy.linalg.eigh`; only the triangle `UPLO` names is read, unless
    `symmetrize_input` (the default, as in JAX) first averages `a` with its conjugate
    transpose, which also makes the gradient symmetric.

    Args:
        a: `(..., n, n)` Hermitian matrices.
        UPLO: "L" or "U", the triangle to read.
        symmetrize_input: symmetrize `a` first.

    Returns:
        `EighResult(eigenvalues, eigenvectors)`; real eigenvalues, ascending.

    Examples:
        >>> a = jnp.array([[4.0, 2.0], [2.0, 3.0]])
        >>> jnp.linalg.eigh(a).eigenvalues
        Array([1.4384..., 5.5615...], dtype=float32)
    """
    lower = _lower("jnp.linalg.eigh", UPLO)
    a = matrices("jnp.linalg.eigh", a, square=True)
    v, w = lax_linalg.eigh(a, lower=lower, symmetrize_input=symmetrize_input)
    return EighResult(w, v)


def eigvalsh(a, UPLO: str | None = "L", *, symmetrize_input: bool = True):
    """The eigenvalues (ascending, real) of each Hermitian matrix (see `eigh`).

    Follows `numpy.linalg.eigvalsh`.

    Args:
        a: `(..., n, n)` Hermitian matrices.
        UPLO: "L" or "U", the triangle to read.
        symmetrize_input: symmetrize `a` first.

    Returns:
        `(..., n)` eigenvalues.

    Examples:
        >>> a = jnp.array([[4.0, 2.0], [2.0, 3.0]])
        >>> jnp.linalg.eigvalsh(a)
        Array([1.4384..., 5.5615...], dtype=float32)
    """
    a = matrices("jnp.linalg.eigvalsh", a, square=True)
    return eigh(a, UPLO, symmetrize_input=symmetrize_input).eigenvalues


def eig(a) -> EigResult:
    """The eigenvalues and right eigenvectors of each general square matrix, both complex.

    Follows `numpy.linalg.eig`, batched over leading axes. For Hermitian matrices use
    `eigh`, which is faster and gives real eigenvalues.

    Args:
        a: `(..., n, n)` matrices.

    Returns:
        `EigResult(eigenvalues, eigenvectors)`; `eigenvectors[..., :, i]` belongs to
        `eigenvalues[..., i]`.

    Examples:
        >>> jnp.linalg.eig(jnp.array([[2.0, 0.0], [0.0, 3.0]])).eigenvalues
        Array([2.+0.j, 3.+0.j], dtype=complex64)
    """
    a = matrices("jnp.linalg.eig", a, square=True)
    w, v = lax_linalg.eig(a, compute_left_eigenvectors=False)
    return EigResult(w, v)


def eigvals(a):
    """The (complex) eigenvalues of each general square matrix (see `eig`).

    Follows `numpy.linalg.eigvals`.

    Args:
        a: `(..., n, n)` matrices.

    Returns:
        `(..., n)` complex eigenvalues.

    Examples:
        >>> jnp.linalg.eigvals(jnp.array([[2.0, 0.0], [0.0, 3.0]]))
        Array([2.+0.j, 3.+0.j], dtype=complex64)
    """
    a = matrices("jnp.linalg.eigvals", a, square=True)
    return lax_linalg.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False,
        subset_by_index: tuple[int, int] | None = None):
    """The singular value decomposition of each matrix: `a = U @ diag(S) @ Vh`, `S`
    descending.

    Follows `numpy.linalg.svd`, plus JAX's `subset_by_index` (a range of singular
    values to compute, on backends that support it). With `hermitian`, the
    decomposition comes from `eigh`.

    Args:
        a: `(..., m, n)` matrices.
        full_matrices: `U` and `Vh` square (True) or reduced to `min(m, n)`.
        compute_uv: also compute `U` and `Vh` (else only `S` is returned).
        hermitian: `a` is Hermitian.
        subset_by_index: `(start, end)` indices of the singular values wanted.

    Returns:
        `SVDResult(U, S, Vh)`, or `S` without `compute_uv`.

    Examples:
        >>> jnp.linalg.svd(jnp.array([[3.0, 0.0], [0.0, 4.0]])).S
        Array([4., 3.], dtype=float32)
    """
    a = matrices("jnp.linalg.svd", a, square=hermitian)
    if hermitian:
        return _hermitian_svd(a, compute_uv, subset_by_index)
    out = lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv,
                         subset_by_index=subset_by_index)
    return SVDResult(*out) if compute_uv else out


def _hermitian_svd(a, compute_uv: bool, subset_by_index):
    """Singular values are the |eigenvalues|, in descending order; U holds the
    eigenvectors in that order and Vᴴ the same with the eigenvalues' signs."""
    v, w = lax_linalg.eigh(a, subset_by_index=subset_by_index)
    s = lax.abs(w)
    last = get_aval(s).ndim - 1
    if not compute_uv:
        return lax.rev(lax.sort(s, last), (last,))
    order = lax.broadcasted_iota(np.int32, get_aval(s).shape, last)
    s, order, sign = lax.sort((s, order, lax.sign(w)), last, num_keys=1)
    s, order, sign = (lax.rev(x, (last,)) for x in (s, order, sign))
    u = mT(take_rows(mT(v), order))  # columns of v in descending order of |w|
    signed = lax.mul(u, lax.broadcast_in_dim(lax.convert_element_type(sign, get_aval(u).dtype),
                                             get_aval(u).shape, (*range(last), last + 1)))
    return SVDResult(u, s, mH(signed))


def svdvals(x, /):
    """The singular values of each matrix, descending (the array API's `svdvals`;
    `svd(a, compute_uv=False)`).

    Args:
        x: `(..., m, n)` matrices.

    Returns:
        `(..., min(m, n))` singular values.

    Examples:
        >>> jnp.linalg.svdvals(jnp.array([[3.0, 0.0], [0.0, 4.0]]))
        Array([4., 3.], dtype=float32)
    """
    x = matrices("jnp.linalg.svdvals", x)
    return lax_linalg.svd(x, compute_uv=False)


jax_jits.apply(globals(), "numpy.linalg")  # JAX's jitted functions become jit functions

"""Matrix decompositions of `plax.numpy.linalg`: cholesky, qr, eigh/eigvalsh,
eig/eigvals, svd/svdvals, on `plax.lax.linalg`'s primitives (so they batch over
leading dimensions and differentiate as those do)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from plax.extend.core import get_aval
from plax_stdlib import lax
from plax_stdlib.lax import linalg as lax_linalg
from plax_stdlib.lax.linalg.matrices import mH, mT, take_rows
from plax_stdlib.numpy.linalg.operands import matrices


class EighResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class EigResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class QRResult(NamedTuple):
    Q: object
    R: object


class SVDResult(NamedTuple):
    U: object
    S: object
    Vh: object


def cholesky(a, *, upper: bool = False, symmetrize_input: bool = True):
    """The Cholesky factor of each Hermitian positive-definite matrix: L (a = L Lᴴ) or,
    with `upper`, Lᴴ. NaNs where a matrix is not positive definite."""
    a = matrices("jnp.linalg.cholesky", a, square=True)
    factor = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
    return mH(factor) if upper else factor


_QR_FULL_MATRICES = {"reduced": False, "r": False, "full": False, "complete": True}


def qr(a, mode: str = "reduced"):
    """`QRResult(Q, R)` of each matrix (`mode` 'reduced' or 'complete'); just R for 'r';
    LAPACK's packed reflectors (transposed, as NumPy gives them) and taus for 'raw'."""
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
    """`EighResult(eigenvalues, eigenvectors)` of each Hermitian matrix, eigenvalues
    ascending."""
    lower = _lower("jnp.linalg.eigh", UPLO)
    a = matrices("jnp.linalg.eigh", a, square=True)
    v, w = lax_linalg.eigh(a, lower=lower, symmetrize_input=symmetrize_input)
    return EighResult(w, v)


def eigvalsh(a, UPLO: str | None = "L", *, symmetrize_input: bool = True):
    """The ascending eigenvalues of each Hermitian matrix."""
    lower = _lower("jnp.linalg.eigvalsh", UPLO)
    a = matrices("jnp.linalg.eigvalsh", a, square=True)
    return lax_linalg.eigh(a, lower=lower, symmetrize_input=symmetrize_input)[1]


def eig(a) -> EigResult:
    """`EigResult(eigenvalues, eigenvectors)` of each square matrix, both complex."""
    a = matrices("jnp.linalg.eig", a, square=True)
    w, v = lax_linalg.eig(a, compute_left_eigenvectors=False)
    return EigResult(w, v)


def eigvals(a):
    """The (complex) eigenvalues of each square matrix."""
    a = matrices("jnp.linalg.eigvals", a, square=True)
    return lax_linalg.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False,
        subset_by_index: tuple[int, int] | None = None):
    """`SVDResult(U, S, Vh)` of each matrix (just S without `compute_uv`), S descending.
    With `hermitian`, the decomposition comes from `eigh` of the Hermitian part."""
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
    """The descending singular values of each matrix."""
    x = matrices("jnp.linalg.svdvals", x)
    return lax_linalg.svd(x, compute_uv=False)

"""SciPy's special matrices for `plax.scipy.linalg`: toeplitz, hankel, circulant,
leslie, companion, fiedler, fiedler_companion, convolution_matrix (built from the
values given, batched over leading axes) and hilbert, invhilbert, pascal, invpascal,
helmert, hadamard, dft (fixed by their size alone).

Both kinds are staged as JAX stages them, so their Jaxprs and values are JAX's. A
matrix of the first kind is built for one set of vectors and batched with
`jnp.vectorize`: Toeplitz and Hankel matrices are the windows of the joined vectors
(a convolution's patches), the others index, place or select the values. A matrix of
the second kind depends on `n` only: it is staged from iotas (binomials through
lgamma, so in floating point, not exact), in JAX's dtype.
"""
from __future__ import annotations

import functools
import math
import operator

import numpy as np

from plax.extend import dtypes
from plax_stdlib import jax_jits, lax
from plax_stdlib import numpy as jnp
from plax_stdlib.numpy import util


def _windows(v, width: int):
    """The windows of `width` consecutive elements of the vector `v`, one a row: the
    patches of a convolution (an identity kernel at HIGHEST precision, so exact)."""
    patches = lax.conv_general_dilated_patches(
        v.reshape((1, v.shape[0], 1)), (width,), (1,), "VALID",
        dimension_numbers=("NTC", "IOT", "NTC"), precision=lax.Precision.HIGHEST)
    return patches[0]


def toeplitz(c, r=None):
    """The Toeplitz matrix with first column `c` and first row `r` (r[0] is ignored;
    without `r`, conj(c): a Hermitian matrix); leading axes are batch axes."""
    if r is None:
        util.check_arraylike("toeplitz", c)
        r = jnp.conjugate(jnp.asarray(c))
    else:
        util.check_arraylike("toeplitz", c, r)
    return _toeplitz(jnp.atleast_1d(jnp.asarray(c)), jnp.atleast_1d(jnp.asarray(r)))


@functools.partial(jnp.vectorize, signature="(m),(n)->(m,n)")
def _toeplitz(c, r):
    (m,), (n,) = c.shape, r.shape
    if m == 0 or n == 0:
        return jnp.empty((m, n), dtype=jnp.promote_types(c.dtype, r.dtype))
    # row i of the windows of reversed(c) + r[1:] is row m - 1 - i of the matrix
    return jnp.flip(_windows(jnp.concatenate((c[::-1], r[1:])), n), axis=0)


def hankel(c, r=None):
    """The Hankel matrix with first column `c` and last row `r` (r[0] is ignored;
    zeros without `r`); leading axes are batch axes."""
    if r is None:
        util.check_arraylike("hankel", c)
        c = jnp.asarray(c)
        r = jnp.zeros_like(c)
    else:
        util.check_arraylike("hankel", c, r)
        c, r = jnp.asarray(c), jnp.asarray(r)
    for name, v in (("c", c), ("r", r)):
        if v.ndim == 0:
            raise ValueError(f"hankel: {name} must be at least 1-dimensional, got a scalar.")
    # equal batch ranks, so that vectorize never promotes ranks
    if c.ndim < r.ndim:
        c = lax.expand_dims(c, range(r.ndim - c.ndim))
    elif r.ndim < c.ndim:
        r = lax.expand_dims(r, range(c.ndim - r.ndim))
    return _hankel(c, r)


@functools.partial(jnp.vectorize, signature="(m),(n)->(m,n)")
def _hankel(c, r):
    (m,), (n,) = c.shape, r.shape
    if m == 0 or n == 0:
        return jnp.empty((m, n), dtype=jnp.result_type(c, r))
    return _windows(jnp.concatenate((c, r[1:])), n)


def circulant(c):
    """The circulant matrix whose first column is `c`: m[i, j] = c[(i - j) mod n]."""
    util.check_arraylike("circulant", c)
    return _circulant(jnp.atleast_1d(jnp.asarray(c)))


@functools.partial(jnp.vectorize, signature="(n)->(n,n)")
def _circulant(c):
    n = c.shape[0]
    return c[(jnp.arange(n)[:, None] - jnp.arange(n)[None, :]) % n]


def leslie(f, s):
    """The Leslie matrix: fecundities `f` in the first row, survival rates `s` on the
    subdiagonal."""
    util.check_arraylike("leslie", f, s)
    f, s = jnp.atleast_1d(f), jnp.atleast_1d(s)
    if f.shape[-1] < 2:
        raise ValueError(f"The length of f along the last axis must be at least 2; got "
                         f"shape {f.shape}.")
    if s.shape[-1] != f.shape[-1] - 1:
        raise ValueError(f"Incorrect lengths for f and s. The length of s along the last "
                         f"axis must be one less than the length of f; got f shape "
                         f"{f.shape} and s shape {s.shape}.")
    return _leslie(f, s)


@functools.partial(jnp.vectorize, signature="(n),(m)->(n,n)")
def _leslie(f, s):
    f, s = util.promote_dtypes(f, s)
    return jnp.diag(s, k=-1).at[0].set(f)


def _inexact_vector(name: str, a):
    """`a` in its inexact dtype, of at least one dimension."""
    a, = util.promote_args_inexact(name, a)
    return jnp.atleast_1d(a)


def companion(a):
    """The companion matrix of the polynomial with coefficients `a`: its first row is
    -a[1:] / a[0], its subdiagonal ones (eigenvalues: the polynomial's roots)."""
    a = _inexact_vector("companion", a)
    if a.shape[-1] < 2:
        raise ValueError(f"The length of `a` along the last axis must be at least 2; got "
                         f"shape {a.shape}.")
    return _companion(a)


@functools.partial(jnp.vectorize, signature="(n)->(m,m)")
def _companion(a):
    first_row = -a[1:] / a[0]
    m = a.shape[0] - 1
    return jnp.eye(m, m, k=-1, dtype=first_row.dtype).at[0].set(first_row)


def fiedler(a):
    """The symmetric Fiedler matrix |a[i] - a[j]|."""
    util.check_arraylike("fiedler", a)
    a = jnp.atleast_1d(a)
    return jnp.abs(a[..., None] - a[..., None, :])


def fiedler_companion(a):
    """Fiedler's pentadiagonal companion matrix of the polynomial with coefficients
    `a` (the same eigenvalues as `companion(a)`)."""
    a = _inexact_vector("fiedler_companion", a)
    if a.shape[-1] == 0:
        raise ValueError(f"fiedler_companion requires the last axis of 'a' to have nonzero "
                         f"length, but got an array of shape {a.shape}.")
    return _fiedler_companion(a)


@functools.partial(jnp.vectorize, signature="(n)->(m,m)")
def _fiedler_companion(a):
    n = a.shape[0] - 1
    if n == 0:
        return jnp.empty_like(a, shape=(0, 0))
    a = a / a[0]
    if n == 1:
        return -a[1:].reshape(1, 1)
    # Every cell chosen over the whole (n, n) grid (static shapes): with c = -a,
    # c[1] at (0, 0), 1 at (1, 0); on even rows i, c[i + 2] at (i, i + 1), 1 at
    # (i, i + 2) and (from i = 2) c[i + 1] at (i, i - 1); on odd rows from 3, 1 at
    # (i, i - 2). Indices past the end are clipped; the conditions leave those out.
    i, j = jnp.arange(n)[:, None], jnp.arange(n)[None, :]
    above, below = -a[jnp.minimum(i + 2, n)], -a[jnp.minimum(i + 1, n)]
    even, odd = i % 2 == 0, i % 2 == 1
    one, zero = jnp.array(1, dtype=a.dtype), jnp.array(0, dtype=a.dtype)
    conditions = [(i == 0) & (j == 0), (i == 1) & (j == 0), (j == i + 1) & even,
                  (j == i + 2) & even, (j == i - 1) & even & (i >= 2),
                  (j == i - 2) & odd & (i >= 3)]
    return jnp.select(conditions, [-a[1], one, above, one, below, one], default=zero)


_CONVOLUTION_MODES = ("full", "valid", "same")


def convolution_matrix(a, n: int, mode: str = "full"):
    """The matrix A with A @ v == convolve(a, v, mode) for every v of length n: the
    Toeplitz matrix of the rows of the full matrix that `mode` keeps."""
    n = operator.index(util.concrete_or_error(n, "convolution_matrix: n must be static"))
    if n <= 0:
        raise ValueError(f"n must be a positive integer; got {n}.")
    util.check_arraylike("convolution_matrix", a)
    a = jnp.asarray(a)
    if a.ndim == 0:
        raise ValueError("convolution_matrix: a must be at least 1-dimensional, got a scalar.")
    m = a.shape[-1]
    if m < 1:
        raise ValueError(f"len(a) must be at least 1; got shape {a.shape}.")
    if mode not in _CONVOLUTION_MODES:
        raise ValueError(f"mode must be one of 'full', 'valid', 'same'; got {mode!r}.")
    # the full matrix's first column is a padded to m + n - 1, its last row reversed(a)
    # padded so; `mode` drops `first` rows at the top and `last` at the bottom
    widths = [(0, 0)] * (a.ndim - 1) + [(0, n - 1)]
    column, reversed_row = jnp.pad(a, widths), jnp.pad(jnp.flip(a, axis=-1), widths)
    full, short = m + n - 1, min(n, m) - 1
    first, last = {"full": (0, 0), "valid": (short, short),
                   "same": (short // 2, short - short // 2)}[mode]
    return toeplitz(lax.slice_in_dim(column, first, full - last, axis=-1),
                    lax.slice_in_dim(reversed_row, full - n - first, full - first, axis=-1))


# --- matrices fixed by their size ------------------------------------------------------------

def hilbert(n: int):
    """The Hilbert matrix 1 / (i + j + 1)."""
    a = lax.broadcasted_iota(float, (n, 1), 0)
    return 1 / (a + a.T + 1)


def _rows_and_columns(n: int, dtype):
    """The row and column indices `i` `(n, 1)` and `j` `(1, n)`, as floats."""
    a = jnp.arange(n, dtype=dtype)
    return a[:, None], a[None, :]


def invhilbert(n: int):
    """The inverse of `hilbert(n)`: (-1)^(i+j) (i+j+1) C(n+i, n-j-1) C(n+j, n-i-1)
    C(i+j, i)²."""
    from plax_stdlib.scipy.special import comb
    i, j = _rows_and_columns(n, dtypes.default_float_dtype())
    s = i + j
    return ((-1.0) ** s * (s + 1.0) * comb(n + i, n - j - 1) * comb(n + j, n - i - 1)
            * comb(s, i) ** 2)


@util.compiled()
def _binom(n, k):
    """C(n, k) as exp(lgamma(n + 1) - lgamma(n - k + 1) - lgamma(k + 1))."""
    log_n, log_n_k, log_k = lax.lgamma(n + 1.0), lax.lgamma(n - k + 1.0), lax.lgamma(k + 1.0)
    return lax.exp(log_n - log_n_k - log_k)


def _pascal_kind(kind: str | None, article: str) -> str:
    kinds = ["symmetric", "lower", "upper"]
    kind = "symmetric" if kind is None else kind
    if kind not in kinds:
        raise ValueError(f"Expected kind to be {article} of: {kinds}; got {kind}")
    return kind


def pascal(n: int, kind: str | None = None):
    """The Pascal matrix: binomial coefficients, symmetric (C(i + j, i)), lower or
    upper triangular; float32, as JAX's."""
    kind = _pascal_kind(kind, "on")  # (JAX's message says "on of")
    low = _binom(*_rows_and_columns(n, np.float32))
    if kind == "lower":
        return low
    return low.T if kind == "upper" else jnp.dot(low, low.T)


def invpascal(n: int, kind: str | None = None):
    """The inverse of `pascal(n, kind)`: the lower one is (-1)^(i-j) C(i, j), the
    symmetric one Uᐨ¹ Lᐨ¹."""
    kind = _pascal_kind(kind, "one")
    i, j = _rows_and_columns(n, dtypes.default_float_dtype())
    low = (-1.0) ** (i - j) * _binom(i, j)
    if kind == "lower":
        return low
    return low.T if kind == "upper" else jnp.dot(low.T, low)


def helmert(n: int, full: bool = False):
    """The Helmert matrix: orthonormal rows orthogonal to the ones vector (with
    `full`, that vector normalized as the first row)."""
    if n < 1:
        raise ValueError(f"n must be a positive integer; got {n}.")
    i = jnp.arange(n - 1)[:, None]
    j = jnp.arange(n)[None, :]
    k = i + 1
    k_float = k.astype(dtypes.default_float_dtype())
    norm = jnp.sqrt(k_float * (k_float + 1))
    rows = jnp.where(j <= i, 1.0 / norm, jnp.where(j == k, -k_float / norm,
                                                    jnp.zeros_like(norm)))
    if full:
        first = jnp.full((1, n), 1.0 / jnp.sqrt(n), dtype=rows.dtype)
        rows = jnp.concatenate([first, rows], axis=0)
    return rows


def hadamard(n: int, dtype=int):
    """The Sylvester-Hadamard matrix of order n (a power of 2): ±1 entries, orthogonal
    rows, doubled from [[1]] as [[H, H], [H, -H]]."""
    if n < 1 or not math.log2(n).is_integer():
        raise ValueError(f"n must be a positive power of 2; got {n}.")
    h = jnp.ones((1, 1), dtype=dtype)
    for _ in range(int(math.log2(n))):
        h = jnp.block([[h, h], [h, -h]])
    return h


def _size(name: str, n) -> int:
    return operator.index(util.concrete_or_error(n, f"{name}: n must be static"))


def dft(n: int, scale: str | None = None, *, dtype=None):
    """The discrete Fourier transform matrix exp(-2 pi i j k / n), scaled by 1/sqrt(n)
    ('sqrtn') or 1/n ('n'), computed in `dtype` by XLA as JAX computes it (the phases
    j k 2π/n rounded in `dtype`), so its entries are JAX's, down to the signs of zeros."""
    n = _size("dft", n)
    if scale not in (None, "sqrtn", "n"):
        raise ValueError(f"scale must be None, 'sqrtn', or 'n'; got {scale!r}.")
    dtype = dtypes.default_complex_dtype() if dtype is None else \
        util.check_user_dtype(dtype, "dft")
    if util.dtype_category(dtype) != "c":
        raise ValueError(f"dtype must be a complex floating-point type; got {dtype}.")
    k = jnp.arange(n, dtype=dtype)
    omegas = jnp.exp(-2j * np.pi * k[:, None] * k[None, :] / n)
    if scale == "sqrtn":
        return omegas / jnp.sqrt(n)
    return omegas / n if scale == "n" else omegas


jax_jits.apply(globals(), "scipy.linalg")  # JAX's jitted functions become jit functions

"""SciPy's special matrices for `plax.scipy.linalg`: toeplitz, hankel, circulant,
leslie, companion, fiedler, fiedler_companion, convolution_matrix (built from the
values given, batched over leading axes) and hilbert, invhilbert, pascal, invpascal,
helmert, hadamard, dft (fixed by their size alone).

A matrix of the first kind places each of the given values (or a 0 or 1) at fixed
positions: `_placed(values, where)` gathers them with one static index map, so it
differentiates and batches like any indexing. A matrix of the second kind depends on
`n` only: it is staged from iotas as JAX's (binomials through lgamma, so in floating
point, not exact), in JAX's dtype.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from plax.extend import dtypes
from plax_stdlib import jax_jits, lax
from plax_stdlib import numpy as jnp
from plax_stdlib.numpy import util

_ZERO, _ONE = -2, -1  # in an index map: the cell holds 0 or 1, not a given value


def _placed(values, where: np.ndarray):
    """The matrices `m[..., i, j] = values[..., where[i, j]]` (0 or 1 where `where`
    says `_ZERO`/`_ONE`), for `values` of shape (..., k)."""
    shape = util.shape_of(values)
    if where.size == 0:
        return jnp.zeros(shape[:-1] + where.shape, util.dtype_of(values))
    dtype = util.dtype_of(values)
    constants = lax.broadcast_in_dim(np.array([0, 1], dtype), shape[:-1] + (2,),
                                     (len(shape) - 1,))
    extended = lax.concatenate([values, constants], len(shape) - 1)
    return extended[..., np.where(where < 0, where + shape[-1] + 2, where)]


def _vectors(name: str, *arrays, inexact: bool = False):
    """The arguments as arrays of at least one dimension, in their promoted dtype
    (inexact if asked), with their leading (batch) axes broadcast together."""
    util.check_arraylike(name, *arrays)
    promoted = (util.promote_args_inexact(name, *arrays) if inexact
                else util.promote_dtypes(*map(util.operand, arrays)))
    arrays = [jnp.atleast_1d(a) for a in promoted]
    batch = util.broadcast_shapes(*(util.shape_of(a)[:-1] for a in arrays))
    return [util.broadcast_to_shape(a, batch + util.shape_of(a)[-1:]) for a in arrays]


def _joined(a, b):
    return lax.concatenate([a, b], len(util.shape_of(a)) - 1)


def toeplitz(c, r=None):
    """The Toeplitz matrix with first column `c` and first row `r` (r[0] is ignored;
    without `r`, conj(c): a Hermitian matrix)."""
    if r is None:
        util.check_arraylike("toeplitz", c)
        r = jnp.conjugate(c)
    c, r = _vectors("toeplitz", c, r)
    m, n = util.shape_of(c)[-1], util.shape_of(r)[-1]
    if m == 0 or n == 0:
        return jnp.zeros(util.shape_of(c)[:-1] + (m, n), util.dtype_of(c))
    i, j = np.ogrid[:m, :n]
    return _placed(_joined(jnp.flip(c, -1), r[..., 1:]), m - 1 - i + j)


def hankel(c, r=None):
    """The Hankel matrix with first column `c` and last row `r` (r[0] is ignored;
    zeros without `r`)."""
    util.check_arraylike("hankel", c, *(() if r is None else (r,)))
    for name, v in (("c", c), ("r", r)):
        if v is not None and not util.shape_of(util.operand(v)):
            raise ValueError(f"hankel: {name} must be at least 1-dimensional, got a scalar.")
    c, r = _vectors("hankel", c, jnp.zeros_like(c) if r is None else r)
    m, n = util.shape_of(c)[-1], util.shape_of(r)[-1]
    if m == 0 or n == 0:
        return jnp.zeros(util.shape_of(c)[:-1] + (m, n), util.dtype_of(c))
    i, j = np.ogrid[:m, :n]
    return _placed(_joined(c, r[..., 1:]), i + j)


def circulant(c):
    """The circulant matrix whose first column is `c`: m[i, j] = c[(i - j) mod n]."""
    c, = _vectors("circulant", c)
    n = util.shape_of(c)[-1]
    i, j = np.ogrid[:n, :n]
    return _placed(c, (i - j) % n)


def leslie(f, s):
    """The Leslie matrix: fecundities `f` in the first row, survival rates `s` on the
    subdiagonal."""
    f, s = _vectors("leslie", f, s)
    n = util.shape_of(f)[-1]
    if n < 2:
        raise ValueError(f"The length of f along the last axis must be at least 2; got "
                         f"shape {util.shape_of(f)}.")
    if util.shape_of(s)[-1] != n - 1:
        raise ValueError(f"Incorrect lengths for f and s. The length of s along the last "
                         f"axis must be one less than the length of f; got f shape "
                         f"{util.shape_of(f)} and s shape {util.shape_of(s)}.")
    where = np.full((n, n), _ZERO)
    where[0] = np.arange(n)
    where[np.arange(1, n), np.arange(n - 1)] = n + np.arange(n - 1)
    return _placed(_joined(f, s), where)


def _monic_tail(a):
    """-a[1:] / a[0] for the polynomial coefficients `a` (highest power first)."""
    return jnp.negative(a[..., 1:] / a[..., :1])


def companion(a):
    """The companion matrix of the polynomial with coefficients `a`: its first row is
    -a[1:] / a[0], its subdiagonal ones (eigenvalues: the polynomial's roots)."""
    a, = _vectors("companion", a, inexact=True)
    if util.shape_of(a)[-1] < 2:
        raise ValueError(f"The length of `a` along the last axis must be at least 2; got "
                         f"shape {util.shape_of(a)}.")
    tail = _monic_tail(a)
    m = util.shape_of(tail)[-1]
    where = np.full((m, m), _ZERO)
    where[0] = np.arange(m)
    where[np.arange(1, m), np.arange(m - 1)] = _ONE
    return _placed(tail, where)


def fiedler(a):
    """The symmetric Fiedler matrix |a[i] - a[j]|."""
    a, = _vectors("fiedler", a)
    return jnp.abs(a[..., :, None] - a[..., None, :])


def fiedler_companion(a):
    """Fiedler's pentadiagonal companion matrix of the polynomial with coefficients
    `a` (the same eigenvalues as `companion(a)`)."""
    a, = _vectors("fiedler_companion", a, inexact=True)
    if util.shape_of(a)[-1] == 0:
        raise ValueError(f"fiedler_companion requires the last axis of 'a' to have nonzero "
                         f"length, but got an array of shape {util.shape_of(a)}.")
    tail = _monic_tail(a)  # tail[k - 1] = -a_k / a_0
    n = util.shape_of(tail)[-1]
    where = np.full((n, n), _ZERO)
    rows = np.arange(n)
    where[rows[3::2], rows[1:n - 2:2]] = _ONE  # second subdiagonal, odd rows
    where[rows[2::2], rows[1:n - 1:2]] = rows[2::2]  # -a[i + 1] at (i, i - 1), even i
    where[rows[0:n - 2:2], rows[2::2]] = _ONE  # second superdiagonal, even rows
    where[rows[0:n - 1:2], rows[1::2]] = rows[0:n - 1:2] + 1  # -a[i + 2] at (i, i + 1)
    if n:
        where[0, 0] = 0
    if n > 1:
        where[1, 0] = _ONE
    return _placed(tail, where)


_CONVOLUTION_MODES = ("full", "valid", "same")


def convolution_matrix(a, n: int, mode: str = "full"):
    """The matrix A with A @ v == convolve(a, v, mode) for every v of length n."""
    n = operator.index(util.concrete_or_error(n, "convolution_matrix: n must be static"))
    if n <= 0:
        raise ValueError(f"n must be a positive integer; got {n}.")
    util.check_arraylike("convolution_matrix", a)
    a = util.operand(a)
    if not util.shape_of(a):
        raise ValueError("convolution_matrix: a must be at least 1-dimensional, got a scalar.")
    m = util.shape_of(a)[-1]
    if m < 1:
        raise ValueError(f"len(a) must be at least 1; got shape {util.shape_of(a)}.")
    if mode not in _CONVOLUTION_MODES:
        raise ValueError(f"mode must be one of 'full', 'valid', 'same'; got {mode!r}.")
    short = min(m, n) - 1  # rows 'valid' drops at each end; 'same' drops it in total
    first, rows = {"full": (0, m + n - 1), "valid": (short, max(m, n) - short),
                   "same": (short // 2, max(m, n))}[mode]
    i, j = np.ogrid[first:first + rows, :n]
    lag = i - j
    return _placed(a, np.where((lag >= 0) & (lag < m), lag, _ZERO))


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

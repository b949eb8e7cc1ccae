"""The gamma function and its relatives: log-gamma, signs, digamma and polygamma,
beta, Pochhammer symbols, factorials and binomial coefficients, the incomplete
gamma and beta functions, and the zeta functions.

Integer and bool arguments are computed in the default float dtype (as in JAX).
gammasgn, gamma, multigammaln, betaln, beta, poch and comb are formulated as JAX's,
primitive for primitive, so that they give JAX's bits (betaln with cdflib's algdiv
series from 8 up).
"""
from __future__ import annotations

import math
import operator

import numpy as np

import plax
from plax.extend import dtypes
from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.numpy import util
from plax_stdlib.numpy.ufuncs import _lax_const
from plax_stdlib.scipy.special.arguments import inexact, reject_complex


def gammaln(x):
    """log |Γ(x)|."""
    return lax.lgamma(inexact("gammaln", x))


@plax.jit
def gammasgn(x):
    """The sign of Γ(x): 1 for x > 0 (and +0), alternating between the poles below 0,
    -1 at -0, NaN at the poles (negative integers), at -inf and at NaN."""
    x = inexact("gammasgn", x)
    reject_complex("gammasgn", x)
    scalar = util.dtype_of(x).type
    floor_x = lax.floor(x)
    negative = x < 0
    pole_or_nan = (negative & (x == floor_x)) | jnp.isnan(x)
    minus = (negative & (floor_x % 2 != 0)) | ((x == 0) & jnp.signbit(x))
    return jnp.select([pole_or_nan, minus], [scalar(np.nan), scalar(-1.0)], scalar(1.0))


def gamma(x):
    """Γ(x) = sign · exp(log |Γ(x)|); ±inf at ±0, NaN at the negative poles."""
    x = inexact("gamma", x)
    return gammasgn(x) * lax.exp(lax.lgamma(x))


def loggamma(x):
    """log Γ(x) for real x > 0, NaN elsewhere (as JAX's real branch); complex
    arguments are not supported."""
    x = inexact("loggamma", x)
    if util.dtype_category(util.dtype_of(x)) == "c":
        raise NotImplementedError("loggamma of complex arguments is not implemented in plax")
    log_abs = lax.lgamma(x)
    return jnp.where(x > 0, log_abs, np.nan)


def digamma(x):
    """ψ(x) = d/dx log Γ(x)."""
    return lax.digamma(inexact("digamma", x))


def polygamma(n, x):
    """ψ⁽ⁿ⁾(x), the n-th derivative of the digamma function; `n` must be an integer
    array or scalar ≥ 0 (NaN where it is negative)."""
    util.check_arraylike("polygamma", n, x)
    n_dtype = util.dtype_of(n)
    if not (np.issubdtype(n_dtype, np.integer) or np.issubdtype(n_dtype, np.bool_)):
        raise ValueError(f"Argument `n` to polygamma must be of integer type. Got dtype "
                         f"{np.dtype(n_dtype)}.")
    n, x = inexact("polygamma", n, x)
    return jnp.where(n < 0, np.nan, lax.polygamma(n, x))


def multigammaln(a, d):
    """log of the multivariate gamma function Γ_d(a) = π^(d(d-1)/4) Π Γ(a - j/2)."""
    try:
        d = operator.index(d)
    except TypeError:
        raise TypeError(f"multigammaln: d must be a concrete integer, got {d!r}") from None
    if d < 1:
        raise ValueError(f"multigammaln: d must be a positive integer, got {d}")
    a, d_ = inexact("multigammaln", a, d)
    # As JAX's: the constant d (d - 1) / 4 log π computed in a's dtype, in the program.
    constant = lax.mul(lax.mul(lax.mul(_lax_const(a, 0.25), d_), lax.sub(d_, _lax_const(a, 1))),
                       lax.log(_lax_const(a, np.pi)))
    halves = lax.div(jnp.arange(d, dtype=util.dtype_of(d_)), _lax_const(a, 2))
    terms = lax.lgamma(jnp.expand_dims(a, -1) - jnp.expand_dims(halves, tuple(range(jnp.ndim(a)))))
    return jnp.sum(terms, axis=-1) + constant


# --- beta -------------------------------------------------------------------------------

# The series of del(b) - del(a + b), where log Γ(x) = (x - 1/2) log x - x + log(2π)/2
# + del(x): cdflib's algdiv coefficients, which JAX's betaln uses.
_ALGDIV_COEFFS = (0.833333333333333e-01, -0.277777777760991e-02, 0.793650666825390e-03,
                  -0.595202931351870e-03, 0.837308034031215e-03, -0.165322962780713e-02)


def _log_gamma_ratio(a, b):
    """log Γ(b) - log Γ(a + b) for a ≤ b and b ≥ 8 (cdflib's algdiv, in JAX's order of
    operations), which keeps the digits that a difference of log-gammas loses."""
    h = a / b
    c = h / (1 + h)
    x = h / (1 + h)
    d = b + (a - 0.5)
    x2 = x * x
    sums = [1.0 + (x + x2)]  # (1 - x^n) / (1 - x) for n = 3, 5, ..., 11
    for _ in range(4):
        sums.append(1.0 + (x + x2 * sums[-1]))
    t = (1.0 / b) ** 2
    w = _ALGDIV_COEFFS[5] * sums[4] * t
    for k in range(4, 0, -1):
        w = (w + _ALGDIV_COEFFS[k] * sums[k - 1]) * t
    w = (w + _ALGDIV_COEFFS[0]) * (c / b)
    u = d * lax.log1p(a / b)
    v = a * (lax.log(b) - 1.0)
    return jnp.where(u <= v, (w - v) - u, (w - u) - v)


def betaln(a, b):
    """log |B(a, b)| = log |Γ(a) Γ(b) / Γ(a + b)|: the log-gammas below 8, cdflib's
    series for log Γ(b) - log Γ(a + b) from there (as JAX's)."""
    a, b = inexact("betaln", a, b)
    a, b = jnp.minimum(a, b), jnp.maximum(a, b)
    small_b = lax.lgamma(a) + (lax.lgamma(b) - lax.lgamma(a + b))
    large_b = lax.lgamma(a) + _log_gamma_ratio(a, b)
    return jnp.where(b < 8, small_b, large_b)


def beta(a, b):
    """B(a, b) = Γ(a) Γ(b) / Γ(a + b), with its sign for negative arguments."""
    a, b = inexact("beta", a, b)
    reject_complex("beta", a)
    sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
    return sign * lax.exp(betaln(a, b))


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b)."""
    return lax.betainc(*inexact("betainc", a, b, x))


def gammainc(a, x):
    """The regularized lower incomplete gamma function P(a, x)."""
    return lax.igamma(*inexact("gammainc", a, x))


def gammaincc(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    return lax.igammac(*inexact("gammaincc", a, x))


# --- Pochhammer symbols, factorials, binomial coefficients --------------------------------

@plax.custom_jvp
def poch(z, m):
    """The rising factorial (z)_m = Γ(z + m) / Γ(z) (1 where m = 0)."""
    z, m = inexact("poch", z, m)
    reject_complex("jnp.poch", z)
    return jnp.where(m == 0., jnp.array(1, dtype=util.dtype_of(z)), gamma(z + m) / gamma(z))


# As JAX's: d/dz (z)_m = (ψ(z + m) - ψ(z)) (z)_m and d/dm (z)_m = ψ(z + m) (z)_m.
poch.defjvps(lambda z_dot, _, z, m: (digamma(z + m) - digamma(z)) * poch(z, m) * z_dot,
             lambda m_dot, _, z, m: digamma(z + m) * poch(z, m) * m_dot)


def factorial(n, exact: bool = False):
    """n! = Γ(n + 1) for n ≥ 0 and 0 for n < 0, in floating point."""
    if exact:
        raise NotImplementedError("factorial with exact=True is not supported (as in JAX)")
    n = inexact("factorial", n)
    return jnp.where(n < 0, 0, jnp.exp(lax.lgamma(n + 1)))


def comb(N, k, *, repetition: bool = False):
    """The binomial coefficient N choose k (with repetition: N + k - 1 choose k), in
    floating point; 0 outside 0 ≤ k ≤ N (NaN arguments included, as in JAX)."""
    N, k = inexact("comb", N, k)
    if repetition:  # 1 for k = 0, even where N = 0
        return jnp.where((k == 0) & (N >= 0), 1.0, comb(N + k - 1, k))
    inside = (k <= N) & (N >= 0) & (k >= 0)
    safe_N, safe_k = jnp.where(inside, N, 0.0), jnp.where(inside, k, 0.0)
    value = lax.exp(gammaln(safe_N + 1) - gammaln(safe_k + 1) - gammaln(safe_N + 1 - safe_k))
    return jnp.where(inside, value, 0.0)


# --- zeta -------------------------------------------------------------------------------

_EM_TERMS_FROM = 10  # Euler–Maclaurin: the first 9 terms summed, the rest estimated
_EM_CORRECTIONS = 8


def _zeta_euler_maclaurin(s):
    """ζ(s) for s ≠ 1 by Euler–Maclaurin summation: exact to double precision on
    [0, 1), where neither the Hurwitz series nor the reflection applies."""
    n = _EM_TERMS_FROM
    head = sum(jnp.power(float(k), -s) for k in range(1, n))
    tail = jnp.power(float(n), 1 - s) / (s - 1) + 0.5 * jnp.power(float(n), -s)
    rising = s  # s (s+1) ... (s+2k-2)
    numbers = _bernoulli_numbers(2 * _EM_CORRECTIONS)
    for k in range(1, _EM_CORRECTIONS + 1):
        tail = tail + (numbers[2 * k] / math.factorial(2 * k) * rising
                       * jnp.power(float(n), -s - 2 * k + 1))
        rising = rising * (s + 2 * k - 1) * (s + 2 * k)
    return head + tail


@plax.jit
def _riemann_zeta(x):
    """ζ(x): the Hurwitz function at q = 1 above 1, Euler–Maclaurin on [0, 1), the
    reflection ζ(x) = 2^x π^(x-1) sin(πx/2) Γ(1-x) ζ(1-x) below 0 (exactly 0 at the
    negative even integers)."""
    negative = x < 0
    reflected = jnp.where(negative, 1 - x, 2.0)
    below = (jnp.power(2.0, x) * jnp.power(np.pi, x - 1) * jnp.sin(np.pi * x / 2)
             * jnp.exp(lax.lgamma(reflected)) * lax.zeta(reflected, jnp.ones_like(x)))
    below = jnp.where(x == jnp.round(x / 2) * 2, 0.0, below)
    unit = jnp.logical_and(x >= 0, x < 1)
    middle = _zeta_euler_maclaurin(jnp.where(unit, x, 0.5))
    above = lax.zeta(jnp.where(x >= 1, x, 2.0), jnp.ones_like(x))
    out = jnp.where(negative, below, jnp.where(unit, middle, above))
    out = jnp.where(x == np.inf, 1.0, out)
    return jnp.where(jnp.logical_or(x == -np.inf, jnp.isnan(x)), np.nan, out)


def zeta(x, q=None):
    """The Hurwitz zeta function Σ (n + q)^-x, or the Riemann zeta function ζ(x) when
    `q` is None (for all real x, by reflection below 1)."""
    if q is None:
        return _riemann_zeta(inexact("zeta", x))
    return lax.zeta(*inexact("zeta", x, q))


# --- Bernoulli numbers --------------------------------------------------------------------

def _bernoulli_numbers(n: int) -> np.ndarray:
    """B_0 .. B_n (B_1 = -1/2) from the recurrence Σ_{k<m+1} C(m+1, k) B_k = 0, in
    exact rational arithmetic."""
    from fractions import Fraction
    numbers: list[Fraction] = []
    for m in range(n + 1):
        numbers.append(Fraction(1) if m == 0 else
                       -sum(math.comb(m + 1, k) * numbers[k] for k in range(m)) / (m + 1))
    return np.array([float(b) for b in numbers])


def bernoulli(n: int):
    """The Bernoulli numbers B_0, ..., B_n, as an array of the default float dtype."""
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"bernoulli: n must be a concrete integer, got {n!r}") from None
    if n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n}")
    return jnp.asarray(_bernoulli_numbers(n), dtype=dtypes.default_float_dtype())

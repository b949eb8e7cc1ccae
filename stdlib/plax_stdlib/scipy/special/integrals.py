"""Functions defined by integrals: the exponential integrals E_n, E1 and Ei, the
sine and cosine integrals, the Fresnel integrals and Spence's function (dilogarithm).

Each uses a convergent power series near 0 and, beyond a switch point, a continued
fraction evaluated by the modified Lentz method with a fixed number of steps (real
for E_n, complex for Si/Ci and the Fresnel integrals) or an asymptotic series (Ei),
chosen so both sides reach the dtype's precision. Spence's function is reduced by
the dilogarithm's reflection identities to arguments near 1, where its Bernoulli
series converges fast. Every function has its own derivative rule.
"""
from __future__ import annotations

import math

import numpy as np

import plax
from plax_stdlib import lax
from plax_stdlib.lax.special import computed_in_float32
from plax_stdlib import numpy as jnp
from plax_stdlib.numpy import util
from plax_stdlib.scipy.special.arguments import float32_or_64
from plax_stdlib.scipy.special.gamma_functions import _bernoulli_numbers

_EULER = 0.57721566490153286061


def _inexact(name: str, *args):
    out = util.promote_args_inexact(name, *args)
    return out[0] if len(out) == 1 else out


def _lentz(b, step, iterations: int):
    """The continued fraction whose first denominator is `b`, by the modified Lentz
    method: `step(i, b, c, d) -> (b, c, d)` advances to the i-th partial denominator;
    the product of the factors c·d stops changing once a factor rounds to 1, so
    rounding errors do not accumulate past convergence. A scan of `iterations`."""
    tiny = _tiny(b.dtype)
    eps = float(np.finfo(np.dtype(b.dtype)).eps)
    d = 1.0 / b

    def body(i, state):
        b, c, d, h, done = state
        b, c, d = step(i, b, c, d)
        factor = c * d
        h = jnp.where(done, h, h * factor)
        return b, c, d, h, jnp.logical_or(done, jnp.abs(factor - 1) <= eps)
    init = (b, jnp.full_like(b, 1 / tiny), d, d, jnp.zeros(b.shape, bool))
    return lax.fori_loop(1, iterations + 1, body, init)[3]


def _tiny(dtype) -> float:
    return float(np.finfo(np.dtype(dtype)).tiny) * 16


# --- exponential integrals ---------------------------------------------------------------

_EXPN_SWITCH = {4: 1.0, 8: 1.5}
_EXPN_SERIES_TERMS = {4: 20, 8: 36}
_EXPN_FRACTION_STEPS = {4: 40, 8: 80}


def _expn_series(n, x):
    """E_n(x) for n ≥ 1 and small x > 0: the series with the digamma term at i = n - 1."""
    m = n - 1
    first = jnp.where(m == 0, -jnp.log(x) - _EULER, 1.0 / jnp.where(m == 0, 1.0, m))
    total, fact = first, jnp.ones_like(x)
    log_term = -jnp.log(x) + lax.digamma(jnp.maximum(n, 1.0))
    for i in range(1, _EXPN_SERIES_TERMS[np.dtype(x.dtype).itemsize]):
        fact = fact * (-x / i)
        total = total + jnp.where(i == m, fact * log_term, -fact / jnp.where(i == m, 1.0, i - m))
    return total


def _expn_fraction(n, x):
    """E_n(x) beyond the switch: e^-x times the continued fraction
    1/(x+n- 1·n/(x+n+2- 2(n+1)/(x+n+4- ...)))."""
    def step(i, b, c, d):
        an = -i * (n - 1 + i)
        b = b + 2
        return b, b + an / c, 1.0 / (an * d + b)
    h = _lentz(x + n, step, _EXPN_FRACTION_STEPS[np.dtype(x.dtype).itemsize])
    return h * jnp.exp(-x)


@plax.custom_jvp
@plax.jit
@computed_in_float32
def _expn(n, x):
    integral_n = jnp.logical_and(n >= 0, n == jnp.floor(n))
    valid = jnp.logical_and(integral_n, x >= 0)
    positive_x = jnp.logical_and(valid, x > 0)
    switch = _EXPN_SWITCH[np.dtype(x.dtype).itemsize]
    near = jnp.logical_and(positive_x, x < switch)
    sn = jnp.where(n >= 1, n, 1.0)
    series = _expn_series(sn, jnp.where(near, x, 0.5))
    fraction = _expn_fraction(sn, jnp.where(near, switch, jnp.where(positive_x, x, 3.0)))
    value = jnp.where(near, series, fraction)
    safe_x = jnp.where(positive_x, x, 1.0)
    value = jnp.where(n == 0, jnp.exp(-safe_x) / safe_x, value)
    # E_n(0) = 1/(n - 1) for n > 1 and inf for n ≤ 1; E_n(inf) = 0.
    at_zero = jnp.where(n > 1, 1.0 / jnp.where(n > 1, n - 1, 1.0), np.inf)
    value = jnp.where(x == 0, at_zero, jnp.where(x == np.inf, 0.0, value))
    return jnp.where(valid, value, np.nan)


@_expn.defjvp
def _expn_jvp(primals, tangents):
    (n, x), (_, t) = primals, tangents
    value = _expn(n, x)
    safe_x = jnp.where(x > 0, x, 1.0)
    below = jnp.where(n == 0, -jnp.exp(-safe_x) * (safe_x + 1) / (safe_x * safe_x),
                      -_expn(jnp.maximum(n - 1, 0.0), x))
    return value, below * t


def expn(n, x):
    """The generalized exponential integral E_n(x) = ∫₁^∞ e^(-xt) / tⁿ dt for integer
    n ≥ 0 and x ≥ 0 (NaN otherwise); derivative -E_(n-1)(x) in x."""
    n, x = _inexact("expn", n, x)
    return _expn(n, x)


def exp1(x):
    """The exponential integral E1(x) = ∫ₓ^∞ e^-t / t dt for x ≥ 0 (NaN below)."""
    x = _inexact("exp1", x)
    return _expn(jnp.ones_like(x), x)


_EI_SWITCH = {4: 18.0, 8: 40.0}
_EI_SERIES_TERMS = {4: 50, 8: 100}


@plax.custom_jvp
@plax.jit
@computed_in_float32
def _expi(x):
    size = np.dtype(x.dtype).itemsize
    switch = _EI_SWITCH[size]
    positive = x > 0
    near = jnp.logical_and(positive, x < switch)
    xs = jnp.where(near, x, 1.0)
    term, total = jnp.ones_like(xs), jnp.zeros_like(xs)
    for k in range(1, _EI_SERIES_TERMS[size]):
        term = term * xs / k
        total = total + term / k
    series = _EULER + jnp.log(xs) + total
    xl = jnp.where(positive, jnp.maximum(x, switch), switch)
    tail, term = jnp.ones_like(xl), jnp.ones_like(xl)
    for k in range(1, int(switch)):
        term = term * k / xl
        tail = tail + term
    asymptotic = jnp.exp(xl) / xl * tail
    below = -_expn(jnp.ones_like(x), jnp.where(positive, 1.0, -x))
    value = jnp.where(near, series, jnp.where(positive, asymptotic, below))
    return jnp.where(x == 0, -np.inf, jnp.where(x == np.inf, np.inf, value))


@_expi.defjvp
def _expi_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _expi(x), jnp.exp(x) / x * t


def expi(x):
    """The exponential integral Ei(x) = -∫₋ₓ^∞ e^-t / t dt (principal value)."""
    return _expi(_inexact("expi", x))


# --- sine and cosine integrals -------------------------------------------------------------

_SICI_SWITCH = 4.0
_SICI_SERIES_TERMS = 22
_SICI_FRACTION_STEPS = 60


def _sici_series(x):
    si, ci = jnp.zeros_like(x), jnp.zeros_like(x)
    term = jnp.ones_like(x)  # x^j / j!
    for j in range(1, 2 * _SICI_SERIES_TERMS):
        term = term * x / j
        sign = -1.0 if (j // 2) % 2 else 1.0
        if j % 2:
            si = si + sign * term / j
        else:
            ci = ci + sign * term / j
    return si, _EULER + jnp.log(x) + ci


def _sici_fraction(x):
    """Si and Ci from E1(ix) = -Ci(x) + i (Si(x) - π/2), a complex continued fraction."""
    def step(i, b, c, d):
        a = -(i * i).astype(x.dtype)
        b = b + 2
        return b, b + a / c, 1.0 / (a * d + b)
    h = _lentz(lax.complex(jnp.ones_like(x), x), step, _SICI_FRACTION_STEPS)
    h = lax.complex(jnp.cos(x), -jnp.sin(x)) * h
    return np.pi / 2 + jnp.imag(h), -jnp.real(h)


@plax.custom_jvp
@plax.jit
@computed_in_float32
def _sici(x):
    ax = jnp.abs(x)
    near = ax < _SICI_SWITCH
    si_near, ci_near = _sici_series(jnp.where(near, ax, 1.0))
    si_far, ci_far = _sici_fraction(jnp.where(near, _SICI_SWITCH, jnp.minimum(ax, 1e30)))
    si = jnp.where(near, si_near, jnp.where(ax == np.inf, np.pi / 2, si_far))
    ci = jnp.where(near, ci_near, jnp.where(ax == np.inf, 0.0, ci_far))
    ci = jnp.where(ax == 0, -np.inf, ci)
    si = jnp.where(jnp.isnan(x), np.nan, jnp.sign(x) * si)
    return si, jnp.where(jnp.logical_or(jnp.isnan(x), x == -np.inf), np.nan, ci)


@_sici.defjvp
def _sici_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _sici(x), (jnp.sinc(x / np.pi) * t, jnp.cos(x) / x * t)


def sici(x):
    """(Si(x), Ci(x)): the sine integral ∫₀ˣ sin t / t dt and the cosine integral
    γ + log|x| + ∫₀ˣ (cos t - 1) / t dt (its real part for x < 0, as in SciPy)."""
    return _sici(_inexact("sici", x))


# --- Fresnel integrals -----------------------------------------------------------------

_FRESNEL_SWITCH = 1.5
_FRESNEL_SERIES_TERMS = 24
_FRESNEL_FRACTION_STEPS = 60


def _fresnel_series(x):
    s, c = jnp.zeros_like(x), jnp.zeros_like(x)
    term = jnp.ones_like(x)  # (π x² / 2)^j / j!
    t = np.pi / 2 * x * x
    for j in range(_FRESNEL_SERIES_TERMS):
        if j:
            term = term * t / j
        sign = -1.0 if (j // 2) % 2 else 1.0
        if j % 2:
            s = s + sign * term * x / (2 * j + 1)
        else:
            c = c + sign * term * x / (2 * j + 1)
    return s, c


def _fresnel_fraction(x):
    """S and C through the continued fraction of erfc along the line (1 - i) x √π/2."""
    pix2 = np.pi * x * x

    def step(k, b, c, d):
        n = (2 * k - 1).astype(x.dtype)
        a = -n * (n + 1)
        b = b + 4
        return b, b + a / c, 1.0 / (a * d + b)
    h = _lentz(lax.complex(jnp.ones_like(x), -pix2), step, _FRESNEL_FRACTION_STEPS)
    h = lax.complex(x, -x) * h
    half = lax.complex(jnp.full_like(x, 0.5), jnp.full_like(x, 0.5))
    cs = half * (1 - lax.complex(jnp.cos(0.5 * pix2), jnp.sin(0.5 * pix2)) * h)
    return jnp.imag(cs), jnp.real(cs)


@plax.custom_jvp
@plax.jit
@computed_in_float32
def _fresnel(x):
    ax = jnp.abs(x)
    near = ax < _FRESNEL_SWITCH
    s_near, c_near = _fresnel_series(jnp.where(near, ax, 0.0))
    # Where 1/(π x) < eps / 2 the integrals round to 1/2 (and π x² would overflow).
    settled = 2 / (np.pi * float(np.finfo(np.dtype(x.dtype)).eps))
    far = jnp.where(near, _FRESNEL_SWITCH, jnp.minimum(ax, settled))
    s_far, c_far = _fresnel_fraction(far)
    big = ax >= settled
    s = jnp.where(near, s_near, jnp.where(big, 0.5, s_far))
    c = jnp.where(near, c_near, jnp.where(big, 0.5, c_far))
    sign = jnp.sign(x)
    return sign * s, sign * c


@_fresnel.defjvp
def _fresnel_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    phase = np.pi / 2 * x * x
    return _fresnel(x), (jnp.sin(phase) * t, jnp.cos(phase) * t)


def fresnel(x):
    """(S(x), C(x)) = (∫₀ˣ sin(πt²/2) dt, ∫₀ˣ cos(πt²/2) dt)."""
    return _fresnel(_inexact("fresnel", x))


# --- Spence's function ---------------------------------------------------------------------

_DILOG_TERMS = 16


def _spence_near_one(x):
    """spence(x) = Li2(1 - x) = Σ B_n u^(n+1) / (n+1)!, u = -log x: fast for x near 1."""
    numbers = _bernoulli_numbers(2 * _DILOG_TERMS)
    u = -jnp.log(x)
    u2 = u * u
    total = jnp.zeros_like(u)
    for k in range(_DILOG_TERMS, 0, -1):  # the even Bernoulli numbers, Horner in u²
        total = total * u2 + numbers[2 * k] / math.factorial(2 * k + 1)
    return u - u2 / 4 + total * u2 * u


@plax.custom_jvp
@plax.jit
@computed_in_float32
def _spence(x):
    # [1/4, 4]: directly. Above 4: Li2(z) + Li2(1/z) = -π²/6 - log²(-z)/2 at z = 1 - x.
    # Below 1/4: Li2(z) + Li2(1 - z) = π²/6 - log z log(1 - z) at z = 1 - x.
    middle = jnp.logical_and(x >= 0.25, x <= 4.0)
    high = x > 4.0
    low = jnp.logical_and(x > 0, x < 0.25)
    xm = jnp.where(middle, x, 1.0)
    xh = jnp.where(high, x, 5.0)
    xl = jnp.where(low, x, 0.125)
    direct = _spence_near_one(xm)
    reflected_high = (-np.pi ** 2 / 6 - 0.5 * jnp.square(jnp.log(xh - 1))
                      - _spence_near_one(xh / (xh - 1)))
    reflected_low = np.pi ** 2 / 6 - jnp.log1p(-xl) * jnp.log(xl) - _spence_near_one(1 - xl)
    value = jnp.where(middle, direct, jnp.where(high, reflected_high, reflected_low))
    value = jnp.where(x == 0, np.pi ** 2 / 6, value)
    return jnp.where(jnp.logical_or(jnp.logical_or(x < 0, x == np.inf), jnp.isnan(x)),
                     np.nan, value)


@_spence.defjvp
def _spence_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    at_one = x == 1
    safe = jnp.where(at_one, 2.0, x)
    slope = jnp.where(at_one, -1.0, jnp.log(safe) / (1 - safe))
    return _spence(x), slope * t


def spence(x):
    """Spence's function ∫₁ˣ log t / (1 - t) dt = Li2(1 - x) for x ≥ 0 (NaN below)."""
    return _spence(float32_or_64("spence", x))

"""The error function family and the normal distribution's functions: erf, erfc,
erfinv, erfcx, dawsn, ndtr, ndtri, log_ndtr.

The tails are computed without underflow: `erfcx(x) = exp(x²) erfc(x)` multiplies
by exp(x²) with x² split into an exactly squared head and a small tail, and uses the
asymptotic series past the point where erfc underflows; `log_ndtr` of negative x goes
through erfcx; `ndtri` refines √2 erfinv(2p - 1) by Newton steps on log Φ, so tiny
probabilities keep their digits. Each has its own derivative rule.
"""
from __future__ import annotations

import math

import numpy as np

import plax
from plax_stdlib import lax
from plax_stdlib.lax.special import computed_in_float32
from plax_stdlib import numpy as jnp
from plax_stdlib.numpy import util

_SQRT_HALF = math.sqrt(0.5)
_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _inexact(name: str, x):
    return util.promote_args_inexact(name, x)[0]


def float32_or_64(name: str, x):
    """`x` promoted, refusing all but float32 and float64 inputs (Python floats
    included), as JAX does for the normal distribution's functions and spence."""
    util.check_arraylike(name, x)
    dtype = np.dtype(util.dtype_of(x))
    if dtype not in (np.dtype(np.float32), np.dtype(np.float64)) and type(x) is not float:
        raise TypeError(f"{name}: x.dtype={dtype} is not supported; pass a float32 or "
                        "float64 array")
    return _inexact(name, x)


def _is_64(x) -> bool:
    return np.dtype(util.dtype_of(x)).itemsize == 8


def erf(x):
    """The error function 2/√π ∫₀ˣ e^(-t²) dt."""
    return lax.erf(_inexact("erf", x))


def erfc(x):
    """The complementary error function 1 - erf(x), accurate for large x."""
    return lax.erfc(_inexact("erfc", x))


def erfinv(x):
    """The inverse of erf on (-1, 1) (±inf at ±1, NaN outside)."""
    return lax.erf_inv(_inexact("erfinv", x))


# --- erfcx -----------------------------------------------------------------------------

# Past these points erfc underflows; the asymptotic series
# erfcx(x) ~ 1/(x√π) Σ (-1)^k (2k-1)!! / (2x²)^k takes over with this many terms.
_ERFCX_SWITCH = {4: 9.0, 8: 26.0}
_ERFCX_TERMS = {4: 7, 8: 12}
# Heads of x with few enough significant bits that head² is exact (for every x
# where exp(x²) is finite).
_SQUARE_SPLIT = {4: 2.0 ** 8, 8: 2.0 ** 21}


def _exp_square(x):
    """exp(x²) to the precision of the dtype, for 0 ≤ x ≤ 64."""
    size = np.dtype(x.dtype).itemsize
    head = jnp.round(x * _SQUARE_SPLIT[size]) / _SQUARE_SPLIT[size]
    tail = x - head
    return jnp.exp(head * head) * jnp.exp(tail * (2 * head + tail))


def _erfcx_nonnegative(x):
    size = np.dtype(x.dtype).itemsize
    switch = _ERFCX_SWITCH[size]
    near = jnp.where(x < switch, x, 0.0)
    far = jnp.where(x < switch, switch, x)
    direct = _exp_square(near) * lax.erfc(near)
    inv_2x2 = 1.0 / (2 * far * far)
    series = jnp.ones_like(far)
    for k in range(_ERFCX_TERMS[size], 0, -1):  # Horner in 1/(2x²)
        series = 1.0 - (2 * k - 1) * inv_2x2 * series
    asymptotic = series / (far * math.sqrt(math.pi))
    return jnp.where(x < switch, direct, asymptotic)


@plax.custom_jvp
@plax.jit
@computed_in_float32
def _erfcx(x):
    ax = jnp.abs(x)
    positive = _erfcx_nonnegative(ax)
    # erfcx(-|x|) = 2 exp(x²) - erfcx(|x|), which overflows to inf below -27 (-9.4 in
    # float32): the clamp only keeps inf - inf out of the square's split.
    two_exp = 2 * _exp_square(jnp.minimum(ax, 64.0))
    return jnp.where(x < 0, two_exp - positive, positive)


@_erfcx.defjvp
def _erfcx_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = _erfcx(x)
    return y, (2 * x * y - _TWO_OVER_SQRT_PI) * t


def erfcx(x):
    """The scaled complementary error function exp(x²) erfc(x), without overflow for
    large positive x."""
    return _erfcx(_inexact("erfcx", x))


# --- dawsn -----------------------------------------------------------------------------

# Dawson's integral D(x) = e^(-x²) Σ x^(2k+1) / (k! (2k+1)) (positive terms) below the
# switch, the asymptotic series 1/(2x) Σ (2k-1)!! / (2x²)^k above it.
_DAWSN_SWITCH = {4: 4.5, 8: 7.0}
_DAWSN_SERIES_TERMS = {4: 60, 8: 110}
_DAWSN_ASYMPTOTIC_TERMS = {4: 14, 8: 20}


@plax.custom_jvp
@plax.jit
@computed_in_float32
def _dawsn(x):
    size = np.dtype(x.dtype).itemsize
    switch = _DAWSN_SWITCH[size]
    ax = jnp.abs(x)
    is_near = ax < switch
    near = jnp.where(is_near, ax, 0.0)
    far = jnp.where(is_near, switch, ax)
    t = near * near
    term, total = jnp.ones_like(t), jnp.ones_like(t)
    for k in range(1, _DAWSN_SERIES_TERMS[size]):
        term = term * t / k
        total = total + term / (2 * k + 1)
    series = near * total * jnp.exp(-t)
    inv_2x2 = 1.0 / (2 * far * far)
    tail = jnp.ones_like(far)
    for k in range(_DAWSN_ASYMPTOTIC_TERMS[size], 0, -1):
        tail = 1.0 + (2 * k - 1) * inv_2x2 * tail
    asymptotic = tail / (2 * far)
    return jnp.sign(x) * jnp.where(is_near, series, asymptotic)


@_dawsn.defjvp
def _dawsn_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = _dawsn(x)
    return y, (1 - 2 * x * y) * t


def dawsn(x):
    """Dawson's integral e^(-x²) ∫₀ˣ e^(t²) dt."""
    return _dawsn(_inexact("dawsn", x))


# --- the normal distribution ------------------------------------------------------------

def _ndtr(x):
    z = x * _SQRT_HALF
    small = 0.5 + 0.5 * lax.erf(z)
    tail = 0.5 * lax.erfc(jnp.abs(z))
    return jnp.where(jnp.abs(z) < _SQRT_HALF, small, jnp.where(z > 0, 1 - tail, tail))


def ndtr(x):
    """The standard normal distribution function Φ(x)."""
    return _ndtr(float32_or_64("ndtr", x))


def _hazard(x):
    """φ(x) / Φ(x) (the derivative of log Φ), stable in both tails."""
    negative = x < 0
    x_neg = jnp.where(negative, x, -1.0)
    x_pos = jnp.where(negative, 1.0, x)
    lower = math.sqrt(2 / math.pi) / _erfcx(-x_neg * _SQRT_HALF)
    upper = jnp.exp(-0.5 * x_pos * x_pos - _LOG_SQRT_2PI) / _ndtr(x_pos)
    return jnp.where(negative, lower, upper)


@plax.custom_jvp
@plax.jit
@computed_in_float32
def _log_ndtr(x):
    lower_tail = x < -1
    x_low = jnp.where(lower_tail, x, -1.0)
    low = jnp.log(0.5 * _erfcx(-x_low * _SQRT_HALF)) - 0.5 * x_low * x_low
    x_mid = jnp.where(lower_tail, 0.0, jnp.minimum(x, 0.0))
    x_high = jnp.where(x > 0, x, 0.0)
    mid = jnp.log(_ndtr(x_mid))
    high = jnp.log1p(-_ndtr(-x_high))
    return jnp.where(lower_tail, low, jnp.where(x > 0, high, mid))


@_log_ndtr.defjvp
def _log_ndtr_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _log_ndtr(x), _hazard(x) * t


def log_ndtr(x, series_order: int = 3):
    """log Φ(x), accurate far into both tails. `series_order` (0 to 30) is accepted
    for JAX's signature: plax's lower tail comes from erfcx, exact to the dtype's
    precision, so no asymptotic series is truncated."""
    if not isinstance(series_order, int) or isinstance(series_order, bool):
        raise TypeError("series_order must be a Python integer.")
    if series_order < 0:
        raise ValueError("series_order must be non-negative.")
    if series_order > 30:
        raise ValueError("series_order must be <= 30.")
    return _log_ndtr(float32_or_64("log_ndtr", x))


_NEWTON_STEPS = 3


@plax.custom_jvp
@plax.jit
@computed_in_float32
def _ndtri(p):
    # By symmetry work with the lower tail q = min(p, 1 - p), for which 1 - p is exact.
    upper = p > 0.5
    q = jnp.where(upper, 1 - p, p)
    inside = jnp.logical_and(q > 0, q <= 0.5)
    q_safe = jnp.where(inside, q, 0.25)
    guess = math.sqrt(2) * lax.erf_inv(2 * q_safe - 1)
    log_q = jnp.log(q_safe)
    # Where 2q - 1 rounds to -1, the asymptotic start -sqrt(-2 log q - log(-2 log q) - log 2π).
    m = -2 * log_q
    tail_guess = -jnp.sqrt(jnp.maximum(m - jnp.log(m) - 2 * _LOG_SQRT_2PI, 1.0))
    x = jnp.where(jnp.isfinite(guess), guess, tail_guess)
    for _ in range(_NEWTON_STEPS):
        x = x - (_log_ndtr(x) - log_q) / _hazard(x)
    x = jnp.where(upper, -x, x)
    x = jnp.where(p == 0, -np.inf, jnp.where(p == 1, np.inf, x))
    return jnp.where(jnp.logical_or(jnp.logical_or(p < 0, p > 1), jnp.isnan(p)), np.nan, x)


@_ndtri.defjvp
def _ndtri_jvp(primals, tangents):
    (p,), (t,) = primals, tangents
    x = _ndtri(p)
    return x, jnp.exp(0.5 * x * x + _LOG_SQRT_2PI) * t


def ndtri(p):
    """The inverse of Φ: the x with Φ(x) = p (±inf at 1 and 0, NaN outside [0, 1])."""
    return _ndtri(float32_or_64("ndtri", p))

"""The error function family: erf, erfc, erfinv, erfcx, dawsn.

The tails are computed without underflow: `erfcx(x) = exp(x²) erfc(x)` multiplies
by exp(x²) with x² split into an exactly squared head and a small tail, and uses the
asymptotic series past the point where erfc underflows. erfcx and dawsn have their own
derivative rules.
"""
from __future__ import annotations

import math

import numpy as np

import plax
from plax_stdlib import lax
from plax_stdlib.lax.special import computed_in_float32
from plax_stdlib import numpy as jnp
from plax_stdlib.scipy.special.arguments import inexact

_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)


def erf(x):
    """The error function 2/√π ∫₀ˣ e^(-t²) dt."""
    return lax.erf(inexact("erf", x))


def erfc(x):
    """The complementary error function 1 - erf(x), accurate for large x."""
    return lax.erfc(inexact("erfc", x))


def erfinv(x):
    """The inverse of erf on (-1, 1) (±inf at ±1, NaN outside)."""
    return lax.erf_inv(inexact("erfinv", x))


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
    return _erfcx(inexact("erfcx", x))


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
    return _dawsn(inexact("dawsn", x))

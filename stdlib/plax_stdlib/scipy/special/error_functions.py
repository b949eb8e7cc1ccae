"""The error function family: erf, erfc, erfinv, erfcx, dawsn.

erfcx and dawsn are formulated as JAX's (so that they give its bits), each with its
derivative rule: erfcx is exp(x²) erfc(x) until exp(x²) would overflow, then its
asymptotic series; dawsn is Cody, Paciorek and Thacher's rational approximations on
three ranges of |x|. Half precisions are computed in float32.
"""
from __future__ import annotations

import numpy as np

import plax
from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.numpy import util
from plax_stdlib.numpy.ufuncs import _lax_const
from plax_stdlib.scipy.special.arguments import inexact, reject_complex

def erf(x):
    """The error function 2/√π ∫₀ˣ e^(-t²) dt."""
    return lax.erf(inexact("erf", x))


def erfc(x):
    """The complementary error function 1 - erf(x), accurate for large x."""
    return lax.erfc(inexact("erfc", x))


def erfinv(x):
    """The inverse of erf on (-1, 1) (±inf at ±1, NaN outside)."""
    return lax.erf_inv(inexact("erfinv", x))


def _in_float32_unless_64(impl, x, *args):
    """`impl(x, *args)`, computed in float32 for the half precisions."""
    if util.dtype_of(x) in (np.dtype(np.float32), np.dtype(np.float64)):
        return impl(x, *args)
    return impl(x.astype(np.float32), *args).astype(util.dtype_of(x))


# --- erfcx -----------------------------------------------------------------------------

# erfcx(x) ~ P(1/x²) / (x √π) with P(t) = Σ (-1)^k (2k-1)!! / 2^k t^k, highest degree
# first; float32 takes the last 5, float64 the last 9.
_ERFCX_ASYMPTOTIC = (7918.06640625, -1055.7421875, 162.421875, -29.53125, 6.5625, -1.875,
                     .75, -.5, 1.)


def _erfcx_of(x, terms: int):
    # Where exp(x²) would overflow (x² > log of the largest float), the series.
    large = x > _lax_const(x, np.sqrt(np.log(np.finfo(util.dtype_of(x)).max)))
    safe_x = lax.select(large, lax.full_like(x, 1.), x)
    direct = lax.exp(lax.square(safe_x)) * lax.erfc(safe_x)
    t = _lax_const(x, 1.) / lax.square(x)
    series = jnp.polyval(np.array(_ERFCX_ASYMPTOTIC[-terms:], dtype=util.dtype_of(x)), t)
    asymptotic = series / (x * _lax_const(x, np.sqrt(np.pi)))
    return lax.select(large, asymptotic, direct)


@plax.custom_jvp
def _erfcx(x):
    terms = 9 if util.dtype_of(x) == np.dtype(np.float64) else 5
    return _in_float32_unless_64(_erfcx_of, x, terms)


_erfcx.defjvps(lambda g, ans, x: g * (2 * x * ans - _lax_const(x, 2. / np.sqrt(np.pi))))


def erfcx(x):
    """The scaled complementary error function exp(x²) erfc(x), without overflow for
    large positive x."""
    x = inexact("erfcx", x)
    reject_complex("erfcx", x)
    return _erfcx(x)


# --- dawsn -----------------------------------------------------------------------------

# Cody, Paciorek and Thacher (1970): D(x) = x P(x²) / Q(x²) below 3.25, then
# (1 + t P(t) / Q(t)) / (2x) with t = 1/x², one (P, Q) below 6.25 and one above.
_DAWSN_NEAR = (
    (1.13681498971755972054e-11, 8.49262267667473811108e-10, 1.94434204175553054283e-8,
     9.53151741254484363489e-7, 3.07828309874913200438e-6, 3.52513368520288738649e-4,
     -8.50149846724410912031e-4, 4.22618223005546594270e-2, -9.17480371773452345351e-2,
     9.99999999999999994612e-1),
    (2.40372073066762605484e-11, 1.48864681368493396752e-9, 5.21265281010541664570e-8,
     1.27258478273186970203e-6, 2.32490249820789513991e-5, 3.25524741826057911661e-4,
     3.48805814657162590916e-3, 2.79448531198828973716e-2, 1.58874241960120565368e-1,
     5.74918629489320327824e-1, 1.00000000000000000539e0))
_DAWSN_MIDDLE = (
    (5.08955156417900903354e-1, -2.44754418142697847934e-1, 9.41512335303534411857e-2,
     -2.18711255142039025206e-2, 3.66207612329569181322e-3, -4.23209114460388756528e-4,
     3.59641304793896631888e-5, -2.14640351719968974225e-6, 9.10010780076391431042e-8,
     -2.40274520828250956942e-9, 3.59233385440928410398e-11),
    (1.00000000000000000000e0, -6.31839869873368190192e-1, 2.36706788228248691528e-1,
     -5.31806367003223277662e-2, 8.48041718586295374409e-3, -9.47996768486665330168e-4,
     7.81025592944552338085e-5, -4.55875153252442634831e-6, 1.89100358111421846170e-7,
     -4.91324691331920606875e-9, 7.18466403235734541950e-11))
_DAWSN_FAR = (
    (-5.90592860534773254987e-1, 6.29235242724368800674e-1, -1.72858975380388136411e-1,
     1.64837047825189632310e-2, -4.86827613020462700845e-4),
    (1.00000000000000000000e0, -2.69820057197544900361e0, 1.73270799045947845857e0,
     -3.93708582281939493482e-1, 3.44278924041233391079e-2, -9.73655226040941223894e-4))


def _dawsn_tail(x, ax, t, in_range, coefficients):
    """(1 + t P(t) / Q(t)) / (2|x|) on safe operands (1 outside the range that
    `in_range()` tests, where an overflowing polynomial would give inf / inf); the test
    is made once per operand, as JAX's."""
    numerator, denominator = (np.array(c, dtype=util.dtype_of(x)) for c in coefficients)
    safe_t = lax.select(in_range(), t, lax.full_like(t, 1.))
    safe_ax = lax.select(in_range(), ax, lax.full_like(ax, 1.))
    return (_lax_const(x, 0.5) / safe_ax) * (
        _lax_const(x, 1.)
        + safe_t * jnp.polyval(numerator, safe_t) / jnp.polyval(denominator, safe_t))


def _dawsn_of(x):
    sign = jnp.sign(x)  # 0 at 0, where D is 0 too
    ax = lax.abs(x)
    numerator, denominator = (np.array(c, dtype=util.dtype_of(x)) for c in _DAWSN_NEAR)
    t = _lax_const(x, 1.) / lax.square(ax)
    safe_ax = lax.select(ax < _lax_const(x, 3.25), ax, lax.full_like(ax, 1.))
    safe_ax2 = lax.square(safe_ax)
    near = safe_ax * jnp.polyval(numerator, safe_ax2) / jnp.polyval(denominator, safe_ax2)
    middle = _dawsn_tail(
        x, ax, t, lambda: (ax >= _lax_const(x, 3.25)) & (ax < _lax_const(x, 6.25)),
        _DAWSN_MIDDLE)
    far = _dawsn_tail(x, ax, t, lambda: ax >= _lax_const(x, 6.25), _DAWSN_FAR)
    return sign * lax.select(ax < _lax_const(x, 3.25), near,
                             lax.select(ax < _lax_const(x, 6.25), middle, far))


@plax.custom_jvp
def _dawsn(x):
    return _in_float32_unless_64(_dawsn_of, x)


_dawsn.defjvps(lambda g, ans, x: g * (_lax_const(x, 1.) - _lax_const(x, 2.) * x * ans))


def dawsn(x):
    """Dawson's integral e^(-x²) ∫₀ˣ e^(t²) dt."""
    x = inexact("dawsn", x)
    reject_complex("dawsn", x)
    return _dawsn(x)

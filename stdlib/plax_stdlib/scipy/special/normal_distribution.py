"""The standard normal distribution's functions, formulated as JAX's (so that they give
its bits): ndtr from erf and erfc, ndtri from Cephes' piecewise rational
approximations, log_ndtr from ndtr with an asymptotic series in the lower tail."""
from __future__ import annotations

import functools

import numpy as np

import plax
from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.numpy import util
from plax_stdlib.numpy.ufuncs import _lax_const
from plax_stdlib.scipy.special.arguments import float32_or_64


def _scalar_type(x):
    return util.dtype_of(x).type


def _ndtr(x):
    """Φ(x) = (1 + erf(x/√2)) / 2 near 0, from erfc(|x|/√2) in the tails."""
    scalar = _scalar_type(x)
    half_sqrt_2 = scalar(0.5) * np.sqrt(2., dtype=scalar)
    w = x * half_sqrt_2
    z = lax.abs(w)
    y = lax.select(lax.lt(z, half_sqrt_2), scalar(1.) + lax.erf(w),
                   lax.select(lax.gt(w, scalar(0.)), scalar(2.) - lax.erfc(z), lax.erfc(z)))
    return scalar(0.5) * y


def ndtr(x):
    """The standard normal distribution function Φ(x)."""
    return _ndtr(float32_or_64("ndtr", x))


# Cephes' ndtri: for p > exp(-2), x / √(2π) = w + w³ P0(w²) / Q0(w²) with w = p - 1/2;
# below, x = z - log(z) / z - P(1/z) / (z Q(1/z)) with z = √(-2 log p), (P1, Q1) for
# z < 8, (P2, Q2) from there.
_P0 = (-5.99633501014107895267E1, 9.80010754185999661536E1, -5.66762857469070293439E1,
       1.39312609387279679503E1, -1.23916583867381258016E0)
_Q0 = (1.0, 1.95448858338141759834E0, 4.67627912898881538453E0, 8.63602421390890590575E1,
       -2.25462687854119370527E2, 2.00260212380060660359E2, -8.20372256168333339912E1,
       1.59056225126211695515E1, -1.18331621121330003142E0)
_P1 = (4.05544892305962419923E0, 3.15251094599893866154E1, 5.71628192246421288162E1,
       4.40805073893200834700E1, 1.46849561928858024014E1, 2.18663306850790267539E0,
       -1.40256079171354495875E-1, -3.50424626827848203418E-2, -8.57456785154685413611E-4)
_Q1 = (1.0, 1.57799883256466749731E1, 4.53907635128879210584E1, 4.13172038254672030440E1,
       1.50425385692907503408E1, 2.50464946208309415979E0, -1.42182922854787788574E-1,
       -3.80806407691578277194E-2, -9.33259480895457427372E-4)
_P2 = (3.23774891776946035970E0, 6.91522889068984211695E0, 3.93881025292474443415E0,
       1.33303460815807542389E0, 2.01485389549179081538E-1, 1.23716634817820021358E-2,
       3.01581553508235416007E-4, 2.65806974686737550832E-6, 6.23974539184983293730E-9)
_Q2 = (1.0, 6.02427039364742014255E0, 3.67983563856160859403E0, 1.37702099489081330271E0,
       2.16236993594496635890E-1, 1.34204006088543189037E-2, 3.28014464682127739104E-4,
       2.89247864745380683936E-6, 6.79019408009981274425E-9)


def _ndtri(p):
    scalar = _scalar_type(p)
    shape = jnp.shape(p)
    coeffs = functools.partial(np.array, dtype=scalar)
    # The lower tail by symmetry: q = 1 - p above 1 - exp(-2), any safe value at q = 0.
    q = jnp.where(p > scalar(-np.expm1(-2.)), scalar(1.) - p, p)
    q = jnp.where(q == scalar(0.), jnp.full(shape, scalar(0.5)), q)
    w = q - scalar(0.5)
    ww = lax.square(w)
    x_central = w + w * ww * (jnp.polyval(coeffs(_P0), ww) / jnp.polyval(coeffs(_Q0), ww))
    x_central *= -scalar(np.sqrt(2. * np.pi))
    z = lax.sqrt(scalar(-2.) * lax.log(q))
    first_term = z - lax.log(z) / z
    far = jnp.polyval(coeffs(_P2), 1 / z) / jnp.polyval(coeffs(_Q2), 1 / z) / z
    near = jnp.polyval(coeffs(_P1), 1 / z) / jnp.polyval(coeffs(_Q1), 1 / z) / z
    x_far, x_near = first_term - far, first_term - near
    x = jnp.where(q > scalar(np.exp(-2.)), x_central,
                  jnp.where(z >= scalar(8.0), x_far, x_near))
    x = jnp.where(p > scalar(1. - np.exp(-2.)), x, -x)
    infinity = jnp.full(shape, scalar(np.inf))
    return jnp.where(p == scalar(0.0), -infinity, jnp.where(p == scalar(1.0), infinity, x))


def ndtri(p):
    """The inverse of Φ: the x with Φ(x) = p (±inf at 1 and 0), differentiated through
    its formula (as JAX's)."""
    return _ndtri(float32_or_64("ndtri", p))


# log_ndtr's lower and upper segments, per dtype.
_LOG_NDTR_SEGMENTS = {np.dtype(np.float32): (np.float32(-10), np.float32(5)),
                      np.dtype(np.float64): (np.float64(-20), np.float64(8))}


def _log_ndtr_asymptotic_series(x, series_order: int):
    """1 + Σ_{n=1..N} (-1)^n (2n-1)!! / x^(2n), even and odd terms summed apart."""
    scalar = _scalar_type(x)
    if series_order <= 0:
        return np.array(1, scalar)
    x_2 = lax.square(x)
    even_sum, odd_sum = jnp.zeros_like(x), jnp.zeros_like(x)
    x_2n = x_2
    for n in range(1, series_order + 1):
        term = np.array(np.prod(np.arange(2 * n - 1, 1, -2)), scalar) / x_2n
        if n % 2:
            odd_sum += term
        else:
            even_sum += term
        x_2n *= x_2
    return scalar(1.) + even_sum - odd_sum


def _log_ndtr_lower(x, series_order: int):
    """log Φ(x) for x << -1: log(e^(-x²/2) / (-x √(2π))) + log(1 + series)."""
    scalar = _scalar_type(x)
    log_scale = -scalar(0.5) * lax.square(x) - lax.log(-x) - scalar(0.5 * np.log(2. * np.pi))
    return log_scale + lax.log(_log_ndtr_asymptotic_series(x, series_order))


@functools.partial(plax.custom_jvp, nondiff_argnums=(1,))
def log_ndtr(x, series_order: int = 3):
    """log Φ(x), far into both tails: -Φ(-x) above the upper segment, log Φ(x) down to
    the lower one, `series_order` (0 to 30) terms of the asymptotic series below."""
    if not isinstance(series_order, int) or isinstance(series_order, bool):
        raise TypeError("series_order must be a Python integer.")
    if series_order < 0:
        raise ValueError("series_order must be non-negative.")
    if series_order > 30:
        raise ValueError("series_order must be <= 30.")
    x = float32_or_64("log_ndtr", x)
    lower, upper = _LOG_NDTR_SEGMENTS[np.dtype(util.dtype_of(x))]
    above = lax.gt(x, upper)
    # One ndtr for both branches; the clamps keep the unchosen ones finite (a NaN there
    # would reach the derivative through the select).
    ndtr_of = _ndtr(jnp.where(above, -x, lax.max(x, lower)))
    return jnp.where(above, -ndtr_of, jnp.where(
        lax.gt(x, lower), lax.log(ndtr_of), _log_ndtr_lower(lax.min(x, lower), series_order)))


@log_ndtr.defjvp
def _log_ndtr_jvp(series_order, primals, tangents):
    """d log Φ(x) = φ(x) / Φ(x) dx = exp(log φ(x) - log Φ(x)) dx."""
    (x,), (t,) = primals, tangents
    out = log_ndtr(x, series_order=series_order)
    log_pdf = lax.sub(lax.mul(_lax_const(x, -0.5), lax.square(x)),
                      _lax_const(x, np.log(np.sqrt(2 * np.pi))))
    return out, lax.mul(t, lax.exp(lax.sub(log_pdf, out)))

"""The Faddeeva function w(z) = exp(-z²) erfc(-iz) on the whole complex plane."""
from __future__ import annotations

import math

import numpy as np

import plax
from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.numpy import util


def _weideman_coefficients(n: int) -> tuple[float, np.ndarray]:
    """Weideman's (1994) rational approximation of w in the upper half plane:
    w(z) ≈ 2 p(Z) / (L - iz)² + 1 / (√π (L - iz)) with Z = (L + iz) / (L - iz), where
    p's coefficients (highest degree first) are the Fourier coefficients of
    exp(-t²)(L² + t²) under t = L tan(θ/2), computed here with an FFT."""
    m = 2 * n
    scale = math.sqrt(n / math.sqrt(2))
    theta = np.arange(-m + 1, m) * np.pi / m
    t = scale * np.tan(theta / 2)
    samples = np.concatenate([[0.0], np.exp(-t * t) * (scale ** 2 + t * t)])
    fourier = np.real(np.fft.fft(np.fft.fftshift(samples))) / (2 * m)
    return scale, fourier[1:n + 1][::-1].copy()


_SCALE, _COEFFICIENTS = _weideman_coefficients(36)
_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)


def _upper_half_plane(z):
    denominator = _SCALE - 1j * z
    big_z = (_SCALE + 1j * z) / denominator
    p = jnp.polyval(np.asarray(_COEFFICIENTS, big_z.dtype), big_z)
    return 2 * p / (denominator * denominator) + (1 / math.sqrt(math.pi)) / denominator


@plax.custom_jvp
@plax.jit
def _wofz(z):
    # w(z) = 2 exp(-z²) - w(-z) reflects the lower half plane into the upper one.
    upper = jnp.imag(z) >= 0
    reflected = jnp.where(upper, z, -z)
    w = _upper_half_plane(reflected)
    # (exp(log 2 - z²) rather than 2 exp(-z²): a complex product with inf makes NaN.)
    w = jnp.where(upper, w, jnp.exp(math.log(2) - reflected * reflected) - w)
    # w → 0 as |z| → ∞ in the closed upper half plane, which the rational form reaches
    # only as inf/inf.
    return jnp.where(upper & jnp.isinf(jnp.abs(z)) & ~jnp.isnan(z), 0, w)


@_wofz.defjvp
def _wofz_jvp(primals, tangents):
    (z,), (dz,) = primals, tangents
    w = _wofz(z)
    return w, (1j * _TWO_OVER_SQRT_PI - 2 * z * w) * dz


def wofz(z):
    """The Faddeeva function of real or complex z; the result is complex."""
    z, = util.promote_args_inexact("wofz", z)
    return _wofz(lax.convert_element_type(z, jnp.promote_types(util.dtype_of(z), np.complex64)))

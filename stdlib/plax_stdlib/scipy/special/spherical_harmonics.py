"""Spherical harmonics Y_n^m(θ, φ), orthonormal on the sphere with the Condon-Shortley
phase (SciPy's `sph_harm_y` convention), from the normalized associated Legendre
recurrences run to a static maximum degree."""
from __future__ import annotations

import functools
import math
import operator

import numpy as np

import plax
from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.numpy import util


def _normalized_legendre(n, order, x, n_max: int):
    """P̄_n^order(x) (so that P̄ e^{i order φ} is orthonormal) for 0 ≤ order ≤ n ≤ n_max,
    elementwise: the diagonal P̄_m^m by its product, then upward in the degree."""
    dtype = x.dtype
    sine = jnp.sqrt(jnp.maximum(1 - x * x, 0))
    kf = lambda k: k.astype(dtype)  # noqa: E731

    def diagonal(k, p):  # P̄_k^k = -√((2k+1)/(2k)) sin θ P̄_{k-1}^{k-1}
        step = -jnp.sqrt((2 * kf(k) + 1) / (2 * kf(k))) * sine
        return jnp.where(k <= order, p * step, p)
    p_mm = lax.fori_loop(1, n_max + 1, diagonal,
                         jnp.full(x.shape, 1 / math.sqrt(4 * math.pi), dtype))
    m = order.astype(dtype)

    def upward(degree, state):  # P̄_l^m = a_l (x P̄_{l-1}^m - P̄_{l-2}^m / a_{l-1})
        before, last = state
        lf = kf(degree)
        a_l = jnp.sqrt((4 * lf * lf - 1) / jnp.maximum(lf * lf - m * m, 1))
        a_prev = jnp.sqrt((4 * (lf - 1) ** 2 - 1) / jnp.maximum((lf - 1) ** 2 - m * m, 1))
        following = jnp.where(degree == order + 1, jnp.sqrt(2 * m + 3) * x * last,
                              a_l * (x * last - before / a_prev))
        going = (degree > order) & (degree <= n)
        return jnp.where(going, last, before), jnp.where(going, following, last)
    _, value = lax.fori_loop(1, n_max + 1, upward, (jnp.zeros_like(x), p_mm))
    return value


@functools.partial(plax.jit, static_argnums=(4,))
def _sph_harm_y(n, m, theta, phi, n_max: int):
    n = jnp.minimum(n, n_max)
    order = jnp.abs(m)
    legendre = _normalized_legendre(n, order, jnp.cos(theta), n_max)
    legendre = jnp.where(order <= n, legendre, 0)
    angle = order.astype(phi.dtype) * phi
    positive = lax.complex(legendre * jnp.cos(angle), legendre * jnp.sin(angle))
    # Y_n^{-m} = (-1)^m conj(Y_n^m)
    negative = jnp.where(order % 2 == 1, -1, 1).astype(phi.dtype) * jnp.conj(positive)
    return jnp.where(m < 0, negative, positive)


def sph_harm_y(n, m, theta, phi, diff_n: int | None = None, n_max: int | None = None):
    """Y_n^m(θ, φ) for integer degrees n ≥ 0 and orders |m| ≤ n (zero for |m| > n), θ
    the polar and φ the azimuthal angle, broadcast together. Degrees above `n_max` are
    clipped to it; `n_max` defaults to max(n), which needs n concrete (pass n_max
    under jit)."""
    if diff_n is not None:
        raise NotImplementedError(
            "The 'diff_n' argument to jax.scipy.special.sph_harm_y is not supported.")
    util.check_arraylike("sph_harm_y", n, m, theta, phi)
    for name, value in (("n", n), ("m", m)):
        if not jnp.issubdtype(util.dtype_of(value), jnp.integer):
            raise TypeError(f"sph_harm_y: {name} must be an integer array, got "
                            f"{util.dtype_of(value)}")
    if n_max is None:
        n_max = np.max(util.concrete_or_error(
            n, "the `n_max` argument of sph_harm_y must be given statically to use it "
               "under transformations"))
    try:
        n_max = operator.index(n_max)
    except TypeError:
        raise TypeError(f"sph_harm_y: n_max must be an integer, got {n_max!r}") from None
    theta, phi = util.promote_args_inexact("sph_harm_y", theta, phi)
    n, m, theta, phi = jnp.broadcast_arrays(n, m, theta, phi)
    return _sph_harm_y(n, m, theta, phi, max(n_max, 0))

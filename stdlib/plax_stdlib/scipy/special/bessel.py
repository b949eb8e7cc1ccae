"""Modified Bessel functions of orders 0 and 1 (plain and exponentially scaled) and
Bessel functions of the first kind J_0 ... J_v."""
from __future__ import annotations

import operator

from plax_stdlib import jax_jits, lax
from plax_stdlib import numpy as jnp
from plax_stdlib.numpy import util


def _inexact(name: str, x):
    return util.promote_args_inexact(name, x)[0]


def i0e(x):
    """exp(-|x|) I0(x)."""
    return lax.bessel_i0e(_inexact("i0e", x))


def i1e(x):
    """exp(-|x|) I1(x)."""
    return lax.bessel_i1e(_inexact("i1e", x))


def i0(x):
    """The modified Bessel function of the first kind of order 0."""
    x = _inexact("i0", x)
    return jnp.exp(jnp.abs(x)) * lax.bessel_i0e(x)


def i1(x):
    """The modified Bessel function of the first kind of order 1."""
    x = _inexact("i1", x)
    return jnp.exp(jnp.abs(x)) * lax.bessel_i1e(x)


def _bessel_jn(z, v, n_iter):
    # Miller's method on ratios: r_k = J_k / J_{k-1} from the backward recurrence
    # r_k = z / (2k - z r_{k+1}) started at order `top` with r = 0, then J_k = J_0 r_1 ... r_k
    # and J_0 from the normalization J_0 + 2 Σ J_{2k} = 1. Ratios stay bounded, so
    # neither tiny nor large z over- or underflows.
    top = max(n_iter, v + 1)
    orders = jnp.arange(top, 0, -1, dtype=z.dtype)

    def step(r_next, k):
        r = z / (2 * k - z * r_next)
        return r, r
    _, ratios = lax.scan(step, jnp.zeros_like(z), orders)
    products = jnp.cumprod(jnp.flip(ratios, 0), axis=0)  # J_k / J_0 for k = 1..top
    j0 = 1.0 / (1.0 + 2 * jnp.sum(products[1::2], axis=0))
    return jnp.concatenate([j0[None], j0 * products[:v]], axis=0)


def bessel_jn(z, *, v: int, n_iter: int = 50):
    """J_0(z), ..., J_v(z) stacked along a new leading axis. The backward recurrence
    starts `n_iter` orders up, which is accurate for |z| up to about n_iter - 20."""
    try:
        v, n_iter = operator.index(v), operator.index(n_iter)
    except TypeError:
        raise TypeError(f"bessel_jn: v and n_iter must be integers, got v={v!r}, "
                        f"n_iter={n_iter!r}") from None
    if v < 0 or n_iter < 1:
        raise ValueError(f"bessel_jn: v must be ≥ 0 and n_iter ≥ 1, got v={v}, "
                         f"n_iter={n_iter}")
    return _bessel_jn(_inexact("bessel_jn", z), v, n_iter)


jax_jits.apply(globals(), "scipy.special")  # JAX's jitted functions become jit functions

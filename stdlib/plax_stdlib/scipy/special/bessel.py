"""Modified Bessel functions of orders 0 and 1 (plain and exponentially scaled) and
Bessel functions of the first kind J_0 ... J_v."""
from __future__ import annotations

import functools
import operator

import plax
from plax_stdlib import jax_jits, lax
from plax_stdlib import numpy as jnp
from plax_stdlib.numpy import util
from plax_stdlib.numpy.ufuncs import _lax_const
from plax_stdlib.scipy.special.arguments import reject_complex


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


def _bessel_jn_step(carry, k):
    """One order down Miller's backward recurrence f_k = 2 (k + 1) f_{k+1} / z - f_{k+2},
    adding 2 f_k to the normalization sum J_0 + 2 Σ J_{2k} = 1 at the even orders."""
    f0, f1, total, z = carry
    f = 2.0 * (k + 1.0) * f1 / z - f0
    total = lax.cond(jnp.mod(k, 2) == 0, lambda u: u[0] + 2.0 * u[1], lambda u: u[0],
                     (total, f))
    return (f1, f, total, z), f


def _bessel_jn_of_scalar(z, *, v: int, n_iter: int):
    """J_0(z) ... J_v(z) for one z: the recurrence run down from order n_iter, started at
    1e-16, then normalized (as JAX's, which is NaN at 0 and overflows in float32 for
    small |z|)."""
    start = (_lax_const(z, 0.0), _lax_const(z, 1e-16), _lax_const(z, 0.0), z)
    (_, _, total, _), values = lax.scan(
        _bessel_jn_step, start, lax.iota(util.dtype_of(z), n_iter + 1), reverse=True)
    f = values[0]  # the last order reached, f_0
    return values[:v + 1] / (total - f)


def bessel_jn(z, *, v: int, n_iter: int = 50):
    """J_0(z), ..., J_v(z) stacked along a new leading axis, computed for each element
    (vmapped) as JAX's: the backward recurrence starts `n_iter` orders up, which is
    accurate for |z| up to about n_iter - 20, and is NaN at z = 0."""
    try:
        v, n_iter = operator.index(v), operator.index(n_iter)
    except TypeError:
        raise TypeError(f"bessel_jn: v and n_iter must be integers, got v={v!r}, "
                        f"n_iter={n_iter!r}") from None
    if v < 0 or n_iter < 1:
        raise ValueError(f"bessel_jn: v must be ≥ 0 and n_iter ≥ 1, got v={v}, "
                         f"n_iter={n_iter}")
    z = util.promote_dtypes_inexact(jnp.asarray(z))[0]
    reject_complex("bessel_jn", z)
    of_all = functools.partial(_bessel_jn_of_scalar, v=v, n_iter=n_iter)
    for _ in range(jnp.ndim(z)):
        of_all = plax.vmap(of_all)
    return jnp.moveaxis(of_all(z), -1, 0)


jax_jits.apply(globals(), "scipy.special")  # JAX's jitted functions become jit functions

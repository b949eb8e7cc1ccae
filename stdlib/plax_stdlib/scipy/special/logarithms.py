"""Logarithmic and information functions: xlogy, xlog1py, entr, rel_entr, kl_div,
expit, logit, boxcox, boxcox1p, and the softmax family of `plax.nn` under SciPy's
signatures.

Where a formula has a removable singularity (0 · log 0), the value is defined by
the limit and the other branch is evaluated on safe operands, so no NaN reaches a
derivative in either mode.
"""
from __future__ import annotations

import numpy as np

import plax
from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.nn import softmax_family
from plax_stdlib.numpy import util
from plax_stdlib.numpy.ufuncs import _lax_const

logsumexp = softmax_family.logsumexp


def _inexact(name: str, *args):
    out = util.promote_args_inexact(name, *args)
    return out[0] if len(out) == 1 else out


@plax.custom_jvp
def xlogy(x, y):
    """x · log(y), and 0 where x = 0, unless y is NaN (SciPy's); its derivative is a
    rule, so that none of the NaN of 0 · log 0 reaches it."""
    x, y = _inexact("xlogy", x, y)
    return jnp.where((x != 0) | jnp.isnan(y), lax.mul(x, lax.log(y)), jnp.zeros_like(x))


@xlogy.defjvp
def _xlogy_jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    out = xlogy(x, y)
    return out, (x_dot * lax.log(y) + y_dot * x / y).astype(out.dtype)


@plax.custom_jvp
def xlog1py(x, y):
    """x · log(1 + y), and 0 where x = 0, unless y is NaN (SciPy's); its derivative is
    a rule, as xlogy's."""
    x, y = _inexact("xlog1py", x, y)
    return jnp.where((x != 0) | jnp.isnan(y), lax.mul(x, lax.log1p(y)), jnp.zeros_like(x))


@xlog1py.defjvp
def _xlog1py_jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    out = xlog1py(x, y)
    return out, (x_dot * lax.log1p(y) + y_dot * x / (1 + y)).astype(out.dtype)


@plax.custom_jvp
def _xlogx(x):
    """x log x (0 at 0), whose derivative is log x + 1 (-inf at 0, where xlogy's rule,
    log y + x/y, is NaN)."""
    return xlogy(x, x)


@_xlogx.defjvp
def _xlogx_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return _xlogx(x), x_dot * (lax.log(x) + 1)


def entr(x):
    """-x log x for x ≥ 0 (-0.0 at 0, as JAX negates 0 · log 0), -inf below; the
    derivative -(log x + 1) is +inf at 0."""
    x = _inexact("entr", x)
    if jnp.iscomplexobj(x):
        raise ValueError("entr does not support complex-valued inputs.")
    return lax.select(lax.lt(x, _lax_const(x, 0)), lax.full_like(x, -np.inf),
                      lax.neg(_xlogx(x)))


def _both_positive_or(name, p, q, on_positive, at_zero_p):
    """`on_positive(p, q)` where p, q > 0; `at_zero_p(q)` where p = 0 ≤ q; inf else."""
    p, q = _inexact(name, p, q)
    both = jnp.logical_and(p > 0, q > 0)
    safe_p, safe_q = jnp.where(both, p, 1.0), jnp.where(both, q, 1.0)
    edge = jnp.logical_and(p == 0, q >= 0)
    out = jnp.where(both, on_positive(safe_p, safe_q), jnp.where(edge, at_zero_p(q), np.inf))
    return jnp.where(jnp.logical_or(jnp.isnan(p), jnp.isnan(q)), np.nan, out)


def rel_entr(p, q):
    """p log(p / q) for p, q > 0; 0 where p = 0 ≤ q; inf otherwise."""
    return _both_positive_or("rel_entr", p, q, lambda p, q: p * jnp.log(p / q),
                             jnp.zeros_like)


def kl_div(p, q):
    """p log(p / q) - p + q for p, q > 0; q where p = 0 ≤ q; inf otherwise."""
    return _both_positive_or("kl_div", p, q, lambda p, q: p * jnp.log(p / q) - p + q,
                             lambda q: q)


def expit(x):
    """The logistic sigmoid 1 / (1 + e^-x)."""
    return lax.logistic(_inexact("expit", x))


@plax.custom_jvp
def logit(x):
    """log(x / (1 - x)), the inverse of expit; its derivative is the rule
    1 / (x (1 - x))."""
    x = _inexact("logit", x)
    return lax.log(lax.div(x, lax.sub(_lax_const(x, 1), x)))


logit.defjvps(lambda g, ans, x: lax.div(g, lax.mul(x, lax.sub(_lax_const(x, 1), x))))


def _boxcox(x, lmbda, log):
    """(e^(λ log(x)) - 1) / λ, log(x) at λ = 0, as JAX computes it."""
    lmbda_is_zero = lmbda == 0
    safe_lmbda = jnp.where(lmbda_is_zero, jnp.ones_like(lmbda), lmbda)
    log_x = log(x)
    return jnp.where(lmbda_is_zero, log_x, jnp.expm1(safe_lmbda * log_x) / safe_lmbda)


def boxcox(x, lmbda):
    """The Box-Cox transform (x^λ - 1) / λ, log x at λ = 0."""
    x, lmbda = _inexact("boxcox", x, lmbda)
    return _boxcox(x, lmbda, jnp.log)


def boxcox1p(x, lmbda):
    """The Box-Cox transform of 1 + x, accurate for small x."""
    x, lmbda = _inexact("boxcox1p", x, lmbda)
    return _boxcox(x, lmbda, jnp.log1p)


def softmax(x, /, *, axis=None):
    """exp(x) / sum(exp(x)) over `axis` (all axes by default, as in SciPy)."""
    return softmax_family.softmax(x, axis=axis)


def log_softmax(x, /, *, axis=None):
    """x - logsumexp(x) over `axis` (all axes by default, as in SciPy)."""
    return softmax_family.log_softmax(x, axis=axis)

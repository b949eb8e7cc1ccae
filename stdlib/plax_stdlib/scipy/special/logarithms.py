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
from plax_stdlib.scipy.special.arguments import inexact, reject_complex
from plax_stdlib.numpy.ufuncs import _lax_const

logsumexp = softmax_family.logsumexp


@plax.custom_jvp
def xlogy(x, y):
    """x · log(y), and 0 where x = 0, unless y is NaN (SciPy's); its derivative is a
    rule, so that none of the NaN of 0 · log 0 reaches it."""
    x, y = inexact("xlogy", x, y)
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
    x, y = inexact("xlog1py", x, y)
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
    x = inexact("entr", x)
    reject_complex("entr", x)
    return lax.select(lax.lt(x, _lax_const(x, 0)), lax.full_like(x, -np.inf),
                      lax.neg(_xlogx(x)))


def rel_entr(p, q):
    """p log(p / q) for p, q > 0; 0 where p = 0 ≤ q; inf otherwise (NaN arguments
    included, as JAX's), computed as x log x - x log y on safe operands."""
    p, q = inexact("rel_entr", p, q)
    reject_complex("rel_entr", p)
    zero = _lax_const(p, 0.0)
    both_positive = lax.bitwise_and(lax.gt(p, zero), lax.gt(q, zero))
    p_zero = lax.bitwise_and(lax.eq(p, zero), lax.ge(q, zero))
    safe_p = jnp.where(both_positive, p, 1)
    safe_q = jnp.where(both_positive, q, 1)
    log_ratio = lax.sub(_xlogx(safe_p), xlogy(safe_p, safe_q))
    return jnp.where(both_positive, log_ratio, jnp.where(p_zero, zero, np.inf))


def kl_div(p, q):
    """rel_entr(p, q) - p + q: p log(p / q) - p + q for p, q > 0, q where p = 0 ≤ q,
    inf otherwise."""
    p, q = inexact("kl_div", p, q)
    reject_complex("kl_div", p)
    return rel_entr(p, q) - p + q


def expit(x):
    """The logistic sigmoid 1 / (1 + e^-x)."""
    return lax.logistic(inexact("expit", x))


@plax.custom_jvp
def logit(x):
    """log(x / (1 - x)), the inverse of expit; its derivative is the rule
    1 / (x (1 - x))."""
    x = inexact("logit", x)
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
    x, lmbda = inexact("boxcox", x, lmbda)
    return _boxcox(x, lmbda, jnp.log)


def boxcox1p(x, lmbda):
    """The Box-Cox transform of 1 + x, accurate for small x."""
    x, lmbda = inexact("boxcox1p", x, lmbda)
    return _boxcox(x, lmbda, jnp.log1p)


def softmax(x, /, *, axis=None):
    """exp(x) / sum(exp(x)) over `axis` (all axes by default, as in SciPy)."""
    return softmax_family.softmax(x, axis=axis)


def log_softmax(x, /, *, axis=None):
    """x - logsumexp(x) over `axis` (all axes by default, as in SciPy)."""
    return softmax_family.log_softmax(x, axis=axis)

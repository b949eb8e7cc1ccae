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

logsumexp = softmax_family.logsumexp


def _inexact(name: str, *args):
    out = util.promote_args_inexact(name, *args)
    return out[0] if len(out) == 1 else out


@plax.custom_jvp
@plax.jit
def _xlogy(x, y):
    nonzero = x != 0
    safe_x = jnp.where(nonzero, x, 1.0)
    safe_y = jnp.where(nonzero, y, 1.0)
    return jnp.where(nonzero, safe_x * jnp.log(safe_y), jnp.zeros_like(x))


@_xlogy.defjvp
def _xlogy_jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    return _xlogy(x, y), x_dot * jnp.log(y) + y_dot * x / y


def xlogy(x, y):
    """x · log(y), and 0 where x = 0 (whatever y is)."""
    return _xlogy(*_inexact("xlogy", x, y))


@plax.custom_jvp
@plax.jit
def _xlog1py(x, y):
    nonzero = x != 0
    safe_x = jnp.where(nonzero, x, 1.0)
    safe_y = jnp.where(nonzero, y, 0.0)
    return jnp.where(nonzero, safe_x * jnp.log1p(safe_y), jnp.zeros_like(x))


@_xlog1py.defjvp
def _xlog1py_jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    return _xlog1py(x, y), x_dot * jnp.log1p(y) + y_dot * x / (1 + y)


def xlog1py(x, y):
    """x · log(1 + y), and 0 where x = 0."""
    return _xlog1py(*_inexact("xlog1py", x, y))


@plax.jit
def entr(x):
    """-x log x for x > 0, 0 at 0, -inf below."""
    x = _inexact("entr", x)
    positive = x > 0
    safe = jnp.where(positive, x, 1.0)
    inside = jnp.where(positive, -safe * jnp.log(safe), 0.0)
    return jnp.where(jnp.logical_or(positive, x == 0), inside,
                     jnp.where(jnp.isnan(x), x, -np.inf))


def _both_positive_or(name, p, q, on_positive, at_zero_p):
    """`on_positive(p, q)` where p, q > 0; `at_zero_p(q)` where p = 0 ≤ q; inf else."""
    p, q = _inexact(name, p, q)
    both = jnp.logical_and(p > 0, q > 0)
    safe_p, safe_q = jnp.where(both, p, 1.0), jnp.where(both, q, 1.0)
    edge = jnp.logical_and(p == 0, q >= 0)
    out = jnp.where(both, on_positive(safe_p, safe_q), jnp.where(edge, at_zero_p(q), np.inf))
    return jnp.where(jnp.logical_or(jnp.isnan(p), jnp.isnan(q)), np.nan, out)


@plax.jit
def rel_entr(p, q):
    """p log(p / q) for p, q > 0; 0 where p = 0 ≤ q; inf otherwise."""
    return _both_positive_or("rel_entr", p, q, lambda p, q: p * jnp.log(p / q),
                             jnp.zeros_like)


@plax.jit
def kl_div(p, q):
    """p log(p / q) - p + q for p, q > 0; q where p = 0 ≤ q; inf otherwise."""
    return _both_positive_or("kl_div", p, q, lambda p, q: p * jnp.log(p / q) - p + q,
                             lambda q: q)


def expit(x):
    """The logistic sigmoid 1 / (1 + e^-x)."""
    return lax.logistic(_inexact("expit", x))


@plax.jit
def logit(x):
    """log(x / (1 - x)), the inverse of expit."""
    x = _inexact("logit", x)
    return jnp.log(x / (1 - x))


@plax.jit
def boxcox(x, lmbda):
    """The Box-Cox transform (x^λ - 1) / λ, log x at λ = 0."""
    x, lmbda = _inexact("boxcox", x, lmbda)
    log_x = jnp.log(x)
    safe_lmbda = jnp.where(lmbda == 0, 1.0, lmbda)
    return jnp.where(lmbda == 0, log_x, jnp.expm1(safe_lmbda * log_x) / safe_lmbda)


@plax.jit
def boxcox1p(x, lmbda):
    """The Box-Cox transform of 1 + x, accurate for small x."""
    x, lmbda = _inexact("boxcox1p", x, lmbda)
    log1p_x = jnp.log1p(x)
    safe_lmbda = jnp.where(lmbda == 0, 1.0, lmbda)
    return jnp.where(lmbda == 0, log1p_x, jnp.expm1(safe_lmbda * log1p_x) / safe_lmbda)


def softmax(x, /, *, axis=None):
    """exp(x) / sum(exp(x)) over `axis` (all axes by default, as in SciPy)."""
    return softmax_family.softmax(x, axis=axis)


def log_softmax(x, /, *, axis=None):
    """x - logsumexp(x) over `axis` (all axes by default, as in SciPy)."""
    return softmax_family.log_softmax(x, axis=axis)

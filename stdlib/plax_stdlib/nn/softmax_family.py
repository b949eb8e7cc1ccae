"""The log-sum-exp family: `logsumexp`, `logmeanexp`, `softmax`, `log_softmax`.

All shift by the (masked) maximum before exponentiating, so large inputs do not
overflow. `-inf` entries contribute exactly zero and get zero derivatives; a
slice that is entirely `-inf` has `logsumexp` `-inf` with a NaN derivative (the
logarithm of zero), as JAX's.
"""
from __future__ import annotations

import numpy as np

import plax
from plax.extend import config
from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.numpy import reductions, util


def logsumexp(a, axis=None, b=None, keepdims: bool = False, return_sign: bool = False,
              where=None):
    """`log(sum(b * exp(a)))` over `axis`, computed without overflow.

    The maximum of `a` is subtracted before exponentiating and added back after the
    logarithm, so `logsumexp(jnp.array([1000., 1000.]))` is `1000.693...` rather than
    `inf`. `-inf` entries contribute nothing (and get zero gradients); a slice that
    is entirely `-inf` gives `-inf`, with a NaN gradient (as JAX's).

    Args:
        a: an array.
        axis: the axis or tuple of axes to reduce; None reduces all.
        b: optional weights broadcastable to `a`; entries where `b == 0` are left out.
        keepdims: keep the reduced axes with size 1.
        return_sign: also return the sign of the weighted sum; then negative weights
            are allowed and the first result is `log(|sum|)`.
        where: a boolean mask broadcastable to `a`: only selected elements are summed.

    Returns:
        The reduced array; with `return_sign`, a pair `(log_abs_sum, sign)`. Without
        `return_sign`, a negative weighted sum gives NaN.

    Examples:
        >>> plax.nn.logsumexp(jnp.array([1000.0, 1000.0]))
        Array(1000.69..., dtype=float32)
        >>> plax.nn.logsumexp(jnp.array([0.0, 0.0]), b=jnp.array([1.0, -2.0]), return_sign=True)
        (Array(0., dtype=float32), Array(-1., dtype=float32))
    """
    if where is not None:
        util.check_arraylike("logsumexp", where)
        a = jnp.where(where, a, 0)
    if b is not None:
        a, b = util.promote_args_inexact("logsumexp", a, b)
        a = jnp.where(b != 0, a, -np.inf)
    else:
        a, = util.promote_args_inexact("logsumexp", a)
    axes = util.canonicalize_axes(axis, np.ndim(a))
    is_complex = util.dtype_category(util.dtype_of(a)) == "c"
    # The shift: the (masked) maximum where it is finite, else 0; held constant.
    amax = jnp.max(jnp.real(a), axis=axes, keepdims=keepdims, where=where, initial=-np.inf)
    amax = lax.stop_gradient(lax.select(jnp.isfinite(amax), amax, lax.full_like(amax, 0)))
    shift = amax if keepdims else lax.expand_dims(amax, axes)
    exp_a = lax.exp(lax.sub(a, shift.astype(util.dtype_of(a))))
    if b is not None:
        exp_a = lax.mul(exp_a, b)
    total = exp_a.sum(axis=axes, keepdims=keepdims, where=where)
    sign = lax.sign(total)
    if return_sign or not is_complex:
        total = jnp.abs(total)
    out = lax.add(lax.log(total), amax.astype(util.dtype_of(total)))
    if return_sign:
        return out, sign
    if b is not None and not is_complex:
        out = jnp.where(sign < 0, jnp.array(np.nan, dtype=util.dtype_of(out)), out)
    return out


def _count(x, axis, where, keepdims, dtype):
    """How many elements (those `where` selects) each reduction over `axis` sees: a
    constant of `dtype` without `where`."""
    count = reductions._count(np.shape(x), util.canonicalize_axes(axis, np.ndim(x)), where,
                              keepdims, dtype, "logmeanexp")
    return util.convert(count, dtype) if isinstance(count, float) else count


@plax.jit(static_argnames=("axis", "keepdims"))
def logmeanexp(x, axis=None, where=None, keepdims: bool = False):
    """`log(mean(exp(x)))` over `axis`, computed stably: `logsumexp` minus the log of
    the number of elements averaged (those `where` selects).

    Args:
        x: an array.
        axis: the axis or tuple of axes to reduce (static); None reduces all.
        where: a boolean mask broadcastable to `x`: only selected elements count.
        keepdims: keep the reduced axes with size 1 (static).

    Returns:
        The reduced array, of `x`'s (inexact) dtype.

    Examples:
        >>> plax.nn.logmeanexp(jnp.array([1.0, 1.0, 1.0]))
        Array(1., dtype=float32)
    """
    lse = logsumexp(x, axis=axis, where=where, keepdims=keepdims)
    return lse - jnp.log(_count(x, axis, where, keepdims, util.dtype_of(lse)))


@plax.jit(static_argnames=("axis",))
def log_softmax(x, axis=-1, where=None):
    """The logarithm of `softmax`, `x - logsumexp(x)` along `axis`, computed stably.

    Prefer it to `jnp.log(softmax(x))`, which loses precision (and gives -inf)
    where probabilities underflow.

    Args:
        x: an array.
        axis: the axis (or tuple of axes) to normalize over.
        where: a boolean mask broadcastable to `x`; masked-out elements are left out
            and are -inf in the result.

    Returns:
        An array of `x`'s shape.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> plax.nn.log_softmax(jnp.array([0.0, 0.0]))
        Array([-0.693..., -0.693...], dtype=float32)
    """
    x, = util.promote_args_inexact("log_softmax", x)
    x_max = jnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
    x_safe = x if where is None else jnp.where(where, x, -np.inf)
    shifted = x_safe - lax.stop_gradient(x_max)
    result = shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis, where=where, keepdims=True))
    return result if where is None else jnp.where(where, result, -np.inf)


def _softmax_by_operations(x, axis, where):
    """softmax differentiated through its operations, the maximum held constant."""
    x_max = jnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
    x_safe = x if where is None else jnp.where(where, x, -np.inf)
    unnormalized = jnp.exp(x_safe - lax.stop_gradient(x_max))
    result = unnormalized / jnp.sum(unnormalized, axis, where=where, keepdims=True)
    return result if where is None else jnp.where(where, result, 0)


def _softmax_with_rule(x, axis, where):
    """softmax with the jvp y * (t - sum(y * t)): less memory under reverse mode."""
    @plax.custom_jvp
    def softmax_(x, where):
        return _softmax_by_operations(x, axis, where)

    @softmax_.defjvp
    def softmax_jvp(primals, tangents):
        (x, where), (t, _) = primals, tangents
        y = softmax_(x, where)
        return y, y * (t - jnp.sum(y * t, axis, where=where, keepdims=True))
    return softmax_(x, where)


# Not compiled as a call: JAX 0.10.2 runs softmax op by op (its Jaxpr is inline).
def softmax(x, axis=-1, where=None):
    """The softmax of `x` along `axis`: `exp(x) / sum(exp(x))`, computed stably.

    The maximum is subtracted before exponentiating, so large inputs do not
    overflow. With the `jax_softmax_custom_jvp` option it is differentiated by its
    own rule instead of through its operations.

    Args:
        x: an array.
        axis: the axis (or tuple of axes) to normalize over.
        where: a boolean mask broadcastable to `x`: masked-out elements are left out
            of the sum and are 0 in the result.

    Returns:
        An array of `x`'s shape whose entries along `axis` are positive and sum
        to 1.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> plax.nn.softmax(jnp.array([0.0, jnp.log(3.0)]))
        Array([0.25..., 0.75...], dtype=float32)
    """
    x, = util.promote_args_inexact("softmax", x)
    if config.softmax_custom_jvp.value:
        return _softmax_with_rule(x, axis, where)
    return _softmax_by_operations(x, axis, where)

"""`random_gamma_grad(a, x)`: d sample / d a of a Gamma(a, 1) sample `x`, the
reparameterised gradient `gamma` differentiates with.

It is minus d/da of the regularised lower incomplete gamma function P(a, x),
divided by its density at x (implicit differentiation of x = P⁻¹(a, u)), computed
by the power series of P for x <= max(1, a) and by the continued fraction of
1 - P otherwise, exactly as JAX 0.10.2 computes it (Cephes' `igam`/`igamc` with the
derivative carried along).
"""
from __future__ import annotations

import numpy as np

from plax.extend import dtypes
from plax_stdlib import lax
from plax_stdlib.numpy.util import broadcast_shapes


def _const(x, value):
    return np.asarray(value, x.dtype)[()]


def _full(x, value):
    return lax.full_like(x, value)


def _any(predicates):
    return lax.reduce_or(predicates, tuple(range(predicates.ndim)))


def _series(ax, x, a, enabled, dtype):
    """The derivative term of P(a, x)'s power series."""
    eps = dtypes.finfo(dtype).eps

    def body(vals):
        enabled, r, c, ans, x, dc_da, dans_da = vals
        r = r + _const(r, 1.0)
        dc_da = dc_da * (x / r) - (c * x) / (r * r)
        dans_da = dans_da + dc_da
        c = c * (x / r)
        ans = ans + c
        keep_going = lax.bitwise_and(enabled, abs(dc_da / dans_da) > eps)
        return (keep_going, *(lax.select(enabled, new, old)
                              for new, old in zip((r, c, ans, x, dc_da, dans_da), vals[1:])))

    init = (enabled, a, _full(a, 1), _full(a, 1), x, _full(a, 0), _full(a, 0))
    vals = lax.while_loop(lambda vals: _any(vals[0]), body, init)
    ans, dans_da = vals[3], vals[6]
    dlogax_da = lax.log(x) - lax.digamma(a + _const(a, 1))
    return -(dans_da + ans * dlogax_da) * x / a


def _continued_fraction(ax, x, a, enabled, dtype):
    """The derivative term of 1 - P(a, x)'s continued fraction."""
    eps = dtypes.finfo(dtype).eps

    def cond(vals):
        enabled, c = vals[0], vals[5]
        return lax.bitwise_and(c < _const(c, 2000), _any(enabled))

    def body(vals):
        (enabled, ans, t, y, z, c, pkm1, qkm1, pkm2, qkm2,
         dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da, dans_da) = vals
        c = c + _const(c, 1)
        y = y + _const(y, 1)
        z = z + _const(z, 2)
        yc = y * c
        pk = pkm1 * z - pkm2 * yc
        qk = qkm1 * z - qkm2 * yc
        qk_is_nonzero = lax.ne(qk, _const(qk, 0))
        r = pk / qk
        t = lax.select(qk_is_nonzero, abs(lax.div(lax.sub(ans, r), r)), _full(r, 1))
        ans = lax.select(qk_is_nonzero, r, ans)
        dpk_da = dpkm1_da * z - pkm1 - dpkm2_da * yc + pkm2 * c
        dqk_da = dqkm1_da * z - qkm1 - dqkm2_da * yc + qkm2 * c
        dans_da_new = lax.select(qk_is_nonzero, lax.div(dpk_da - ans * dqk_da, qk), dans_da)
        grad_conditional = lax.select(qk_is_nonzero, abs(dans_da_new - dans_da),
                                      _full(dans_da, 1))
        pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk
        dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da = dpkm1_da, dqkm1_da, dpk_da, dqk_da
        rescale = lax.gt(abs(pk), lax.div(_const(pk, 1), _const(pk, eps)))

        def rescaled(v):
            return lax.select(rescale, lax.mul(v, _const(v, eps)), v)

        pkm2, pkm1, qkm2, qkm1 = map(rescaled, (pkm2, pkm1, qkm2, qkm1))
        dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da = map(
            rescaled, (dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da))
        keep_going = lax.bitwise_and(enabled, grad_conditional > _const(grad_conditional, eps))
        new = (ans, t, y, z, c, pkm1, qkm1, pkm2, qkm2, dpkm2_da, dqkm2_da, dpkm1_da,
               dqkm1_da, dans_da_new)
        return (keep_going, *(v if i == 4 else lax.select(enabled, v, vals[i + 1])
                              for i, v in enumerate(new)))

    y = _const(a, 1) - a
    z = x + y + _const(x, 1)
    pkm1 = x + _const(x, 1)
    qkm1 = z * x
    ans = pkm1 / qkm1
    dqkm1_da = -x
    dans_da = (_full(x, 0) - ans * dqkm1_da) / qkm1
    init = (enabled, ans, _full(x, 1), y, z, _const(x, 0), pkm1, qkm1, _full(x, 1), x,
            _full(x, 0), _full(x, 0), _full(x, 0), dqkm1_da, dans_da)
    vals = lax.while_loop(cond, body, init)
    ans, dans_da = vals[1], vals[14]
    dlogax_da = lax.log(x) - lax.digamma(a)
    return lax.neg(lax.add(dans_da, lax.mul(ans, dlogax_da)) * x)


def _random_gamma_grad(a, x, dtype):
    is_nan = lax.bitwise_or(lax.ne(a, a), lax.ne(x, x))
    x_is_zero = lax.eq(x, _full(x, 0))
    domain_error = lax.bitwise_or(lax.lt(x, _full(x, 0)), lax.le(a, _full(a, 0)))
    use_continued_fraction = lax.bitwise_and(lax.gt(x, _full(x, 1)), lax.gt(x, a))
    ax = a * lax.log(x) - x - lax.lgamma(a)
    underflow = lax.lt(ax, lax.neg(lax.log(_const(a, dtypes.finfo(a.dtype).max))))
    ax = lax.exp(ax)
    enabled = lax.bitwise_not(lax.bitwise_or(lax.bitwise_or(lax.bitwise_or(
        x_is_zero, domain_error), underflow), is_nan))
    output = lax.select(
        use_continued_fraction,
        -_continued_fraction(ax, x, a, lax.bitwise_and(enabled, use_continued_fraction),
                             dtype),
        _series(ax, x, a, lax.bitwise_and(enabled, lax.bitwise_not(use_continued_fraction)),
                dtype))
    output = lax.select(x_is_zero, _full(output, 0), output)
    return lax.select(lax.bitwise_or(domain_error, is_nan), _full(a, np.nan), output)


def random_gamma_grad(a, x):
    """d x / d a for samples `x` of Gamma(a, 1) (elementwise; f16/bf16 in float32)."""
    shape = broadcast_shapes(np.shape(a), np.shape(x))
    a, x = (lax.broadcast_in_dim(v, shape, tuple(range(v.ndim))) for v in (a, x))
    upcast = a.dtype in (dtypes.bfloat16, np.float16)
    if upcast:
        out_dtype = a.dtype
        a, x = (lax.convert_element_type(v, np.float32) for v in (a, x))
        return lax.convert_element_type(_random_gamma_grad(a, x, np.float32), out_dtype)
    return _random_gamma_grad(a, x, a.dtype)

"""softclip: smooth clipping, as a third-party package of plax primitives.

`softclip(x, limit)` is `limit * tanh(x / limit)`: about `x` near zero, never beyond
`±limit`. `softclip_with_slope(x, limit)` returns the value and its derivative
`1 - tanh(x / limit)**2` from one primitive with two outputs.

Everything here uses the public extension API (`plax.extend.*`) and public `plax`
modules, as any package outside plax would; README.md walks through it.
"""
from __future__ import annotations

import numpy as np

from plax import lax
from plax.extend.ad import Zero, defjvp, tangent_aval
from plax.extend.constructors import FLOAT, check_dtype, elementwise_lowering, unary
from plax.extend.core import Primitive, ShapedArray
from plax.extend.mlir import hlo, mu

__all__ = ["softclip", "softclip_p", "softclip_with_slope", "softclip_with_slope_p"]


def _check_limit(limit) -> float:
    limit = float(limit)
    if not limit > 0:
        raise ValueError(f"softclip: limit must be positive, got {limit}")
    return limit


# --- softclip: an elementwise primitive in one statement ---------------------------------

def _softclip_lower(ctx, x, *, limit):
    lim = mu.splat(limit, ctx.avals_out[0])
    return hlo.multiply(lim, hlo.tanh(hlo.divide(x, lim)))


softclip_p = unary(
    "softclip.softclip", dtypes=FLOAT, lower=elementwise_lowering(_softclip_lower),
    # d/dx limit*tanh(x/limit) = 1 - tanh(x/limit)**2 = 1 - (ans/limit)**2
    jvp=defjvp(lambda g, ans, x, *, limit: lax.mul(g, _slope_from_value(ans, limit))))


def _slope_from_value(ans, limit: float):
    scaled = lax.div(ans, np.asarray(limit, ans.dtype))
    return lax.sub(np.asarray(1, ans.dtype), lax.mul(scaled, scaled))


def softclip(x, limit: float = 1.0):
    """`limit * tanh(x / limit)`, elementwise, for floating `x`."""
    return softclip_p.bind(x, limit=_check_limit(limit))


# --- softclip_with_slope: two outputs, every rule written out ------------------------------

softclip_with_slope_p = Primitive("softclip.softclip_with_slope", multiple_results=True,
                                  dtypes=FLOAT)


@softclip_with_slope_p.def_abstract_eval
def _with_slope_abstract_eval(x: ShapedArray, *, limit: float) -> list[ShapedArray]:
    check_dtype("softclip_with_slope", x, FLOAT)
    return [x, x]


@softclip_with_slope_p.def_lowering
def _with_slope_lower(ctx, x, *, limit):
    aval = ctx.avals_out[0]
    lim, one = mu.splat(limit, aval), mu.splat(1, aval)
    t = hlo.tanh(hlo.divide(x, lim))
    return [hlo.multiply(lim, t), hlo.subtract(one, hlo.multiply(t, t))]


@softclip_with_slope_p.def_jvp
def _with_slope_jvp(primals, tangents, *, limit):
    (x,), (g,) = primals, tangents
    value, slope = softclip_with_slope_p.bind(x, limit=limit)
    if isinstance(g, Zero):
        return [value, slope], [Zero(tangent_aval(g.aval))] * 2
    # d(slope)/dx = -2 tanh(x/limit) slope / limit = -2 value slope / limit**2
    curvature = lax.mul(lax.mul(value, slope), np.asarray(-2 / limit**2, value.dtype))
    return [value, slope], [lax.mul(g, slope), lax.mul(g, curvature)]


@softclip_with_slope_p.def_batching
def _with_slope_batching(axis_data, args, dims, *, limit):
    # Elementwise: each output is batched where the operand is.
    (x,), (d,) = args, dims
    return softclip_with_slope_p.bind(x, limit=limit), [d, d]


def softclip_with_slope(x, limit: float = 1.0):
    """`(softclip(x, limit), its derivative at x)`, from one primitive."""
    value, slope = softclip_with_slope_p.bind(x, limit=_check_limit(limit))
    return value, slope

"""Cumulative reductions along one axis: `cumsum`, `cumprod`, `cummax`, `cummin`,
`cumlogsumexp`, each optionally from the end (`reverse=True`).

They lower to a `reduce_window` whose window spans the whole axis, padded so that
element i sees elements 0..i (or i..n-1 when reversed).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from plax.extend.ad import PrimitiveRule, Zero, defjvp, linear_jvp
from plax.extend.batching import axes_batcher
from plax.extend.constructors import (
    FLOAT,
    NUMBER,
    ORDERED,
    canonicalize_axis,
    check_dtype,
    standard_primitive,
)
from plax.extend.core import get_aval
from plax.extend.mlir import hlo, mu
from plax_stdlib.lax.elementwise import add, exp, max, min, mul, neg, picked
from plax_stdlib.lax.reduce_window import lower_reduce_window
from plax_stdlib.lax.reductions import highest_value, lowest_value
from plax_stdlib.lax.windows import Window


def _logaddexp(dtype):
    """log(e**a + e**b), exact when a == b == ±inf, and NaN-propagating."""
    def combine(a, b):
        delta = hlo.subtract(a, b)  # NaN when a and b are the same infinity
        softplus = hlo.log_plus_one(hlo.exponential(hlo.negate(hlo.abs(delta))))
        return hlo.select(mu.is_nan(delta, dtype), hlo.add(a, b),
                          hlo.add(hlo.maximum(a, b), softplus))
    return combine


def _cumulative(name: str, kinds: frozenset, combine: Callable[[np.dtype], Callable],
                identity: Callable, **rules: Callable):
    def abstract_eval(operand, *, axis, reverse):
        check_dtype(name, operand, kinds)
        if not 0 <= axis < operand.ndim:
            raise ValueError(f"{name}: axis {axis} out of range for an operand of rank "
                             f"{operand.ndim}")
        return operand

    def lower(ctx, operand, *, axis, reverse):
        aval = ctx.avals_in[0]
        n = aval.shape[axis]
        if n == 0:
            return operand
        ones, unpadded = (1,) * aval.ndim, ((0, 0),) * aval.ndim

        def on_axis(values, value):
            return values[:axis] + (value,) + values[axis + 1:]
        window = Window(on_axis(ones, n), ones,
                        on_axis(unpadded, (0, n - 1) if reverse else (n - 1, 0)), ones, ones)
        init = mu.dense_constant(identity(aval.dtype), aval.dtype)
        pair = combine(aval.dtype)
        return lower_reduce_window(ctx, [operand], [init], window,
                                   lambda acc, x: [pair(acc, x)])[0]

    lower.__name__ = f"lower_{name}"
    return standard_primitive(f"lax.{name}", abstract_eval, lower, dtypes=kinds,
                              batching=axes_batcher("axis"), **rules)


cumsum_p = _cumulative(
    "cumsum", NUMBER, lambda dt: hlo.add, lambda dt: 0, jvp=linear_jvp(),
    transpose=lambda ct, x, *, axis, reverse: [cumsum_p.bind(ct, axis=axis,
                                                             reverse=not reverse)])


class _pair_scan_jvp(PrimitiveRule):
    """A jvp rule that scans (value, tangent) pairs with `combine_pairs`, the operation's
    product rule: exact at zeros of the operand (no division) and at ties, and
    differentiable again, since `associative_scan` is made of ordinary primitives."""

    def __init__(self, combine_pairs: Callable):
        self.combine_pairs = combine_pairs

    def for_primitive(self, prim) -> Callable:
        def jvp(primals, tangents, *, axis, reverse):
            from plax_stdlib.lax.control_flow.associative_scan import associative_scan
            (x,), (t,) = primals, tangents
            ans = prim.bind(x, axis=axis, reverse=reverse)
            if isinstance(t, Zero) or get_aval(x).shape[axis] == 0:
                return ans, t
            _, t_out = associative_scan(self.combine_pairs, (x, t), reverse=reverse,
                                        axis=axis)
            return ans, t_out
        jvp.__name__ = f"{prim.name}_jvp"
        return jvp


def _product_pairs(a, b):
    (p, tp), (q, tq) = a, b
    return mul(p, q), add(mul(tp, q), mul(p, tq))


def _extremum_pairs(pick):
    def combine(a, b):
        (p, tp), (q, tq) = a, b
        m = pick(p, q)
        return m, add(mul(tp, picked(p, q, m)), mul(tq, picked(q, p, m)))
    return combine


cumprod_p = _cumulative("cumprod", NUMBER, lambda dt: hlo.multiply, lambda dt: 1,
                        jvp=_pair_scan_jvp(_product_pairs))
cummax_p = _cumulative("cummax", ORDERED, lambda dt: hlo.maximum, lowest_value,
                       jvp=_pair_scan_jvp(_extremum_pairs(max)))
cummin_p = _cumulative("cummin", ORDERED, lambda dt: hlo.minimum, highest_value,
                       jvp=_pair_scan_jvp(_extremum_pairs(min)))
cumlogsumexp_p = _cumulative(
    "cumlogsumexp", FLOAT, _logaddexp, lowest_value,
    jvp=defjvp(lambda g, ans, x, *, axis, reverse:
               mul(exp(neg(ans)), cumsum_p.bind(mul(g, exp(x)), axis=axis, reverse=reverse))))


def _cumulative_fn(prim, what: str, result: str, reversed_result: str):
    """The public function of a cumulative reduction: `what` it computes, and the
    printed results of the example forward and reversed."""
    def cumulative(operand, axis: int = 0, reverse: bool = False):
        axis = canonicalize_axis(prim.name, axis, get_aval(operand).ndim, negative=False)
        return prim.bind(operand, axis=axis, reverse=bool(reverse))
    cumulative.__name__ = prim.name
    cumulative.__doc__ = f"""The running {what} of `operand` along `axis` (inclusive: element i
    combines elements 0..i).

    Args:
        operand: an array.
        axis: the dimension to accumulate along, in [0, ndim).
        reverse: accumulate from the last element to the first.

    Returns:
        An array of `operand`'s shape and dtype.

    Raises:
        ValueError: `axis` is out of range (`numpy.exceptions.AxisError`).

    Examples:
        >>> import plax.numpy as jnp
        >>> x = jnp.array([1.0, 3.0, 2.0, 4.0])
        >>> plax.lax.{prim.name}(x)
        {result}
        >>> plax.lax.{prim.name}(x, reverse=True)
        {reversed_result}
    """
    return cumulative


cumsum = _cumulative_fn(cumsum_p, "sum", "Array([ 1., 4., 6., 10.], dtype=float32)",
                        "Array([10., 9., 6., 4.], dtype=float32)")
cumprod = _cumulative_fn(cumprod_p, "product", "Array([ 1., 3., 6., 24.], dtype=float32)",
                         "Array([24., 24., 8., 4.], dtype=float32)")
cummax = _cumulative_fn(cummax_p, "maximum", "Array([1., 3., 3., 4.], dtype=float32)",
                        "Array([4., 4., 4., 4.], dtype=float32)")
cummin = _cumulative_fn(cummin_p, "minimum", "Array([1., 1., 1., 1.], dtype=float32)",
                        "Array([1., 2., 2., 4.], dtype=float32)")
cumlogsumexp = _cumulative_fn(cumlogsumexp_p, "log of the sum of exponentials",
                              "Array([1. , 3.1269..., 3.4076..., 4.4401...], dtype=float32)",
                              "Array([4.4401..., 4.4076..., 4.1269..., 4. ], dtype=float32)")

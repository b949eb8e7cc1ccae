"""Comparisons, and choosing between values: `eq`...`ge`, `select_n`, `clamp`.

Floats compare as IEEE does (NaN is unordered); complex numbers only compare for
(in)equality.
"""
from __future__ import annotations

import numpy as np

from plax.extend.ad import (
    Zero,
    defjvp,
    instantiate,
    is_undefined_primal,
    tangent_aval,
    zeros_like_aval,
)
from plax.extend.batching import full_shape_batcher
from plax.extend.constructors import (
    ANY,
    BOOL,
    EXTENDED,
    ORDERED,
    check_dtype,
    check_same_dtypes,
    describe,
    elementwise_lowering,
    standard_primitive,
    to_bool,
    weak_result,
)
from plax.extend.core import ShapedArray, get_aval
from plax.extend.mlir import hlo, mu
from plax_stdlib.lax.bitwise import bitwise_and as and_
from plax_stdlib.lax.conversion import match_python_scalars
from plax_stdlib.lax.elementwise import mul
from plax_stdlib.lax.op_table import binary_op


def _compare(direction: str):
    @elementwise_lowering
    def compare(ctx, x, y):
        return mu.compare(x, y, direction, ctx.avals_in[0].dtype)

    def lower(ctx, x, y):
        if mu.element_shape(ctx.avals_in[0]):  # PRNG keys (== and != only)
            return _compare_element_data(ctx, x, y, direction)
        return compare(ctx, x, y)
    lower.__name__ = f"lower_{direction.lower()}"
    return lower


def _compare_element_data(ctx, x, y, direction: str):
    """== or != of extended-dtype elements (PRNG keys): all (any) of their data words."""
    out = ctx.avals_out[0]
    data = mu.physical_aval(ShapedArray(out.shape, ctx.avals_in[0].dtype))
    trailing = mu.element_dims(ShapedArray(out.shape, ctx.avals_in[0].dtype))
    x, y = (hlo.broadcast_in_dim(mu.ir_type(data), v, [*range(a.ndim), *trailing])
            for v, a in zip((x, y), ctx.avals_in))
    words = mu.compare(x, y, direction, data.dtype)
    combine = hlo.and_ if direction == "EQ" else hlo.or_
    (result,) = mu.reduce([words], [mu.dense_constant(direction == "EQ")], [out],
                          trailing, lambda a, b: [combine(a, b)])
    return result


eq_p, eq = binary_op(
    "eq", ANY | EXTENDED, _compare("EQ"), "Elementwise x == y.", result_dtype=to_bool,
    example=("lax.eq(jnp.array([1, 2, 3]), 2)",
             "Array([False, True, False], dtype=bool)"))
ne_p, ne = binary_op(
    "ne", ANY | EXTENDED, _compare("NE"), "Elementwise x != y (True where either is NaN).",
    result_dtype=to_bool,
    example=("lax.ne(jnp.array([1.0, jnp.nan]), jnp.array([1.0, jnp.nan]))",
             "Array([False, True], dtype=bool)"))
lt_p, lt = binary_op(
    "lt", ORDERED, _compare("LT"), "Elementwise x < y.", result_dtype=to_bool,
    example=("lax.lt(jnp.array([1, 2, 3]), 2)",
             "Array([ True, False, False], dtype=bool)"))
le_p, le = binary_op(
    "le", ORDERED, _compare("LE"), "Elementwise x <= y.", result_dtype=to_bool,
    example=("lax.le(jnp.array([1, 2, 3]), 2)",
             "Array([ True, True, False], dtype=bool)"))
gt_p, gt = binary_op(
    "gt", ORDERED, _compare("GT"), "Elementwise x > y.", result_dtype=to_bool,
    example=("lax.gt(jnp.array([1, 2, 3]), 2)",
             "Array([False, False, True], dtype=bool)"))
ge_p, ge = binary_op(
    "ge", ORDERED, _compare("GE"), "Elementwise x >= y.", result_dtype=to_bool,
    example=("lax.ge(jnp.array([1, 2, 3]), 2)",
             "Array([False, True, True], dtype=bool)"))


# --- select_n -----------------------------------------------------------------------------

def _select_n_abstract_eval(which, *cases):
    if not cases:
        raise TypeError("select_n requires at least one case")
    dtype = check_same_dtypes("select_n", *cases)
    if any(c.shape != cases[0].shape for c in cases[1:]):
        raise TypeError("select_n requires all cases to have the same shape, got "
                        f"{', '.join(map(describe, cases))}")
    if which.dtype != np.dtype(bool) and not np.issubdtype(which.dtype, np.integer):
        raise TypeError(f"select_n requires `which` to be bool or an integer, got "
                        f"{describe(which)}")
    if which.shape and which.shape != cases[0].shape:
        raise TypeError(f"select_n requires `which` to be a scalar or to have the cases' "
                        f"shape, got which {describe(which)} and cases {describe(cases[0])}")
    if which.dtype == np.dtype(bool) and len(cases) > 2:
        raise TypeError(f"select_n with a bool `which` takes at most 2 cases, got {len(cases)}")
    return ShapedArray(cases[0].shape, dtype, weak_result(cases, dtype))


def _select_n_lower(ctx, which, *cases):
    which_aval, out = ctx.avals_in[0], mu.physical_aval(ctx.avals_out[0])
    if which_aval.shape and which_aval.shape != out.shape:  # keys: pick whole elements
        which = mu.broadcast_in_dim(which, out.shape, list(range(which_aval.ndim)))
    which = mu.broadcast_to(which, out)

    def choose(offset: int, cases) -> object:
        """The case picked by `which` among `cases`, which start at index `offset`."""
        if len(cases) == 1:
            return cases[0]
        mid = len(cases) // 2
        if which_aval.dtype == np.dtype(bool):
            pick_high = which
        else:
            pick_high = mu.compare(
                which, mu.splat(offset + mid, out.update(dtype=which_aval.dtype)), "GE",
                which_aval.dtype)
        return hlo.select(pick_high, choose(offset + mid, cases[mid:]),
                          choose(offset, cases[:mid]))

    return choose(0, cases)


def _select_n_jvp(primals, tangents):
    which, *cases = primals
    ans = select_n_p.bind(which, *cases)
    if all(isinstance(t, Zero) for t in tangents[1:]):
        return ans, Zero(tangent_aval(get_aval(ans)))
    return ans, select_n_p.bind(which, *(instantiate(t) for t in tangents[1:]))


def _select_n_transpose(ct, which, *cases):
    zeros = zeros_like_aval(ct.aval if isinstance(ct, Zero) else get_aval(ct))
    return [None] + [select_n_p.bind(which, *(ct if j == i else zeros for j in range(len(cases))))
                     if is_undefined_primal(case) else None for i, case in enumerate(cases)]


select_n_p = standard_primitive("lax.select_n", _select_n_abstract_eval, _select_n_lower,
                                jvp=_select_n_jvp, transpose=_select_n_transpose,
                                batching=full_shape_batcher(scalar_ok=(0,)))


def select_n(which, *cases):
    """Picks elementwise among several cases by an index: `cases[which]`.

    Args:
        which: a bool array (with two cases: False picks `cases[0]`) or an
            integer array of the cases' shape, or a scalar.
        *cases: arrays of one shape and dtype.

    Returns:
        An array of the cases' shape and dtype. An index outside
        `[0, len(cases))` gives an unspecified case.

    Raises:
        TypeError: no cases, cases of different shapes or dtypes, or `which` of
            the wrong dtype or shape.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> which = jnp.array([0, 2, 1], jnp.int32)
        >>> lax.select_n(which, jnp.zeros(3), jnp.ones(3), jnp.full(3, 2.0))
        Array([0., 2., 1.], dtype=float32)
    """
    return select_n_p.bind(which, *match_python_scalars("select_n", *cases))


def select(pred, on_true, on_false):
    """Picks elementwise from `on_true` where `pred` is true, else from `on_false`.

    Both branches are computed; to run only one, use `lax.cond`.

    Args:
        pred: a bool array of the cases' shape, or a bool scalar.
        on_true: an array.
        on_false: an array of `on_true`'s shape and dtype.

    Returns:
        An array of `on_true`'s shape and dtype.

    Raises:
        TypeError: `pred` is not bool, or the cases' shapes or dtypes differ.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> x = jnp.array([-1.0, 2.0])
        >>> lax.select(x > 0, x, jnp.zeros(2))
        Array([0., 2.], dtype=float32)
    """
    pred_aval = get_aval(pred)
    check_dtype("select", pred_aval, BOOL, what="pred")
    return select_n(pred, on_false, on_true)


# --- clamp --------------------------------------------------------------------------------

def _clamp_abstract_eval(min, operand, max):  # noqa: A002 - lax's names
    check_dtype("clamp", operand, ORDERED)
    check_same_dtypes("clamp", min, operand, max)
    for what, bound in (("min", min), ("max", max)):
        if bound.shape and bound.shape != operand.shape:
            raise TypeError(f"clamp requires {what} to be a scalar or to have the operand's "
                            f"shape, got {what} {describe(bound)} and operand "
                            f"{describe(operand)}")
    return operand.update(weak_type=weak_result((min, operand, max), operand.dtype))


def _clamp_inside(lo, x, hi):
    from plax_stdlib.lax.conversion import convert_element_type
    return convert_element_type(and_(ge(x, lo), le(x, hi)), x.dtype)


clamp_p = standard_primitive(
    "lax.clamp", _clamp_abstract_eval, lambda ctx, lo, x, hi: hlo.clamp(lo, x, hi),
    jvp=defjvp(lambda g, ans, lo, x, hi: mul(g, _as_dtype_of(lt(x, lo), x)),
               lambda g, ans, lo, x, hi: mul(g, _clamp_inside(lo, x, hi)),
               lambda g, ans, lo, x, hi: mul(g, _as_dtype_of(gt(x, hi), x))),
    batching=full_shape_batcher(scalar_ok=(0, 2)))


def _as_dtype_of(pred, x):
    from plax_stdlib.lax.conversion import convert_element_type
    return convert_element_type(pred, x.dtype)


def clamp(min, x, max):  # noqa: A002 - lax's names
    """Limits `x` to the range [`min`, `max`] elementwise.

    Note the argument order: the bounds surround `x`.

    Args:
        min: the lower bound, an array of `x`'s shape or a scalar.
        x: an array.
        max: the upper bound, an array of `x`'s shape or a scalar.

    Returns:
        An array of `x`'s shape and dtype.

    Raises:
        TypeError: the dtypes differ, or a bound's shape is neither `x`'s nor
            scalar.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.clamp(0.0, jnp.array([-1.0, 0.5, 3.0]), 1.0)
        Array([0. , 0.5, 1. ], dtype=float32)
    """
    x, min, max = match_python_scalars("clamp", x, min, max, strict=True)
    return clamp_p.bind(min, x, max)

"""`select_and_scatter`: StableHLO's general windowed select-then-scatter, of which
`select_and_scatter_add` (the gradient of max pooling) is the case `select=ge`,
`scatter=add`.

Each window of `operand` picks one element with `select(a, b)` (True keeps `a`);
the result, of `operand`'s shape, starts at `init_value` everywhere and combines
`source[o]` into the element window `o` picked with `scatter(accumulated, new)`.
The primitive's operands are `operand`, `source` and the scalar `init_value`; its
`select_jaxpr` (two scalars of `operand`'s dtype to a bool) and `scatter_jaxpr`
(two scalars of `source`'s to one) are closed Jaxprs. As in JAX it has no
derivative; it batches with a unit window over the batch dimension.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from plax.extend import tree_util
from plax.extend.batching import move_to, not_mapped
from plax.extend.constructors import describe
from plax.extend.core import BATCHING, ClosedJaxpr, Primitive, ShapedArray, get_aval
from plax.extend.mlir import hlo, ir, mu
from plax_stdlib.lax.reduce_window import reducer_jaxpr
from plax_stdlib.lax.control_flow.common import trace_function
from plax_stdlib.lax.windows import Window, check_window, normalize_padding

select_and_scatter_p = Primitive("lax.select_and_scatter")


def select_and_scatter(operand, select: Callable, window_dimensions: Sequence[int],
                       window_strides: Sequence[int], padding, source, init_value,
                       scatter: Callable):
    """`source` scattered with `scatter` onto the element of each window of `operand`
    that `select` picks, over a result of `operand`'s shape filled with `init_value`
    (JAX's argument order)."""
    x_aval, s_aval = get_aval(operand), get_aval(source)
    ndim = len(x_aval.shape)
    select_jaxpr = _select_jaxpr(select, x_aval.dtype)
    scatter_jaxpr = reducer_jaxpr(scatter, [ShapedArray((), s_aval.dtype)],
                                  tree_util.tree_structure(0), "select_and_scatter scatter")
    return select_and_scatter_p.bind(
        operand, source, init_value, select_jaxpr=select_jaxpr, scatter_jaxpr=scatter_jaxpr,
        window_dimensions=tuple(map(int, window_dimensions)),
        window_strides=tuple(map(int, window_strides)),
        padding=normalize_padding("select_and_scatter", padding, ndim))


def _select_jaxpr(select: Callable, dtype):
    if not callable(select):
        raise TypeError(f"select_and_scatter: select must be callable, got {select!r}")
    scalar = ShapedArray((), dtype)
    opened, consts, _ = trace_function(select, (scalar, scalar), "select_and_scatter select")
    outs = opened.out_avals
    if len(outs) != 1 or outs[0].shape != () or np.dtype(outs[0].dtype) != np.bool_:
        raise TypeError(f"select_and_scatter: select must return one bool scalar, got "
                        f"{[describe(a) for a in outs]}")
    return _closed(opened, consts)


def _closed(opened, consts):
    """A traced function's Jaxpr with its constants closed over again."""
    jaxpr = opened.jaxpr
    n = len(consts)
    return ClosedJaxpr(jaxpr.replace(constvars=jaxpr.invars[:n], invars=jaxpr.invars[n:]),
                       list(consts))


def _window(window_dimensions, window_strides, padding) -> Window:
    ones = (1,) * len(window_dimensions)
    return Window(window_dimensions, window_strides, padding, ones, ones)


@select_and_scatter_p.def_abstract_eval
def _abstract_eval(operand, source, init_value, *, select_jaxpr, scatter_jaxpr,
                   window_dimensions, window_strides, padding):
    if source.dtype != init_value.dtype or init_value.shape != ():
        raise TypeError(f"select_and_scatter: init_value must be a scalar of the source's "
                        f"dtype, got source {describe(source)} and init_value "
                        f"{describe(init_value)}")
    x_scalar, s_scalar = ShapedArray((), operand.dtype), ShapedArray((), source.dtype)
    if [(a.dtype, a.shape) for a in select_jaxpr.in_avals] != [(x_scalar.dtype, ())] * 2:
        raise TypeError(f"select_and_scatter: select takes "
                        f"{[describe(a) for a in select_jaxpr.in_avals]}, but the operand is "
                        f"{describe(operand)}")
    if [(a.dtype, a.shape) for a in scatter_jaxpr.in_avals] != [(s_scalar.dtype, ())] * 2:
        raise TypeError(f"select_and_scatter: scatter takes "
                        f"{[describe(a) for a in scatter_jaxpr.in_avals]}, but the source is "
                        f"{describe(source)}")
    window = _window(window_dimensions, window_strides, padding)
    expected = check_window("select_and_scatter", operand.shape, window)
    if tuple(source.shape) != tuple(expected):
        raise TypeError(f"select_and_scatter: the source must have the shape of the windows "
                        f"of the operand {describe(operand)}, {expected}; got "
                        f"{describe(source)}")
    return ShapedArray(operand.shape, source.dtype, source.weak_type)


@select_and_scatter_p.def_lowering
def _lower(ctx, operand, source, init_value, *, select_jaxpr, scatter_jaxpr,
           window_dimensions, window_strides, padding):
    x_aval, s_aval, _ = ctx.avals_in
    op = hlo.SelectAndScatterOp(
        mu.ir_type(ctx.avals_out[0]), operand, source, init_value,
        window_dimensions=list(window_dimensions), window_strides=list(window_strides),
        padding=ir.DenseIntElementsAttr.get(
            np.asarray(padding, np.int64).reshape(len(window_dimensions), 2)))
    x_scalar, s_scalar = ShapedArray((), x_aval.dtype), ShapedArray((), s_aval.dtype)
    mu.build_region(op.select, [x_scalar, x_scalar],
                    lambda a, b: ctx.lower_inline(select_jaxpr, a, b, name="select"))
    mu.build_region(op.scatter, [s_scalar, s_scalar],
                    lambda a, b: ctx.lower_inline(scatter_jaxpr, a, b, name="scatter"))
    return op.result


def _batching(axis_data, args, dims, *, window_dimensions, window_strides, padding, **jaxprs):
    operand, source, init_value = args
    if dims[2] is not_mapped:
        operand, source = (move_to(x, d, 0, axis_data.size)
                           for x, d in zip(args[:2], dims[:2]))
        out = select_and_scatter_p.bind(
            operand, source, init_value, window_dimensions=(1, *window_dimensions),
            window_strides=(1, *window_strides), padding=((0, 0), *padding), **jaxprs)
        return out, 0
    # An initial value per batch member: one select_and_scatter per member, in a loop.
    from plax_stdlib.lax.control_flow import map as lax_map
    stacked = [move_to(x, d, 0, axis_data.size) for x, d in zip(args, dims)]
    return lax_map(lambda members: select_and_scatter_p.bind(
        *members, window_dimensions=window_dimensions, window_strides=window_strides,
        padding=padding, **jaxprs), stacked), 0


select_and_scatter_p.define_rule(BATCHING, _batching)

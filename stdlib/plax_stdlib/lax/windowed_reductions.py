"""Windowed reductions: `lax.reduce_window` and the primitives for the monoids
(`reduce_window_sum`, `reduce_window_max`, `reduce_window_min`), with the two
primitives that differentiate max/min pooling: `select_and_gather_add` (the tangent
at the element each window selected) and its transpose `select_and_scatter_add`
(cotangents added back at those elements).

`reduce_window` binds a monoid primitive when it reduces one operand with `add`,
`max` or `min` from that monoid's identity; any other reduction (products, logical
and/or, variadic reductions such as a (value, index) argmax, any traceable
function) binds the generic `reduce_window` primitive (see `reduce_window.py`).
"""
from __future__ import annotations

import functools

import numpy as np

from plax.extend import tree_util
from plax.extend.ad import defjvp, linear_jvp, transpose_jaxpr
from plax.extend.batching import common_dim, move_to
from plax.extend.constructors import (
    NUMBER,
    ORDERED,
    check_dtype,
    describe,
    kind_of,
    standard_primitive,
)
from plax.extend.core import ShapedArray, eval_jaxpr, get_aval, stage_flat
from plax.extend.mlir import hlo, ir, mu
from plax_stdlib.lax import comparison, conversion, elementwise, reductions, shape_ops, slicing
from plax_stdlib.lax.control_flow.common import cached_on_jaxpr
from plax_stdlib.lax.reduce_window import (
    lower_reduce_window,
    reduce_window_p,
    reducer_jaxpr,
    window_coefficients,
    windowed_tangent,
)
from plax_stdlib.lax.windows import Window, check_window, make_window, transpose_padding


def _window_of(params) -> Window:
    """The window among a primitive's parameters (unit dilations if it has none)."""
    ones = (1,) * len(params["window_dimensions"])
    return Window(params["window_dimensions"], params["window_strides"], params["padding"],
                  params.get("base_dilation", ones), params.get("window_dilation", ones))


def _with_window(params, window: Window) -> dict:
    """`params` with the window parameters they have taken from `window`."""
    return {**params, **{k: v for k, v in window._asdict().items() if k in params}}


def _batching(prim):
    """Operands batched at one position; the window gets a unit dimension there."""
    def rule(axis_data, args, dims, **params):
        args, d = common_dim(list(args), dims, axis_data.size)
        window = _window_of(params).with_unit_dim(d)
        return prim.bind(*args, **_with_window(params, window)), d
    return rule


# --- the monoids -----------------------------------------------------------------------------

def _monoid(name: str, kinds: frozenset, combine: str, identity, **rules):
    def abstract_eval(operand, **window):
        check_dtype(name, operand, kinds)
        shape = check_window(name, operand.shape, Window(**window))
        return ShapedArray(shape, operand.dtype, operand.weak_type)

    def lower(ctx, operand, **window):
        dtype = ctx.avals_in[0].dtype
        init = mu.dense_constant(identity(dtype), dtype)
        return lower_reduce_window(ctx, [operand], [init], Window(**window),
                                   lambda acc, x: [getattr(hlo, combine)(acc, x)])[0]

    lower.__name__ = f"lower_{name}"
    prim = standard_primitive(f"lax.{name}", abstract_eval, lower, **rules)
    prim.def_batching(_batching(prim))
    return prim


def _sum_transpose(ct, operand, **params):
    """A window sum's cotangent: the cotangent spread back over each window, i.e. a
    window sum of the stride-dilated, padded cotangent at strides `base_dilation`."""
    window = Window(**params)
    in_shape = operand.aval.shape
    ndim = len(in_shape)
    pads = transpose_padding(in_shape, window, get_aval(ct).shape)
    spread = shape_ops.pad(ct, np.zeros((), get_aval(ct).dtype)[()],
                           [(lo, hi, s - 1) for (lo, hi), s in zip(pads, window.window_strides)])
    back = Window(window.window_dimensions, window.base_dilation, ((0, 0),) * ndim,
                  (1,) * ndim, window.window_dilation)
    return [reduce_window_sum_p.bind(spread, **back._asdict())]


def _extremum_jvp(select_prim):
    return defjvp(lambda g, ans, x, **params: select_and_gather_add_p.bind(
        g, x, select_prim=select_prim, **params))


reduce_window_sum_p = _monoid("reduce_window_sum", NUMBER, "add", lambda dt: 0,
                              jvp=linear_jvp(), transpose=_sum_transpose)
reduce_window_max_p = _monoid("reduce_window_max", ORDERED, "maximum", reductions.lowest_value,
                              jvp=_extremum_jvp(comparison.ge_p))
reduce_window_min_p = _monoid("reduce_window_min", ORDERED, "minimum",
                              reductions.highest_value, jvp=_extremum_jvp(comparison.le_p))


# --- select_and_gather_add ----------------------------------------------------------------

_DIRECTIONS = {comparison.ge_p: "GE", comparison.le_p: "LE"}


def _select_identity(select_prim, dtype):
    """The value a window never selects: the lowest for max (ge), highest for min."""
    return (reductions.lowest_value(dtype) if select_prim is comparison.ge_p
            else reductions.highest_value(dtype))


def _check_select(name: str, select_prim):
    if select_prim not in _DIRECTIONS:
        raise ValueError(f"{name}: select_prim must be lax.ge_p or lax.le_p, got "
                         f"{select_prim!r}")


def _gather_abstract_eval(tangents, operand, *, select_prim, **window):
    name = "select_and_gather_add"
    _check_select(name, select_prim)
    check_dtype(name, operand, ORDERED)
    if tangents.shape != operand.shape:
        raise TypeError(f"{name} tangents and operand shapes must match, got "
                        f"{describe(tangents)} and {describe(operand)}.")
    shape = check_window(name, operand.shape, Window(**window))
    return ShapedArray(shape, tangents.dtype, tangents.weak_type)


def _gather_lower(ctx, tangents, operand, *, select_prim, **window):
    """A reduction of (operand, tangent) pairs keeping the pair whose operand the
    comparison selects (the first of equals, as `select_and_scatter` chooses)."""
    t_aval, x_aval = ctx.avals_in
    inits = [mu.dense_constant(_select_identity(select_prim, x_aval.dtype), x_aval.dtype),
             mu.dense_constant(0, t_aval.dtype)]
    out = ctx.avals_out[0]
    direction = _DIRECTIONS[select_prim]

    def body(acc_x, acc_t, x, t):
        keep = mu.compare(acc_x, x, direction, x_aval.dtype)
        return [hlo.select(keep, acc_x, x), hlo.select(keep, acc_t, t)]

    return lower_reduce_window(ctx, [operand, tangents], inits, Window(**window), body,
                               [out.update(dtype=x_aval.dtype), out])[1]


@cached_on_jaxpr
def _picked_transpose(reducer, init, x_aval, t_aval, ct_aval, window: Window):
    """The transpose, with respect to `t`, of the tangent at `x` of the windowed
    reduction by `reducer` from `init`: a Jaxpr `(x, ct) -> ct_t` (for the windows
    `select_and_scatter` cannot express: dilated ones)."""
    def tangent(x, t):
        init_value = np.asarray(init, x_aval.dtype)[()]
        coefficients = window_coefficients([x], [init_value], reducer, window, [0])
        return windowed_tangent(coefficients, {0: t}, window, [ct_aval])
    linear = stage_flat(tangent, [x_aval, t_aval])
    return transpose_jaxpr(linear, [False, True])


@functools.cache
def _selector_jaxpr(select_prim, dtype):
    """The reducer `select(a <cmp> b, a, b)`, which keeps the first of equals."""
    compare = comparison.ge if select_prim is comparison.ge_p else comparison.le
    return reducer_jaxpr(lambda a, b: comparison.select(compare(a, b), a, b),
                         [ShapedArray((), dtype)], tree_util.tree_structure(0))


def _gather_transpose(ct, tangents, operand, *, select_prim, **params):
    window = Window(**params)
    ndim = len(window.window_dimensions)
    dtype = get_aval(operand).dtype
    if any(r != 1 for r in window.window_dilation):
        reducer = _selector_jaxpr(select_prim, np.dtype(dtype))
        init = _select_identity(select_prim, dtype)
        transposed = _picked_transpose(reducer, init,
                                       ShapedArray(get_aval(operand).shape, dtype),
                                       ShapedArray(tangents.aval.shape, tangents.aval.dtype),
                                       ShapedArray(get_aval(ct).shape, get_aval(ct).dtype),
                                       window)
        return [eval_jaxpr(transposed.jaxpr, transposed.consts, operand, ct)[0], None]
    if any(b != 1 for b in window.base_dilation):
        # Holes between the operand's elements hold a value no window selects.
        hole = np.asarray(_select_identity(select_prim, dtype), dtype)[()]
        dilated = shape_ops.pad(operand, hole, [(0, 0, b - 1) for b in window.base_dilation])
        out = select_and_scatter_add_p.bind(ct, dilated, select_prim=select_prim,
                                            window_dimensions=window.window_dimensions,
                                            window_strides=window.window_strides,
                                            padding=window.padding)
        shape = get_aval(out).shape
        return [slicing.slice(out, (0,) * ndim, shape, window.base_dilation), None]
    return [select_and_scatter_add_p.bind(ct, operand, select_prim=select_prim,
                                          window_dimensions=window.window_dimensions,
                                          window_strides=window.window_strides,
                                          padding=window.padding), None]


select_and_gather_add_p = standard_primitive(
    "lax.select_and_gather_add", _gather_abstract_eval, _gather_lower,
    jvp=defjvp(lambda g, ans, t, x, **params: select_and_gather_add_p.bind(g, x, **params),
               None),
    transpose=_gather_transpose)
select_and_gather_add_p.def_batching(_batching(select_and_gather_add_p))


# --- select_and_scatter_add ---------------------------------------------------------------

def _scatter_abstract_eval(source, operand, *, select_prim, window_dimensions,
                           window_strides, padding):
    name = "select_and_scatter_add"
    _check_select(name, select_prim)
    check_dtype(name, operand, ORDERED)
    check_dtype(name, source, NUMBER | frozenset({"bool"}), "source")
    window = _window_of(dict(window_dimensions=window_dimensions,
                             window_strides=window_strides, padding=padding))
    shape = check_window(name, operand.shape, window)
    if source.shape != shape:
        raise TypeError(f"{name}: source {describe(source)} must have the shape {shape} of "
                        f"the windows of operand {describe(operand)}")
    return ShapedArray(operand.shape, source.dtype, source.weak_type)


def _scatter_lower(ctx, source, operand, *, select_prim, window_dimensions, window_strides,
                   padding):
    """`stablehlo.select_and_scatter` on the operand padded explicitly with a value
    never selected (XLA's CPU and GPU backends mishandle its own padding)."""
    s_aval, x_aval = ctx.avals_in
    shape = x_aval.shape
    if not shape:  # one window of one element (XLA's expander fails on rank 0)
        return source
    if not mu.is_static([*window_dimensions, *window_strides]):
        raise NotImplementedError(
            "select_and_scatter_add (the gradient of max/min pooling) needs static "
            f"window_dimensions and window_strides, got {window_dimensions} and "
            f"{window_strides}: StableHLO has no dynamic select_and_scatter")
    hole = mu.dense_constant(_select_identity(select_prim, x_aval.dtype), x_aval.dtype)
    lo, hi = [p[0] for p in padding], [p[1] for p in padding]
    padded_aval = x_aval.update(shape=tuple(d + a + b for d, a, b in zip(shape, lo, hi)),
                                dtype=s_aval.dtype)
    padded = _edge_pad(operand, hole, lo, hi, padded_aval.update(dtype=x_aval.dtype))
    op = hlo.SelectAndScatterOp(
        mu.ir_type(padded_aval), padded, source, mu.dense_constant(0, s_aval.dtype),
        window_dimensions=list(window_dimensions), window_strides=list(window_strides),
        padding=ir.DenseIntElementsAttr.get(np.zeros((len(shape), 2), np.int64)))
    direction = _DIRECTIONS[select_prim]
    x_scalar, s_scalar = ShapedArray((), x_aval.dtype), ShapedArray((), s_aval.dtype)
    mu.build_region(op.select, [x_scalar, x_scalar],
                    lambda a, b: [mu.compare(a, b, direction, x_aval.dtype)])
    add = hlo.or_ if kind_of(s_aval.dtype) == "bool" else hlo.add
    mu.build_region(op.scatter, [s_scalar, s_scalar], lambda a, b: [add(a, b)])
    # Undo the padding: crop what it added, zeros where negative padding cropped.
    return _edge_pad(op.result, mu.dense_constant(0, s_aval.dtype), [-a for a in lo],
                     [-b for b in hi], ctx.avals_out[0])


def _edge_pad(x, value, lo, hi, aval_out):
    """`x` padded by `lo` before and `hi` after each dimension (negative: cropped), to
    `aval_out`; a `dynamic_pad` where a width is symbolic (shape-polymorphic export)."""
    interior = [0] * len(lo)
    if mu.is_static([*lo, *hi]):
        return hlo.pad(x, value, lo, hi, interior)
    return hlo.dynamic_pad(mu.ir_type(aval_out), x, value, mu.shape_tensor(lo),
                           mu.shape_tensor(hi), mu.shape_tensor(interior))


def _scatter_transpose(ct, source, operand, *, select_prim, window_dimensions,
                       window_strides, padding):
    ones = (1,) * len(window_dimensions)
    return [select_and_gather_add_p.bind(ct, operand, select_prim=select_prim,
                                         window_dimensions=window_dimensions,
                                         window_strides=window_strides, padding=padding,
                                         base_dilation=ones, window_dilation=ones), None]


def _scatter_batching(axis_data, args, dims, **params):
    source, operand = (move_to(x, d, 0, axis_data.size) for x, d in zip(args, dims))
    window = _window_of(params).with_unit_dim(0)
    return select_and_scatter_add_p.bind(source, operand, **_with_window(params, window)), 0


select_and_scatter_add_p = standard_primitive(
    "lax.select_and_scatter_add", _scatter_abstract_eval, _scatter_lower,
    jvp=defjvp(lambda g, ans, s, x, **params: select_and_scatter_add_p.bind(g, x, **params),
               None),
    transpose=_scatter_transpose, batching=_scatter_batching)


# --- the lax functions ----------------------------------------------------------------------

def _monoid_function(prim, what: str, result: str):
    """The public function of a windowed monoid reduction: `what` it takes of each
    window, and the printed `result` of its example."""
    def reduce_fn(operand, window_dimensions, window_strides=None, padding="VALID",
                  base_dilation=None, window_dilation=None):
        window = make_window(prim.name, get_aval(operand).shape, window_dimensions,
                             window_strides, padding, base_dilation, window_dilation)
        return prim.bind(operand, **window._asdict())
    reduce_fn.__name__ = prim.name
    reduce_fn.__doc__ = f"""The {what} of each window of `operand` (pooling).

    `reduce_window` with the built-in combining operation: windows of shape
    `window_dimensions` slide over `operand` by `window_strides`; padding adds
    elements that do not change the result.

    Args:
        operand: an array.
        window_dimensions: the window's size in each dimension.
        window_strides: the step in each dimension (default: 1s).
        padding: `"VALID"`, `"SAME"`, `"SAME_LOWER"` or a `(low, high)` pair
            per dimension.
        base_dilation: the operand's dilation per dimension.
        window_dilation: the window's dilation per dimension.

    Returns:
        The array of window results, of `operand`'s dtype.

    Examples:
        2x2 windows with stride 2:

        >>> import plax.numpy as jnp
        >>> x = jnp.arange(16.0).reshape(4, 4)
        >>> plax.lax.{prim.name}(x, (2, 2), (2, 2))
        {result}
    """
    return reduce_fn


reduce_window_sum = _monoid_function(reduce_window_sum_p, "sum",
                                     "Array([[10., 18.], [42., 50.]], dtype=float32)")
reduce_window_max = _monoid_function(reduce_window_max_p, "maximum",
                                     "Array([[ 5., 7.], [13., 15.]], dtype=float32)")
reduce_window_min = _monoid_function(reduce_window_min_p, "minimum",
                                     "Array([[ 0., 2.], [ 8., 10.]], dtype=float32)")

# A binary primitive reducing from its identity → the primitive reducing windows by it.
_MONOIDS = {elementwise.add_p: (reduce_window_sum_p, lambda dt: 0),
            elementwise.max_p: (reduce_window_max_p, reductions.lowest_value),
            elementwise.min_p: (reduce_window_min_p, reductions.highest_value)}


def scalar_init_values(flat_inits, flat_operands):
    """Initial values as arrays of their operand's dtype (Python scalars adopt it)."""
    inits = []
    for init, x in zip(flat_inits, flat_operands):
        init, _ = conversion.match_python_scalars("reduce_window", init, x)
        if get_aval(init).shape:
            raise TypeError("reduce_window expected init_values to be scalars but "
                            f"init_values have shapes {[np.shape(i) for i in flat_inits]}.")
        inits.append(init)
    return inits


def reduce_window(operand, init_value, computation, window_dimensions, window_strides=None,
                  padding="VALID", base_dilation=None, window_dilation=None):
    """Reduces each window of an array with a combining function: the general form
    of pooling.

    Windows of shape `window_dimensions` slide over `operand` with
    `window_strides`; each is reduced with `computation(accumulated, new)`
    from `init_value`. `padding` pads the operand with `init_value`.
    `base_dilation` spreads the operand's elements apart and `window_dilation`
    the window's. Differentiable in both modes when `computation` is associative
    with `init_value` as its identity.

    Args:
        operand: an array, or a pytree of arrays of one shape.
        init_value: a scalar (pytree of scalars like `operand`).
        computation: `(accumulated, new) -> combined`.
        window_dimensions: the window's size in each dimension.
        window_strides: the step in each dimension (default: 1s).
        padding: `"VALID"`, `"SAME"`, `"SAME_LOWER"` or a `(low, high)` pair
            per dimension.
        base_dilation: the operand's dilation per dimension.
        window_dilation: the window's dilation per dimension.

    Returns:
        The array of window results.

    Examples:
        2x2 max pooling with stride 2:

        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> x = jnp.arange(16.0).reshape(4, 4)
        >>> lax.reduce_window(x, -jnp.inf, lax.max, (2, 2), (2, 2))
        Array([[ 5., 7.],
               [13., 15.]], dtype=float32)
    """
    if not callable(computation):
        raise TypeError(f"reduce_window: computation must be callable, got {computation!r}")
    flat_operands, tree = tree_util.tree_flatten(operand)
    flat_inits, init_tree = tree_util.tree_flatten(init_value)
    if tree != init_tree:
        raise ValueError("Operands must have the same tree structure as init_values: "
                         f"{tree} vs. {init_tree}")
    if not flat_operands:
        raise ValueError("reduce_window must have at least one operand.")
    shape = get_aval(flat_operands[0]).shape
    window = make_window("reduce_window", shape, window_dimensions, window_strides, padding,
                         base_dilation, window_dilation)
    if len(flat_operands) == 1 and tree == tree_util.tree_structure(0):
        binary = reductions.monoid_of(computation, get_aval(flat_operands[0]).dtype)
        init = flat_inits[0]
        if binary in _MONOIDS and not get_aval(init).shape:
            prim, identity = _MONOIDS[binary]
            # As in JAX, an initial value that is the identity in its own dtype (a
            # Python -inf for max over int32) stands for the identity of the operand's.
            if reductions.is_identity(init, identity(get_aval(init).dtype)):
                return prim.bind(flat_operands[0], **window._asdict())
    inits = scalar_init_values(flat_inits, flat_operands)
    jaxpr = reducer_jaxpr(computation, [get_aval(i) for i in inits], tree)
    outs = reduce_window_p.bind(*flat_operands, *inits, jaxpr=jaxpr, **window._asdict())
    return tree_util.tree_unflatten(tree, outs)


def select_and_gather_add(tangents, operand, select_prim, window_dimensions, window_strides,
                          padding, base_dilation=None, window_dilation=None):
    """For each window of `operand`, picks the element of `tangents` where the
    comparison `select_prim` chooses `operand`'s element: the forward-mode
    derivative of max (`lax.ge_p`) or min (`lax.le_p`) pooling.

    Args:
        tangents: an array of `operand`'s shape.
        operand: the pooled array.
        select_prim: `lax.ge_p` (max pooling) or `lax.le_p` (min pooling).
        window_dimensions: the window's size per dimension.
        window_strides: the stride per dimension.
        padding: `(low, high)` pairs.
        base_dilation: the operand's dilation.
        window_dilation: the window's dilation.

    Returns:
        One tangent per window.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> x = jnp.array([1.0, 5.0, 3.0, 2.0])
        >>> t = jnp.array([10.0, 20.0, 30.0, 40.0])
        >>> lax.select_and_gather_add(t, x, lax.ge_p, (2,), (2,), [(0, 0)])
        Array([20., 30.], dtype=float32)
    """
    window = make_window("select_and_gather_add", get_aval(operand).shape, window_dimensions,
                         window_strides, padding, base_dilation, window_dilation)
    return select_and_gather_add_p.bind(tangents, operand, select_prim=select_prim,
                                        **window._asdict())


def select_and_scatter_add(source, operand, select_prim, window_dimensions, window_strides,
                           padding):
    """Adds one value per window of `operand` at the element the window's
    comparison picks, zeros elsewhere: the gradient of max or min pooling (the
    transpose of `select_and_gather_add`).

    Args:
        source: one value per window.
        operand: the pooled array.
        select_prim: `lax.ge_p` (max pooling) or `lax.le_p` (min pooling).
        window_dimensions: the window's size per dimension.
        window_strides: the stride per dimension.
        padding: `(low, high)` pairs.

    Returns:
        An array of `operand`'s shape.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> x = jnp.array([1.0, 5.0, 3.0, 2.0])
        >>> lax.select_and_scatter_add(jnp.array([1.0, 1.0]), x, lax.ge_p, (2,), (2,), [(0, 0)])
        Array([0., 1., 1., 0.], dtype=float32)
    """
    window = make_window("select_and_scatter_add", get_aval(operand).shape,
                         window_dimensions, window_strides, padding, None, None)
    return select_and_scatter_add_p.bind(source, operand, select_prim=select_prim,
                                         window_dimensions=window.window_dimensions,
                                         window_strides=window.window_strides,
                                         padding=window.padding)

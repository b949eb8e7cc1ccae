"""`reduce_window` with any reduction function, and its derivatives in both modes.

The primitive's operands are `n` arrays of one shape then their `n` scalar initial
values; `jaxpr` reduces `2n` scalars (`n` accumulated values, then `n` new ones) to
`n`. It lowers to one `stablehlo.reduce_window`, whose result StableHLO defines when
the reducer is associative with the initial values as its identity (the window's
elements are combined in order, grouped as the compiler likes).

Differentiation (JAX has forward mode only). Under jvp the windowed reduction is
linearised into coefficients over the window's elements: for window `o` and its
element `k`, `out[o] = f(f(before[o, k], x[o, k]), after[o, k])`, where `before`
and `after` reduce the elements before and after `k` (two more `reduce_window`s
over the window patches) and `f` is the user's reducer. The jvp of
`b -> f(f(before, b), after)`, obtained from the reducer's Jaxpr and vectorised over
all `(o, k)`, gives the coefficient `C[o, k]` of element `k`'s tangent (for a max
written by hand it is one-hot: the element the window picked). The output tangent is
then `sum_k C[o, k] * patches(t)[o, k]`: products and sums of slices of the tangent
over the element each window read, which transpose to scatters, so `grad`, `vjp`,
`jacrev`, `jacfwd` and higher orders all follow.
"""
from __future__ import annotations

import math

import numpy as np

from plax.extend import tree_util
from plax.extend.ad import Zero, is_differentiable_dtype, jvp_jaxpr, tangent_aval
from plax.extend.batching import AxisData, batch_jaxpr, common_dim, move_to, not_mapped
from plax.extend.constructors import describe, dtype_name, kind_of
from plax.extend.core import (BATCHING, JVP, ClosedJaxpr, Primitive, ShapedArray, Tracer,
                              dce_closed_jaxpr, eval_jaxpr, get_aval, stage_flat)
from plax.extend.mlir import hlo, ir, mu
from plax_stdlib.lax import conversion, elementwise, reductions, shape_ops
from plax_stdlib.lax.control_flow.common import cached_on_jaxpr, trace_function
from plax_stdlib.lax.windows import Window, check_window, padding_tensor, window_patches

reduce_window_p = Primitive("lax.reduce_window", multiple_results=True)


# --- tracing the reduction function -----------------------------------------------------------

def reducer_jaxpr(computation, init_avals, tree, name: str = "reduce_window") -> ClosedJaxpr:
    """`computation(accumulated, new)` (pytrees of `tree` with scalar leaves of
    `init_avals`) traced to a ClosedJaxpr of `2n` scalars to `n`; TypeError if it
    returns another structure or types, or closes over a traced value."""
    if not callable(computation):
        raise TypeError(f"{name}: computation must be callable, got {computation!r}")
    scalars = [ShapedArray((), a.dtype) for a in init_avals]
    example = tree_util.tree_unflatten(tree, scalars)
    opened, consts, out_tree = trace_function(computation, (example, example),
                                              f"{name} computation")
    if any(isinstance(c, Tracer) for c in consts):
        raise TypeError(f"{name}: the computation closes over a traced value; a reduction "
                        "function may only use its arguments and constants")
    if out_tree != tree:
        raise TypeError(f"{name}: the computation must return the structure of the operands "
                        f"{tree}, got {out_tree}")
    out_avals = opened.out_avals
    if any(o.shape != () or o.dtype != s.dtype for o, s in zip(out_avals, scalars)):
        raise TypeError(f"{name}: the computation must return scalars of the operands' "
                        f"dtypes {[describe(s) for s in scalars]}, got "
                        f"{[describe(o) for o in out_avals]}")
    jaxpr = opened.jaxpr
    n_consts = len(consts)
    dbg = jaxpr.debug_info
    if dbg is not None and dbg.arg_names is not None:
        dbg = dbg.with_arg_names(dbg.arg_names[n_consts:])
    closed = jaxpr.replace(constvars=jaxpr.invars[:n_consts], invars=jaxpr.invars[n_consts:],
                           debug_info=dbg)
    return ClosedJaxpr(closed, list(consts))


# --- the primitive ------------------------------------------------------------------------

def _abstract_eval(*avals, jaxpr, **window):
    n = len(avals) // 2
    if n == 0 or len(avals) % 2:
        raise TypeError(f"reduce_window takes operands then as many init_values, got "
                        f"{len(avals)} arguments")
    operands, inits = avals[:n], avals[n:]
    if any(o.dtype != i.dtype for o, i in zip(operands, inits)):
        raise TypeError("reduce_window got inconsistent dtypes for operands and init_values: "
                        f"got operand dtypes {[dtype_name(o.dtype) for o in operands]} and "
                        f"init_value dtypes {[dtype_name(i.dtype) for i in inits]}.")
    if any(i.shape for i in inits):
        raise TypeError("reduce_window expected init_values to be scalars but init_values "
                        f"have shapes {[i.shape for i in inits]}.")
    if any(o.shape != operands[0].shape for o in operands):
        raise TypeError(f"reduce_window operands must have one shape, got "
                        f"{[describe(o) for o in operands]}")
    want = [(np.dtype(i.dtype), ()) for i in inits] * 2
    if [(np.dtype(a.dtype), a.shape) for a in jaxpr.in_avals] != want or \
            [(np.dtype(a.dtype), a.shape) for a in jaxpr.out_avals] != want[:n]:
        raise TypeError(f"reduce_window: the reducer takes {[describe(a) for a in jaxpr.in_avals]}"
                        f" to {[describe(a) for a in jaxpr.out_avals]}, but the operands "
                        f"need {n} accumulated and {n} new scalars of dtypes "
                        f"{[dtype_name(i.dtype) for i in inits]}")
    shape = check_window("reduce_window", operands[0].shape, Window(**window))
    return [ShapedArray(shape, o.dtype, o.weak_type) for o in operands]


def lower_reduce_window(ctx, operands, init_values, window: Window, body,
                        out_avals=None):
    """`stablehlo.reduce_window` of `operands` with `body(*accumulated, *new)` (rank-0
    values → one value per operand) as its reducer; its results (of `out_avals`,
    default the equation's). Where a window parameter is symbolic (shape-polymorphic
    export), the `stablehlo.dynamic_reduce_window` custom call, which shape
    refinement turns back into a `reduce_window` once the sizes are known."""
    out_avals = ctx.avals_out if out_avals is None else out_avals
    ndim = len(window.window_dimensions)
    if any(lo < 0 or hi < 0 for lo, hi in window.padding):
        # XLA's simplifier mishandles negative padding (a check failure; JAX crashes on
        # it): dilate and crop explicitly, then pad the rest.
        def negative(p):
            return p if p < 0 else 0
        lows, highs = ([negative(p[i]) for p in window.padding] for i in (0, 1))
        interiors = [b - 1 for b in window.base_dilation]
        operands = [hlo.pad(x, init, lows, highs, interiors)
                    for x, init in zip(operands, init_values)]
        window = window._replace(padding=tuple((lo - negative(lo), hi - negative(hi))
                                               for lo, hi in window.padding),
                                 base_dilation=(1,) * ndim)
    scalars = [ShapedArray((), a.dtype) for a in out_avals]
    if window.symbolic:
        return _dynamic_reduce_window(ctx, out_avals, operands, init_values, window,
                                      ctx.emit_function("reduce_window_reducer",
                                                        scalars * 2, scalars, body))
    op = hlo.ReduceWindowOp(
        mu.ir_types(out_avals), list(operands), list(init_values),
        list(window.window_dimensions), window_strides=list(window.window_strides),
        base_dilations=list(window.base_dilation),
        window_dilations=list(window.window_dilation),
        padding=ir.DenseIntElementsAttr.get(
            np.asarray(window.padding, np.int64).reshape(ndim, 2)))
    mu.build_region(op.body, scalars * 2, body)
    return list(op.results)


def _dynamic_reduce_window(ctx, out_avals, operands, init_values, window: Window,
                           reducer: str):
    """The custom call: operands, initial values, then the window dimensions, strides,
    base and window dilations as `tensor<N x i32>` and the padding as
    `tensor<N x 2 x i32>`, all computed from the dimension variables; the reducer is
    the private function `reducer`."""
    sizes = [mu.shape_tensor(values) for values in (window.window_dimensions,
                                                    window.window_strides,
                                                    window.base_dilation,
                                                    window.window_dilation)]
    op = hlo.CustomCallOp(
        mu.ir_types(out_avals),
        [*operands, *init_values, *sizes, padding_tensor(window.padding)],
        call_target_name="stablehlo.dynamic_reduce_window",
        api_version=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 2),
        called_computations=ir.ArrayAttr.get([ir.FlatSymbolRefAttr.get(reducer)]))
    return list(op.results)


def _lower(ctx, *args, jaxpr, **window):
    n = len(args) // 2
    window = Window(**window)
    # A custom call's reducer is a function of its own, without the dimension
    # variables a call of the reducer's function would pass: its ops go inline.
    call = ctx.lower_inline if window.symbolic else ctx.lower_subjaxpr
    return lower_reduce_window(ctx, args[:n], args[n:], window,
                               lambda *xs: call(jaxpr, *xs, name="reducer"))


reduce_window_p.def_abstract_eval(_abstract_eval)
reduce_window_p.def_lowering(_lower)


# --- batching --------------------------------------------------------------------------

def _batching(axis_data, args, dims, *, jaxpr, **window):
    n = len(args) // 2
    operands, inits = list(args[:n]), list(args[n:])
    if all(d is not_mapped for d in dims[n:]):
        operands, d = common_dim(operands, dims[:n], axis_data.size)
        batched = Window(**window).with_unit_dim(d)
        return reduce_window_p.bind(*operands, *inits, jaxpr=jaxpr,
                                    **batched._asdict()), [d] * n
    # An initial value per batch member: one reduction per member, in a loop.
    from plax_stdlib.lax.control_flow import map as lax_map
    size = axis_data.size
    stacked = [move_to(x, d, 0, size) for x, d in zip(args, dims)]

    def one(members):
        return reduce_window_p.bind(*members, jaxpr=jaxpr, **window)
    return lax_map(one, stacked), [0] * n


reduce_window_p.define_rule(BATCHING, _batching)


# --- differentiation -----------------------------------------------------------------------

def _scalars(jaxpr: ClosedJaxpr) -> list[ShapedArray]:
    n = len(jaxpr.out_avals)
    return list(jaxpr.in_avals[:n])


@cached_on_jaxpr
def _element_jvp(jaxpr: ClosedJaxpr, active: tuple[int, ...], size: int) -> ClosedJaxpr:
    """The tangents of `f(f(before, b), after)` given tangents of `b[j]` for `j` in
    `active` (unbatched scalars), vectorised over `size` triples `(before, b, after)`
    (batched at 0): a Jaxpr `(*before, *b, *after, *t_b) -> differentiable outputs'
    tangents`."""
    n = len(jaxpr.out_avals)
    scalars = _scalars(jaxpr)

    def element(*args):
        before, b, after = args[:n], args[n:2 * n], args[2 * n:]
        middle = eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *before, *b)
        return eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *middle, *after)

    closed = stage_flat(element, scalars * 3)
    nonzeros = [False] * n + [j in active for j in range(n)] + [False] * n
    differentiable = [is_differentiable_dtype(a.dtype) for a in scalars]
    jvp, has_tangent = jvp_jaxpr(closed, nonzeros, instantiate=differentiable)
    used = [False] * n + [differentiable[i] for i in range(n) if has_tangent[i]]
    jvp, _ = dce_closed_jaxpr(jvp, used, instantiate=True)
    in_dims = [0] * (3 * n) + [not_mapped] * len(active)
    batched, _ = batch_jaxpr(jvp, AxisData(size), in_dims, True)  # size may be symbolic
    return batched


def _prefix_window(rank: int, size: int, before: bool) -> Window:
    """Over an `out_shape + (size,)` array: at `k`, the elements before `k` along the
    last axis (or after it)."""
    pad = (size, -1) if before else (-1, size)
    return Window((1,) * rank + (size,), (1,) * (rank + 1), ((0, 0),) * rank + (pad,),
                  (1,) * (rank + 1), (1,) * (rank + 1))


def _directions(dtype) -> list[tuple[complex, object]]:
    """Unit tangents spanning a dtype over the reals, with the projection that gives a
    tangent's component along each (complex tangents act through their real and
    imaginary parts, so non-holomorphic reducers are differentiated exactly)."""
    if kind_of(dtype) == "complex":
        return [(1, elementwise.real), (1j, elementwise.imag)]
    return [(1, None)]


def window_coefficients(operands, inits, jaxpr: ClosedJaxpr, window: Window, active):
    """`{(i, j, direction index): C}`: the coefficient of window element `k` of operand
    `j`'s tangent (along that direction) in window `o` of output `i`, an array of
    shape `out_shape + (window.size,)`, for the differentiable outputs `i` and the
    operands `j` in `active`."""
    out_shape = window.out_shape(get_aval(operands[0]).shape)
    rank, size = len(out_shape), window.size
    patches = [window_patches(x, init, window) for x, init in zip(operands, inits)]
    neighbours = []
    for before in (True, False):
        around = _prefix_window(rank, size, before)
        neighbours.append(reduce_window_p.bind(*patches, *inits, jaxpr=jaxpr,
                                               **around._asdict()))
    count = math.prod(out_shape) * size  # symbolic in shape-polymorphic export
    flat = [shape_ops.reshape(a, (count,)) for a in [*neighbours[0], *patches, *neighbours[1]]]
    element = _element_jvp(jaxpr, tuple(active), count)
    scalars = _scalars(jaxpr)
    outputs = [i for i, a in enumerate(scalars) if is_differentiable_dtype(a.dtype)]
    coefficients = {}
    for j in active:
        for d, (unit, _) in enumerate(_directions(scalars[j].dtype)):
            units = [np.asarray(unit if jj == j else 0, scalars[jj].dtype)[()] for jj in active]
            tangents = eval_jaxpr(element.jaxpr, element.consts, *flat, *units)
            for i, t in zip(outputs, tangents):
                coefficients[i, j, d] = shape_ops.reshape(t, out_shape + (size,))
    return coefficients


def windowed_tangent(coefficients, tangents, window: Window, out_avals):
    """`sum_k C[o, k] * patches(t)[o, k]` per output (Zero where none contributes)."""
    patches = {j: window_patches(t, np.zeros((), get_aval(t).dtype)[()], window)
               for j, t in tangents.items()}
    results = [None] * len(out_avals)
    for (i, j, d), coefficient in coefficients.items():
        _, project = _directions(get_aval(patches[j]).dtype)[d]
        part = patches[j] if project is None else project(patches[j])
        out_dtype = out_avals[i].dtype
        part, coefficient = (x if get_aval(x).dtype == out_dtype else
                             conversion.convert_element_type(x, out_dtype)
                             for x in (part, coefficient))
        term = reductions.reduce_sum(elementwise.mul(coefficient, part),
                                     (len(get_aval(part).shape) - 1,))
        results[i] = term if results[i] is None else elementwise.add(results[i], term)
    return [Zero(tangent_aval(a)) if r is None else r for r, a in zip(results, out_avals)]


def _jvp(primals, tangents, *, jaxpr, **params):
    n = len(primals) // 2
    if any(not isinstance(t, Zero) for t in tangents[n:]):
        raise TypeError("reduce_window jvp does not support non-zero init_value tangents: "
                        "the initial value must be the reducer's identity, a constant")
    outs = reduce_window_p.bind(*primals, jaxpr=jaxpr, **params)
    out_avals = [get_aval(o) for o in outs]
    active = [j for j in range(n) if not isinstance(tangents[j], Zero)
              and is_differentiable_dtype(get_aval(primals[j]).dtype)]
    if not active or any(d == 0 for d in out_avals[0].shape):
        return outs, [Zero(tangent_aval(a)) for a in out_avals]
    window = Window(**params)
    coefficients = window_coefficients(primals[:n], primals[n:], jaxpr, window, active)
    return outs, windowed_tangent(coefficients, {j: tangents[j] for j in active}, window,
                                  out_avals)


reduce_window_p.define_rule(JVP, _jvp)

"""`lax.reduce` with any reduction function, on one array or a pytree of them, and
`reduce_p`, its primitive for functions other than the monoids.

A monoid (`lax.add`, `max`, ... on one operand) becomes its reduction primitive.
Any other `computation` — a variadic one such as a (value, index) argmax, or one
written by hand — is one `lax.reduce` equation: `n` operands of one shape then
their `n` scalar initial values, the reducer's Jaxpr (`2n` scalars to `n`, as
`reduce_window`'s), the `dimensions` reduced and, as in JAX, the Python
`computation` itself. It lowers to `stablehlo.reduce`. Its derivatives are those of
the same reduction written as `reduce_window` with one window spanning the reduced
dimensions (whose rules differentiate any reducer, in both modes). As in XLA, the
result is defined for associative computations whose identity the initial values
are.
"""
from __future__ import annotations

from typing import Callable, Sequence

from plax.extend import tree_util
from plax.extend.ad import instantiate, jvp_jaxpr
from plax.extend.batching import move_to, not_mapped
from plax.extend.constructors import check_axes, describe
from plax.extend.core import BATCHING, JVP, Primitive, ShapedArray, eval_jaxpr, get_aval
from plax.extend.mlir import mu
from plax_stdlib.lax import conversion, reductions, shape_ops
from plax_stdlib.lax.control_flow.common import (expand_tangents, nonzero_flags,
                                                 trace_function)
from plax_stdlib.lax.reduce_window import reduce_window_p, reducer_jaxpr
from plax_stdlib.lax.windowed_reductions import scalar_init_values

reduce_p = Primitive("lax.reduce", multiple_results=True)


def reduce(operands, init_values, computation: Callable, dimensions: Sequence[int], *,
           out_sharding=None):
    """Reduces arrays over some dimensions with any combining function.

    `computation(accumulated, new)` is applied starting from `init_values`; it
    should be associative and commutative with `init_values` as its identity,
    as the order of combination is up to the compiler. For sums, maxima and
    the like, `reduce_sum`/`reduce_max`... (or passing `lax.add`, `lax.max`...)
    take the faster built-in paths.

    Args:
        operands: an array, or a pytree of arrays of one shape (reduced together,
            e.g. values and indices for an argmax).
        init_values: scalars in the pytree structure of `operands`.
        computation: `(accumulated, new) -> combined`, on pytrees of scalars.
        dimensions: the dimensions to reduce (ints in [0, ndim)).
        out_sharding: the result's sharding for a monoid reduction on a mesh
            with `Explicit` axes.

    Returns:
        The reduced array(s), without `dimensions`.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> x = jnp.array([[1.0, 2.0], [3.0, 4.0]])
        >>> lax.reduce(x, 0.0, lax.add, (0,))
        Array([4., 6.], dtype=float32)
        >>> lax.reduce(x, 1.0, lambda a, b: a * b, (1,))
        Array([ 2., 12.], dtype=float32)
    """
    if not callable(computation):
        raise TypeError(f"reduce: computation must be callable, got {computation!r}")
    flat_operands, tree = tree_util.tree_flatten(operands)
    flat_inits, init_tree = tree_util.tree_flatten(init_values)
    if tree != init_tree:
        raise ValueError(f"reduce: operands {tree} and init_values {init_tree} must have the "
                         "same structure")
    if not flat_operands:
        raise ValueError("reduce must have at least one operand")
    shapes = [get_aval(x).shape for x in flat_operands]
    if len(set(shapes)) > 1:
        raise ValueError(f"reduce: operands must have the same shape, got shapes {shapes}")
    shape = shapes[0]
    dims = reductions.canonicalize_axes("reduce", dimensions, len(shape))
    if len(flat_operands) == 1 and tree == tree_util.tree_structure(0):
        result = reductions.monoid_reduce(flat_operands[0], flat_inits[0], computation, dims,
                                          out_sharding)
        if result is not None:
            return result
    if out_sharding is not None:
        raise NotImplementedError("reduce: out_sharding is supported only for the reduction "
                                  "of one operand by a monoid (add, mul, max, min, and, or, "
                                  "xor)")
    out_shape = tuple(n for d, n in enumerate(shape) if d not in dims)
    if any(shape[d] == 0 for d in dims):  # nothing to reduce: every result is the initial value
        inits = [conversion.match_python_scalars("reduce", init, x)[0]
                 for init, x in zip(flat_inits, flat_operands)]
        outs = [shape_ops.broadcast_in_dim(init, out_shape, ()) for init in inits]
        return tree_util.tree_unflatten(tree, outs)
    inits = scalar_init_values(flat_inits, flat_operands)
    jaxpr = reducer_jaxpr(computation, [get_aval(i) for i in inits], tree, "reduce")
    outs = reduce_p.bind(*flat_operands, *inits, computation=computation, jaxpr=jaxpr,
                         dimensions=dims)
    return tree_util.tree_unflatten(tree, outs)


# --- the primitive's rules ------------------------------------------------------------------

@reduce_p.def_abstract_eval
def _abstract_eval(*avals, computation, jaxpr, dimensions):
    n = len(avals) // 2
    if n == 0 or len(avals) % 2:
        raise TypeError(f"reduce takes operands then as many init_values, got {len(avals)} "
                        "arguments")
    operands, inits = avals[:n], avals[n:]
    if any(o.shape != operands[0].shape for o in operands):
        raise TypeError(f"reduce operands must have one shape, got "
                        f"{[describe(o) for o in operands]}")
    if any(i.shape != () or i.dtype != o.dtype for o, i in zip(operands, inits)):
        raise TypeError(f"reduce: init_values must be scalars of the operands' dtypes, got "
                        f"operands {[describe(o) for o in operands]} and init_values "
                        f"{[describe(i) for i in inits]}")
    scalars = [(i.dtype, ()) for i in inits]
    if ([(a.dtype, a.shape) for a in jaxpr.in_avals] != scalars * 2
            or [(a.dtype, a.shape) for a in jaxpr.out_avals] != scalars):
        raise TypeError(f"reduce: the reducer takes {[describe(a) for a in jaxpr.in_avals]} to "
                        f"{[describe(a) for a in jaxpr.out_avals]}, but the operands need {n} "
                        f"accumulated and {n} new scalars of "
                        f"{[describe(i) for i in inits]}")
    check_axes("reduce", dimensions, len(operands[0].shape), "dimensions")
    shape = tuple(d for i, d in enumerate(operands[0].shape) if i not in dimensions)
    return [ShapedArray(shape, o.dtype, o.weak_type) for o in operands]


reduce_p.define_rule("effects", lambda *, jaxpr, **_: jaxpr.effects)


@reduce_p.def_lowering
def _lower(ctx, *args, computation, jaxpr, dimensions):
    n = len(args) // 2
    return mu.reduce(args[:n], args[n:], ctx.avals_out, dimensions,
                     lambda *xs: ctx.lower_inline(jaxpr, *xs, name="reducer"))


def _as_one_window(*args, jaxpr, dimensions):
    """The reduction as `reduce_window` with one window over `dimensions`."""
    n = len(args) // 2
    shape = get_aval(args[0]).shape
    window = tuple(d if i in dimensions else 1 for i, d in enumerate(shape))
    outs = reduce_window_p.bind(
        *args, jaxpr=jaxpr, window_dimensions=window, window_strides=(1,) * len(shape),
        padding=((0, 0),) * len(shape), base_dilation=(1,) * len(shape),
        window_dilation=(1,) * len(shape))
    out_shape = tuple(d for i, d in enumerate(shape) if i not in dimensions)
    return [shape_ops.reshape(x, out_shape) for x in outs[:n]]


def _jvp(primals, tangents, *, computation, jaxpr, dimensions):
    """The jvp of the one-window `reduce_window` that computes the same."""
    opened, consts, _ = trace_function(
        lambda *xs: _as_one_window(*xs, jaxpr=jaxpr, dimensions=dimensions),
        [get_aval(x) for x in primals], "reduce")
    nonzeros = nonzero_flags(tangents)
    jvp, out_nonzeros = jvp_jaxpr(opened, [False] * len(consts) + nonzeros)
    outs = eval_jaxpr(jvp.jaxpr, jvp.consts, *consts, *primals,
                      *(instantiate(t) for t, nz in zip(tangents, nonzeros) if nz))
    n = len(primals) // 2
    return outs[:n], expand_tangents(out_nonzeros, outs[n:], opened.out_avals)


def _batching(axis_data, args, dims, *, computation, jaxpr, dimensions):
    n = len(args) // 2
    if all(d is not_mapped for d in dims[n:]):
        operands = [move_to(x, d, 0, axis_data.size) for x, d in zip(args[:n], dims[:n])]
        outs = reduce_p.bind(*operands, *args[n:], computation=computation, jaxpr=jaxpr,
                             dimensions=tuple(d + 1 for d in dimensions))
        return outs, [0] * n
    # An initial value per batch member: one reduction per member, in a loop.
    from plax_stdlib.lax.control_flow import map as lax_map
    stacked = [move_to(x, d, 0, axis_data.size) for x, d in zip(args, dims)]
    return lax_map(lambda members: reduce_p.bind(*members, computation=computation,
                                                 jaxpr=jaxpr, dimensions=dimensions),
                   stacked), [0] * n


reduce_p.define_rule(JVP, _jvp)
reduce_p.define_rule(BATCHING, _batching)

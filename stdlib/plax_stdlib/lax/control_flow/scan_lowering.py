"""How `scan` lowers: as JAX 0.10.2 lowers it, so that `lower(...).as_text()` shows
the same module.

The loop is written with other primitives (`while_loop`, the jitted
`dynamic_index_in_dim` / `dynamic_update_index_in_dim`, and a call of the body named
`closed_call`), traced on the equation's operands and emitted inline. `unroll`
steps run per trip of the `while`, on the xs reshaped to `(trips, unroll, ...)`; the
remaining steps (and a loop of one trip) are emitted after it, unrolled. Over a
symbolic length (export), `unroll` is only the hint it is: one step per trip.
"""
from __future__ import annotations

import numpy as np

from plax.extend.core import ClosedJaxpr, Primitive, SymbolicDimension, eval_jaxpr, stage_flat
from plax.extend.dtypes import default_int_dtype
from plax.extend.sharding import mat_axis_order
from plax_stdlib.lax import creation, parallel, shape_ops, slicing
from plax_stdlib.lax.control_flow.common import split_list
from plax_stdlib.lax.control_flow.loops import while_loop
from plax_stdlib.lax.control_flow.scan import stacked_aval
from plax_stdlib.lax.dimensions import dimension_as_value

# A call of a closed Jaxpr, only ever staged by this lowering (JAX's `closed_call`,
# which its scan lowering emits for the body): a `func.call` of a private function.
closed_call_p = Primitive("lax.closed_call", multiple_results=True)
closed_call_p.def_abstract_eval(lambda *_, call_jaxpr: list(call_jaxpr.out_avals))
closed_call_p.def_impl(lambda *args, call_jaxpr: eval_jaxpr(call_jaxpr.jaxpr,
                                                            call_jaxpr.consts, *args))
closed_call_p.define_rule("effects", lambda *, call_jaxpr: call_jaxpr.effects)
closed_call_p.def_lowering(lambda ctx, *args, call_jaxpr:
                           ctx.lower_subjaxpr(call_jaxpr, *args, name="closed_call"))


def _empty(prefix: tuple, y_aval):
    """Room for the stacked ys (a broadcast scalar, filled in by the loop): `y_aval`
    stacked along the new, unsplit leading dimensions `prefix`."""
    aval = y_aval
    for size in reversed(prefix):
        aval = stacked_aval(aval, size)
    empty = creation.empty2_p.bind(dtype=aval.dtype, memory_space=creation.MemorySpace.Device)
    if aval.vma:  # (in a shard_map body: the ys vary over the manual axes the y does)
        empty = parallel.pvary_p.bind(empty, axes=mat_axis_order(aval.vma))
    return shape_ops.broadcast(empty, aval.shape, out_sharding=aval.typed_sharding)


def _stack(slices: list):
    return shape_ops.concatenate([shape_ops.expand_dims(y, (0,)) for y in slices], 0)


def _scan_as_loop(*args, jaxpr: ClosedJaxpr, length, reverse: bool, unroll: int,
                  num_consts: int, num_carry: int):
    consts, carry, xs = split_list(args, [num_consts, num_carry])
    y_avals = jaxpr.out_avals[num_carry:]
    from plax_stdlib import lax  # its jits of these, made on first use (the package imports us)
    dynamic_index, dynamic_update = lax.dynamic_index_in_dim, lax.dynamic_update_index_in_dim
    if isinstance(length, SymbolicDimension):
        unroll = 1
    trips, rest = (length, 0) if unroll == 1 else divmod(length, unroll)
    if unroll > 1 and trips == 1 and rest == 0:  # fully unrolled: no loop at all
        trips, rest = 0, length
    xs_rest: list = []
    if unroll > 1 and rest:  # the steps that do not fill a trip are split off
        cut = rest if reverse else trips * unroll
        heads = [slicing.slice_in_dim(x, 0, cut) for x in xs]
        tails = [slicing.slice_in_dim(x, cut, x.shape[0]) for x in xs]
        xs, xs_rest = (tails, heads) if reverse else (heads, tails)
    prefix = (trips,) if unroll == 1 else (trips, unroll) if trips else (0,)
    if unroll > 1 and trips:
        xs = [shape_ops.reshape(x, (trips, unroll, *x.shape[1:])) for x in xs]
    ys = [_empty(prefix, a) for a in y_avals]

    def steps(n: int, carry, x_blocks):
        """`n` steps on the leading slices of `x_blocks` (one step on `x_blocks`
        themselves when not unrolled): the carry and the ys (stacked if unrolled)."""
        if unroll == 1:
            return split_list(closed_call_p.bind(*consts, *carry, *x_blocks,
                                                 call_jaxpr=jaxpr), [num_carry])[:2]
        y_slices = []
        for k in range(n):
            step = n - 1 - k if reverse else k
            x = [slicing.index_in_dim(block, step, keepdims=False) for block in x_blocks]
            carry, y = split_list(closed_call_p.bind(*consts, *carry, *x, call_jaxpr=jaxpr),
                                  [num_carry])[:2]
            y_slices.append(y)
        if reverse:
            y_slices.reverse()
        return carry, [_stack(list(y)) for y in zip(*y_slices)]

    def trip(loop_carry):
        i, carry, ys = loop_carry
        index = dimension_as_value(trips) - i - 1 if reverse else i
        x_blocks = [dynamic_index(x, index, keepdims=False, allow_negative_indices=False)
                    for x in xs]
        carry, y_blocks = steps(unroll, carry, x_blocks)
        ys = [dynamic_update(acc, y, index, 0, allow_negative_indices=False)
              for acc, y in zip(ys, y_blocks)]
        return i + 1, carry, ys

    if isinstance(trips, SymbolicDimension) or trips:
        start = np.zeros((), default_int_dtype())
        _, carry, ys = while_loop(lambda c: c[0] < dimension_as_value(trips), trip,
                                  (start, carry, ys))
        if unroll > 1:
            ys = [shape_ops.reshape(y, (trips * unroll, *y.shape[2:])) for y in ys]
    if rest:
        carry, ys_rest = steps(rest, carry, xs_rest)
        ys = [shape_ops.concatenate([b, a] if reverse else [a, b], 0)
              for a, b in zip(ys, ys_rest)]
    return [*carry, *ys]


def lower_scan(ctx, *args, jaxpr: ClosedJaxpr, num_consts: int, num_carry: int, **params):
    # The loop is traced with the carry typed as the body returns it: in a shard_map
    # body, a transformed scan may start an invariant carry that its body makes varying.
    avals = list(ctx.avals_in)
    avals[num_consts:num_consts + num_carry] = jaxpr.out_avals[:num_carry]
    loop = stage_flat(lambda *xs: _scan_as_loop(*xs, jaxpr=jaxpr, num_consts=num_consts,
                                                num_carry=num_carry, **params), avals)
    return ctx.lower_inline(loop, *args, name="")  # (in the scan's name stack)

"""`scan`: a loop over the leading axis of arrays, carrying state between steps.

One `scan` equation holds the body as a closed Jaxpr taking
`(*consts, *carry, *x_slices)` and returning `(*carry, *y_slices)`; its operands
are the consts (closed-over values), the initial carry and the stacked xs, its
results the final carry and the stacked ys. It lowers to a `stablehlo.while`
whose body reads each step's slices with `dynamic_slice` and writes each step's
ys with `dynamic_update_slice` (`unroll` steps per trip). Differentiation and
batching rules: `plax_transforms.control_flow_rules`.
"""
from __future__ import annotations

import numpy as np

from plax._src import tree_util
from plax._src.abstract import ShapedArray
from plax._src.ir import ClosedJaxpr, JaxprEqn
from plax._src.jaxpr_util import dce_jaxpr
from plax._src.lax import conversion
from plax._src.lax.constructors import describe
from plax._src.lax.control_flow.common import (
    check_same_types, ensure_rules_loaded, leaf_paths, split_list, trace_function)
from plax._src.lax.mlir import hlo, ir, mu
from plax._src.primitive import Primitive
from plax._src.tracing import get_aval

scan_p = Primitive("scan", multiple_results=True)


# --- the API -------------------------------------------------------------------------

def scan(f, init, xs=None, length: int | None = None, reverse: bool = False,
         unroll: int | bool = 1):
    """Loop `carry, y = f(carry, x)` over the leading axis of `xs`; returns the
    final carry and the ys stacked along a new leading axis."""
    if not callable(f):
        raise TypeError(f"lax.scan: f argument should be callable, got {f!r}")
    xs_leaves, xs_tree = tree_util.tree_flatten(xs)
    length = _scan_length(xs_leaves, xs_tree, length)
    unroll = _unroll_count(unroll, length)
    x_avals = [_slice_aval(get_aval(x)) for x in xs_leaves]
    x_example = tree_util.tree_unflatten(xs_tree, x_avals)
    init_leaves, init_tree = tree_util.tree_flatten(init)
    jaxpr, consts, out_tree, init_leaves = trace_carry_function(
        f, init, init_leaves, init_tree, (x_example,), "scan")
    ensure_rules_loaded()
    outs = scan_p.bind(*consts, *init_leaves, *xs_leaves, jaxpr=jaxpr, length=length,
                       reverse=bool(reverse), unroll=unroll, num_consts=len(consts),
                       num_carry=len(init_leaves))
    carry_tree, y_tree = _pair_trees(out_tree)
    carry, ys = split_list(outs, [len(init_leaves)])[:2]
    return (tree_util.tree_unflatten(carry_tree, carry),
            tree_util.tree_unflatten(y_tree, ys))


def _scan_length(xs_leaves, xs_tree, length) -> int:
    if length is not None:
        try:
            length = int(length)
        except TypeError:
            raise TypeError(f"lax.scan: length must be a concrete int, got {length!r}") from None
        if length < 0:
            raise ValueError(f"lax.scan: length must be non-negative, got {length}")
    paths = leaf_paths(xs_tree, "xs")
    sizes = []
    for path, x in zip(paths, xs_leaves):
        shape = get_aval(x).shape
        if not shape:
            raise ValueError(f"scan got value with no leading axis to scan over: {path} of "
                             f"type {describe(get_aval(x))}")
        sizes.append((path, shape[0]))
    if not sizes:
        if length is None:
            raise ValueError("scan got no values to scan over and `length` not provided.")
        return length
    distinct = {n for _, n in sizes}
    if len(distinct) > 1:
        raise ValueError("scan got values with different leading axis sizes: "
                         + ", ".join(f"{p}.shape[0]={n}" for p, n in sizes))
    (actual,) = distinct
    if length is not None and length != actual:
        raise ValueError(f"scan got `length` argument of {length} which disagrees with "
                         "leading axis sizes " + ", ".join(f"{p}.shape[0]={n}" for p, n in sizes))
    return actual


def _unroll_count(unroll, length: int) -> int:
    if isinstance(unroll, bool):
        return max(length, 1) if unroll else 1
    unroll = int(unroll)
    if unroll < 1:
        raise ValueError(f"lax.scan: unroll must be a positive int or a bool, got {unroll}")
    return unroll


def _slice_aval(aval: ShapedArray) -> ShapedArray:
    return ShapedArray(aval.shape[1:], aval.dtype, aval.weak_type)


class _Leaf:
    """A placeholder leaf, to take a treedef apart."""


def _pair_trees(out_tree):
    out = tree_util.tree_unflatten(out_tree, [_Leaf() for _ in range(out_tree.num_leaves)])
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError("scan body output must be a pair (carry, y), got a value with "
                        f"structure {out_tree}")
    return tree_util.tree_structure(out[0]), tree_util.tree_structure(out[1])


def trace_carry_function(f, init, init_leaves, init_tree, extra_args, api: str,
                         carry_of=lambda out_tree: _pair_trees(out_tree)[0]):
    """Trace `f(init, *extra_args)` and check that the carry it returns has the
    type of `init`. A weakly typed init leaf whose dtype the body changes is
    promoted to the type the body returns and the body traced again (`scan(f, 0, xs)`
    with float steps works, as in JAX). → (jaxpr, consts, out_tree, init_leaves)."""
    for attempt in range(2):
        init_avals = [get_aval(x) for x in init_leaves]
        example = tree_util.tree_unflatten(init_tree, init_avals)
        jaxpr, consts, out_tree = trace_function(f, (example, *extra_args), api)
        carry_tree = carry_of(out_tree)
        n = len(init_leaves)
        carry_out = jaxpr.out_avals[:n] if carry_tree.num_leaves == n else []
        promote = [i for i, (a, b) in enumerate(zip(init_avals, carry_out))
                   if a.weak_type and a.shape == b.shape
                   and (a.dtype != b.dtype or not b.weak_type)]
        if attempt == 0 and promote and carry_tree == init_tree:
            init_leaves = [conversion.convert_element_type(x, carry_out[i].dtype)
                           if i in promote else x for i, x in enumerate(init_leaves)]
            continue
        body = f"{api} body function carry input and carry output"
        check_same_types(body, ("the input carry component init", init_tree, init_avals),
                         ("the corresponding output carry component", carry_tree,
                          jaxpr.out_avals[:carry_tree.num_leaves]))
        return jaxpr, consts, out_tree, init_leaves
    raise AssertionError("unreachable")


# --- the primitive's rules --------------------------------------------------------------

@scan_p.def_abstract_eval
def _scan_abstract_eval(*avals, jaxpr: ClosedJaxpr, length: int, reverse, unroll,
                        num_consts: int, num_carry: int):
    consts, carry, xs = split_list(avals, [num_consts, num_carry])
    for x in xs:
        if not x.shape or x.shape[0] != length:
            raise TypeError(f"scan of length {length} got xs operand {describe(x)}")
    expected = [*consts, *carry, *map(_slice_aval, xs)]
    if [(a.shape, a.dtype) for a in expected] != [(a.shape, a.dtype) for a in jaxpr.in_avals]:
        raise TypeError(f"scan body takes {[describe(a) for a in jaxpr.in_avals]} but is "
                        f"applied to {[describe(a) for a in expected]}")
    carry_out, ys = split_list(jaxpr.out_avals, [num_carry])[:2]
    if [(a.shape, a.dtype) for a in carry_out] != [(a.shape, a.dtype) for a in carry]:
        raise TypeError(f"scan body carry output {[describe(a) for a in carry_out]} does not "
                        f"match its carry input {[describe(a) for a in carry]}")
    return [*carry, *(ShapedArray((length, *y.shape), y.dtype, y.weak_type) for y in ys)]


scan_p.define_rule("effects", lambda *, jaxpr, **_: jaxpr.effects)


def _i32(value: int) -> ir.Value:
    return mu.dense_constant(np.int32(value))


def _scan_lower(ctx, *args, jaxpr: ClosedJaxpr, length: int, reverse: bool, unroll: int,
                num_consts: int, num_carry: int):
    consts, init, xs = split_list(args, [num_consts, num_carry])
    x_avals = ctx.avals_in[num_consts + num_carry:]
    y_avals = ctx.avals_out[num_carry:]
    ys = [mu.splat(0, a) for a in y_avals]
    if length == 0:
        return [*init, *ys]
    name = jaxpr.jaxpr.debug_info.func_name if jaxpr.jaxpr.debug_info else "scan_body"
    i32 = ShapedArray((), np.int32)

    def step(i, carry, ys):
        index = hlo.subtract(_i32(length - 1), i) if reverse else i
        x_slices = []
        for x, aval in zip(xs, x_avals):
            starts = [index] + [_i32(0)] * (len(aval.shape) - 1)
            piece = hlo.dynamic_slice(x, starts, [1, *aval.shape[1:]])
            x_slices.append(hlo.reshape(mu.ir_type(_slice_aval(aval)), piece))
        outs = ctx.lower_subjaxpr(jaxpr, *consts, *carry, *x_slices, name=name)
        new_carry, y_slices = outs[:num_carry], outs[num_carry:]
        new_ys = []
        for acc, y, aval in zip(ys, y_slices, y_avals):
            update = hlo.reshape(mu.ir_type(ShapedArray((1, *aval.shape[1:]), aval.dtype)), y)
            starts = [index] + [_i32(0)] * (len(aval.shape) - 1)
            new_ys.append(hlo.dynamic_update_slice(acc, update, starts))
        return hlo.add(i, _i32(1)), new_carry, new_ys

    unroll = min(unroll, length)
    trips = length // unroll
    state = [_i32(0), *init, *ys]
    types = [mu.ir_type(i32), *mu.ir_types(ctx.avals_out)]
    loop = hlo.WhileOp(types, state)
    cond_block = loop.cond.blocks.append(*types)
    with ir.InsertionPoint(cond_block):
        hlo.return_([mu.compare(cond_block.arguments[0], _i32(trips * unroll), "LT", np.int32)])
    body_block = loop.body.blocks.append(*types)
    with ir.InsertionPoint(body_block):
        i, carry, acc = body_block.arguments[0], *split_list(body_block.arguments[1:],
                                                              [num_carry])[:2]
        for _ in range(unroll):
            i, carry, acc = step(i, carry, acc)
        hlo.return_([i, *carry, *acc])
    i, carry, acc = loop.results[0], *split_list(list(loop.results)[1:], [num_carry])[:2]
    for _ in range(length - trips * unroll):
        i, carry, acc = step(i, carry, acc)
    return [*carry, *acc]


scan_p.def_lowering(_scan_lower)


def _scan_dce(used_outputs, eqn: JaxprEqn):
    """Drop unused ys, and carries nothing needs (a carry stays while any used
    output or kept carry reads it); then unused consts and xs."""
    params = eqn.params
    nc, nk = params["num_consts"], params["num_carry"]
    jaxpr = params["jaxpr"]
    if not any(used_outputs) and not eqn.effects:
        return [False] * len(eqn.invars), None
    used_carry = list(used_outputs[:nk])
    used_ys = list(used_outputs[nk:])
    while True:
        pruned, used_in = dce_jaxpr(jaxpr.jaxpr, used_carry + used_ys)
        carry_in = used_in[nc:nc + nk]
        grown = [a or b for a, b in zip(used_carry, carry_in)]
        if grown == used_carry:
            break
        used_carry = grown
    used_in = used_in[:nc] + used_carry + used_in[nc + nk:]
    pruned, _ = dce_jaxpr(jaxpr.jaxpr, used_carry + used_ys, instantiate=used_in)
    new_params = dict(params, jaxpr=ClosedJaxpr(pruned, jaxpr.consts),
                      num_consts=sum(used_in[:nc]), num_carry=sum(used_carry))
    outvars = [v for v, u in zip(eqn.outvars, used_carry + used_ys) if u]
    return used_in, eqn.replace(invars=[v for v, u in zip(eqn.invars, used_in) if u],
                                outvars=outvars, params=new_params)


scan_p.define_rule("dce", _scan_dce)

"""`scan`: a loop over the leading axis of arrays, carrying state between steps.

One `scan` equation holds the body as a closed Jaxpr taking
`(*consts, *carry, *x_slices)` and returning `(*carry, *y_slices)`; its operands
are the consts (closed-over values), the initial carry and the stacked xs, its
results the final carry and the stacked ys. It lowers as JAX's does, to a loop
written with other primitives (`scan_lowering`). Differentiation and batching
rules follow the lowering.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from plax.extend import config, tree_util
from plax.extend.ad import (
    Zero,
    instantiate,
    is_undefined_primal,
    jvp_jaxpr,
    partial_eval_jaxpr,
    tangent_aval,
    transpose_jaxpr,
    zeros_like_aval,
)
from plax.extend.batching import batch_jaxpr, move_to, moveaxis, not_mapped
from plax.extend.constructors import describe
from plax.extend.core import (
    BATCHING,
    JVP,
    PARTIAL_EVAL,
    PARTIAL_EVAL_JAXPR,
    TRANSPOSE,
    ClosedJaxpr,
    JaxprEqn,
    Primitive,
    ShapedArray,
    SymbolicDimension,
    Var,
    dce_closed_jaxpr,
    dce_jaxpr,
    eval_jaxpr,
    get_aval,
    implicit_device_put,
    set_current_trace,
    stage_flat,
)
from plax_stdlib.lax import conversion, shape_ops, slicing
from plax_stdlib.lax.control_flow.common import (
    cached_on_jaxpr,
    check_carry_types,
    expand_tangents,
    forwarded_inputs,
    leaf_paths,
    nonzero_flags,
    or_flags,
    permute,
    split_list,
    trace_function,
)

scan_p = Primitive("lax.scan", multiple_results=True)


# --- the API -------------------------------------------------------------------------

def scan(f, init, xs=None, length: int | None = None, reverse: bool = False,
         unroll: int | bool = 1, _split_transpose: bool = False):
    """Loops `carry, y = f(carry, x)` over the leading axis of `xs`, as one compiled loop.

    In Python terms::

        carry, ys = init, []
        for x in xs:                 # slices along the leading axis
            carry, y = f(carry, x)
            ys.append(y)
        return carry, stack(ys)

    `f` is traced once (not once per iteration), so the program stays small however
    long the loop; reverse-mode differentiation saves what each iteration needs.

    Args:
        f: `(carry, x) -> (carry, y)`; the carry must keep its structure, shapes
            and dtypes from one iteration to the next.
        init: the initial carry, a pytree of arrays.
        xs: a pytree of arrays sliced along their leading axis (all of the same
            length), or None to loop `length` times with `x = None`.
        length: the number of iterations, needed when `xs` is None.
        reverse: loop from the last slice to the first (`ys` keep the slices'
            order).
        unroll: how many iterations each step of the compiled loop runs (True:
            all of them).
        _split_transpose: accepted for JAX's signature and, as in JAX 0.10,
            without effect (libraries such as flax pass it through).

    Returns:
        `(final_carry, ys)`: `ys` stacks the per-iteration `y`s along a new leading
        axis of size `length`.

    Raises:
        TypeError: `f` changes the carry's structure, shape or dtype.
        ValueError: the leaves of `xs` have different leading sizes.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> def cumulative(total, x):
        ...     total = total + x
        ...     return total, total
        >>> plax.lax.scan(cumulative, 0.0, jnp.array([1.0, 2.0, 3.0]))
        (Array(6., dtype=float32), Array([1., 3., 6.], dtype=float32))
    """
    del _split_transpose  # no effect in JAX 0.10 either: one transpose for every scan
    if not callable(f):
        raise TypeError(f"lax.scan: f argument should be callable, got {f!r}")
    xs_leaves, xs_tree = tree_util.tree_flatten(xs)
    length = _scan_length(xs_leaves, xs_tree, length)
    if config.disable_jit.value and length > 0:
        return _python_scan(f, init, xs_leaves, xs_tree, length, reverse)
    unroll = _unroll_count(unroll, length)
    x_avals = [_slice_aval(get_aval(x)) for x in xs_leaves]
    x_example = tree_util.tree_unflatten(xs_tree, x_avals)
    init_leaves, init_tree = tree_util.tree_flatten(init)
    jaxpr, consts, out_tree, init_leaves = trace_carry_function(
        f, init, init_leaves, init_tree, (x_example,), "scan")
    carry, ys = _scan_forwarding(jaxpr, consts, init_leaves, xs_leaves, length=length,
                                 reverse=bool(reverse), unroll=unroll)
    carry_tree, y_tree = _pair_trees(out_tree)
    return (tree_util.tree_unflatten(carry_tree, carry),
            tree_util.tree_unflatten(y_tree, ys))


def _scan_forwarding(jaxpr: ClosedJaxpr, consts, init, xs, **params) -> tuple[list, list]:
    """The scan of `jaxpr`, as JAX's API binds it: a carry the body passes on unchanged
    is a const of the loop (its final value the initial one), and a y that is the x,
    unchanged, is not stacked again but is that xs operand. → (carry, ys)."""
    nc, nk = len(consts), len(init)
    body, invariant, x_of_y = _forwarded_out(jaxpr, nc, nk)
    moved = [c for c, inv in zip(init, invariant) if inv]
    kept = [c for c, inv in zip(init, invariant) if not inv]
    outs = scan_p.bind(*moved, *consts, *kept, *xs, jaxpr=body, num_consts=len(moved) + nc,
                       num_carry=len(kept), **params)
    carry_out, ys = (iter(part) for part in split_list(outs, [len(kept)])[:2])
    return ([c if inv else next(carry_out) for c, inv in zip(init, invariant)],
            [next(ys) if x is None else _on_device(xs[x]) for x in x_of_y])


@cached_on_jaxpr
def _forwarded_out(jaxpr: ClosedJaxpr, nc: int, nk: int):
    """The body without the outputs that are its inputs unchanged, its invariant
    carries moved ahead of its consts. → (body, per carry whether it is invariant,
    per y the xs operand it is or None)."""
    forwarded = forwarded_inputs(jaxpr)
    invariant = tuple(f == nc + i for i, f in enumerate(forwarded[:nk]))
    x_of_y = tuple(None if f is None or f < nc + nk else f - nc - nk for f in forwarded[nk:])
    if not any(invariant) and all(x is None for x in x_of_y):
        return jaxpr, invariant, x_of_y
    moved = [i for i, inv in enumerate(invariant) if inv]
    kept = [i for i, inv in enumerate(invariant) if not inv]
    body = permute(jaxpr, [*(nc + i for i in moved), *range(nc), *(nc + i for i in kept),
                           *range(nc + nk, len(jaxpr.in_avals))],
                   [*kept, *(nk + j for j, x in enumerate(x_of_y) if x is None)])
    return body, invariant, x_of_y


def _on_device(x):
    """An xs operand returned as a y: a NumPy array put on the device now (not
    staged, as JAX's), an Array or tracer as it is."""
    return implicit_device_put(x) if isinstance(x, np.ndarray) else x


def _python_scan(f, carry, xs_leaves, xs_tree, length: int, reverse: bool):
    """The scan as a Python loop (`jax_disable_jit`), the ys stacked at the end."""
    ys = []
    for i in (reversed(range(length)) if reverse else range(length)):
        x = tree_util.tree_unflatten(xs_tree, [slicing.index_in_dim(leaf, i, keepdims=False)
                                               for leaf in xs_leaves])
        carry, y = f(carry, x)
        ys.append(y)
    if reverse:
        ys.reverse()
    stacked = tree_util.tree_map(
        lambda *leaves: shape_ops.concatenate([shape_ops.expand_dims(v, (0,)) for v in leaves],
                                              0), *ys)
    return carry, stacked


def _scan_length(xs_leaves, xs_tree, length) -> int:
    if length is not None:
        try:
            # An int (JAX takes `int(length)`), or a symbolic size (export).
            length = length if isinstance(length, SymbolicDimension) else int(length)
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
        if unroll and isinstance(length, SymbolicDimension):
            raise ValueError(f"lax.scan: unroll=True unrolls every iteration, which needs a "
                             f"length known at trace time, not the symbolic size {length}; "
                             "pass an int unroll")
        return max(length, 1) if unroll else 1
    unroll = int(unroll)
    if unroll < 1:
        raise ValueError(f"lax.scan: unroll must be a positive int or a bool, got {unroll}")
    return unroll


def _slice_aval(aval: ShapedArray) -> ShapedArray:
    """One iteration's slice of an xs operand, keeping the split of the other
    dimensions in its type; as in JAX, the scanned dimension must be unsplit."""
    typed = aval.typed_sharding
    if typed is None:
        return ShapedArray(aval.shape[1:], aval.dtype, aval.weak_type,
                           manual_axis_type=aval.manual_axis_type)
    spec = typed.spec.partitions
    if spec[0] is not None:
        raise ValueError(f"scan: the 0th dimension of all xs should be replicated; got an "
                         f"xs operand of type {aval.str_short(aval.dtype.name)}")
    return ShapedArray(aval.shape[1:], aval.dtype, aval.weak_type,
                       sharding=typed.update(spec=typed.spec.update(partitions=spec[1:])),
                       manual_axis_type=aval.manual_axis_type)


def stacked_aval(y: ShapedArray, length: int) -> ShapedArray:
    """The ys of `length` iterations: `y` stacked along a new, unsplit leading axis."""
    typed = y.typed_sharding
    return ShapedArray((length, *y.shape), y.dtype, y.weak_type, sharding=None if typed is None
                       else typed.update(spec=typed.spec.update(
                           partitions=(None, *typed.spec.partitions))),
                       manual_axis_type=y.manual_axis_type)


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
    with float steps works, as in JAX); one that only loses its weak type keeps it in
    the body, as JAX's does. → (jaxpr, consts, out_tree, init_leaves)."""
    for attempt in range(2):
        init_avals = [get_aval(x) for x in init_leaves]
        example = tree_util.tree_unflatten(init_tree, init_avals)
        jaxpr, consts, out_tree = trace_function(f, (example, *extra_args), api)
        carry_tree = carry_of(out_tree)
        n = len(init_leaves)
        carry_out = jaxpr.out_avals[:n] if carry_tree.num_leaves == n else []
        promote = [i for i, (a, b) in enumerate(zip(init_avals, carry_out))
                   if a.weak_type and a.shape == b.shape and a.dtype != b.dtype]
        if attempt == 0 and promote and carry_tree == init_tree:
            init_leaves = [conversion.convert_element_type(x, carry_out[i].dtype)
                           if i in promote else x for i, x in enumerate(init_leaves)]
            continue
        check_carry_types(f"{api} body", f, init_tree, init_avals, carry_tree,
                          jaxpr.out_avals[:carry_tree.num_leaves])
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
    return [*carry_out, *(stacked_aval(y, length) for y in ys)]  # (the body's, as JAX's)


scan_p.define_rule("effects", lambda *, jaxpr, **_: jaxpr.effects)


@scan_p.def_lowering
def _scan_lower(ctx, *args, **params):
    # (imported here: the loop is written with `while_loop`, whose module imports this one)
    from plax_stdlib.lax.control_flow.scan_lowering import lower_scan
    return lower_scan(ctx, *args, **params)


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


# --- differentiation and batching -------------------------------------------------------

@cached_on_jaxpr
def _scan_jvp_body(jaxpr, nc, nk, nonzeros):
    nx, ny = len(jaxpr.in_avals) - nc - nk, len(jaxpr.out_avals) - nk
    const_nz, carry_nz, xs_nz = split_list(nonzeros, [nc, nk])
    while True:
        out_nz = jvp_jaxpr(jaxpr, const_nz + carry_nz + xs_nz,
                           instantiate=carry_nz + [False] * ny)[1]
        grown = or_flags(carry_nz, out_nz[:nk])
        if grown == carry_nz:
            break
        carry_nz = grown
    body, out_nz = jvp_jaxpr(jaxpr, const_nz + carry_nz + xs_nz,
                             instantiate=carry_nz + [False] * ny)
    ys_nz = out_nz[nk:]
    nct, nkt, nxt, nyt = sum(const_nz), sum(carry_nz), sum(xs_nz), sum(ys_nz)
    p, q = nc + nk + nx, nk + ny
    body = permute(
        body,
        [*range(nc), *range(p, p + nct), *range(nc, nc + nk), *range(p + nct, p + nct + nkt),
         *range(nc + nk, p), *range(p + nct + nkt, p + nct + nkt + nxt)],
        [*range(nk), *range(q, q + nkt), *range(nk, q), *range(q + nkt, q + nkt + nyt)])
    return body, carry_nz, ys_nz


def _scan_jvp(primals, tangents, *, jaxpr, num_consts, num_carry, **params):
    nc, nk = num_consts, num_carry
    ny = len(jaxpr.out_avals) - nk
    body, carry_nz, ys_nz = _scan_jvp_body(jaxpr, nc, nk, nonzero_flags(tangents))
    consts, init, xs = split_list(primals, [nc, nk])
    const_t, init_t, xs_t = split_list(tangents, [nc, nk])
    carry_avals = jaxpr.out_avals[:nk]
    nz = lambda ts: [t for t in ts if not isinstance(t, Zero)]  # noqa: E731
    outs = scan_p.bind(
        *consts, *nz(const_t),
        *init, *(instantiate(t, tangent_aval(a)) for t, a, nz_ in zip(init_t, carry_avals,
                                                                      carry_nz) if nz_),
        *xs, *nz(xs_t),
        jaxpr=body, num_consts=nc + len(nz(const_t)), num_carry=nk + sum(carry_nz), **params)
    carry, carry_t, ys, ys_t = split_list(outs, [nk, sum(carry_nz), ny])
    out_avals = [get_aval(x) for x in (*carry, *ys)]
    return ([*carry, *ys], [*expand_tangents(carry_nz, carry_t, out_avals[:nk]),
                            *expand_tangents(ys_nz, ys_t, out_avals[nk:])])


def _scan_unknowns(jaxpr, num_consts, num_carry, unknowns):
    """Unknown carries: those unknown initially, or made unknown by the body."""
    const_uk, carry_uk, xs_uk = split_list(unknowns, [num_consts, num_carry])
    ny = len(jaxpr.out_avals) - num_carry
    while True:
        out_uk = partial_eval_jaxpr(jaxpr, const_uk + carry_uk + xs_uk,
                                    instantiate=carry_uk + [False] * ny)[2]
        grown = or_flags(carry_uk, out_uk[:num_carry])
        if grown == carry_uk:
            return const_uk, carry_uk, xs_uk
        carry_uk = grown


def _split_invariant(known: ClosedJaxpr, n_consts: int, n_out: int, residual_stacked):
    """As JAX's known-scan hoisting: the equations of `known` that read only its first
    `n_consts` inputs (and constants) run once, before the loop. → (hoist: `known`'s
    inputs to the values the loop reads of them, then the invariant residuals;
    its used inputs; forward: (those values, carry, xs) to the outputs and stacked
    residuals; per residual whether it is invariant)."""
    jaxpr = known.jaxpr
    fixed = {id(v) for v in [*jaxpr.constvars, *jaxpr.invars[:n_consts]]}
    is_fixed = lambda a: not isinstance(a, Var) or id(a) in fixed  # noqa: E731
    hoisted, looped = [], []
    for eqn in jaxpr.eqns:
        once = not eqn.effects and all(map(is_fixed, eqn.invars))
        (hoisted if once else looped).append(eqn)
        if once:
            fixed.update(id(v) for v in eqn.outvars)
    res_vars = jaxpr.outvars[n_out:]
    invariant = [is_fixed(v) for v in res_vars]
    consts = {id(v) for v in jaxpr.constvars}
    read = [a for e in looped for a in e.invars] + jaxpr.outvars[:n_out]
    needed = list({id(a): a for a in read if isinstance(a, Var) and id(a) in fixed
                   and id(a) not in consts}.values())
    hoist, hoist_used = dce_closed_jaxpr(known.replace(jaxpr=jaxpr.replace(
        eqns=hoisted, outvars=[*needed, *(v for v, i in zip(res_vars, invariant) if i)],
        debug_info=None)), [True] * (len(needed) + sum(invariant)))
    stacked = [s and not i for s, i in zip(residual_stacked, invariant)]
    invars = [*needed, *jaxpr.invars[n_consts:]]
    outputs = [True] * n_out + stacked
    dbg = jaxpr.debug_info
    if dbg is not None and dbg.arg_names is not None and dbg.result_paths is not None:
        names = {id(v): n for v, n in zip(jaxpr.invars, dbg.arg_names)}
        dbg = dbg.with_arg_names([names.get(id(v), "") for v in invars]).filter_result_paths(
            outputs)
    forward, _ = dce_closed_jaxpr(known.replace(jaxpr=jaxpr.replace(
        invars=invars, eqns=looped, debug_info=dbg,
        outvars=[v for v, o in zip(jaxpr.outvars, outputs) if o])),
        [True] * sum(outputs), instantiate=True)
    return hoist, hoist_used, forward, len(needed), invariant


@cached_on_jaxpr
def _scan_split(jaxpr, nc, nk, unknowns):
    """The Jaxprs of a scan's partial evaluation (see `_scan_partial_eval`)."""
    ny = len(jaxpr.out_avals) - nk
    const_uk, carry_uk, xs_uk = _scan_unknowns(jaxpr, nc, nk, list(unknowns))
    known, unknown, out_uk, n_res = partial_eval_jaxpr(jaxpr, const_uk + carry_uk + xs_uk,
                                                       instantiate=carry_uk + [False] * ny)
    n_kc, n_kk = nc - sum(const_uk), nk - sum(carry_uk)
    n_kout = len(known.out_avals) - n_res
    # Residuals that are scanned inputs themselves are read from those inputs.
    xs_invars = {id(v): i for i, v in enumerate(known.jaxpr.invars[n_kc + n_kk:])}
    forwarded = [xs_invars.get(id(v)) for v in known.jaxpr.outvars[n_kout:]]
    hoist, hoist_used, forward, n_hoisted, invariant = _split_invariant(
        known, n_kc, n_kout, [f is None for f in forwarded])
    # The unknown body takes (residuals, consts, carry, xs) and, as JAX's, the invariant
    # residuals first (as consts) and the others last (as scanned inputs).
    inv_idx = [i for i, inv in enumerate(invariant) if inv]
    var_idx = [i for i, inv in enumerate(invariant) if not inv]
    body = permute(unknown, [*inv_idx, *range(n_res, len(unknown.in_avals)), *var_idx])
    return (const_uk, carry_uk, xs_uk, out_uk, n_kout, hoist, hoist_used, forward, n_hoisted,
            forwarded, invariant, inv_idx, var_idx, body)


def _scan_partial_eval(trace, args, *, jaxpr, num_consts, num_carry, **params):
    """Known scan (run now) stacking the loop-varying residuals; unknown scan (staged)."""
    nc, nk = num_consts, num_carry
    (const_uk, carry_uk, xs_uk, out_uk, n_kout, hoist, hoist_used, forward, n_hoisted,
     forwarded, invariant, inv_idx, var_idx, body) = _scan_split(
        jaxpr, nc, nk, [trace.is_unknown(a) for a in args])
    consts, init, xs = split_list(args, [nc, nk])
    kc = [c for c, u in zip(consts, const_uk) if not u]
    kk = [x for x, u in zip(init, carry_uk) if not u]
    kx = [x for x, u in zip(xs, xs_uk) if not u]
    with set_current_trace(trace.parent):
        hoisted = eval_jaxpr(hoist.jaxpr, hoist.consts,
                             *(x for x, u in zip([*kc, *kk, *kx], hoist_used) if u))
    loop_consts, hoisted = hoisted[:n_hoisted], iter(hoisted[n_hoisted:])
    known_outs = trace.bind_known(scan_p, [*loop_consts, *kk, *kx], dict(
        params, jaxpr=forward, num_consts=n_hoisted, num_carry=len(kk)))
    stacked_res = iter(known_outs[n_kout:])
    res_values = [next(hoisted) if inv else (kx[f] if f is not None else next(stacked_res))
                  for inv, f in zip(invariant, forwarded)]
    unknown_outs = trace.stage(scan_p, [
        *(res_values[i] for i in inv_idx), *(c for c, u in zip(consts, const_uk) if u),
        *(x for x, u in zip(init, carry_uk) if u), *(x for x, u in zip(xs, xs_uk) if u),
        *(res_values[i] for i in var_idx)],
        dict(params, jaxpr=body, num_consts=len(inv_idx) + sum(const_uk),
             num_carry=sum(carry_uk)))
    k, u = iter(known_outs[:n_kout]), iter(unknown_outs)
    return [next(u) if is_uk else next(k) for is_uk in out_uk]


def _scan_partial_eval_jaxpr(eqn: JaxprEqn, unknowns):
    """The equation-level split (inside `jit` or another scan): every residual is
    stacked by the known scan."""
    params = dict(eqn.params)
    jaxpr, nc, nk = params.pop("jaxpr"), params.pop("num_consts"), params.pop("num_carry")
    ny = len(jaxpr.out_avals) - nk
    const_uk, carry_uk, xs_uk = _scan_unknowns(jaxpr, nc, nk, unknowns)
    unknowns = const_uk + carry_uk + xs_uk
    known, unknown, out_uk, n_res = partial_eval_jaxpr(jaxpr, unknowns,
                                                       instantiate=carry_uk + [False] * ny)
    length = params["length"]
    residuals = [Var(ShapedArray((length, *a.shape), a.dtype, a.weak_type))
                 for a in unknown.in_avals[:n_res]]
    consts, init, xs = split_list(eqn.invars, [nc, nk])
    ncu, nku = sum(const_uk), sum(carry_uk)
    known_eqn = eqn.replace(
        invars=[a for a, u in zip(eqn.invars, unknowns) if not u],
        outvars=[*(v for v, u in zip(eqn.outvars, out_uk) if not u), *residuals],
        params=dict(params, jaxpr=known, num_consts=nc - ncu, num_carry=nk - nku))
    body = permute(unknown, [*range(n_res, n_res + ncu + nku), *range(n_res),
                             *range(n_res + ncu + nku, len(unknown.in_avals))])
    unknown_eqn = eqn.replace(
        invars=[*(c for c, u in zip(consts, const_uk) if u),
                *(x for x, u in zip(init, carry_uk) if u), *residuals,
                *(x for x, u in zip(xs, xs_uk) if u)],
        outvars=[v for v, u in zip(eqn.outvars, out_uk) if u],
        params=dict(params, jaxpr=body, num_consts=ncu, num_carry=nku))
    return known_eqn, unknown_eqn, out_uk, residuals


@cached_on_jaxpr
def _scan_transpose_body(jaxpr, nc, nk, const_lin, xs_lin, ct_avals):
    """The backward scan's body: (residual consts; accumulated const cotangents, carry
    cotangents; output cotangents, residual xs) → (consts, carry, xs cotangents).
    As in JAX, the carry and output cotangents are typed as the incoming ones
    (`ct_avals`), and so is the carry: the body is traced again if their weak types
    differ (a weak cotangent stays weak where the body keeps it so, a strong one of a
    weak carry is strong). Each linear const's accumulated cotangent seeds its
    backward pass (the body returns the const too, with that cotangent), so each
    contribution is added to it where it arises."""
    carry_avals = jaxpr.in_avals[nc:nc + nk]
    if [a.weak_type for a in carry_avals] != [a.weak_type for a in ct_avals[:nk]]:
        jaxpr = stage_flat(lambda *a: eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *a),
                           [*jaxpr.in_avals[:nc],
                            *(a.update(weak_type=ct.weak_type)
                              for a, ct in zip(carry_avals, ct_avals)),
                            *jaxpr.in_avals[nc + nk:]], jaxpr.jaxpr.debug_info)
    n_cl = sum(const_lin)
    const_ct_avals = [a for a, lin in zip(jaxpr.in_avals[:nc], const_lin) if lin]
    transposed = transpose_jaxpr(_returning_inputs(jaxpr, const_lin),
                                 [*const_lin, *[True] * nk, *xs_lin],
                                 [*ct_avals, *const_ct_avals])
    n_rc, n_rx = nc - n_cl, len(xs_lin) - sum(xs_lin)
    n_ct = len(jaxpr.out_avals)  # carry and y cotangents
    rest = n_rc + n_rx
    return permute(transposed, [*range(n_rc), *range(rest + n_ct, rest + n_ct + n_cl),
                                *range(rest, rest + n_ct), *range(n_rc, rest)])


def _returning_inputs(closed: ClosedJaxpr, which: Sequence[bool]) -> ClosedJaxpr:
    """`closed` returning also the inputs in `which`, after its own outputs."""
    jaxpr = closed.jaxpr
    dbg = jaxpr.debug_info
    extra = [v for v, w in zip(jaxpr.invars, which) if w]
    if dbg is not None and dbg.result_paths is not None and dbg.arg_names is not None:
        dbg = dbg.with_result_paths([*dbg.result_paths,
                                     *(n for n, w in zip(dbg.arg_names, which) if w)])
    return closed.replace(jaxpr=jaxpr.replace(outvars=[*jaxpr.outvars, *extra],
                                              debug_info=dbg))


def _scan_transpose(cts, *args, jaxpr, length, reverse, unroll, num_consts, num_carry):
    nc, nk = num_consts, num_carry
    consts, init, xs = split_list(args, [nc, nk])
    const_lin = [is_undefined_primal(c) for c in consts]
    xs_lin = [is_undefined_primal(x) for x in xs]
    cts = [instantiate(ct) for ct in cts]
    ct_avals = [*map(get_aval, cts[:nk]), *(_slice_aval(get_aval(ct)) for ct in cts[nk:])]
    body = _scan_transpose_body(jaxpr, nc, nk, tuple(const_lin), tuple(xs_lin),
                                tuple(ct_avals))
    lin_const_avals = [a for a, lin in zip(jaxpr.in_avals[:nc], const_lin) if lin]
    n_cl = len(lin_const_avals)
    outs = scan_p.bind(
        *(c for c, lin in zip(consts, const_lin) if not lin),
        *map(zeros_like_aval, lin_const_avals),
        *cts, *(x for x, lin in zip(xs, xs_lin) if not lin),
        jaxpr=body, length=length, reverse=not reverse, unroll=unroll,
        num_consts=nc - n_cl, num_carry=n_cl + nk)
    ct_consts, ct_init, ct_xs = split_list(outs, [n_cl, nk])
    it_c, it_x = iter(ct_consts), iter(ct_xs)
    return ([next(it_c) if lin else None for lin in const_lin]
            + [ct if is_undefined_primal(x) else None for x, ct in zip(init, ct_init)]
            + [next(it_x) if lin else None for lin in xs_lin])


def _scan_batching(axis_data, args, dims, *, jaxpr, num_consts, num_carry, **params):
    """As JAX's: batched consts and carries at 0, batched xs at 1 (each slice at 0),
    moved in that order, an unbatched init broadcast when the body batches its carry."""
    nc, nk = num_consts, num_carry
    ny = len(jaxpr.out_avals) - nk
    consts, init, xs = split_list(args, [nc, nk])
    cdims, kdims, xdims = split_list(dims, [nc, nk])
    const_dims, x_body_dims = ([not_mapped if d is not_mapped else 0 for d in ds]
                               for ds in (cdims, xdims))
    carry_b = [d is not not_mapped for d in kdims]
    while True:
        carry_dims = [0 if b else not_mapped for b in carry_b]
        body, out_dims = batch_jaxpr(jaxpr, axis_data, const_dims + carry_dims + x_body_dims,
                                     carry_b + [False] * ny)
        grown = or_flags(carry_b, [d is not not_mapped for d in out_dims[:nk]])
        if grown == carry_b:
            break
        carry_b = grown
    consts = [x if d is not_mapped else moveaxis(x, d, 0) for x, d in zip(consts, cdims)]
    init = [move_to(x, d, 0, axis_data.size) if b else x
            for x, d, b in zip(init, kdims, carry_b)]
    xs = [x if d is not_mapped else moveaxis(x, d, 1) for x, d in zip(xs, xdims)]
    outs = scan_p.bind(*consts, *init, *xs, jaxpr=body, num_consts=nc, num_carry=nk, **params)
    y_dims = [not_mapped if d is not_mapped else d + 1 for d in out_dims[nk:]]
    return outs, carry_dims + y_dims


scan_p.define_rule(JVP, _scan_jvp)
scan_p.define_rule(PARTIAL_EVAL, _scan_partial_eval)
scan_p.define_rule(PARTIAL_EVAL_JAXPR, _scan_partial_eval_jaxpr)
scan_p.define_rule(TRANSPOSE, _scan_transpose)
scan_p.define_rule(BATCHING, _scan_batching)

"""Rematerialization: `checkpoint` (alias `remat`) and the `checkpoint` primitive.

A checkpointed function is one `checkpoint[jaxpr, policy, prevent_cse,
differentiated]` equation. Evaluated, it just runs. Differentiated, its jvp is
again a checkpoint (of the jvp Jaxpr); when reverse mode splits that into what is
computed now and what is left for the backward pass, `remat_partial_eval_jaxpr`
keeps for it only the checkpoint's inputs and the values the policy allows (each
rounded to its own dtype by a `reduce_precision` where it is computed, as JAX's);
everything else the backward pass needs is computed again, inside a checkpoint
marked `differentiated`. Its lowering puts the inputs behind an
`optimization_barrier` (when `prevent_cse`) so XLA does not merge the
recomputation with the forward pass, which would defeat the point. As JAX's, a
checkpointed function is traced once per signature and static values.

A policy is `policy(primitive, *avals, **params) -> bool` (see
`plax.checkpoint_policies`); None saves nothing.
"""
from __future__ import annotations

import functools
from typing import Callable, Sequence

import numpy as np

from plax.extend import dtypes, tree_util
from plax.extend.traceback_util import api_boundary
from plax.extend.core import (
    BATCHING,
    JVP,
    PARTIAL_EVAL,
    PARTIAL_EVAL_JAXPR,
    TRANSPOSE,
    ClosedJaxpr,
    Jaxpr,
    JaxprEqn,
    Primitive,
    ShapedArray,
    Var,
    check_callable,
    eval_jaxpr,
    get_aval,
    make_tracing_debug_info,
    normalize_argnums,
    resolve_argnums,
    set_current_trace,
)
from plax.extend.mlir import hlo
from plax_stdlib.lax.control_flow.common import cached_trace
from plax_stdlib.lax.reduce_precision import reduce_precision_p
from plax_transforms.batching import batch_jaxpr
from plax_transforms.call_rules import call_dce, call_jvp, call_transpose
from plax_transforms.checkpoint_policies import is_saved
from plax_transforms.custom_derivatives import closure_convert_flat, named_hoisted
from plax_transforms.partial_eval import Inlined, assemble_split

checkpoint_p = Primitive("plax.remat2", multiple_results=True)  # JAX prints `remat2`


def checkpoint(fun: Callable, *, prevent_cse: bool = True, policy: Callable | None = None,
               static_argnums=(), static_argnames=()) -> Callable:
    """Makes `fun` trade computation for memory under reverse-mode differentiation.

    Normally the backward pass keeps every intermediate value the forward pass
    computed. Inside a checkpointed function they are not kept (except those
    `policy` allows): the backward pass recomputes them from the function's inputs.
    The values and derivatives are the same; peak memory is lower.

    Args:
        fun: the function.
        prevent_cse: keep XLA from merging the recomputation with the forward pass
            (which would undo the saving); False is safe inside `scan`.
        policy: which intermediates may be saved anyway: a function from
            `plax.ad_checkpoint.checkpoint_policies` (e.g. `dots_saveable`).
        static_argnums: positional arguments passed as Python values.
        static_argnames: keyword arguments passed as Python values.

    Returns:
        A function with `fun`'s signature and results.

    Raises:
        TypeError: `policy` is not callable.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> block = plax.checkpoint(lambda x: jnp.sin(jnp.sin(x)))
        >>> plax.grad(block)(0.0)
        Array(1., dtype=float32, weak_type=True)
    """
    check_callable(fun, "checkpoint")
    if policy is not None and not callable(policy):
        raise TypeError(f"checkpoint: policy must be callable (see "
                        f"plax.ad_checkpoint.checkpoint_policies), got {policy!r}")
    static_nums = normalize_argnums(static_argnums, "static_argnums")
    _, static_names = resolve_argnums(fun, (), static_argnames)

    @api_boundary
    @functools.wraps(fun)
    def fun_remat(*args, **kwargs):
        n = len(args)
        for i in static_nums:
            if not -n <= i < n:
                raise ValueError(f"checkpoint: static_argnums {i} out of range for a call "
                                 f"with {n} positional arguments")
        static = {i % n for i in static_nums}
        static_kw = {k: v for k, v in kwargs.items() if k in static_names}
        dyn = (tuple(a for i, a in enumerate(args) if i not in static),
               {k: v for k, v in kwargs.items() if k not in static_kw})
        flat, in_tree = tree_util.tree_flatten(dyn)
        dbg = make_tracing_debug_info("checkpoint", fun, args, kwargs,
                                      static_argnums=tuple(static),
                                      static_argnames=tuple(static_kw))
        try:
            in_avals = tuple(get_aval(x) for x in flat)
        except TypeError as err:
            raise TypeError(f"checkpoint of {dbg.func_src_info}: {err}") from None
        static_args = tuple((i, a) for i, a in enumerate(args) if i in static)
        closed, consts, out_tree = cached_trace(
            fun, (in_tree, in_avals, static_args, tuple(static_kw.items())),
            lambda: _trace(fun, args, static, static_kw, in_tree, in_avals, dbg))
        outs = checkpoint_p.bind(*consts, *flat, jaxpr=closed, prevent_cse=prevent_cse,
                                 differentiated=False, policy=policy)
        return tree_util.tree_unflatten(out_tree, outs)

    return fun_remat


def _trace(fun: Callable, args: tuple, static: set, static_kw: dict, in_tree, in_avals,
           dbg) -> tuple:
    """`fun` traced on the dynamic arguments' `in_avals` (the static ones as given):
    → (the Jaxpr taking its closed-over values then those arguments, the values, the
    output's tree)."""
    out_tree: list = []

    def flat_fun(*leaves):
        dyn_args, kw = tree_util.tree_unflatten(in_tree, leaves)
        it = iter(dyn_args)
        out = fun(*(a if i in static else next(it) for i, a in enumerate(args)),
                  **kw, **static_kw)
        out_leaves, tree = tree_util.tree_flatten(out)
        out_tree.append(tree)
        return out_leaves

    closed, consts = closure_convert_flat(flat_fun, list(in_avals))
    return named_hoisted(closed, len(consts), dbg, out_tree[0]), consts, out_tree[0]


remat = checkpoint


# --- the split that decides what is saved ---------------------------------------------------

def _saveable(policy, eqn: JaxprEqn) -> bool:
    return policy is not None and is_saved(
        policy(eqn.primitive, *(a.aval for a in eqn.invars), **eqn.params))


def _split_eqns(jaxpr: Jaxpr, unknowns: Sequence[bool]):
    """`jaxpr`'s equations, each marked unknown when it reads an unknown value; a
    higher-order equation with a `partial_eval_jaxpr` rule (jit, a nested
    checkpoint, control flow) is split into its known and unknown parts, so its
    known outputs stay known. → (equations, unknown flags, ids of unknown vars)."""
    unknown_ids = {id(v) for v, u in zip(jaxpr.invars, unknowns) if u}
    eqns: list[JaxprEqn] = []
    flags: list[bool] = []
    for eqn in jaxpr.eqns:
        in_unknowns = [isinstance(a, Var) and id(a) in unknown_ids for a in eqn.invars]
        if not any(in_unknowns):
            eqns.append(eqn)
            flags.append(False)
            continue
        rule = _split_checkpoint if eqn.primitive is checkpoint_p else \
            eqn.primitive.get_rule(PARTIAL_EVAL_JAXPR)
        if rule is None:
            known_eqn, unknown_eqn, out_unknowns = None, eqn, [True] * len(eqn.outvars)
        else:
            known_eqn, unknown_eqn, out_unknowns, _ = rule(eqn, in_unknowns)
        for part, unknown in ((known_eqn, False), (unknown_eqn, True)):
            if part is not None:
                eqns.append(part)
                flags.append(unknown)
        unknown_ids.update(id(v) for v, u in zip(eqn.outvars, out_unknowns) if u)
    return eqns, flags, unknown_ids


def remat_partial_eval_jaxpr(closed: ClosedJaxpr, unknowns: Sequence[bool], policy
                             ) -> tuple[ClosedJaxpr, ClosedJaxpr, list[bool], int, list[bool]]:
    """Split `closed` by which inputs are unknown, saving only what `policy` allows.

    As JAX's: → (known, staged, out_unknowns, num_residuals, staged_inputs), where
    `known` maps known inputs to known outputs then residuals, and `staged` maps
    residuals then the inputs it reads (known or not, those `staged_inputs` marks)
    to unknown outputs. Residuals are the constants and saveable results the staged
    side reads; other known equations are copied into `staged` and computed again.
    """
    jaxpr = closed.jaxpr
    eqns, is_unknown_eqn, unknown_ids = _split_eqns(jaxpr, unknowns)
    out_unknowns = [isinstance(v, Var) and id(v) in unknown_ids for v in jaxpr.outvars]

    # Walk back from what the staged side reads, recomputing unsaveable known values.
    needed: set[int] = {id(v) for v, u in zip(jaxpr.outvars, out_unknowns) if u}
    recompute = [False] * len(eqns)
    for k in reversed(range(len(eqns))):
        eqn = eqns[k]
        if not is_unknown_eqn[k]:
            if not any(id(v) in needed for v in eqn.outvars) or _saveable(policy, eqn):
                continue
            recompute[k] = True
        needed.update(id(a) for a in eqn.invars if isinstance(a, Var))
    recomputed = {id(v) for k, e in enumerate(eqns) if recompute[k] for v in e.outvars}
    known_vars = [*jaxpr.constvars,
                  *(v for k, e in enumerate(eqns) if not is_unknown_eqn[k] for v in e.outvars)]
    residuals = [v for v in known_vars if id(v) in needed and id(v) not in recomputed]
    staged_inputs = [id(v) in needed for v in jaxpr.invars]

    known_eqns = [e for k, e in enumerate(eqns) if not is_unknown_eqn[k]]
    staged_eqns = [e for k, e in enumerate(eqns) if is_unknown_eqn[k] or recompute[k]]
    return (*assemble_split(closed, unknowns, out_unknowns, known_eqns, staged_eqns, residuals,
                            staged_inputs), staged_inputs)


# --- the primitive's rules ------------------------------------------------------------------

@checkpoint_p.def_abstract_eval
def _checkpoint_abstract_eval(*avals, jaxpr: ClosedJaxpr, **_):
    expected = jaxpr.in_avals
    if len(avals) != len(expected) or any((a.shape, a.dtype) != (b.shape, b.dtype)
                                          for a, b in zip(avals, expected)):
        raise TypeError(f"checkpoint takes {[a.str_short() for a in expected]}, got "
                        f"{[a.str_short() for a in avals]}")
    return list(jaxpr.out_avals)


checkpoint_p.define_rule("effects", lambda *, jaxpr, **_: jaxpr.effects)


@checkpoint_p.def_impl
def _checkpoint_impl(*args, jaxpr: ClosedJaxpr, **_):
    return eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args)


def _rebind(closed: ClosedJaxpr, params: dict, role: str) -> dict:
    """A transformed checkpoint keeps its options; a transposed one is the backward
    pass's recomputation."""
    return dict(params, jaxpr=closed, **({"differentiated": True} if role == "transpose"
                                          else {}))


def _rounded_residuals(known: ClosedJaxpr, num_res: int) -> ClosedJaxpr:
    """`known` with each floating-point residual that an equation computes and `known`
    reads again rounded to its dtype by a `reduce_precision` after that equation, as
    JAX's: XLA may keep more precision in the forward pass than a saved value has, and
    the backward pass must see the value the forward pass used."""
    jaxpr = known.jaxpr
    residuals = jaxpr.outvars[len(jaxpr.outvars) - num_res:]
    read = {id(a) for e in jaxpr.eqns for a in e.invars}
    rounded = {id(v): k for k, v in enumerate(residuals) if id(v) in read
               and isinstance(v.aval, ShapedArray) and dtypes.issubdtype(v.aval.dtype, np.inexact)}
    eqns = []
    for eqn in jaxpr.eqns:
        outs = sorted((v for v in eqn.outvars if id(v) in rounded),
                      key=lambda v: rounded[id(v)], reverse=True)  # as JAX inserts them
        if eqn.primitive is reduce_precision_p and outs and eqn.params == _bits(outs[0]):
            outs = []  # already rounded
        fresh = {id(v): Var(v.aval) for v in outs}
        eqns.append(eqn.replace(outvars=[fresh.get(id(v), v) for v in eqn.outvars]))
        eqns += [eqn.replace(primitive=reduce_precision_p, invars=[fresh[id(v)]], outvars=[v],
                             params=_bits(v), effects=frozenset()) for v in outs]
    return known.replace(jaxpr=jaxpr.replace(eqns=eqns))


def _bits(v: Var) -> dict:
    """The parameters of a `reduce_precision` to `v`'s own floating-point format."""
    info = dtypes.finfo(v.aval.dtype)
    return {"exponent_bits": info.nexp, "mantissa_bits": info.nmant}


def _checkpoint_partial_eval(trace, args, *, jaxpr: ClosedJaxpr, **params):
    unknowns = [trace.is_unknown(a) for a in args]
    known, staged, out_unknowns, num_res, staged_inputs = remat_partial_eval_jaxpr(
        jaxpr, unknowns, params["policy"])
    known = _rounded_residuals(known, num_res)
    with set_current_trace(trace.parent):
        known_outs = eval_jaxpr(known.jaxpr, known.consts,
                                *(a for a, u in zip(args, unknowns) if not u))
    n_known = len(known_outs) - num_res
    staged_outs = iter(trace.stage(
        checkpoint_p, [*known_outs[n_known:], *(a for a, s in zip(args, staged_inputs) if s)],
        dict(params, jaxpr=staged, differentiated=True)))
    known_iter = iter(known_outs[:n_known])
    return [next(staged_outs) if u else next(known_iter) for u in out_unknowns]


def _split_checkpoint(eqn: JaxprEqn, unknowns):
    """A checkpoint equation split into a known and a staged checkpoint, as a
    checkpoint's own split splits one nested in it (JAX's `partial_eval_jaxpr_custom`)."""
    params = eqn.params
    known, staged, out_unknowns, num_res, staged_inputs = remat_partial_eval_jaxpr(
        params["jaxpr"], unknowns, params["policy"])
    residuals = [Var(a) for a in staged.in_avals[:num_res]]
    known_eqn = eqn.replace(
        invars=[a for a, u in zip(eqn.invars, unknowns) if not u],
        outvars=[v for v, u in zip(eqn.outvars, out_unknowns) if not u] + residuals,
        params=dict(params, jaxpr=known))
    staged_eqn = eqn.replace(
        invars=residuals + [a for a, s in zip(eqn.invars, staged_inputs) if s],
        outvars=[v for v, u in zip(eqn.outvars, out_unknowns) if u],
        params=dict(params, jaxpr=staged, differentiated=True))
    return known_eqn, staged_eqn, out_unknowns, residuals


def _checkpoint_partial_eval_jaxpr(eqn: JaxprEqn, unknowns):
    """`partial_eval_jaxpr`'s split (a scan's body, a jit's): the known part's equations
    (residuals rounded) inlined, as JAX's traced split evaluates them in place."""
    known_eqn, staged_eqn, out_unknowns, residuals = _split_checkpoint(eqn, unknowns)
    known = _rounded_residuals(known_eqn.params["jaxpr"], len(residuals))
    inlined = _inlined(known, known_eqn.invars, known_eqn.outvars)
    return (known_eqn if inlined is None else inlined), staged_eqn, out_unknowns, residuals


def _inlined(closed: ClosedJaxpr, ins: Sequence, outs: Sequence[Var]) -> Inlined | None:
    """`closed`'s equations reading the atoms `ins` and binding its outputs to `outs`
    (fresh variables inside); an output that is an input passed on, a literal or
    another output again is an alias of that atom. None for a Jaxpr with constants."""
    jaxpr = closed.jaxpr
    if closed.consts or jaxpr.constvars:
        return None
    env = {id(v): a for v, a in zip(jaxpr.invars, ins)}
    aliases = {}
    for v, out in zip(jaxpr.outvars, outs):
        if isinstance(v, Var) and id(v) not in env:
            env[id(v)] = out
        else:
            aliases[id(out)] = env[id(v)] if isinstance(v, Var) else v

    def bound(v: Var) -> Var:
        if id(v) not in env:
            env[id(v)] = type(v)(v.aval)  # (a DropVar stays one)
        return env[id(v)]

    return Inlined([e.replace(invars=[bound(a) if isinstance(a, Var) else a for a in e.invars],
                              outvars=[bound(v) for v in e.outvars]) for e in jaxpr.eqns],
                   aliases)


def _checkpoint_batching(axis_data, args, dims, *, jaxpr: ClosedJaxpr, **params):
    batched, out_dims = batch_jaxpr(jaxpr, axis_data, dims, False)
    return checkpoint_p.bind(*args, jaxpr=batched, **params), out_dims


def _checkpoint_lowering(ctx, *args, jaxpr: ClosedJaxpr, prevent_cse: bool,
                         differentiated: bool, **_):
    if prevent_cse and differentiated and args:
        args = hlo.OptimizationBarrierOp(list(args)).results
    return ctx.lower_subjaxpr(jaxpr, *args, name="checkpoint")


checkpoint_p.define_rule(JVP, call_jvp(checkpoint_p, _rebind))
checkpoint_p.define_rule(PARTIAL_EVAL, _checkpoint_partial_eval)
checkpoint_p.define_rule(PARTIAL_EVAL_JAXPR, _checkpoint_partial_eval_jaxpr)
checkpoint_p.define_rule(TRANSPOSE, call_transpose(checkpoint_p, _rebind,
                                                    cts_typed_as_outputs=True))
checkpoint_p.define_rule("dce", call_dce(_rebind))
checkpoint_p.define_rule(BATCHING, _checkpoint_batching)
checkpoint_p.def_lowering(_checkpoint_lowering)

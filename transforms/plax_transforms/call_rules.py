"""Rules shared by primitives that call the Jaxpr in their `jaxpr` parameter (jit,
compute_on; checkpoint's dce): a transformed call is again one call of the
transformed Jaxpr.

Each maker takes the primitive and `rebind(closed, params, role)`, the parameters of
the new call of `closed` made from the original call's `params`, where `role` is
`"jvp"`, `"known"`, `"unknown"`, `"transpose"` or `"dce"` (jit keeps the function's
name, as JAX's; compute_on keeps its compute type). Partial evaluation forwards the
residuals that are the call's own inputs or known outputs (and, for jit, the known
outputs that are inputs) and drops those the staged call never reads.
"""
from __future__ import annotations

from typing import Callable

from plax.extend.ad import Zero, instantiate, is_undefined_primal, tangent_aval
from plax.extend.core import (ClosedJaxpr, DropVar, JaxprEqn, Primitive, Var, dce_closed_jaxpr,
                              dce_jaxpr, get_aval)
from plax_transforms.ad import jvp_jaxpr
from plax_transforms.partial_eval import Inlined, partial_eval_jaxpr
from plax_transforms.signature import cached_on_jaxpr
from plax_transforms.transpose import transpose_jaxpr

Rebind = Callable[[ClosedJaxpr, dict, str], dict]

# The called Jaxpr's transformations, by its identity and the flags (tuples): as in
# JAX, differentiating the same call again re-traces nothing (a custom_vjp's bwd
# inside runs its Python once) and reuses the transformed calls' executables.
_jvp = cached_on_jaxpr(jvp_jaxpr)
_transpose = cached_on_jaxpr(transpose_jaxpr)


def call_jvp(prim: Primitive, rebind: Rebind):
    """The jvp rule: one call of the jvp Jaxpr on the primals and nonzero tangents."""
    def rule(primals, tangents, *, jaxpr: ClosedJaxpr, **params):
        nonzeros = [not isinstance(t, Zero) for t in tangents]
        jvp_closed, out_nonzeros = _jvp(jaxpr, tuple(nonzeros))
        outs = prim.bind(*primals, *(t for t, nz in zip(tangents, nonzeros) if nz),
                         **rebind(jvp_closed, dict(params, jaxpr=jaxpr), "jvp"))
        n = len(jaxpr.out_avals)
        nz_tangents = iter(outs[n:])
        return outs[:n], [next(nz_tangents) if nz else Zero(tangent_aval(a))
                          for nz, a in zip(out_nonzeros, jaxpr.out_avals)]
    return rule


def _split_forwarding(closed: ClosedJaxpr, unknowns: tuple, forwardable: tuple | None):
    """`partial_eval_jaxpr`, where the known call does not return what its caller has
    already (JAX's forwarding): a residual that is one of its own inputs or known
    outputs and, where `forwardable` says per output of `closed` which may be (JAX's
    jit), a known output that is an input. → (known without those outputs, unknown,
    out_unknowns, sources): per known output then residual, None where the known call
    computes it, else the index in (known inputs, known outputs) of the value it is."""
    known, unknown, out_unknowns, num_res = partial_eval_jaxpr(closed, unknowns)
    known, unknown, num_res = _unused_residuals_dropped(known, unknown, num_res)
    jaxpr = known.jaxpr
    n_in, n_out = len(jaxpr.invars), len(jaxpr.outvars) - num_res
    position = {v: i for i, v in enumerate(jaxpr.invars)}
    may_forward = ([False] * n_out if forwardable is None else
                   [f for f, u in zip(forwardable, out_unknowns) if not u])
    sources = [position.get(v) if may and isinstance(v, Var) else None
               for v, may in zip(jaxpr.outvars, may_forward)]
    computed = {v: n_in + j for j, (v, f) in enumerate(zip(jaxpr.outvars, sources))
                if f is None}
    sources += [position.get(v, computed.get(v)) if isinstance(v, Var) else None
                for v in jaxpr.outvars[n_out:]]
    if any(f is not None for f in sources):
        dbg = jaxpr.debug_info
        paths = None if dbg is None else dbg.result_paths
        keep = lambda values: [v for v, f in zip(values, sources) if f is None]  # noqa: E731
        known = known.replace(jaxpr=jaxpr.replace(
            outvars=keep(jaxpr.outvars),
            debug_info=dbg if paths is None else dbg.with_result_paths(keep(paths))))
    return known, unknown, out_unknowns, tuple(sources)


_split_fwd = cached_on_jaxpr(_split_forwarding)


def _unused_residuals_dropped(known: ClosedJaxpr, unknown: ClosedJaxpr, num_res: int):
    """Without the residuals the unknown side never reads once its dead equations are
    gone (a tangent that dies at a stop_gradient), nor what computed only them, as
    JAX's split of a call. → (known, unknown, number of residuals)."""
    n_in = len(unknown.jaxpr.invars)
    pruned, used = dce_closed_jaxpr(unknown, [True] * len(unknown.jaxpr.outvars),
                                    instantiate=[False] * num_res + [True] * (n_in - num_res))
    if all(used[:num_res]):
        return known, unknown, num_res
    n_known_out = len(known.jaxpr.outvars) - num_res
    known, _ = dce_closed_jaxpr(known, [True] * n_known_out + used[:num_res], instantiate=True)
    return known, pruned, sum(used[:num_res])


def _forwarded(known_inputs: list, computed: list, sources: tuple) -> list:
    """The known outputs then residuals: each the next one the known call computed, or
    the known input or earlier output its source names."""
    values = list(known_inputs)
    computed = iter(computed)
    for source in sources:
        values.append(next(computed) if source is None else values[source])
    return values[len(known_inputs):]


def call_partial_eval(prim: Primitive, rebind: Rebind, stage=None,
                      forwardable: Callable[[dict], tuple] | None = None):
    """The partial-eval rule: a call of the known part now, of the rest staged (by
    `stage(trace, args, params)`, if given, instead of as one call). `forwardable(params)`
    says which outputs the known call may forward (JAX's jit: those of no sharding)."""
    def rule(trace, args, *, jaxpr: ClosedJaxpr, **params):
        params = dict(params, jaxpr=jaxpr)
        unknowns = tuple(trace.is_unknown(a) for a in args)
        known, unknown, out_unknowns, sources = _split_fwd(
            jaxpr, unknowns, forwardable and forwardable(params))
        known_args = [a for a, u in zip(args, unknowns) if not u]
        computed = trace.bind_known(prim, known_args, rebind(known, params, "known"))
        n_known = sum(not u for u in out_unknowns)
        outs = _forwarded(known_args, computed, sources)
        unknown_args = [*outs[n_known:], *(a for a, u in zip(args, unknowns) if u)]
        unknown_params = rebind(unknown, params, "unknown")
        unknown_outs = iter(trace.stage(prim, unknown_args, unknown_params) if stage is None
                            else stage(trace, unknown_args, unknown_params))
        known_iter = iter(outs[:n_known])
        return [next(unknown_outs) if u else next(known_iter) for u in out_unknowns]
    return rule


def call_partial_eval_jaxpr(rebind: Rebind, forwardable: Callable[[dict], tuple] | None = None):
    """The same split of an equation: a known and an unknown equation. A known output
    forwarded from an input is not the known equation's: later equations read the
    input (`Inlined`'s aliases)."""
    def rule(eqn: JaxprEqn, unknowns):
        params = eqn.params
        known, unknown, out_unknowns, sources = _split_fwd(
            params["jaxpr"], tuple(unknowns), forwardable and forwardable(params))
        n_known = sum(not u for u in out_unknowns)
        known_ins = [a for a, u in zip(eqn.invars, unknowns) if not u]
        n_in = len(known_ins)
        read = {f - n_in for f in sources[n_known:] if f is not None and f >= n_in}
        known_outs = [Var(v.aval) if isinstance(v, DropVar) and j in read else v
                      for j, v in enumerate(v for v, u in zip(eqn.outvars, out_unknowns)
                                            if not u)]  # (a residual is read: named)
        computed = [v for v, f in zip(known_outs, sources) if f is None]
        computed += [Var(a) for a in known.out_avals[len(computed):]]
        values = _forwarded(known_ins, computed, sources)
        known_eqn = eqn.replace(invars=known_ins, outvars=computed,
                                params=rebind(known, params, "known"))
        aliases = {id(v): value for v, value in zip(known_outs, values) if value is not v}
        unknown_eqn = eqn.replace(
            invars=values[n_known:] + [a for a, u in zip(eqn.invars, unknowns) if u],
            outvars=[v for v, u in zip(eqn.outvars, out_unknowns) if u],
            params=rebind(unknown, params, "unknown"))
        return (Inlined([known_eqn], aliases) if aliases else known_eqn, unknown_eqn,
                list(out_unknowns), values[n_known:])
    return rule


def call_transpose(prim: Primitive, rebind: Rebind, cts_typed_as_outputs: bool = False):
    """The transpose rule: one call of the transposed Jaxpr, traced on the cotangents'
    own types (JAX's jit: a weak cotangent of a strong output stays weak where the
    backward pass keeps it so) or, with `cts_typed_as_outputs`, on the call's output
    types (JAX's checkpoint)."""
    def rule(cts, *args, jaxpr: ClosedJaxpr, **params):
        linear = tuple(is_undefined_primal(a) for a in args)
        cts = [instantiate(ct) for ct in cts]
        ct_avals = None if cts_typed_as_outputs else tuple(map(get_aval, cts))
        transposed = _transpose(jaxpr, linear, ct_avals)
        outs = iter(prim.bind(*(a for a, lin in zip(args, linear) if not lin), *cts,
                              **rebind(transposed, dict(params, jaxpr=jaxpr), "transpose")))
        return [next(outs) if lin else None for lin in linear]
    return rule


def call_dce(rebind: Rebind):
    """The dce rule: the call of the Jaxpr pruned to the used outputs, its inputs
    pruned to those still read."""
    def rule(used_outputs: list[bool], eqn: JaxprEqn):
        if not any(used_outputs) and not eqn.effects:
            return [False] * len(eqn.invars), None
        closed: ClosedJaxpr = eqn.params["jaxpr"]
        pruned, used_inputs = dce_jaxpr(closed.jaxpr, used_outputs)
        if all(used_outputs) and all(used_inputs):
            return used_inputs, eqn
        return used_inputs, eqn.replace(
            invars=[a for a, u in zip(eqn.invars, used_inputs) if u],
            outvars=[v for v, u in zip(eqn.outvars, used_outputs) if u],
            params=rebind(ClosedJaxpr(pruned, closed.consts), eqn.params, "dce"))
    return rule

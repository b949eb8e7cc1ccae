"""`jit_p`: the primitive a `jit`-decorated call becomes inside another trace.

Its `jaxpr` parameter is the traced function. Staged into an outer Jaxpr it shows
as `jit[name=g ...]` and lowers to a call of a private function; evaluated
eagerly it compiles the whole Jaxpr and runs it. Its rules, all here:

* abstract evaluation: the Jaxpr's output avals (inputs are checked against it);
* effects: the Jaxpr's;
* impl: `plax_transforms.executing.execute_jaxpr` on the arguments' device;
* dce: prunes the inner Jaxpr to the outputs the outer one uses;
* lowering: a `func.call` of a private function holding the Jaxpr, emitted once per
  distinct Jaxpr in a module, so repeated calls of the same inner jit share it;
  given in/out shardings become sharding constraints on the call's operands and
  results;
* jvp, partial evaluation, transpose: one `jit` call of the transformed inner Jaxpr,
  so `grad(jit(f))` keeps `f` staged as its own calls instead of inlining it;
* batching: one `jit` call of the batched inner Jaxpr.

A call made with `inline=True` (and no shardings) is a call only where it is not
staged: bound where a Jaxpr is being traced, its equations go there instead (JAX's
staging of such jits: `jnp.sin` shows as `sin`), while eager evaluation, vmap, jvp and
the known part of a linearization run it (transformed) as one compiled call, as
JAX's eager `vmap(jnp.tanh)` does, so that their values round as JAX's.
"""
from __future__ import annotations

import numpy as np

from plax.extend.core import (
    BATCHING,
    JVP,
    PARTIAL_EVAL,
    PARTIAL_EVAL_JAXPR,
    TRANSPOSE,
    ClosedJaxpr,
    JaxprEqn,
    Primitive,
    StagingTrace,
    current_source_info,
    current_trace,
    dce_jaxpr,
    eval_jaxpr,
    set_current_trace,
)
from plax_transforms import executing
from plax_transforms.batching import batch_jaxpr
from plax_transforms.call_rules import (call_jvp, call_partial_eval, call_partial_eval_jaxpr,
                                        call_transpose)
from plax_transforms.lowering import sharding_constraint

class _JitPrimitive(Primitive):
    """`jit_p`, whose `inline=True` calls staged into a Jaxpr are their equations
    (module docstring); staging under a linearization is `_stage_unknown`'s."""

    def bind(self, *args, **params):
        trace = current_trace()
        if params["inline"] and type(trace) is StagingTrace:
            closed = params["jaxpr"]
            return eval_jaxpr(closed.jaxpr, closed.consts, *args,
                              source=current_source_info())
        return trace.process_primitive(self, args, params)  # (`Primitive.bind`'s work)


jit_p = _JitPrimitive("plax.jit", multiple_results=True)




def jit_params(closed: ClosedJaxpr, name: str, *, donated_invars=None,
               keep_unused: bool = False, inline: bool = False,
               in_shardings=None, out_shardings=None) -> dict:
    """The parameters of a `jit_p` equation, with defaults filled in."""
    n_in, n_out = len(closed.jaxpr.invars), len(closed.jaxpr.outvars)
    return dict(jaxpr=closed, name=name,
                donated_invars=tuple(donated_invars) if donated_invars else (False,) * n_in,
                keep_unused=keep_unused, inline=inline,
                in_shardings=tuple(in_shardings) if in_shardings else (None,) * n_in,
                out_shardings=tuple(out_shardings) if out_shardings else (None,) * n_out)


@jit_p.def_abstract_eval
def _jit_abstract_eval(*avals_in, jaxpr: ClosedJaxpr, name: str, **_):
    expected = jaxpr.in_avals
    if len(avals_in) != len(expected):
        raise TypeError(f"jit of {name} takes {len(expected)} arguments, got {len(avals_in)}")
    for i, (got, want) in enumerate(zip(avals_in, expected)):
        if (got.shape, got.dtype) != (want.shape, want.dtype):
            raise TypeError(f"jit of {name}: argument {i} has type {got.str_short()} but the "
                            f"traced function expects {want.str_short()}")
    return list(jaxpr.out_avals)


jit_p.define_rule("effects", lambda *, jaxpr, **_: jaxpr.effects)


@jit_p.def_impl
def _jit_impl(*args, jaxpr: ClosedJaxpr, name: str, donated_invars, keep_unused: bool,
              in_shardings, out_shardings, **_):
    return executing.execute_jaxpr(jaxpr, name, args, donated_invars=donated_invars,
                                   keep_unused=keep_unused, in_shardings=in_shardings,
                                   out_shardings=out_shardings)


def _jit_dce(used_outputs: list[bool], eqn: JaxprEqn):
    params = eqn.params
    if not any(used_outputs) and not eqn.effects:
        return [False] * len(eqn.invars), None
    closed: ClosedJaxpr = params["jaxpr"]
    pruned, used_inputs = dce_jaxpr(closed.jaxpr, used_outputs,
                                    instantiate=params["keep_unused"])
    if all(used_outputs) and all(used_inputs) and len(pruned.eqns) == len(closed.jaxpr.eqns):
        return used_inputs, eqn  # unchanged: keep the same Jaxpr, so lowering shares it
    live = {id(v) for v in pruned.constvars}
    consts = [c for v, c in zip(closed.jaxpr.constvars, closed.consts) if id(v) in live]

    def keep(values, flags):
        return tuple(v for v, f in zip(values, flags) if f)

    new_params = dict(params, jaxpr=ClosedJaxpr(pruned, consts),
                      donated_invars=keep(params["donated_invars"], used_inputs),
                      in_shardings=keep(params["in_shardings"], used_inputs),
                      out_shardings=keep(params["out_shardings"], used_outputs))
    return used_inputs, eqn.replace(invars=keep(eqn.invars, used_inputs),
                                    outvars=keep(eqn.outvars, used_outputs),
                                    params=new_params)


jit_p.define_rule("dce", _jit_dce)


@jit_p.def_lowering
def _jit_lowering(ctx, *args, jaxpr, name: str, in_shardings, out_shardings, **_):
    args = [v if s is None else sharding_constraint(ctx, v, s, aval)
            for v, s, aval in zip(args, in_shardings, ctx.avals_in)]
    outs = ctx.lower_subjaxpr(jaxpr, *args, name=name)
    return [v if s is None else sharding_constraint(ctx, v, s, aval)
            for v, s, aval in zip(outs, out_shardings, ctx.avals_out)]


# --- transformations: the inner Jaxpr is transformed, the call stays a jit call -----------

def _rebind(closed: ClosedJaxpr, params: dict, role: str) -> dict:
    """A transformed jit call: default options but `inline`, and the function's own
    name (JAX's Jaxprs name a jvp or transposed call as the function, not `jvp(f)`)."""
    return jit_params(closed, params["name"], inline=params["inline"])


jit_p.define_rule(JVP, call_jvp(jit_p, _rebind))
def _stage_unknown(trace, args, params):
    """The part of a linearized call that waits for tangents: an `inline` call's
    equations staged one by one (JAX's linearization stages them so, and runs them so
    when transposed), another call's as one call."""
    if not params["inline"]:
        return trace.stage(jit_p, args, params)
    closed = params["jaxpr"]
    with set_current_trace(trace):
        return eval_jaxpr(closed.jaxpr, closed.consts, *args, bind=trace.restage)


def _forwardable(params: dict) -> tuple:
    """As JAX's jit: a known output that is an input is forwarded unless it is placed."""
    return tuple(s is None for s in params["out_shardings"])


jit_p.define_rule(PARTIAL_EVAL, call_partial_eval(jit_p, _rebind, _stage_unknown,
                                                  _forwardable))
jit_p.define_rule(PARTIAL_EVAL_JAXPR, call_partial_eval_jaxpr(_rebind, _forwardable))
jit_p.define_rule(TRANSPOSE, call_transpose(jit_p, _rebind))


def _jit_batching(axis_data, args, dims, *, jaxpr: ClosedJaxpr, **params):
    new, out_dims = batch_jaxpr(jaxpr, axis_data, dims, False)
    outs = jit_p.bind(*args, jaxpr=new, **params)
    return outs, out_dims


jit_p.define_rule(BATCHING, _jit_batching)


def _jit_pretty_print(eqn: JaxprEqn, same_names) -> list:
    """JAX's form: `name=` first, then the params that differ from a plain `jit`; the
    called Jaxpr's binders print with the equation's names."""
    params = eqn.params
    same_names(params["jaxpr"].jaxpr.invars, eqn.invars)
    same_names(params["jaxpr"].jaxpr.outvars, eqn.outvars)
    shown = {k: v for k, v in params.items() if k not in ("name", "inline")
             and not (k in ("donated_invars", "keep_unused") and not any(np.atleast_1d(v)))
             and not (k in ("in_shardings", "out_shardings") and all(s is None for s in v))}
    return [("name", params["name"]), *sorted(shown.items())]


jit_p.define_rule("pretty_print", _jit_pretty_print)

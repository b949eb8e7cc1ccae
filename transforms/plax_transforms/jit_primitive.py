"""`jit_p`: the primitive a `jit`-decorated call becomes inside another trace.

Its `jaxpr` parameter is the traced function. Staged into an outer Jaxpr it shows
as `jit[name=g ...]` and lowers to a call of a private function; evaluated
eagerly it compiles the whole Jaxpr and runs it. Its rules:

* abstract evaluation: the Jaxpr's output avals (inputs are checked against it);
* effects: the Jaxpr's;
* dce: prunes the inner Jaxpr to the outputs the outer one uses;
* lowering: `plax_transforms.lowering_rules`;
* impl: `plax_transforms.executing.execute_jaxpr` on the arguments' device.
"""
from __future__ import annotations

from plax._src.ir import ClosedJaxpr, JaxprEqn
from plax._src.jaxpr_util import dce_jaxpr
from plax._src.primitive import Primitive

from plax_transforms import executing

jit_p = Primitive("jit", multiple_results=True)


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
              in_shardings, **_):
    return executing.execute_jaxpr(jaxpr, name, args, donated_invars=donated_invars,
                                   keep_unused=keep_unused, in_shardings=in_shardings)


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

"""Dead-code elimination of Jaxprs: unused outputs, the equations only they need,
then unused inputs, with the debug info pruned in lock-step (one name per
variable). Higher-order primitives prune inside themselves through their `dce`
rule."""
from __future__ import annotations

from typing import Sequence

from plax._src.ir import ClosedJaxpr, Jaxpr, JaxprEqn, Var


def dce_jaxpr(jaxpr: Jaxpr, used_outputs: Sequence[bool], instantiate: bool | Sequence[bool] = False
              ) -> tuple[Jaxpr, list[bool]]:
    """Drop unused outputs, the equations only they need, and then unused inputs.

    Constvars are kept (see `dce_closed_jaxpr` to prune them with their values).

    `instantiate` keeps inputs even when unused (one flag or one per input). Returns
    the pruned Jaxpr and which inputs it kept. Equations with effects are kept.
    A primitive may define a `dce` rule `(used_outputs, eqn) -> (used_inputs, new_eqn
    or None)` to prune inside itself (higher-order primitives do).
    """
    if isinstance(instantiate, bool):
        instantiate = [instantiate] * len(jaxpr.invars)
    outvars = [v for v, used in zip(jaxpr.outvars, used_outputs, strict=True) if used]
    live = {id(v) for v in outvars if isinstance(v, Var)}
    new_eqns: list[JaxprEqn] = []
    for eqn in reversed(jaxpr.eqns):
        used = [id(v) in live for v in eqn.outvars]
        if not any(used) and not eqn.effects:
            continue
        rule = eqn.primitive.get_rule("dce")
        if rule is not None:
            used_ins, new_eqn = rule(used, eqn)  # `used_ins` is per input of `eqn`
            if new_eqn is None:
                continue
        else:
            used_ins, new_eqn = [True] * len(eqn.invars), eqn
        new_eqns.append(new_eqn)
        live.update(id(v) for v, u in zip(eqn.invars, used_ins, strict=True)
                    if u and isinstance(v, Var))
    used_inputs = [id(v) in live or keep for v, keep in zip(jaxpr.invars, instantiate)]
    dbg = jaxpr.debug_info
    if dbg is not None:
        dbg = dbg.filter_arg_names(used_inputs).filter_result_paths(used_outputs)
    new = Jaxpr(jaxpr.constvars, [v for v, u in zip(jaxpr.invars, used_inputs) if u],
                outvars, new_eqns[::-1],
                frozenset().union(*(e.effects for e in new_eqns)), dbg)
    return new, used_inputs


def dce_closed_jaxpr(closed: ClosedJaxpr, used_outputs: Sequence[bool],
                     instantiate: bool | Sequence[bool] = False) -> tuple[ClosedJaxpr, list[bool]]:
    """`dce_jaxpr` that also drops constants nothing reads any more."""
    jaxpr, used_inputs = dce_jaxpr(closed.jaxpr, used_outputs, instantiate)
    read = {id(a) for e in jaxpr.eqns for a in e.invars} | {id(a) for a in jaxpr.outvars}
    kept = [(v, c) for v, c in zip(jaxpr.constvars, closed.consts) if id(v) in read]
    return (ClosedJaxpr(jaxpr.replace(constvars=[v for v, _ in kept]), [c for _, c in kept]),
            used_inputs)

"""Whole-Jaxpr utilities: evaluation, type checking and dead-code elimination.

`check_jaxpr` is what the tests of every transformation run on the Jaxprs they
produce; `dce_jaxpr` prunes unused inputs and outputs and keeps the debug info at
one entry per variable.
"""
from __future__ import annotations

from typing import Any, Sequence

from plax._src.abstract import ShapedArray
from plax._src.debug_info import check_debug_info_counts
from plax._src.ir import ClosedJaxpr, DropVar, Jaxpr, JaxprEqn, Literal, Var, subjaxprs


class JaxprTypeError(TypeError):
    """A Jaxpr is ill-formed or its types do not agree with its primitives' rules."""


def eval_jaxpr(jaxpr: Jaxpr, consts: Sequence[Any], *args) -> list[Any]:
    """Run `jaxpr` by binding each equation's primitive under the current trace."""
    env: dict[int, Any] = {}

    def read(atom):
        return atom.val if isinstance(atom, Literal) else env[id(atom)]

    for var, value in zip(jaxpr.constvars, consts, strict=True):
        env[id(var)] = value
    for var, value in zip(jaxpr.invars, args, strict=True):
        env[id(var)] = value
    for eqn in jaxpr.eqns:
        outs = eqn.primitive.bind(*map(read, eqn.invars), **eqn.params)
        for var, value in zip(eqn.outvars, outs if eqn.primitive.multiple_results else (outs,),
                              strict=True):
            env[id(var)] = value
    return [read(v) for v in jaxpr.outvars]


def jaxpr_as_fun(closed: ClosedJaxpr):
    """A Python callable that evaluates `closed` on flat arguments."""
    return lambda *args: eval_jaxpr(closed.jaxpr, closed.consts, *args)


# --- type checking -----------------------------------------------------------------

def _types_agree(expected, actual) -> bool:
    if isinstance(expected, ShapedArray) and isinstance(actual, ShapedArray):
        return expected.shape == actual.shape and expected.dtype == actual.dtype
    return expected == actual


def check_jaxpr(jaxpr: Jaxpr | ClosedJaxpr) -> None:
    """Check scoping, types against abstract evaluation, and debug-info counts."""
    if isinstance(jaxpr, ClosedJaxpr):
        jaxpr = jaxpr.jaxpr
    defined: set[int] = set()

    def define(var: Var, where: str):
        if id(var) in defined:
            raise JaxprTypeError(f"variable {var!r} is defined twice ({where})")
        defined.add(id(var))

    def use(atom, where: str):
        if isinstance(atom, Literal):
            return
        if id(atom) not in defined:
            raise JaxprTypeError(f"variable {atom!r} is used before it is defined ({where})")

    for v in jaxpr.constvars:
        define(v, "constvar")
    for v in jaxpr.invars:
        define(v, "invar")
    for i, eqn in enumerate(jaxpr.eqns):
        where = f"equation {i}: {eqn.primitive.name}"
        for atom in eqn.invars:
            use(atom, where)
        _check_eqn_types(eqn, where)
        for sub in subjaxprs(eqn):
            check_jaxpr(sub)
        for v in eqn.outvars:
            if not isinstance(v, DropVar):
                define(v, where)
    for atom in jaxpr.outvars:
        use(atom, "outputs")
    if jaxpr.debug_info is not None:
        check_debug_info_counts(jaxpr.debug_info, len(jaxpr.invars), len(jaxpr.outvars))


def _check_eqn_types(eqn: JaxprEqn, where: str) -> None:
    try:
        out = eqn.primitive.abstract_eval(*(a.aval for a in eqn.invars), **eqn.params)
    except (TypeError, ValueError) as err:
        raise JaxprTypeError(f"{where} fails abstract evaluation: {err}") from err
    outs = out if eqn.primitive.multiple_results else (out,)
    if len(outs) != len(eqn.outvars):
        raise JaxprTypeError(f"{where} produces {len(outs)} values but binds "
                             f"{len(eqn.outvars)} variables")
    for expected, var in zip(outs, eqn.outvars):
        if not _types_agree(expected, var.aval):
            raise JaxprTypeError(f"{where} produces {expected.str_short()} but its output "
                                 f"variable has type {var.aval.str_short()}")


# --- dead-code elimination ---------------------------------------------------------

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
            used_ins, eqn = rule(used, eqn)
            if eqn is None:
                continue
        else:
            used_ins = [True] * len(eqn.invars)
        new_eqns.append(eqn)
        live.update(id(v) for v, u in zip(eqn.invars, used_ins)
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

"""Evaluating a Jaxpr: each equation's primitive is bound under the current trace,
so the same walk executes eagerly, stages into another Jaxpr, or transforms (each
equation under its own name stack and frontend attributes, so staged copies keep
their names and tags)."""
from __future__ import annotations

from typing import Any, Sequence

from plax._src.frontend_attributes import reapplied_frontend_attributes
from plax._src.ir import ClosedJaxpr, Jaxpr, Literal
from plax._src.name_stack import extend_name_stack


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
        if eqn.name_stack or eqn.frontend_attributes:  # staged again: keep names, tags
            with extend_name_stack(eqn.name_stack), \
                    reapplied_frontend_attributes(eqn.frontend_attributes):
                outs = eqn.primitive.bind(*map(read, eqn.invars), **eqn.params)
        else:
            outs = eqn.primitive.bind(*map(read, eqn.invars), **eqn.params)
        for var, value in zip(eqn.outvars, outs if eqn.primitive.multiple_results else (outs,),
                              strict=True):
            env[id(var)] = value
    return [read(v) for v in jaxpr.outvars]


def jaxpr_as_fun(closed: ClosedJaxpr):
    """A Python callable that evaluates `closed` on flat arguments."""
    return lambda *args: eval_jaxpr(closed.jaxpr, closed.consts, *args)

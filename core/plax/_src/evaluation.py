"""Evaluating a Jaxpr: each equation's primitive is bound under the current trace,
so the same walk executes eagerly, stages into another Jaxpr, or transforms (each
equation under its own source, name stack and frontend attributes, so staged copies
keep their lines, names and tags)."""
from __future__ import annotations

from typing import Any, Sequence

from plax._src.frontend_attributes import reapplied_frontend_attributes
from plax._src.ir import ClosedJaxpr, Jaxpr, Literal
from plax._src.name_stack import extend_name_stack, swap_source_info


def eval_jaxpr(jaxpr: Jaxpr, consts: Sequence[Any], *args, fold=None) -> list[Any]:
    """Run `jaxpr` by binding each equation's primitive under the current trace.

    `fold(eqn, values)`, if given, may return an equation's outputs (as `bind` would)
    instead of None, for it not to be bound: the constant folding JAX applies to the
    equations of a jit it inlines."""
    env = {id(var): value for var, value in zip([*jaxpr.constvars, *jaxpr.invars],
                                                [*consts, *args], strict=True)}

    def read(atom):
        return atom.val if isinstance(atom, Literal) else env[id(atom)]

    for eqn in jaxpr.eqns:
        values = [read(v) for v in eqn.invars]
        outs = None if fold is None else fold(eqn, values)
        if outs is None:
            previous = swap_source_info(eqn.source_info)  # staged again: keep its source,
            try:
                if eqn.name_stack or eqn.frontend_attributes:  # names and tags
                    with extend_name_stack(eqn.name_stack), \
                            reapplied_frontend_attributes(eqn.frontend_attributes):
                        outs = eqn.primitive.bind(*values, **eqn.params)
                else:
                    outs = eqn.primitive.bind(*values, **eqn.params)
            finally:
                swap_source_info(previous)
        env.update(zip(map(id, eqn.outvars),
                       outs if eqn.primitive.multiple_results else (outs,), strict=True))
    return [read(v) for v in jaxpr.outvars]


def jaxpr_as_fun(closed: ClosedJaxpr):
    """A Python callable that evaluates `closed` on flat arguments."""
    return lambda *args: eval_jaxpr(closed.jaxpr, closed.consts, *args)

"""Evaluating a Jaxpr: each equation's primitive is bound under the current trace,
so the same walk executes eagerly, stages into another Jaxpr, or transforms (each
equation under its own source, name stack and frontend attributes, so staged copies
keep their lines, names and tags)."""
from __future__ import annotations

from typing import Any, Sequence

from plax._src.frontend_attributes import reapplied_frontend_attributes
from plax._src.ir import ClosedJaxpr, Jaxpr, Literal
from plax._src.name_stack import extend_name_stack, swap_source_info


def eval_jaxpr(jaxpr: Jaxpr, consts: Sequence[Any], *args, bind=None, source=None) -> list[Any]:
    """Run `jaxpr` by binding each equation's primitive under the current trace.

    `bind(eqn, values)`, if given, applies each equation instead of its primitive's
    `bind` (in the same context: the equation's source, names and tags). `source`, if
    given, is the source of every equation instead of its own (a jit with `inline=True`
    is inlined so: its equations take the caller's)."""
    env = {id(var): value for var, value in zip([*jaxpr.constvars, *jaxpr.invars],
                                                [*consts, *args], strict=True)}

    def read(atom):
        return atom.val if isinstance(atom, Literal) else env[id(atom)]

    apply = bind or (lambda eqn, values: eqn.primitive.bind(*values, **eqn.params))
    for eqn in jaxpr.eqns:
        values = [read(v) for v in eqn.invars]
        # staged again: keep its source (an inlined jit's: the caller's), names, tags
        previous = swap_source_info(source or eqn.source_info)
        try:
            if eqn.name_stack or eqn.frontend_attributes:
                with extend_name_stack(eqn.name_stack), \
                        reapplied_frontend_attributes(eqn.frontend_attributes):
                    outs = apply(eqn, values)
            else:
                outs = apply(eqn, values)
        finally:
            swap_source_info(previous)
        env.update(zip(map(id, eqn.outvars),
                       outs if eqn.primitive.multiple_results else (outs,), strict=True))
    return [read(v) for v in jaxpr.outvars]


def jaxpr_as_fun(closed: ClosedJaxpr):
    """A Python callable that evaluates `closed` on flat arguments."""
    return lambda *args: eval_jaxpr(closed.jaxpr, closed.consts, *args)

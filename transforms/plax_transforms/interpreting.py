"""Evaluating a Jaxpr equation by equation with a function of one's own: the loop
that interpreters built on Jaxprs (checkify, sparsify) share."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from plax.extend.core import ClosedJaxpr, JaxprEqn, Literal


def interpret(closed: ClosedJaxpr, args: Sequence[Any],
              apply: Callable[[JaxprEqn, list], list]) -> list:
    """The outputs of `closed` on `args`, each equation's outputs being
    `apply(eqn, its input values)` (a list, whatever the primitive)."""
    jaxpr = closed.jaxpr
    env: dict[int, Any] = {}

    def read(atom):
        return atom.val if isinstance(atom, Literal) else env[id(atom)]

    for var, value in zip(jaxpr.constvars, closed.consts, strict=True):
        env[id(var)] = value
    for var, value in zip(jaxpr.invars, args, strict=True):
        env[id(var)] = value
    for eqn in jaxpr.eqns:
        outs = apply(eqn, [read(a) for a in eqn.invars])
        for var, value in zip(eqn.outvars, outs, strict=True):
            env[id(var)] = value
    return [read(v) for v in jaxpr.outvars]

"""Transposition: running a linear Jaxpr backwards, from output cotangents to input
cotangents (reverse mode's backward pass).

The linear inputs are given as `UndefinedPrimal`s; equations that read none of them
are evaluated forward first (their values are constants of the linear map). Then the
equations that do are visited in reverse, each through its primitive's `transpose`
rule `(ct_out, *operands, **params) -> one cotangent per operand`, where linear
operands are `UndefinedPrimal`s and the rule returns None (or `Zero`) for the others.
Cotangents stay symbolic `Zero`s until a rule needs them. An equation whose outputs
reach no output of the Jaxpr is skipped, and so is one whose output cotangents are
all zero, unless its primitive is one of `TRANSPOSED_WITHOUT_COTANGENTS`.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator, Sequence

from plax.extend.ad import UndefinedPrimal, Zero, add_tangents, instantiate
from plax.extend.core import (TRANSPOSE, ClosedJaxpr, Jaxpr, Literal, derived_debug_info,
                              extend_name_stack, reapplied_frontend_attributes, stage_flat,
                              swap_source_info)


TRANSPOSED_WITHOUT_COTANGENTS: set = set()
"""Primitives whose transpose rule runs even when no cotangent reaches their outputs,
as JAX runs every rule: a custom_vjp's bwd may give nonzero cotangents for zero ones
(flax's fp8 ops return their updated statistics so)."""


class _SourceOf:
    """Stages what is applied within with the source line of the equation `eqn`."""

    def __init__(self, eqn):
        self.source = eqn.source_info

    def __enter__(self):
        self.previous = swap_source_info(self.source)

    def __exit__(self, *exc_info):
        swap_source_info(self.previous)


def _restaged(eqn, names: bool = False):
    """While the backward pass evaluates or transposes `eqn`, what it stages keeps the
    equation's source line and frontend attributes, as JAX's, and with `names` its
    name stack (the forward's names). The pass enters one per equation: the scopes of
    names and attributes only for an equation that has some."""
    if not eqn.frontend_attributes and not (names and eqn.name_stack):
        return _SourceOf(eqn)
    return _scoped(eqn, names)


@contextlib.contextmanager
def _scoped(eqn, names: bool) -> Iterator[None]:
    with _SourceOf(eqn), reapplied_frontend_attributes(eqn.frontend_attributes), \
            extend_name_stack(eqn.name_stack if names else ""):
        yield


def backward_pass(jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Any],
                  cts_out: Sequence[Any]) -> list[Any]:
    """Cotangents of `jaxpr`'s inputs (`Zero` where none reach them) given `cts_out`;
    `args` holds values for non-linear inputs and `UndefinedPrimal`s for linear ones."""
    env: dict[int, Any] = {}
    linear: set[int] = set()

    def read(atom):
        return atom.val if isinstance(atom, Literal) else env[id(atom)]

    def is_linear(atom) -> bool:
        return not isinstance(atom, Literal) and id(atom) in linear

    for var, value in zip(jaxpr.constvars, consts, strict=True):
        env[id(var)] = value
    for var, value in zip(jaxpr.invars, args, strict=True):
        if isinstance(value, UndefinedPrimal):
            linear.add(id(var))
        else:
            env[id(var)] = value
    linear_eqns = []
    for eqn in jaxpr.eqns:
        if any(is_linear(a) for a in eqn.invars):
            linear.update(id(v) for v in eqn.outvars)
            linear_eqns.append(eqn)
            continue
        with _restaged(eqn):
            outs = eqn.primitive.bind(*map(read, eqn.invars), **eqn.params)
        for var, value in zip(eqn.outvars, outs if eqn.primitive.multiple_results else [outs]):
            env[id(var)] = value

    cts: dict[int, Any] = {}

    def accumulate(var, ct):
        if ct is None or isinstance(ct, Zero):
            return
        cts[id(var)] = add_tangents(cts[id(var)], ct) if id(var) in cts else ct

    for var, ct in zip(jaxpr.outvars, cts_out, strict=True):
        if is_linear(var):
            accumulate(var, ct)
    live = {id(v) for v in jaxpr.outvars}  # what reaches an output (JAX drops the rest)
    for eqn in reversed(linear_eqns):
        ct_out = [cts.pop(id(v), None) for v in eqn.outvars]
        if not any(id(v) in live for v in eqn.outvars):
            continue
        live.update(id(a) for a in eqn.invars)
        if all(ct is None for ct in ct_out) and \
                eqn.primitive not in TRANSPOSED_WITHOUT_COTANGENTS:
            continue
        ct_out = [Zero(v.aval) if ct is None else ct for v, ct in zip(eqn.outvars, ct_out)]
        rule = eqn.primitive.get_rule(TRANSPOSE)
        if rule is None:
            raise NotImplementedError(
                f"Transpose rule (for reverse-mode differentiation) for "
                f"'{eqn.primitive.name}' not implemented")
        operands = [UndefinedPrimal(a.aval) if is_linear(a) else read(a) for a in eqn.invars]
        with _restaged(eqn, names=True):
            cts_in = rule(ct_out if eqn.primitive.multiple_results else ct_out[0], *operands,
                          **eqn.params)
            for atom, ct in zip(eqn.invars, cts_in, strict=True):
                if is_linear(atom):
                    accumulate(atom, ct)
    return [cts.get(id(v), Zero(v.aval)) if id(v) in linear else Zero(v.aval)
            for v in jaxpr.invars]


def transpose_jaxpr(closed: ClosedJaxpr, linear: Sequence[bool],
                    ct_avals: Sequence[Any] | None = None) -> ClosedJaxpr:
    """A Jaxpr taking `closed`'s non-linear inputs then one cotangent per output (of
    `ct_avals`, else of the outputs' types), and returning (instantiated) cotangents
    of its linear inputs. Debug info names output cotangents `ct:<result path>` and
    input cotangents `ct:<argument name>`."""
    jaxpr = closed.jaxpr
    nonlinear_avals = [a for a, lin in zip(closed.in_avals, linear) if not lin]

    def fun(*args):
        nonlin, cts_out = iter(args[:len(nonlinear_avals)]), args[len(nonlinear_avals):]
        operands = [UndefinedPrimal(a) if lin else next(nonlin)
                    for a, lin in zip(closed.in_avals, linear)]
        cts = backward_pass(jaxpr, closed.consts, operands, cts_out)
        return [instantiate(ct) for ct, lin in zip(cts, linear) if lin]

    dbg = jaxpr.debug_info
    names = paths = None
    if dbg is not None and dbg.arg_names is not None and dbg.result_paths is not None:
        names = [n for n, lin in zip(dbg.arg_names, linear) if not lin] + [
            f"ct:{p}" for p in dbg.result_paths]
        paths = [f"ct:{n}" for n, lin in zip(dbg.arg_names, linear) if lin]
    return stage_flat(fun, [*nonlinear_avals, *(ct_avals or closed.out_avals)],
                 derived_debug_info(dbg, names, paths))

"""Partial evaluation: splitting a computation into what is known now and what is not.

Two forms, sharing the vocabulary (known / unknown / residuals):

* `PartialEvalTrace` (used by `linearize`): a staging trace whose tracers are the
  unknown values. A primitive applied only to known values runs on the parent trace
  right away (concretely when the parent is eager evaluation, so Python control flow
  on primal values works as in JAX); one that touches an unknown value is recorded.
  Known values the recording reads become the Jaxpr's constants: the residuals.
  A primitive may provide a `partial_eval` rule `(trace, args, **params) -> outs`
  to split itself (`jit_p` runs its known part and stages the rest).
* `partial_eval_jaxpr`, the same split as a Jaxpr-to-Jaxpr function, for primitives
  that carry Jaxprs (`jit` now, `cond`/`while`/`scan` later). A primitive may provide
  a `partial_eval_jaxpr` rule `(eqn, unknowns) -> (known_eqn, unknown_eqn,
  out_unknowns, residual_vars)` to split its equation (its known part may be
  `Inlined` equations: a checkpoint's, as JAX's traced split evaluates it in place);
  otherwise an equation with any unknown input is unknown as a whole.
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

from plax.extend.core import (
    PARTIAL_EVAL,
    PARTIAL_EVAL_JAXPR,
    ClosedJaxpr,
    Jaxpr,
    JaxprEqn,
    Literal,
    StagingTrace,
    StagingTracer,
    Trace,
    TracedLiteral,
    Var,
    current_trace,
    dce_jaxpr,
    residual_name,
    set_current_trace,
)
from plax.extend.sharding import vma_rule


class JaxprTracer(StagingTracer):
    """An unknown value of partial evaluation (a tangent being linearized), named and
    shown as JAX's are, which code printing traces tells apart by their class."""
    __slots__ = ()

    def __repr__(self):
        return f"Traced<{self.aval}:JaxprTrace>"


class PartialEvalTrace(StagingTrace):
    """Stages only what depends on its own (unknown) tracers; the rest runs on `parent`.
    The known values the staged part reads are its residuals (constants), 0-d Arrays
    too, as in JAX's linearization: a `vjp`'s function holds them as its leaves."""
    inlines_arrays = False
    tracer_type = JaxprTracer

    def __init__(self, parent: Trace | None = None, debug_info=None):
        super().__init__(debug_info)
        self.parent = current_trace() if parent is None else parent

    def describe(self):
        return "linearize"

    def is_unknown(self, x) -> bool:
        return isinstance(x, StagingTracer) and x._trace is self

    def to_atom(self, x):
        """A zero tangent a jvp rule made (a tracer holding a literal) is read inline,
        as where JAX's linearization rules make zero tangents: only a Jaxpr's split
        (`partial_eval_jaxpr`, JAX's traced linearization of a call) keeps it a residual."""
        if isinstance(x, StagingTracer) and type(x._var) is TracedLiteral:
            return Literal(x._var.val, x._var.aval)
        return super().to_atom(x)

    def bind_known(self, primitive, args, params):
        with set_current_trace(self.parent):
            return primitive.bind(*args, **params)

    def stage(self, primitive, args, params):
        return super().process_primitive(primitive, args, params)

    def restage(self, eqn: JaxprEqn, values: list):
        """`eqn`, an equation of a typed Jaxpr, applied to `values` as `bind` would
        apply it here, but where it is staged on atoms of its inputs' types, its results
        take its outputs' types instead of being inferred again (`jit_p`'s rule stages
        the tangent equations of an inlined call so, on every eager linearization)."""
        prim = eqn.primitive
        if (prim.get_rule(PARTIAL_EVAL) is None and vma_rule() is None
                and any(self.is_unknown(v) for v in values)):
            atoms = self.atoms_of(values)
            if all(_same_type(a.aval, v.aval) for a, v in zip(atoms, eqn.invars)):
                out_avals = [v.aval for v in eqn.outvars]
                return self.stage_atoms(prim, atoms, eqn.params,
                                        out_avals if prim.multiple_results else out_avals[0])
        return prim.bind(*values, **eqn.params)

    def process_primitive(self, primitive, args, params):
        if not any(self.is_unknown(a) for a in args):
            return self.bind_known(primitive, args, params)
        rule = primitive.get_rule(PARTIAL_EVAL)
        if rule is not None:
            return rule(self, args, **params)
        return self.stage(primitive, args, params)

    def residuals(self) -> list:
        """The known values recorded equations read, in constvar order."""
        return [value for _, value in self._consts.values()]


def _same_type(a, b) -> bool:
    """Whether two avals are one type, manual axes included (which `==` leaves out)."""
    return a is b or (a == b and getattr(a, "manual_axis_type", None)
                      == getattr(b, "manual_axis_type", None))


class Inlined(NamedTuple):
    """The known part of a split equation as equations of the Jaxpr being split, and
    `aliases`: the ids of the equation's outputs that stand for another atom (an input
    passed on, a literal), which later equations read instead."""
    eqns: list[JaxprEqn]
    aliases: dict[int, Var | Literal]


def partial_eval_jaxpr(closed: ClosedJaxpr, unknowns: Sequence[bool],
                       instantiate: bool | Sequence[bool] = False
                       ) -> tuple[ClosedJaxpr, ClosedJaxpr, list[bool], int]:
    """Split `closed` by which inputs are unknown.

    Returns `(known, unknown, out_unknowns, num_residuals)`: `known` takes the known
    inputs and returns the known outputs then the residuals; `unknown` takes the
    residuals then the unknown inputs and returns the unknown outputs (those where
    `out_unknowns`). Outputs in `instantiate` are unknown even if computable now.
    Both keep debug info (residuals are named `residual[i]`).
    """
    jaxpr = closed.jaxpr
    if isinstance(instantiate, bool):
        instantiate = [instantiate] * len(jaxpr.outvars)
    unknown_ids = {id(v) for v, u in zip(jaxpr.invars, unknowns) if u}
    known_eqns: list[JaxprEqn] = []
    unknown_eqns: list[JaxprEqn] = []
    residuals: list[Var] = []
    residual_ids: set[int] = set()

    def is_unknown(atom) -> bool:
        return isinstance(atom, Var) and id(atom) in unknown_ids

    def need(atom) -> None:  # (a literal tracing computed is a residual too, as JAX's)
        if isinstance(atom, (Var, TracedLiteral)) and not is_unknown(atom) \
                and id(atom) not in residual_ids:
            residual_ids.add(id(atom))
            residuals.append(atom)

    aliases: dict[int, Var | Literal] = {}

    def read(atom):
        return aliases.get(id(atom), atom) if isinstance(atom, Var) else atom

    for eqn in jaxpr.eqns:
        if aliases:
            eqn = eqn.replace(invars=[read(a) for a in eqn.invars])
        in_unknowns = [is_unknown(a) for a in eqn.invars]
        if not any(in_unknowns):
            known_eqns.append(eqn)
            continue
        rule = eqn.primitive.get_rule(PARTIAL_EVAL_JAXPR)
        if rule is None:
            known_eqn, unknown_eqn = None, eqn
            out_unknowns, eqn_residuals = [True] * len(eqn.outvars), []
        else:
            known_eqn, unknown_eqn, out_unknowns, eqn_residuals = rule(eqn, in_unknowns)
        if isinstance(known_eqn, Inlined):
            known_eqns += known_eqn.eqns
            aliases.update(known_eqn.aliases)
        elif known_eqn is not None:
            known_eqns.append(known_eqn)
        if unknown_eqn is not None:
            if aliases:
                unknown_eqn = unknown_eqn.replace(invars=[read(a) for a in unknown_eqn.invars])
            unknown_eqns.append(unknown_eqn)
            for atom in unknown_eqn.invars:
                need(atom)
        for v in eqn_residuals:
            need(read(v))
        unknown_ids.update(id(v) for v, u in zip(eqn.outvars, out_unknowns) if u)

    if aliases:
        closed = closed.replace(jaxpr=jaxpr.replace(outvars=[read(v) for v in jaxpr.outvars]))
        jaxpr = closed.jaxpr
    out_unknowns = [is_unknown(v) or inst for v, inst in zip(jaxpr.outvars, instantiate)]
    for v, u in zip(jaxpr.outvars, out_unknowns):
        if u and not is_unknown(v):
            need(v)

    return assemble_split(closed, unknowns, out_unknowns, known_eqns, unknown_eqns, residuals)


def assemble_split(closed: ClosedJaxpr, unknowns: Sequence[bool], out_unknowns: Sequence[bool],
                   known_eqns: Sequence[JaxprEqn], staged_eqns: Sequence[JaxprEqn],
                   residuals: Sequence[Var], staged_inputs: Sequence[bool] | None = None
                   ) -> tuple[ClosedJaxpr, ClosedJaxpr, list[bool], int]:
    """The known and staged Jaxprs of a split, with their debug info (one name per
    variable; residuals named `residual[i]`): `known` maps known inputs to known
    outputs then residuals; `staged` maps residuals then the inputs `staged_inputs`
    marks (default: the unknown ones) to the unknown outputs, reading each residual
    through a fresh variable."""
    jaxpr = closed.jaxpr
    staged_inputs = unknowns if staged_inputs is None else staged_inputs
    dbg = jaxpr.debug_info
    res_names = tuple(residual_name(i) for i in range(len(residuals)))
    known_dbg = staged_dbg = None
    if dbg is not None:
        names, paths = dbg.arg_names, dbg.result_paths
        known_dbg = dbg._replace(
            arg_names=None if names is None else
            tuple(n for n, u in zip(names, unknowns) if not u),
            result_paths=None if paths is None else
            tuple(p for p, u in zip(paths, out_unknowns) if not u) + res_names)
        staged_dbg = dbg._replace(
            arg_names=None if names is None else
            res_names + tuple(n for n, s in zip(names, staged_inputs) if s),
            result_paths=None if paths is None else
            tuple(p for p, u in zip(paths, out_unknowns) if u))

    known = Jaxpr(jaxpr.constvars, [v for v, u in zip(jaxpr.invars, unknowns) if not u],
                  [v for v, u in zip(jaxpr.outvars, out_unknowns) if not u] + list(residuals),
                  known_eqns, frozenset().union(*(e.effects for e in known_eqns)), known_dbg)
    known, _ = dce_jaxpr(known, [True] * len(known.outvars), instantiate=True)
    # Residuals stand for known values in the staged Jaxpr: fresh variables.
    fresh = {id(r): Var(r.aval) for r in residuals}

    def rename(atom):
        return fresh.get(id(atom), atom)

    staged_eqns = [e.replace(invars=[rename(a) for a in e.invars]) for e in staged_eqns]
    staged = Jaxpr([], [fresh[id(r)] for r in residuals]
                   + [v for v, s in zip(jaxpr.invars, staged_inputs) if s],
                   [rename(v) for v, u in zip(jaxpr.outvars, out_unknowns) if u],
                   staged_eqns, frozenset().union(*(e.effects for e in staged_eqns)),
                   staged_dbg)
    return (ClosedJaxpr(known, closed.consts), ClosedJaxpr(staged, []), list(out_unknowns),
            len(residuals))

"""Solving for the dimension variables of a shape-polymorphic export from its
arguments' sizes, as JAX 0.10.2 does: each variable from a dimension in which it
is the only unknown and occurs linearly (`b`, `2*b`, `b + 1`, then `2*b + c` once
`b` is known). The plan is symbolic; the module's wrapper runs it on IR values and
`Exported.call` on the sizes it is called with.
"""
from __future__ import annotations

from typing import Callable, Sequence

from plax_transforms.export.shape_poly import DimExpr


class Step:
    """How one dimension variable is obtained from an argument's size: `var =
    (size - rest) / coeff`, where dimension `source` (an index into the dimensions
    solved over) is `coeff * var + rest` and `rest` uses only variables solved before."""
    __slots__ = ("var", "source", "coeff", "rest")

    def __init__(self, var: str, source: int, coeff: int, rest):
        self.var, self.source, self.coeff, self.rest = var, source, coeff, rest

    def solve(self, size, env: dict):
        """The variable's value from the source's `size` (an int, or a `DimExpr` when
        called with symbolic shapes); `ValueError` if `coeff` does not divide it."""
        rest = self.rest.evaluate(env) if isinstance(self.rest, DimExpr) else self.rest
        numerator = size - rest
        if self.coeff == 1:
            return numerator
        if isinstance(numerator, int) and numerator % self.coeff:
            raise ValueError(f"Division had remainder {numerator % self.coeff} when computing "
                             f"the value of '{self.var}'")
        return numerator // self.coeff


def scope_of(dims: Sequence):
    """The scope of the symbolic dimensions among `dims` (None when there are none)."""
    return next((d.scope for d in dims if isinstance(d, DimExpr)), None)


def constraint_checks(dims: Sequence, solved) -> list:
    """The constraints of the scope of `dims` that the sizes must satisfy: those whose
    variables are all among `solved` (the others no size determines)."""
    scope = scope_of(dims)
    if scope is None:
        return []
    return [c for c in scope.constraint_checks() if set(c.diff.variables) <= set(solved)]


def constraint_message(constraint, found: str, specs: str, solved: str) -> str:
    """JAX's error for sizes that break `constraint`: its difference is `found`."""
    relation = "equal" if constraint.cmp == "==" else "greater or equal"
    return (f"Input shapes do not match the symbolic shape constraint {constraint.text}. "
            f"Expected '{constraint.diff}' to be {relation} to 0, but found {found}. "
            f"Using the following polymorphic shapes specifications: {specs}. Obtained "
            f"dimension variables: {solved}.")


class UnsolvableDimensions(ValueError):
    """Some dimension variables occur in no dimension that determines them."""


def solving_plan(dims: Sequence, specs: str = "", where: Callable[[int], str] = str
                 ) -> list[Step]:
    """The order in which the variables of `dims` are solved, each from the first
    dimension in which it is the only unknown, with an integer coefficient (JAX's
    linear uni-variate rule: `b`, `2*b`, `b + 1`, then `2*b + c` once `b` is known).
    Dimensions that are a variable alone are used first. `specs` and `where(i)` (a
    dimension's name) go into the error for variables nothing determines."""
    known: set[str] = set()
    plan: list[Step] = []
    symbolic = [(i, d) for i, d in enumerate(dims) if isinstance(d, DimExpr)]
    for i, d in symbolic:
        if d.terms == ((d.variables[0], 1),) and not d.const and d.variables[0] not in known:
            plan.append(Step(d.variables[0], i, 1, 0))
            known.add(d.variables[0])
    progress = True
    while progress:
        progress = False
        for i, d in symbolic:
            unknown = [v for v in d.variables if v not in known]
            nonlinear = {v for atom, _ in d.terms if not isinstance(atom, str)
                         for v in atom.variables}
            if len(unknown) == 1 and unknown[0] not in nonlinear:
                coeff = d.linear_variables[unknown[0]]
                plan.append(Step(unknown[0], i, coeff,
                                 d - coeff * DimExpr.var(unknown[0], d.scope)))
                known.add(unknown[0])
                progress = True
    unsolved = {v for _, d in symbolic for v in d.variables} - known
    if unsolved:
        i, d = next((i, d) for i, d in symbolic if set(d.variables) & unsolved)
        raise UnsolvableDimensions(
            f"Cannot solve for values of dimension variables {_set_str(unsolved)}. We can only "
            f"solve linear uni-variate constraints. Using the following polymorphic shapes "
            f"specifications: {specs}. Unprocessed specifications: '{d}' for dimension size "
            f"{where(i)}.")
    return plan


def _set_str(names) -> str:
    return "{" + ", ".join(repr(n) for n in sorted(names)) + "}"

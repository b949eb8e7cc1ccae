"""Symbolic dimensions for shape-polymorphic export: `symbolic_shape("b, 3")`.

A dimension is an `int` or a `DimExpr`: an integer-linear combination of
dimension variables (`b`, `2*b + 1`), each variable standing for a size >= 1,
of products of them (`b*c`, `b^2`: `Monomial`s) and of JAX's non-linear terms
`floordiv(e, k)`, `mod(e, k)`, `max(e, f)`, `min(e, f)` (what `//`, `%`,
the kernel's `max_dim` and `min_dim` make where the result is not exact or decided).
A variable is solved from the arguments' shapes where it occurs linearly, alone
among the unknowns (`solving.py`).

Every expression belongs to a `SymbolicScope`, which holds the user's constraints
(`b >= 16`, `a == 2*b`); expressions of different scopes do not mix (ValueError).
An equality constraint `k*t == e` rewrites the term `t` wherever it occurs, so the
expressions are kept normalized. Comparisons follow JAX: `==` is structural after
normalization (`b == 3` is False), while `<`, `<=`, `>`, `>=` decide from bounds
(`decision.py`) and raise `InconclusiveDimensionOperation` when they cannot tell.

In a module a variable is a scalar `tensor<i32>`/`tensor<i64>` argument of each
function (`jax.global_constant = "b"`); `to_ir` computes an expression from them.
"""
from __future__ import annotations

import re
import sys
from typing import Any, Callable, Sequence

from plax.extend.core import InconclusiveDimensionOperation, SymbolicDimension
from plax_stdlib.lax import dimension_as_value
from plax_stdlib.numpy import power, true_divide
from plax_transforms.export.decision import INF, bounds, operation_bounds, term_bound


class Constraint:
    """One of a scope's constraints as the user wrote it (`text`): `diff == 0` (`cmp`
    "==") or `diff >= 0` (">="), `diff` being the left side minus the right."""
    __slots__ = ("text", "cmp", "diff")

    def __init__(self, text: str, cmp: str, diff):
        self.text, self.cmp, self.diff = text, cmp, diff


class SymbolicScope:
    """The symbolic dimensions that interact (the argument shapes of one export) share
    a scope, which holds their constraints: `e1 >= e2`, `e1 <= e2` or `e1 == e2`
    where `e1` is one term times a coefficient (`a == 2*b`, `mod(e, 4) == 0`)."""

    def __init__(self, constraints_str: Sequence[str] = ()):
        if isinstance(constraints_str, str):
            raise ValueError("The symbolic constraints should be a sequence of strings. "
                             f"Got {constraints_str!r}")
        self.constraints_str = tuple(constraints_str)
        self._created_at = _caller_location()
        self._constraints: list[Constraint] = []
        self._rules: dict = {}  # atom t → (e, k) for a constraint `k*t == e`
        self._term_bounds: dict = {}  # atom → bounds that constraints on it alone give
        self._nonnegative: list = []  # the constraints as expressions >= 0
        self._bounds_cache: dict = {}
        for text in self.constraints_str:
            self._add(text)

    def __str__(self):
        lines = [f"{id(self)} created at {self._created_at}"]
        if self._constraints:
            lines[0] += " with constraints:"
            lines += [f"  {c.text}" for c in self._constraints]
        return "\n".join(lines)

    __repr__ = __str__

    def _add(self, text) -> None:
        if not isinstance(text, str):
            raise ValueError(f"SymbolicScope constraint must be a string: got {text!r}")
        for cmp in ("==", ">=", "<="):
            if cmp in text:
                break
        else:
            raise ValueError("Constraint parsing error: must contain one of '==' or '>=' "
                             "or '<='")
        left, right = text.split(cmp, 1)
        e1, e2 = (_parse_expr(side, text, 0, self, signed=True) for side in (left, right))
        if cmp == "<=":
            e1, e2, cmp = e2, e1, ">="
        self._process(Constraint(text, cmp, e1 - e2), e1, e2)
        self._bounds_cache.clear()

    def _process(self, constraint: Constraint, e1, e2) -> None:
        diff = constraint.diff
        if not isinstance(diff, DimExpr):
            if diff < 0 or (diff and constraint.cmp == "=="):
                raise ValueError(f"Unsatisfiable explicit constraint: {constraint.text}")
            return
        self._nonnegative += diff.implicit_constraints()  # `x - 2*floordiv(x, 2) >= 0`...
        if constraint.cmp == "==":
            if not isinstance(e1, DimExpr) or e1.const or len(e1.terms) != 1:
                raise ValueError(f"Invalid equality constraint: {e1} == {e2}. The "
                                 "left-hand-side must be of the form `term * coefficient`.")
            (atom, k), = e1.terms
            if atom in self._rules:
                raise NotImplementedError("Found multiple equality constraints with the "
                                          f"same left-hand-side: {atom}")
            self._rules[atom] = (e2, k)
            if (k == 1 and e2 == 0 and isinstance(atom, Operation) and atom.op == "mod"
                    and isinstance(atom.args[1], int)):
                # `mod(x, m) == 0` also means `m*floordiv(x, m) == x`.
                x, m = atom.args
                self._rules[Operation("floordiv", atom.args)] = (x, m)
            self._nonnegative += [diff, -diff]
        else:
            self._nonnegative.append(diff)
            if len(diff.terms) == 1:
                (atom, k), = diff.terms
                lo, hi = term_bound(k, diff.const)
                old_lo, old_hi = self._term_bounds.get(atom, (-INF, INF))
                self._term_bounds[atom] = (max(lo, old_lo), min(hi, old_hi))
        self._constraints.append(constraint)

    def constraint_checks(self) -> list[Constraint]:
        """The constraints to check against actual sizes, their differences normalized
        by all the equalities (those that normalize to a constant hold already)."""
        checks = []
        for c in self._constraints:
            diff = _normalize(c.diff)
            if isinstance(diff, DimExpr):
                checks.append(Constraint(c.text, c.cmp, diff))
        return checks

    def check_same(self, other, when: str, self_descr: str = " ",
                   other_descr: str = "unknown") -> None:
        """ValueError unless `other` (a dimension) belongs to this scope."""
        if isinstance(other, DimExpr) and other.scope is not self:
            raise ValueError(
                f"Invalid mixing of symbolic scopes {when}.\nExpected {self_descr}scope "
                f"{self}\nand found for '{other}' ({other_descr}) scope {other.scope}\n"
                "See https://docs.jax.dev/en/latest/export/shape_poly.html"
                "#user-specified-symbolic-constraints.")


def _caller_location() -> str:
    """`file:line` of the frame outside plax that made a scope."""
    frame = sys._getframe(1)
    while frame is not None and ("plax_transforms" in frame.f_code.co_filename
                                 or "/plax/" in frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return "unknown"
    return f"{frame.f_code.co_filename}:{frame.f_lineno} ({frame.f_code.co_name})"


class Operation:
    """A non-linear term of a dimension: `floordiv(a, b)`, `mod(a, b)`, `max(a, b)` or
    `min(a, b)` of two dimensions (ints or `DimExpr`s), as JAX writes them."""
    __slots__ = ("op", "args")
    KINDS = ("floordiv", "mod", "max", "min")

    def __init__(self, op: str, args: tuple):
        self.op, self.args = op, args

    def __eq__(self, other):
        return isinstance(other, Operation) and (self.op, self.args) == (other.op, other.args)

    def __hash__(self):
        return hash((self.op, self.args))

    def __str__(self):
        return f"{self.op}({self.args[0]}, {self.args[1]})"

    @property
    def variables(self) -> set[str]:
        return {v for a in self.args if isinstance(a, DimExpr) for v in a.variables}

    def evaluate(self, env: dict):
        a, b = (x.evaluate(env) if isinstance(x, DimExpr) else x for x in self.args)
        return _apply(self.op, a, b)

    def bounds(self) -> tuple[float, float]:
        """Bounds of the value, from its arguments' bounds."""
        return operation_bounds(self.op, *self.args)

    def to_ir(self, var_value):
        from plax.extend.mlir import hlo  # lowering only
        values = [x.to_ir(var_value) if isinstance(x, DimExpr) else None for x in self.args]
        like = next(v for v in values if v is not None)
        a, b = (_scalar_like(like, x) if v is None else v for v, x in zip(values, self.args))
        if self.op == "max":
            return hlo.maximum(a, b)
        if self.op == "min":
            return hlo.minimum(a, b)
        zero = _scalar_like(a, 0)
        remainder = hlo.remainder(a, b)
        # Python's floor semantics: correct the truncating division where the remainder
        # is non-zero and its sign differs from the divisor's.
        signs_differ = hlo.compare(
            hlo.compare(remainder, zero, hlo.ComparisonDirectionAttr.get("LT")),
            hlo.compare(b, zero, hlo.ComparisonDirectionAttr.get("LT")),
            hlo.ComparisonDirectionAttr.get("NE"))
        adjust = hlo.and_(signs_differ, hlo.compare(
            remainder, zero, hlo.ComparisonDirectionAttr.get("NE")))
        if self.op == "mod":
            return hlo.select(adjust, hlo.add(remainder, b), remainder)
        quotient = hlo.divide(a, b)
        return hlo.select(adjust, hlo.subtract(quotient, _scalar_like(a, 1)), quotient)


class Monomial:
    """A product of atoms (variables or `Operation`s) with powers, `b*c`, `b^2`:
    `factors` are `(atom, power)` pairs sorted by atom; never one atom to the power 1
    (that is the atom itself)."""
    __slots__ = ("factors",)

    def __init__(self, factors: tuple):
        self.factors = factors

    def __eq__(self, other):
        return isinstance(other, Monomial) and self.factors == other.factors

    def __hash__(self):
        return hash(self.factors)

    def __str__(self):
        return "*".join(str(a) if p == 1 else f"{a}^{p}" for a, p in self.factors)

    @property
    def variables(self) -> set[str]:
        return {v for a, _ in self.factors
                for v in ({a} if isinstance(a, str) else a.variables)}

    def evaluate(self, env: dict):
        value = 1
        for a, p in self.factors:
            value = value * (env[a] if isinstance(a, str) else a.evaluate(env)) ** p
        return value

    def to_ir(self, var_value):
        from plax.extend.mlir import hlo  # lowering only
        total = None
        for a, p in self.factors:
            value = var_value(a) if isinstance(a, str) else a.to_ir(var_value)
            for _ in range(p):
                total = value if total is None else hlo.multiply(total, value)
        return total


def _factors(atom) -> dict:
    return dict(atom.factors) if isinstance(atom, Monomial) else {atom: 1}


def _product(a, b):
    """The atom that is the product of atoms `a` and `b`."""
    factors = _factors(a)
    for f, p in _factors(b).items():
        factors[f] = factors.get(f, 0) + p
    if len(factors) == 1 and next(iter(factors.values())) == 1:
        return next(iter(factors))
    return Monomial(tuple(sorted(factors.items(), key=lambda t: _atom_key(t[0]))))


def _quotient(a, b):
    """The atom `a / b`, 1 when they are equal, or None when `b` does not divide `a`."""
    factors = _factors(a)
    for f, p in _factors(b).items():
        if factors.get(f, 0) < p:
            return None
        factors[f] -= p
    factors = {f: p for f, p in factors.items() if p}
    if not factors:
        return 1
    if len(factors) == 1 and next(iter(factors.values())) == 1:
        return next(iter(factors))
    return Monomial(tuple(sorted(factors.items(), key=lambda t: _atom_key(t[0]))))


def _apply(op: str, a, b):
    if op == "floordiv":
        return a // b
    if op == "mod":
        return a % b
    return _extremum(op, a, b)


def _atom_key(atom) -> tuple:
    return ((0, atom) if isinstance(atom, str) else
            (1, str(atom)) if isinstance(atom, Operation) else (2, str(atom)))


class DimExpr(SymbolicDimension):
    """`sum(coeff * atom) + const`: `terms` are `(atom, coeff)` pairs sorted by atom,
    coeff != 0, where an atom is a variable's name, an `Operation` or a `Monomial`."""
    __slots__ = ("terms", "const", "scope")

    def __init__(self, terms, const: int = 0, scope: SymbolicScope | None = None):
        self.terms = tuple(sorted(((v, c) for v, c in dict(terms).items() if c),
                                  key=lambda t: _atom_key(t[0])))
        self.const = int(const)
        self.scope = scope

    @staticmethod
    def var(name: str, scope: SymbolicScope | None = None):
        """The variable `name` (what the scope's equalities make of it)."""
        return _normalize(DimExpr({name: 1}, 0, scope))

    def of_atom(self, atom) -> DimExpr:
        """The expression that is `atom` alone, in this scope."""
        return DimExpr({atom: 1}, 0, self.scope)

    def implicit_constraints(self) -> list:
        """What the operations among the atoms are known to satisfy, as expressions
        that are >= 0: `max(a, b) - a`, `b - min(a, b)`, `x - k*floordiv(x, k)`, ..."""
        found = []
        for atom, _ in self.terms:
            if not isinstance(atom, Operation):
                continue
            t, (a, b) = self.of_atom(atom), atom.args
            if atom.op == "max":
                found += [t - a, t - b]
            elif atom.op == "min":
                found += [a - t, b - t]
            elif atom.op == "floordiv" and isinstance(b, int) and b > 0:
                found += [a - b * t, b * t + (b - 1) - a]
        return [f for f in found if isinstance(f, DimExpr)]

    @staticmethod
    def operation(op: str, a, b, scope: SymbolicScope | None = None):
        return _normalize(DimExpr({Operation(op, (_simplify_any(a), _simplify_any(b))): 1},
                                  0, scope))

    # --- arithmetic --------------------------------------------------------------
    def _other(self, other, when: str):
        """`other` as an expression of this scope (ValueError for another scope's)."""
        other = _as_expr(other, self.scope)
        if other is not NotImplemented and self.scope is not None and other.scope is not None:
            self.scope.check_same(other, when)
        return other

    def _combine(self, other, sign: int):
        other = self._other(other, "for linear combination")
        if other is NotImplemented:
            return NotImplemented
        terms = dict(self.terms)
        for v, c in other.terms:
            terms[v] = terms.get(v, 0) + sign * c
        return _normalize(DimExpr(terms, self.const + sign * other.const,
                                  self.scope or other.scope))

    def __add__(self, other):
        return self._combine(other, 1)

    __radd__ = __add__

    def __sub__(self, other):
        return self._combine(other, -1)

    def __rsub__(self, other):
        return (-self)._combine(other, 1)

    def __neg__(self):
        return DimExpr({v: -c for v, c in self.terms}, -self.const, self.scope)

    def __mul__(self, other):
        other = self._other(other, "for multiplication")
        if other is NotImplemented:
            return NotImplemented
        terms: dict = {}
        for a, c in (*self.terms, (1, self.const)):
            for b, d in (*other.terms, (1, other.const)):
                atom = b if a == 1 else a if b == 1 else _product(a, b)
                terms[atom] = terms.get(atom, 0) + c * d
        const = terms.pop(1, 0)
        return _normalize(DimExpr(terms, const, self.scope or other.scope))

    __rmul__ = __mul__

    def __floordiv__(self, other):
        return self._divmod(other)[0]

    def __mod__(self, other):
        return self._divmod(other)[1]

    def __divmod__(self, other):
        return self._divmod(other)

    def __rfloordiv__(self, other):
        return _as_expr(other, self.scope)._divmod(self)[0]

    def __rmod__(self, other):
        return _as_expr(other, self.scope)._divmod(self)[1]

    def _divmod(self, other):
        """`(self // other, self % other)`: exact where `other` divides `self` whatever
        the variables are (`6*b // 3`, `3*b // b`), else `floordiv`/`mod` terms."""
        other = self._other(other, "for division")
        if other is NotImplemented:
            return NotImplemented
        if not other.terms and other.const == 0:
            raise ZeroDivisionError(f"division of the symbolic dimension '{self}' by zero")
        coeffs = [c for _, c in self.terms] + [self.const]
        if not other.terms and all(c % other.const == 0 for c in coeffs):
            return DimExpr({v: c // other.const for v, c in self.terms},
                           self.const // other.const, self.scope).simplified(), 0
        if not self.terms and not self.const:
            return 0, 0
        if len(other.terms) == 1 and not other.const and not self.const:
            (divisor, k), = other.terms
            quotients = [(_quotient(a, divisor), c) for a, c in self.terms]
            if all(q is not None and c % k == 0 for q, c in quotients):
                return DimExpr({q: c // k for q, c in quotients if q != 1},
                               sum(c // k for q, c in quotients if q == 1),
                               self.scope).simplified(), 0
        same_atoms = [v for v, _ in self.terms] == [v for v, _ in other.terms]
        if other.terms and same_atoms and not self.const and not other.const:
            ratios = {c // o if c % o == 0 else None
                      for (_, c), (_, o) in zip(self.terms, other.terms)}
            if len(ratios) == 1 and None not in ratios:
                return ratios.pop(), 0
        if bounds(self)[0] >= 0 and bounds(self - other)[1] < 0:  # 0 <= self < other
            return 0, self.simplified()
        return (DimExpr.operation("floordiv", self, other, self.scope),
                DimExpr.operation("mod", self, other, self.scope))

    def as_value(self):
        return dimension_as_value(self)

    def __truediv__(self, other):  # a float, computed from the dimension's value
        return true_divide(dimension_as_value(self), other)

    def __rtruediv__(self, other):
        return true_divide(other, dimension_as_value(self))

    def __pow__(self, exponent, modulo=None):
        """`b ** 2` is the expression `b^2`; a symbolic exponent makes a value, as in
        `__rpow__`."""
        if modulo is not None:
            raise NotImplementedError("pow() of a symbolic dimension with a modulus")
        if isinstance(exponent, SymbolicDimension):
            return power(dimension_as_value(self), dimension_as_value(exponent))
        if exponent != int(exponent):
            raise ValueError(f"Symbolic dimension cannot be raised to non-integer powers: "
                             f"'{self}' ** '{exponent}'")
        if exponent < 0:
            raise ValueError(f"Symbolic dimension cannot be raised to negative powers: "
                             f"'{self}' ** '{exponent}'")
        result = 1
        for _ in range(int(exponent)):
            result = self * result
        return result

    def __rpow__(self, base, modulo=None):  # `2 ** b`: a value computed from b's
        if modulo is not None:
            raise NotImplementedError("pow() of a symbolic dimension with a modulus")
        return power(base, dimension_as_value(self))

    def simplified(self):
        """The expression normalized by its scope's equalities, or its int value when
        it has no variables."""
        return _normalize(self)

    # --- comparisons -----------------------------------------------------------------
    def __eq__(self, other):
        other = _as_expr(other, self.scope)
        if other is NotImplemented:
            return NotImplemented
        if self.scope is not None and other.scope is not None and self.scope is not other.scope:
            return False  # as JAX: expressions of different scopes are never equal
        return self.terms == other.terms and self.const == other.const

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self):
        return hash((self.terms, self.const))

    def _compare(self, other, op: str) -> bool:
        """Decide `self op other` from the bounds of their difference."""
        if _as_expr(other, self.scope) is NotImplemented:
            return NotImplemented
        text = f"'{self}' {op} '{other}'"
        other = self._other(other, f"when comparing {text}")
        larger, smaller = (self, other) if op in (">=", ">") else (other, self)
        diff = larger - smaller - (op in (">", "<"))  # decide `diff >= 0`
        low, high = bounds(diff)
        if low >= 0:
            return True
        if high < 0:
            return False
        where = f"\nUsing symbolic scope {self.scope}" if self.scope and \
            self.scope._constraints else ""
        raise InconclusiveDimensionOperation(
            f"Symbolic dimension comparison {text} is inconclusive.{where}")

    def __ge__(self, other):
        return self._compare(other, ">=")

    def __gt__(self, other):
        return self._compare(other, ">")

    def __le__(self, other):
        return self._compare(other, "<=")

    def __lt__(self, other):
        return self._compare(other, "<")

    def __bool__(self):
        return True  # every dimension variable is >= 1

    def extremum(self, op: str, a, b):
        return _extremum(op, a, b)

    def _not_constant(self, *_):
        raise InconclusiveDimensionOperation(
            f"Symbolic dimension '{self}' used in a context that requires a constant "
            "(plax exports shape-polymorphic code only where the size can stay symbolic)")

    __int__ = __index__ = __float__ = _not_constant

    # --- printing and lowering -------------------------------------------------------------
    def __str__(self):
        parts = []
        for v, c in self.terms:
            term = str(v) if abs(c) == 1 else f"{abs(c)}*{v}"
            parts.append(("- " if c < 0 else "+ ") + term)
        if self.const:
            parts.append(("- " if self.const < 0 else "+ ") + str(abs(self.const)))
        text = " ".join(parts) or "+ 0"
        return text[2:] if text.startswith("+ ") else "-" + text[2:]

    __repr__ = __str__

    @property
    def variables(self) -> tuple[str, ...]:
        """The dimension variables the expression uses (inside operations too), sorted."""
        found = set()
        for atom, _ in self.terms:
            found |= {atom} if isinstance(atom, str) else atom.variables
        return tuple(sorted(found))

    @property
    def linear_variables(self) -> dict[str, int]:
        """The variables that are terms of their own, with their coefficients."""
        return {v: c for v, c in self.terms if isinstance(v, str)}

    def to_ir(self, var_value: Callable[[str], Any]):
        """This expression as a scalar integer `ir.Value`, from the variables' values."""
        from jaxlib.mlir import ir  # lowering only
        from plax.extend.mlir import hlo
        total = None
        for v, c in self.terms:
            value = var_value(v) if isinstance(v, str) else v.to_ir(var_value)
            if c != 1:
                value = hlo.multiply(value, _scalar_like(value, c))
            total = value if total is None else hlo.add(total, value)
        if self.const:
            total = hlo.add(total, _scalar_like(total, self.const))
        assert isinstance(total, ir.Value)
        return total

    def evaluate(self, env: dict[str, int]) -> int:
        return self.const + sum(c * (env[v] if isinstance(v, str) else v.evaluate(env))
                                for v, c in self.terms)


def _extremum(op: str, a, b):
    if not isinstance(a, DimExpr) and not isinstance(b, DimExpr):
        return max(a, b) if op == "max" else min(a, b)
    low, high = bounds(a - b)
    if low >= 0 or high <= 0:
        return a if (low >= 0) == (op == "max") else b
    scope = a.scope if isinstance(a, DimExpr) else b.scope
    return DimExpr.operation(op, a, b, scope)


def _scalar_like(value, k: int):
    import numpy as np
    from jaxlib.mlir import ir
    from plax.extend.mlir import hlo
    element = ir.RankedTensorType(value.type).element_type
    dtype = np.int64 if ir.IntegerType(element).width == 64 else np.int32
    return hlo.constant(ir.DenseElementsAttr.get(np.array(k, dtype)))


def _as_expr(x, scope) -> DimExpr:
    if isinstance(x, DimExpr):
        return x
    try:
        return DimExpr({}, int(x.__index__()), scope)
    except (AttributeError, TypeError):
        return NotImplemented


def _normalize(e: DimExpr):
    """`e` with each term `c*t` that a scope equality `k*t == f` covers (k divides c)
    replaced by `(c // k) * f`; its int value when no term is left."""
    rules = e.scope._rules if e.scope is not None else {}
    rewritten = [(atom, c) for atom, c in e.terms
                 if atom in rules and c % rules[atom][1] == 0]
    if not rewritten:
        return e.const if not e.terms else e
    result = DimExpr({a: c for a, c in e.terms if (a, c) not in rewritten}, e.const, e.scope)
    for atom, c in rewritten:
        replacement, k = rules[atom]
        result = result + (c // k) * replacement
    return result


def _simplify_any(x):
    return _normalize(x) if isinstance(x, DimExpr) else int(x)


def is_symbolic_dim(d) -> bool:
    """Whether `d` is a symbolic dimension (not an int)."""
    return isinstance(d, DimExpr)


def dimension_variables(shapes: Sequence[Sequence]) -> tuple[str, ...]:
    """The variables in `shapes`, sorted (the order of the dimension arguments)."""
    return tuple(sorted({v for shape in shapes for d in shape if isinstance(d, DimExpr)
                         for v in d.variables}))


def shape_text(shape) -> str:
    """A shape as JAX prints it in errors: `(b, 3)`, `(2*b,)`."""
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def evaluate_shape(shape, env: dict[str, int]) -> tuple[int, ...]:
    return tuple(d.evaluate(env) if isinstance(d, DimExpr) else int(d) for d in shape)


# --- parsing ---------------------------------------------------------------------------------

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(\.\.\.)|(.))")


def symbolic_shape(shape_spec: str | None, *, constraints: Sequence[str] = (),
                   scope: SymbolicScope | None = None,
                   like: Sequence[int | None] | None = None) -> tuple:
    """The shape `shape_spec` describes: comma-separated dimensions, each an integer,
    a variable or a linear expression (`"b, 2*b + 1, 3"`). `_` takes the dimension
    of `like`, a trailing `...` the rest of `like`'s dimensions."""
    if scope is None:
        scope = SymbolicScope(constraints)
    elif constraints:
        raise ValueError("Cannot specify both a `scope` and `constraints`.")
    spec = (shape_spec or "").strip()
    if spec.startswith("(") and spec.endswith(")"):
        spec = spec[1:-1]
    parts = [p.strip() for p in _split_dimensions(spec)] if spec else []
    if parts and parts[-1] == "":
        parts.pop()  # "(b,)"
    dims: list = []
    for i, part in enumerate(parts):
        if part == "...":
            if i != len(parts) - 1:
                raise ValueError(f"syntax error in symbolic shape '{shape_spec}': '...' "
                                 "can only be the last dimension")
            if like is None:
                raise ValueError(f"syntax error in symbolic shape '{shape_spec}': it "
                                 "contains '...' but no 'like' shape was given")
            dims.extend(_like_dim(shape_spec, like, j) for j in range(len(dims), len(like)))
            continue
        if part == "_":
            if like is None or i >= len(like):
                raise ValueError(f"syntax error in symbolic shape '{shape_spec}': '_' in "
                                 f"dimension {i} needs a 'like' shape with that dimension")
            dims.append(_like_dim(shape_spec, like, i))
            continue
        dims.append(_parse_expr(part, shape_spec, i, scope))
    if like is not None and len(dims) != len(like):
        raise ValueError(f"symbolic shape '{shape_spec}' has {len(dims)} dimensions but the "
                         f"'like' shape {tuple(like)} has {len(like)}")
    if like is not None:
        for i, (d, known) in enumerate(zip(dims, like)):
            if isinstance(d, int) and known is not None and d != known:
                raise ValueError(f"symbolic shape '{shape_spec}' has {d} in dimension {i} "
                                 f"where the 'like' shape has {known}")
    return tuple(dims)


def _split_dimensions(spec: str) -> list[str]:
    """`spec` split at the commas outside parentheses (`floordiv(b, 2), 3`)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(spec):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(spec[start:i])
            start = i + 1
    return parts + [spec[start:]]


def _like_dim(spec: str, like, i: int) -> int:
    if like[i] is None:
        raise ValueError(f"symbolic shape '{spec}': dimension {i} of the 'like' shape is "
                         "unknown (None), so it must be given explicitly")
    return int(like[i])


def parse_dimension(text: str, scope: SymbolicScope | None = None):
    """One dimension as JAX writes it in a serialized aval (`"3"`, `"b"`, `"2*b + 1"`)."""
    return _parse_expr(text, text, 0, scope)


def _parse_expr(text: str, spec: str, index: int, scope, signed: bool = False):
    tokens = [m.group(0).strip() for m in _TOKEN.finditer(text) if m.group(0).strip()]
    pos = 0

    def error(msg):
        return ValueError(f"syntax error in symbolic shape '{spec}' in dimension {index}: "
                          f"{msg} (in '{text}')")

    def peek():
        return tokens[pos] if pos < len(tokens) else None

    def take():
        nonlocal pos
        pos += 1
        return tokens[pos - 1]

    def factor():
        tok = peek()
        if tok is None:
            raise error("unexpected end")
        take()
        if tok.isdigit():
            return int(tok)
        if tok == "-":
            return -factor()
        if tok == "(":
            value = expr()
            if peek() != ")":
                raise error("missing ')'")
            take()
            return value
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", tok):
            if peek() != "(":
                return DimExpr.var(tok, scope)
            if tok not in Operation.KINDS:
                raise error(f"unknown function '{tok}' (the functions are "
                            f"{', '.join(Operation.KINDS)})")
            take()
            first = expr()
            if peek() != ",":
                raise error(f"'{tok}' takes two arguments")
            take()
            second = expr()
            if peek() != ")":
                raise error("missing ')'")
            take()
            return _apply(tok, first, second)
        raise error(f"unexpected '{tok}'")

    def power():
        value = factor()
        if peek() == "^":
            take()
            exponent = factor()
            if not isinstance(exponent, int) or exponent < 1:
                raise error("the exponent of '^' must be a positive integer")
            result = value
            for _ in range(exponent - 1):
                result = result * value
            value = result
        return value

    def term():
        value = power()
        while peek() == "*":
            take()
            value = value * power()
        return value

    def expr():
        value = term()
        while peek() in ("+", "-"):
            value = value + term() if take() == "+" else value - term()
        return value

    result = expr()
    if pos != len(tokens):
        raise error(f"unexpected '{tokens[pos]}'")
    if isinstance(result, int) and result < 0 and not signed:
        raise error("dimensions must be >= 0")
    return result


def symbolic_args_specs(args, shapes_specs, constraints: Sequence[str] = (),
                        scope: SymbolicScope | None = None):
    """`ShapeDtypeStruct`s for the arrays `args`, with shapes from `shapes_specs`
    (a string, or a pytree prefix of `args` of strings; None keeps a shape)."""
    from plax.extend import tree_util
    from plax.extend.core import ShapeDtypeStruct
    if scope is None:
        scope = SymbolicScope(constraints)
    elif constraints:
        raise ValueError("Cannot use both `scope` and `constraints`")
    leaves, tree = tree_util.tree_flatten(args)
    if isinstance(shapes_specs, (str, type(None))):
        specs = [shapes_specs] * len(leaves)
    else:
        specs = tree_util.broadcast_prefix(shapes_specs, args, is_leaf=lambda x: x is None)
    structs = []
    for x, spec in zip(leaves, specs):
        shape = tuple(x.shape) if spec is None else symbolic_shape(spec, scope=scope,
                                                                   like=x.shape)
        structs.append(ShapeDtypeStruct(shape, x.dtype))
    return tree.unflatten(structs)

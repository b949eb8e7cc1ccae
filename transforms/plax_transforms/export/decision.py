"""Bounds of symbolic dimensions, which decide their comparisons (`b >= 16`,
`max(b, 4)`), as JAX 0.10.2 decides them.

An expression's bounds start from its atoms' (a variable is >= 1, `mod(e, k)` is in
`[0, k)`, `max(e, f)` is at least the larger of the lower bounds, ...), narrowed by
the scope's constraints on single terms (`b >= 16`, `b*c <= 100`). Where that does
not decide, a term shared with a constraint `c >= 0` is eliminated: for `e = k*t +
r` and `c = kc*t + rc`, `|kc|*e - sgn(kc)*k*c` has no `t` and bounds `e` from one
side (below when `sgn(kc)*k > 0`, above otherwise). The constraints are the scope's
(an equality as two inequalities) and the implicit ones of the operations in `e`
(`max(a, b) >= a`, `k*floordiv(x, k) <= x`, ...: `DimExpr.implicit_constraints`).
A `max` or `min` term is also split into its two cases. Elimination and splitting
go two levels deep. (This module knows expressions by their
attributes, so that `shape_poly` can use it without a cycle.)
"""
from __future__ import annotations

INF = float("inf")
_DEPTH = 2
_unscoped: dict = {}  # the expressions without a scope being bounded now


def bounds(e) -> tuple[float, float]:
    """The lower and upper bounds of `e` (an int or a `DimExpr`), using its scope's
    constraints; `-inf`/`inf` where unbounded."""
    if not hasattr(e, "terms"):
        return e, e
    cache = e.scope._bounds_cache if e.scope is not None else _unscoped
    if e in cache:
        return cache[e]
    cache[e] = (-INF, INF)  # what a cycle (e's bounds needing e's) sees meanwhile
    try:
        cache[e] = found = _eliminating(e, _DEPTH)
    except BaseException:
        del cache[e]
        raise
    if cache is _unscoped:
        del cache[e]
    return found


def interval(e) -> tuple[float, float]:
    """The bounds of `e` from its atoms' bounds alone (no elimination)."""
    if not hasattr(e, "terms"):
        return e, e
    lo = hi = e.const
    for atom, c in e.terms:
        alo, ahi = atom_bounds(atom, e)
        lo, hi = lo + c * (alo if c > 0 else ahi), hi + c * (ahi if c > 0 else alo)
    return lo, hi


def atom_bounds(atom, e) -> tuple[float, float]:
    """The bounds of one atom of `e` (a variable's name, an `Operation` or a
    `Monomial`): its own, narrowed by the scope's constraints on it alone."""
    scope = e.scope
    if isinstance(atom, str):
        lo, hi = 1, INF
    elif hasattr(atom, "factors"):  # a Monomial
        lo, hi = monomial_bounds(atom.factors, e)
    else:
        lo, hi = atom.bounds()
    if scope is not None and atom in scope._term_bounds:
        clo, chi = scope._term_bounds[atom]
        lo, hi = max(lo, clo), min(hi, chi)
    if scope is not None and atom in scope._rules:  # `k*atom == rhs`: atom is rhs / k
        rhs, k = scope._rules[atom]
        rlo, rhi = bounds(rhs)
        lo, hi = max(lo, _ceil_div(rlo, k)), min(hi, _floor_div(rhi, k))
    return lo, hi


def operation_bounds(op: str, a, b) -> tuple[float, float]:
    """The bounds of `op(a, b)` (`floordiv`, `mod`, `max`, `min`) from its arguments'."""
    (alo, ahi), (blo, bhi) = bounds(a), bounds(b)
    if op == "max":
        return max(alo, blo), max(ahi, bhi)
    if op == "min":
        return min(alo, blo), min(ahi, bhi)
    if blo == bhi and blo > 0:  # by a positive constant
        if op == "mod":
            return 0, blo - 1
        return _floor_div(alo, blo), _floor_div(ahi, blo)
    return -INF, INF


def monomial_bounds(factors, e) -> tuple[float, float]:
    """The bounds of a product of atoms with powers (each atom's bounds >= 0 needed),
    each atom's bounds decided with the constraints of `e`'s scope."""
    lo = hi = 1
    for atom, p in factors:
        alo, ahi = bounds(e.of_atom(atom))
        if alo < 0:
            return -INF, INF
        lo, hi = lo * alo ** p, _times(hi, ahi ** p)
    return lo, hi


def term_bound(coeff: int, const: int) -> tuple[float, float]:
    """The bounds that `coeff*t + const >= 0` puts on `t`."""
    if coeff > 0:
        return -(const // coeff), INF  # t >= ceil(-const / coeff)
    return -INF, const // -coeff


def _eliminating(e, depth: int) -> tuple[float, float]:
    lo, hi = interval(e)
    if depth == 0:
        return lo, hi
    for c in (*_explicit(e.scope), *e.implicit_constraints()):
        coeffs = dict(c.terms) if hasattr(c, "terms") else {}
        for atom, k in e.terms:
            kc = coeffs.get(atom)
            if not kc:
                continue
            sign = 1 if kc > 0 else -1
            rest = e * abs(kc) - c * (sign * k)
            rlo, rhi = _bounded(rest, depth - 1)
            if sign * k > 0:
                lo = max(lo, _ceil_div(rlo, abs(kc)))
            else:
                hi = min(hi, _floor_div(rhi, abs(kc)))
    for atom, k in e.terms:
        if getattr(atom, "op", None) in ("max", "min"):
            clo, chi = _case_split(e, atom, k, depth - 1)
            lo, hi = max(lo, clo), min(hi, chi)
    return lo, hi


def _case_split(e, atom, k: int, depth: int) -> tuple[float, float]:
    """Bounds of `e = r + k*max(a, b)` (or `min`) from those of `r + k*a` and `r + k*b`:
    `e` is the larger of the two where `k*max` (or `-k*min`) is, else the smaller. This
    is what bounds `b - max(b - 2, 0)` below (by 1)."""
    rest = e - e.of_atom(atom) * k
    cases = [_bounded(rest + k * arg, depth) for arg in atom.args]
    pick = max if (atom.op == "max") == (k > 0) else min
    return pick(lo for lo, _ in cases), pick(hi for _, hi in cases)


def _bounded(e, depth: int) -> tuple[float, float]:
    return _eliminating(e, depth) if hasattr(e, "terms") else (e, e)


def _explicit(scope) -> list:
    """The scope's constraints as expressions that are >= 0."""
    return [] if scope is None else scope._nonnegative


def _ceil_div(x: float, k: int) -> float:
    return x if abs(x) == INF else -(-x // k)


def _floor_div(x: float, k: int) -> float:
    return x if abs(x) == INF else x // k


def _times(a: float, b: float) -> float:
    return 0 if a == 0 or b == 0 else a * b

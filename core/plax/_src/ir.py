"""The Jaxpr IR: variables, literals, equations, Jaxprs, and their printer.

A Jaxpr is a first-order program in A-normal form: typed input variables, a list of
equations each applying one primitive, and output atoms. `ClosedJaxpr` pairs a
Jaxpr with the values of its constant variables. The checker (`check_jaxpr`) and
dead-code elimination (`dce_jaxpr`) live in `checking.py` and `dce.py`.
"""
from __future__ import annotations

import itertools
from typing import Any, Iterable, Sequence

import numpy as np

from plax._src.abstract import AbstractValue
from plax._src.debug_info import JaxprDebugInfo, check_debug_info_counts

_var_ids = itertools.count()


class Var:
    """A variable, identified by object identity; its printed name is assigned late."""
    __slots__ = ("aval", "_id")

    def __init__(self, aval: AbstractValue):
        self.aval = aval
        self._id = next(_var_ids)

    def __repr__(self):
        return f"Var(id={self._id}):{self.aval.str_short()}"


class DropVar(Var):
    """An output variable that nothing reads (printed `_`)."""
    __slots__ = ()

    def __repr__(self):
        return "_"


class Literal:
    """A constant scalar written inline in an equation."""
    __slots__ = ("val", "aval")

    def __init__(self, val: Any, aval: AbstractValue):
        self.val = val
        self.aval = aval

    def __repr__(self):
        return f"{_literal_text(self.val)}:{self.aval.str_short()}"


Atom = Var | Literal


class JaxprEqn:
    """`outvars = primitive[params] invars`, with its effects, where the user wrote it,
    the `named_scope`s it was staged under (`"layer/dense"`, relative to its Jaxpr)
    and the XLA frontend attributes its ops carry (sorted key/value pairs)."""
    __slots__ = ("invars", "outvars", "primitive", "params", "effects", "source_info",
                 "name_stack", "frontend_attributes")

    def __init__(self, invars: Sequence[Atom], outvars: Sequence[Var], primitive,
                 params: dict, effects: frozenset = frozenset(), source_info=None,
                 name_stack: str = "", frontend_attributes: tuple = ()):
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.primitive = primitive
        self.params = params
        self.effects = effects
        self.source_info = source_info
        self.name_stack = name_stack
        self.frontend_attributes = frontend_attributes

    def replace(self, **changes) -> "JaxprEqn":
        fields = {name: getattr(self, name) for name in self.__slots__}
        fields.update(changes)
        return JaxprEqn(**fields)

    def __repr__(self):
        return pp_eqn(self, _Namer()).rstrip()


class Jaxpr:
    """Typed program: `{ lambda constvars ; invars . let eqns in outvars }`."""
    __slots__ = ("constvars", "invars", "outvars", "eqns", "effects", "debug_info", "__weakref__")

    def __init__(self, constvars: Sequence[Var], invars: Sequence[Var],
                 outvars: Sequence[Atom], eqns: Sequence[JaxprEqn],
                 effects: frozenset = frozenset(), debug_info: JaxprDebugInfo | None = None):
        self.constvars = list(constvars)
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.eqns = list(eqns)
        self.effects = effects
        if debug_info is not None:
            check_debug_info_counts(debug_info, len(self.invars), len(self.outvars))
        self.debug_info = debug_info

    @property
    def in_avals(self) -> list[AbstractValue]:
        return [v.aval for v in self.invars]

    @property
    def out_avals(self) -> list[AbstractValue]:
        return [v.aval for v in self.outvars]

    def replace(self, **changes) -> "Jaxpr":
        fields = {name: getattr(self, name) for name in self.__slots__ if name != "__weakref__"}
        fields.update(changes)
        return Jaxpr(**fields)

    def __str__(self):
        return pp_jaxpr(self)

    __repr__ = __str__


class ClosedJaxpr:
    """A Jaxpr with the values of its constvars: a closed, callable program."""
    __slots__ = ("jaxpr", "consts", "__weakref__")

    def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any]):
        if len(consts) != len(jaxpr.constvars):
            raise ValueError(f"ClosedJaxpr got {len(consts)} consts for "
                             f"{len(jaxpr.constvars)} constvars")
        self.jaxpr = jaxpr
        self.consts = list(consts)

    in_avals = property(lambda self: self.jaxpr.in_avals)
    out_avals = property(lambda self: self.jaxpr.out_avals)
    eqns = property(lambda self: self.jaxpr.eqns)
    effects = property(lambda self: self.jaxpr.effects)

    def replace(self, **changes) -> "ClosedJaxpr":
        return ClosedJaxpr(changes.get("jaxpr", self.jaxpr), changes.get("consts", self.consts))

    def __str__(self):
        return pp_jaxpr(self.jaxpr)

    __repr__ = __str__


# --- pretty printing -------------------------------------------------------------

class _Namer:
    """Hands out `a, b, ..., z, ba, bb, ...` in order of first appearance."""

    def __init__(self):
        self.names: dict[int, str] = {}

    def __call__(self, atom: Atom) -> str:
        if isinstance(atom, Literal):
            return _literal_text(atom.val)
        if isinstance(atom, DropVar):
            return "_"
        name = self.names.get(id(atom))
        if name is None:
            name = self.names[id(atom)] = _nth_name(len(self.names))
        return name


def _nth_name(n: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        out = letters[n % 26] + out
        n = n // 26
        if n == 0:
            return out
        n -= 1


def _literal_text(val) -> str:
    if isinstance(val, (np.ndarray, np.generic)) and np.ndim(val) == 0:
        val = val.item()
    if isinstance(val, bool):
        return str(val)
    if isinstance(val, float):
        return repr(val)
    return str(val)


def _binder(var: Var, namer: _Namer) -> str:
    return f"{namer(var)}:{var.aval.str_short()}"


def _param_text(value, namer: _Namer, indent: int) -> str:
    inner = getattr(value, "jaxpr", value)
    if isinstance(inner, Jaxpr):
        return "\n" + _pp_jaxpr_body(inner, _Namer(), indent + 4)
    if isinstance(value, (tuple, list)) and value and all(
            isinstance(getattr(v, "jaxpr", v), Jaxpr) for v in value):
        return "(\n" + "\n".join(_pp_jaxpr_body(getattr(v, "jaxpr", v), _Namer(), indent + 4)
                                 for v in value) + "\n" + " " * indent + ")"
    if isinstance(value, np.dtype):
        return value.name
    if callable(value) and hasattr(value, "__name__"):
        return value.__name__
    return str(value)


def pp_eqn(eqn: JaxprEqn, namer: _Namer, indent: int = 4) -> str:
    # Operands first: their names were given when they were bound.
    args = " ".join(namer(v) for v in eqn.invars)
    outs = " ".join(_binder(v, namer) for v in eqn.outvars)
    params = ""
    if eqn.params:
        items = ", ".join(f"{k}={_param_text(v, namer, indent)}"
                          for k, v in sorted(eqn.params.items()))
        params = f"[{items}]"
    return f"{outs} = {eqn.primitive.name}{params} {args}".rstrip()


def _pp_jaxpr_body(jaxpr: Jaxpr, namer: _Namer, indent: int) -> str:
    pad = " " * indent
    consts = " ".join(_binder(v, namer) for v in jaxpr.constvars)
    ins = " ".join(_binder(v, namer) for v in jaxpr.invars)
    eqns = [pp_eqn(e, namer, indent + 4) for e in jaxpr.eqns]
    outs = " ".join(namer(v) for v in jaxpr.outvars)
    outs = f"({outs},)" if len(jaxpr.outvars) == 1 else f"({outs})"
    head = f"{pad}{{ lambda {consts}; {ins}. let"
    one_line = f"{head} {'; '.join(eqns)}{' ' if eqns else ''}in {outs} }}"
    if len(eqns) <= 3 and "\n" not in one_line and len(one_line) <= 100:
        return one_line
    body = "\n".join(f"{pad}    {e}" for e in eqns)
    return f"{head}\n{body}\n{pad}  in {outs} }}"


def pp_jaxpr(jaxpr: Jaxpr) -> str:
    """JAX's text form: `{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }`."""
    return _pp_jaxpr_body(jaxpr, _Namer(), 0)


def subjaxprs(eqn: JaxprEqn) -> Iterable[Jaxpr]:
    """Jaxprs carried in an equation's params (higher-order primitives)."""
    for value in eqn.params.values():
        for item in (value if isinstance(value, (tuple, list)) else (value,)):
            inner = getattr(item, "jaxpr", item)
            if isinstance(inner, Jaxpr):
                yield inner

"""The Jaxpr IR: variables, literals, equations, Jaxprs, and their printer.

A Jaxpr is a first-order program in A-normal form: typed input variables, a list of
equations each applying one primitive, and output atoms. `ClosedJaxpr` pairs a
Jaxpr with the values of its constant variables. The checker (`check_jaxpr`) and
dead-code elimination (`dce_jaxpr`) live in `checking.py` and `dce.py`.
"""
from __future__ import annotations

import collections
import itertools
import re
from typing import Any, Iterable, Sequence

import numpy as np
from jaxlib import _pretty_printer as _pp

from plax._src.abstract import AbstractValue
from plax._src.debug_info import JaxprDebugInfo, check_debug_info_counts
from plax._src.primitive import PRETTY_PRINT

_var_ids = itertools.count()


class Var:
    """A variable, identified by object identity; its printed name is assigned late."""
    __slots__ = ("aval", "_id")

    def __init__(self, aval: AbstractValue):
        self.aval = aval
        self._id = next(_var_ids)

    def __repr__(self):
        return f"Var(id={self._id}):{str(self.aval).lstrip('~')}"  # JAX's: int32[]


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

    def __repr__(self):  # a Python int or complex is weakly typed: JAX's TypedInt/TypedComplex
        typed = {int: "TypedInt", complex: "TypedComplex"}.get(type(self.val))
        val = f"{typed}({self.val}, dtype={self.aval.dtype.name})" if typed else self.val
        return f"Literal({val})"


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
        return _eqn_doc(self, PrintContext())._format(
            80, use_color=False, output_format=_pp.OutputFormat.TEXT, separable_lines=False,
            annotation_prefix=" # ", source_map=None).rstrip()


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

    in_avals = property(lambda self: [v.aval for v in self.invars])
    out_avals = property(lambda self: [v.aval for v in self.outvars])

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
    constvars = property(lambda self: self.jaxpr.constvars)
    invars = property(lambda self: self.jaxpr.invars)
    outvars = property(lambda self: self.jaxpr.outvars)
    debug_info = property(lambda self: self.jaxpr.debug_info)
    literals = property(lambda self: self.consts)  # JAX's other name for the consts

    def replace(self, **changes) -> "ClosedJaxpr":
        return ClosedJaxpr(changes.get("jaxpr", self.jaxpr), changes.get("consts", self.consts))

    def __str__(self):
        return pp_jaxpr(self.jaxpr)

    __repr__ = __str__


# --- pretty printing -------------------------------------------------------------
# JAX's text form, built as documents for jaxlib's C++ pretty printer (the one JAX's
# own printer uses), so lines break where JAX's break.

class PrintContext:
    """Names given so far (every Var, across nested Jaxprs, has one name), and the
    shared Jaxprs printed once at the top as `let name = { ... } in`."""

    def __init__(self, names: dict | None = None):
        self.names: dict[Var, str] = dict(names or {})
        self.shared: dict[Jaxpr, str] = {}
        self.shared_binders: set[Var] = set()  # (named afresh, as JAX's: not per caller)
        self._fresh = (n for i in itertools.count() if (n := _nth_name(i))
                       not in self.shared.values())

    def name(self, atom: Atom) -> str:
        if isinstance(atom, Literal):
            return _literal_text(atom)
        if isinstance(atom, DropVar):
            return "_"
        if atom not in self.names:
            self.names[atom] = next(self._fresh)
        return self.names[atom]

    def same_names(self, for_vars: Sequence[Atom], like_vars: Sequence[Atom]) -> None:
        """`for_vars` (a called Jaxpr's binders) print as the caller's `like_vars`."""
        if len(for_vars) != len(like_vars) or not self.shared_binders.isdisjoint(for_vars):
            return
        used = set()
        for v, like in zip(for_vars, like_vars):
            if (isinstance(like, Var) and like not in used and isinstance(v, Var)
                    and v not in self.names):
                used.add(like)
                self.names[v] = self.name(like)


def _nth_name(n: int) -> str:
    out = ""
    while not out or n:
        n, i = divmod(n, 26)
        out = chr(97 + i) + out
    return out


def _literal_text(lit: Literal) -> str:
    text = str(np.asarray(lit.val).item()) if not np.shape(lit.val) else "[...]"
    return f"{text}:{lit.aval.str_short()}" if hasattr(lit.aval, "dtype") else text


def _vars_doc(vs: Sequence[Atom], ctx: PrintContext, sep: str = "",
              types: bool = False) -> Any:
    docs = [_pp.text(ctx.name(v) + (f":{v.aval.str_short()}" if types else "")) for v in vs]
    return _pp.nest(2, _pp.group(_join(_pp.text(sep) + _pp.group(_pp.brk()), docs)))


def _join(sep, docs: list) -> Any:
    if not docs:
        return _pp.nil()
    return _pp.concat([d for doc in docs for d in (sep, doc)][1:])


def _param_doc(key: str, value, ctx: PrintContext) -> Any:
    if type(value) is tuple and all(isinstance(v, (Jaxpr, ClosedJaxpr)) for v in value):
        inner = _pp.group(_pp.concat([_pp.nest(2, _pp.concat([
            _pp.text("("), _pp.brk(""),
            _join(_pp.brk(), [_jaxpr_doc(getattr(v, "jaxpr", v), ctx) for v in value])])),
            _pp.brk(""), _pp.text(")")]))
    elif isinstance(value, (Jaxpr, ClosedJaxpr)):
        inner = _jaxpr_doc(getattr(value, "jaxpr", value), ctx)
    elif isinstance(value, frozenset):
        inner = _pp.text(f"frozenset({{{', '.join(repr(e) for e in sorted(value))}}})")
    else:
        inner = _pp.text(re.sub(r" at 0x([0-9a-fA-F]+)",
                                lambda m: " at 0x" + "X" * len(m[1]), str(value)))
    return _pp.text(f"{key}=") + inner


def _eqn_doc(eqn: JaxprEqn, ctx: PrintContext) -> Any:
    rule = eqn.primitive.get_rule(PRETTY_PRINT)
    pairs = (rule(eqn, ctx.same_names) if rule is not None
             else sorted(eqn.params.items()))
    lhs = _vars_doc(eqn.outvars, ctx, types=True)  # named before the params' Jaxprs
    params = _pp.nil() if not pairs else _pp.group(_pp.concat([
        _pp.nest(2, _pp.concat([_pp.text("["), _pp.brk(""),
                                _join(_pp.brk(), [_param_doc(k, v, ctx) for k, v in pairs])])),
        _pp.brk(""), _pp.text("]")]))
    rhs = [_pp.text(eqn.primitive.name), params, _pp.text(" ") + _vars_doc(eqn.invars, ctx)]
    return _pp.concat([lhs, _pp.text(" = "), *rhs] if eqn.outvars else rhs)


def _jaxpr_doc(jaxpr: Jaxpr, ctx: PrintContext, shared: bool = False) -> Any:
    if not shared and jaxpr in ctx.shared:
        return _pp.text(ctx.shared[jaxpr])
    consts = _vars_doc(jaxpr.constvars, ctx, types=True)
    ins = _vars_doc(jaxpr.invars, ctx, types=True)
    eqns = _join(_pp.brk("; "), [_eqn_doc(e, ctx) for e in jaxpr.eqns])
    outs = _pp.concat([_pp.text("("), _vars_doc(jaxpr.outvars, ctx, sep=","),
                       _pp.text(",)" if len(jaxpr.outvars) == 1 else ")")])
    return _pp.group(_pp.nest(2, _pp.concat([
        _pp.text("{ lambda "), consts, _pp.text("; "), ins, _pp.text(". let"),
        _pp.nest(2, _pp.brk() + eqns), _pp.brk(), _pp.text("in "), outs]))
        + _pp.text(" }"))


def _share_jaxprs(top: Jaxpr, ctx: PrintContext) -> list:
    """JAX's rule: a Jaxpr used twice, or a nested one of more than 10 equations, is
    printed once before the program and named after its equation's `name` param."""
    names: dict[Jaxpr, str] = {}
    counts: dict[Jaxpr, int] = {}
    queue = collections.deque([top])
    while queue:
        jaxpr = queue.popleft()
        counts[jaxpr] = counts.get(jaxpr, 0) + 1 + (jaxpr is not top and len(jaxpr.eqns) > 10)
        for eqn in jaxpr.eqns:
            name = eqn.params.get("name")
            for sub in subjaxprs(eqn):
                queue.append(sub)
                if name is not None:
                    names.setdefault(sub, str(name).strip("<>"))
    taken = collections.Counter()
    for jaxpr, count in counts.items():
        if count > 1:
            name = names.get(jaxpr, "jaxpr")
            if taken[name]:
                taken[name] += 1
                name += str(taken[name] - 1)
            taken[name] += 1
            ctx.shared[jaxpr] = name
            ctx.shared_binders.update((*jaxpr.invars, *jaxpr.outvars))
    return [_pp.concat([_pp.text(f"let {name} = "), _jaxpr_doc(j, ctx, shared=True),
                        _pp.text(" in"), _pp.brk()]) for j, name in ctx.shared.items()]


def _unused_outvars(jaxpr: Jaxpr) -> dict:
    used = {v for v in jaxpr.outvars if isinstance(v, Var)}
    unused = {}
    for eqn in reversed(jaxpr.eqns):
        unused.update((v, "_") for v in eqn.outvars if v not in used)
        used.update(v for v in eqn.invars if isinstance(v, Var))
    return unused


def pp_jaxpr(jaxpr: Jaxpr, width: int = 80) -> str:
    """JAX's text form: `{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }`; the
    top level's outputs that nothing reads print as `_`."""
    ctx = PrintContext(_unused_outvars(jaxpr))
    doc = _pp.concat([*_share_jaxprs(jaxpr, ctx), _jaxpr_doc(jaxpr, ctx)])
    return doc._format(width, use_color=False, output_format=_pp.OutputFormat.TEXT,
                       separable_lines=False, annotation_prefix=" # ", source_map=None)


def subjaxprs(eqn: JaxprEqn) -> Iterable[Jaxpr]:
    """Jaxprs carried in an equation's params (higher-order primitives)."""
    for value in eqn.params.values():
        for item in (value if isinstance(value, (tuple, list)) else (value,)):
            inner = getattr(item, "jaxpr", item)
            if isinstance(inner, Jaxpr):
                yield inner

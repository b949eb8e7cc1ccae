"""`Primitive`: a named operation and the table of rules that give it meaning.

Every interpreter looks its rule up here by kind. The kinds form a closed set
(`RULE_KINDS`, each with the signature its rules have), so a misspelled kind fails
at registration rather than silently never being used. A primitive has a
namespaced id (`lax.sin`, `softclip.softclip`) that is unique in the process; it
prints by its short name (`sin`). Each rule remembers the module that registered
it, so `rules_of(prim)` tells a user which transforms a primitive supports and
which package provides each rule.
"""
from __future__ import annotations

import dataclasses
import sys
import warnings
from typing import Callable

from plax._src import plugins
from plax._src.abstract import AbstractToken, AbstractValue
from plax._src.tracing import current_trace

RULE_KINDS: dict[str, str] = {
    "abstract_eval": "(*avals, **params) -> aval, or a list of avals: the output types",
    "impl": "(*args, **params) -> outputs: eager evaluation (default: compile the equation)",
    "jvp": "(primals, tangents, **params) -> (outputs, output tangents); tangents may be Zero",
    "transpose": "(cts, *operands, **params) -> one cotangent (or None) per operand; "
                 "linear operands are UndefinedPrimal",
    "partial_eval": "(trace, args, **params) -> outputs: split known and unknown work "
                    "under linearize (trace.is_unknown, trace.bind_known, trace.stage)",
    "partial_eval_jaxpr": "(eqn, unknowns) -> (known eqn, staged eqn, out_unknowns, residuals)",
    "batching": "(axis_data, args, dims, **params) -> (outputs, output batch dims)",
    "lowering": "(ctx, *operands, **params) -> MLIR value(s); optionally per platform",
    "dce": "(used_outputs, eqn) -> (used_inputs, pruned eqn or None)",
    "effects": "(**params) -> effects of an application",
    "axis_names": "(**params) -> the named axes an application uses (collectives)",
    "pretty_print": "(eqn, same_names) -> the (name, value) params a printed Jaxpr shows, "
                    "in order (default: all, by name); same_names(inner_vars, eqn_vars) "
                    "prints a called Jaxpr's binders with the equation's names",
}
"""The rule kinds a primitive may have, each with the signature of its rules. Rules
receive what they need as arguments; they never reach into an interpreter's internals."""
ABSTRACT_EVAL, IMPL, JVP, TRANSPOSE = "abstract_eval", "impl", "jvp", "transpose"
"""Names of rule kinds (the keys of `RULE_KINDS`), so a misspelling is a NameError."""
PARTIAL_EVAL, PARTIAL_EVAL_JAXPR, BATCHING = "partial_eval", "partial_eval_jaxpr", "batching"
"""Names of rule kinds (the keys of `RULE_KINDS`)."""
LOWERING, DCE, EFFECTS, AXIS_NAMES = "lowering", "dce", "effects", "axis_names"
"""Names of rule kinds (the keys of `RULE_KINDS`)."""
PRETTY_PRINT = "pretty_print"
"""Name of a rule kind (a key of `RULE_KINDS`)."""


@dataclasses.dataclass(frozen=True)
class Rule:
    kind: str
    platform: str | None
    fn: Callable
    module: str  # the module that registered it (not a helper that built it)


class RuleAlreadyDefinedError(ValueError):
    """A rule of a kind (and platform) the primitive already has: two packages
    disagreeing silently would leave the result to import order."""


class PrimitiveIdError(ValueError):
    """A primitive id that is malformed, taken, or unknown."""


_by_id: dict[str, "Primitive"] = {}


def _registering_namespace() -> dict:
    """The globals of the module on whose behalf a rule or primitive is being defined:
    the first caller outside modules that mark themselves `__plax_rule_helper__` (this
    one, and constructor helpers such as lax's `standard_primitive`)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__plax_rule_helper__"):
        frame = frame.f_back
    return frame.f_globals if frame is not None else {}


def _registering_module() -> str:
    return _registering_namespace().get("__name__", "<unknown>")


def _check_redefinition(old: "Primitive", module: str, namespace: dict) -> None:
    """A taken id may be defined again only by the module that defined it: quietly when
    the old definition came from an import of that module that failed (the module
    object that made it is gone), with a warning when the same module runs again (a
    notebook cell re-run, `importlib.reload`)."""
    if old.module != module:
        raise PrimitiveIdError(
            f"a primitive with id {old.id!r} is already defined by {old.module}; "
            "choose another name or namespace")
    live = sys.modules.get(module)
    if live is not None and vars(live) is old._namespace is namespace:
        warnings.warn(f"primitive {old.id!r} is defined again by {module}: the new "
                      "definition replaces the old one (Jaxprs and jitted functions traced "
                      "before keep the old one)", RuntimeWarning, stacklevel=4)


__plax_rule_helper__ = True


class Primitive:
    """A primitive operation: the unit Jaxprs are made of, defined by its rules.

    A primitive does nothing by itself: applying it (`prim.bind(*operands,
    **params)`) hands it to the current trace, which uses the rule of its kind:
    `abstract_eval` (output types, needed to trace), `impl` (eager evaluation),
    `lowering` (to StableHLO, for `jit`; per platform if needed), `jvp`,
    `transpose`, `batching` and others. Register rules with the decorators
    `def_abstract_eval`, `def_impl`, `def_jvp`, `def_transpose`, `def_batching`,
    `def_lowering`, or with `define_rule(kind, fn)`. plax's own `lax` is written this
    way; a third-party package announces its defining module in the
    `plax.primitives` entry-point group (see docs/extend.md).

    Args:
        id: `"<namespace>.<name>"`, unique across packages; Jaxprs print `name`. The
            same module may define an id again (a re-run notebook cell or
            `importlib.reload`): the new primitive replaces the old, with a warning.
        multiple_results: the abstract eval returns a list of avals and `bind` a list
            of values.
        dtypes: the dtype kinds its operands accept ('bool', 'signed', 'unsigned',
            'float', 'complex' or dtype names), for `plax.test_util.check_primitive`
            to test each; the abstract eval rule still does the checking.

    Raises:
        PrimitiveIdError: an id without namespace, or one another module defined.

    Examples:
        >>> from plax.extend import Primitive, ShapedArray
        >>> cube_p = Primitive("docs_example.cube")
        >>> @cube_p.def_abstract_eval
        ... def _(x):
        ...     return ShapedArray(x.shape, x.dtype)
        >>> @cube_p.def_impl
        ... def _(x):
        ...     return x * x * x
        >>> cube_p.bind(jnp.float32(2.0))
        Array(8., dtype=float32)
        >>> plax.make_jaxpr(cube_p.bind)(1.0)
        { lambda ; a:f32[]. let b:f32[] = cube a in (b,) }
        >>> plax.extend.supported_transforms(cube_p)  # a lowering rule would add jit
        ['eager']
    """

    def __init__(self, id: str, *, multiple_results: bool = False,
                 dtypes: frozenset[str] | None = None):
        namespace, _, name = id.rpartition(".")
        if not namespace or not name:
            raise PrimitiveIdError(
                f"primitive ids are namespaced, '<package>.<name>' (e.g. 'lax.sin'); got {id!r}")
        namespace = _registering_namespace()
        self.module = namespace.get("__name__", "<unknown>")
        self._namespace = namespace  # which run of the module made it
        if id in _by_id:
            _check_redefinition(_by_id[id], self.module, namespace)
        self.id = id
        self.name = name
        self.multiple_results = multiple_results
        self.dtypes = None if dtypes is None else frozenset(dtypes)
        self._rules: dict[tuple[str, str | None], Rule] = {}
        _by_id[id] = self

    def __repr__(self):
        return self.name

    # --- application -----------------------------------------------------------
    def bind(self, *args, **params):
        return current_trace().process_primitive(self, args, params)

    # --- rule table ------------------------------------------------------------
    def define_rule(self, kind: str, fn: Callable, *, platform: str | None = None,
                    override: bool = False) -> Callable:
        """Register `fn` as this primitive's `kind` rule (for `platform`, if given)."""
        if kind not in RULE_KINDS:
            raise ValueError(f"unknown rule kind {kind!r} for primitive {self.id!r}; the "
                             f"kinds are {', '.join(RULE_KINDS)}")
        if platform is not None and kind != LOWERING:
            raise ValueError(f"only lowering rules are per platform, not {kind!r} rules")
        key = (kind, platform)
        old = self._rules.get(key)
        if old is not None and not override and old.fn is not fn:
            where = f" for platform {platform!r}" if platform else ""
            raise RuleAlreadyDefinedError(
                f"primitive '{self.id}' already has a {kind} rule{where} "
                f"(registered by {old.module}); pass override=True to replace it")
        self._rules[key] = Rule(kind, platform, fn, _registering_module())
        return fn

    def get_rule(self, kind: str, platform: str | None = None) -> Callable | None:
        """The rule of this kind; a platform-specific rule beats the generic one."""
        rule = self._rules.get((kind, platform))
        if rule is None and platform is not None:
            rule = self._rules.get((kind, None))
        return None if rule is None else rule.fn

    def rules(self) -> list[Rule]:
        return list(self._rules.values())

    # Short spellings for the common kinds: each is a decorator.
    def def_abstract_eval(self, fn):
        return self.define_rule(ABSTRACT_EVAL, fn)

    def def_impl(self, fn):
        return self.define_rule(IMPL, fn)

    def def_jvp(self, fn):
        return self.define_rule(JVP, fn)

    def def_transpose(self, fn):
        return self.define_rule(TRANSPOSE, fn)

    def def_batching(self, fn):
        return self.define_rule(BATCHING, fn)

    def def_lowering(self, fn=None, *, platform: str | None = None):
        if fn is None:
            return lambda f: self.define_rule(LOWERING, f, platform=platform)
        return self.define_rule(LOWERING, fn, platform=platform)

    # --- evaluation helpers ----------------------------------------------------
    def impl(self, *args, **params):
        """The eager rule (`def_impl`) called directly, as JAX's `Primitive.impl`."""
        rule = self.get_rule(IMPL)
        if rule is None:
            raise NotImplementedError(f"Evaluation rule for '{self.name}' not implemented")
        return rule(*args, **params)

    def get_bind_params(self, params: dict) -> dict:
        """The params `bind` takes for an equation's `params` (JAX's hook; plax's
        higher-order primitives carry their Jaxprs in the params as they are)."""
        return dict(params)

    def abstract_eval(self, *avals, **params):
        """Output aval(s) of applying this primitive to `avals`."""
        rule = self.get_rule(ABSTRACT_EVAL)
        if rule is None:
            raise NotImplementedError(
                f"primitive '{self.id}' has no abstract evaluation rule, so it cannot be "
                f"traced; rules it has: {sorted(k for k, _ in self._rules) or 'none'}")
        try:
            out = rule(*avals, **params)
        except AttributeError:
            if not any(type(a) is AbstractToken for a in avals):
                raise
            raise ValueError(f"Attempting to pass an unexpected type AbstractToken() to a "
                             f"primitive: {self.name} (it takes arrays; got operands "
                             f"{', '.join(a.str_short() for a in avals)})") from None
        _check_abstract_eval_result(self, out)
        # Explicit mesh axes in the types (checked without a generator: once per equation).
        typed = params.get("out_sharding") is not None or params.get("sharding") is not None
        for a in avals:
            if typed:
                break
            typed = getattr(a, "typed_sharding", None) is not None
        return _sharding_rule(self, avals, out, params) if typed else out


_sharding_rule = plugins.seam("sharding_rule")


def _check_abstract_eval_result(prim: Primitive, out) -> None:
    if prim.multiple_results:
        if isinstance(out, (list, tuple)) and all(isinstance(a, AbstractValue) for a in out):
            return
        wanted = "a list of abstract values, one per output (multiple_results=True)"
    elif isinstance(out, AbstractValue):
        return
    else:
        wanted = ("one abstract value (e.g. ShapedArray(shape, dtype)); a primitive with "
                  "several outputs is made with Primitive(..., multiple_results=True)")
    raise TypeError(f"the abstract evaluation rule of primitive '{prim.id}' returned "
                    f"{type(out).__name__} {out!r}; it must return {wanted}")


def lookup(id: str) -> Primitive:
    """The primitive registered under `id`, loading the installed plugins'
    `plax.primitives` entry points if it is not known yet.

    Args:
        id: a primitive id, `"<namespace>.<name>"`.

    Returns:
        The `Primitive`.

    Raises:
        PrimitiveIdError: no installed package defines it.

    Examples:
        >>> sin_p = plax.extend.lookup("lax.sin")
        >>> sin_p.name, sin_p.multiple_results
        ('sin', False)
    """
    prim = _by_id.get(id)
    if prim is None:
        plugins.load_group("plax.primitives")
        prim = _by_id.get(id)
    if prim is None:
        raise PrimitiveIdError(f"no primitive has id {id!r}; is the package that defines "
                               "it installed?")
    return prim


def all_primitives() -> list[Primitive]:
    """Every primitive defined so far, by id."""
    return [_by_id[k] for k in sorted(_by_id)]

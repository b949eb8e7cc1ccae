"""`Primitive`: a named operation and the table of rules that give it meaning.

Every transform looks its rule up here by kind ("abstract_eval", "impl", "jvp",
"transpose", "batching", "partial_eval", "lowering" per platform...). The core knows
no particular transform: a kind is just a string, and the package that registers a
rule is remembered so that `rules_of(prim)` can tell a user which transforms a
primitive supports and who provided each rule.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

# Kinds the core itself consults; transforms may add their own.
ABSTRACT_EVAL = "abstract_eval"
IMPL = "impl"
JVP = "jvp"
TRANSPOSE = "transpose"
BATCHING = "batching"
PARTIAL_EVAL = "partial_eval"
LOWERING = "lowering"


@dataclasses.dataclass(frozen=True)
class Rule:
    kind: str
    platform: str | None
    fn: Callable
    owner: str  # the distribution/top-level package that registered it


class RuleAlreadyDefinedError(ValueError):
    pass


_all_primitives: dict[str, list["Primitive"]] = {}


def _owner_of(fn: Callable) -> str:
    module = getattr(fn, "__module__", None) or "<unknown>"
    return module.split(".")[0]


class Primitive:
    """A primitive operation. Applying it (`bind`) hands it to the current trace."""

    multiple_results = False

    def __init__(self, name: str, *, multiple_results: bool = False):
        self.name = name
        self.multiple_results = multiple_results
        self._rules: dict[tuple[str, str | None], Rule] = {}
        _all_primitives.setdefault(name, []).append(self)

    def __repr__(self):
        return self.name

    # --- application -----------------------------------------------------------
    def bind(self, *args, **params):
        return tracing.current_trace().process_primitive(self, args, params)

    # --- rule table ------------------------------------------------------------
    def define_rule(self, kind: str, fn: Callable, *, platform: str | None = None,
                    override: bool = False, owner: str | None = None) -> Callable:
        key = (kind, platform)
        old = self._rules.get(key)
        if old is not None and not override and old.fn is not fn:
            where = f" for platform {platform!r}" if platform else ""
            raise RuleAlreadyDefinedError(
                f"primitive '{self.name}' already has a {kind} rule{where} "
                f"(registered by {old.owner!r}); pass override=True to replace it")
        self._rules[key] = Rule(kind, platform, fn, owner or _owner_of(fn))
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
    def abstract_eval(self, *avals, **params):
        """Output aval(s) of applying this primitive to `avals`."""
        rule = self.get_rule(ABSTRACT_EVAL)
        if rule is None:
            raise NotImplementedError(
                f"primitive '{self.name}' has no abstract evaluation rule, so it cannot be "
                f"traced; rules it has: {sorted(k for k, _ in self._rules) or 'none'}")
        return rule(*avals, **params)


def rules_of(prim: Primitive) -> dict[str, str]:
    """Map `kind[:platform]` → owner package, for discovering what a primitive supports."""
    return {(r.kind if r.platform is None else f"{r.kind}:{r.platform}"): r.owner
            for r in prim.rules()}


def primitives_named(name: str) -> list[Primitive]:
    """Every primitive created with this name (names need not be unique)."""
    return list(_all_primitives.get(name, ()))


def all_primitive_names() -> list[str]:
    return sorted(_all_primitives)


# Imported last: tracing builds on this module, and `bind` needs it only when called.
from plax._src import tracing  # noqa: E402

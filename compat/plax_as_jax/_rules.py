"""JAX's rule tables (`ad.primitive_jvps[p] = rule`...) as views of plax's: setting an
entry registers the rule on the primitive itself, with the adapter its signature
needs, so the rule lands in plax's one table (listed by `python -m plax.extend`,
credited to the library that set it). Reading an entry gives the rule that is there.
"""
from __future__ import annotations

import weakref
from collections.abc import Callable, MutableMapping

import plax.extend.core as pcore

# Rules set through these tables are credited to the library's module, not this one.
__plax_rule_helper__ = True


class RuleTable(MutableMapping):
    """`{primitive: rule}` for one rule kind, stored on the primitives."""

    def __init__(self, kind: str, adapt: Callable | None = None,
                 platform: str | None = None):
        self.kind, self.adapt, self.platform = kind, adapt, platform
        self._given = weakref.WeakKeyDictionary()  # primitive → (registered fn, rule given)

    def _check(self, prim):
        if not isinstance(prim, pcore.Primitive):
            raise TypeError(f"rule tables are keyed by primitives; got {prim!r} of type "
                            f"{type(prim).__name__}")

    def __setitem__(self, prim, rule):
        self._check(prim)
        fn = rule if self.adapt is None else self.adapt(prim, rule)
        prim.define_rule(self.kind, fn, platform=self.platform, override=True)
        self._given[prim] = (fn, rule)

    def __getitem__(self, prim):
        self._check(prim)
        fn = prim.get_rule(self.kind, self.platform)
        if fn is None:
            raise KeyError(prim)
        registered, given = self._given.get(prim, (None, None))
        return given if registered is fn else fn

    def __delitem__(self, prim):
        raise TypeError(f"plax keeps a primitive's {self.kind} rule once set; replace it "
                        "by setting another")

    def _with_rule(self):
        return [p for p in pcore.all_primitives() if p.get_rule(self.kind, self.platform)]

    def __iter__(self):
        return iter(self._with_rule())

    def __len__(self):
        return len(self._with_rule())

    def __contains__(self, prim):
        return isinstance(prim, pcore.Primitive) and \
            prim.get_rule(self.kind, self.platform) is not None

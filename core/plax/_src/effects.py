"""Effects: what an equation does besides computing its outputs.

An equation's effects (its primitive's `effects` rule) are recorded on it and on
every Jaxpr that contains it: dead-code elimination keeps effectful equations, and
lowering threads a token through the equations of each *ordered* effect, so they run
in program order, and in call order across computations (see `plax_transforms.lowering`).
Any hashable object can be an effect; this class gives the common kinds a name.
"""
from __future__ import annotations

from typing import Iterable


class Effect:
    """A named effect; `ordered=True` makes its equations run in program order. A
    subclass made without a name (JAX's `class MyEffect(Effect)`, `MyEffect()`) is
    named by its class."""
    __slots__ = ("name", "ordered")

    def __init__(self, name: str | None = None, *, ordered: bool = False):
        self.name = type(self).__name__ if name is None else name
        self.ordered = ordered

    def __repr__(self):
        return self.name


def ordered_effects(effects: Iterable) -> tuple:
    """The ordered effects among `effects`, in a fixed order (by name): the order of the
    token arguments and results that thread them through a lowered function."""
    return tuple(sorted((e for e in effects if getattr(e, "ordered", False)), key=repr))

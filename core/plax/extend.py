"""What third-party packages use to add primitives and inspect the registry.

A package defines `Primitive`s, registers rules on them, and announces its module in
the `plax.primitives` entry point group; `list_primitives` and `rules_of` load every
announced package first, so a user can see which transforms each primitive supports
and which package gave each rule.
"""
from __future__ import annotations

from plax._src import plugins
from plax._src.abstract import ShapedArray  # noqa: F401  (rule authors need it)
from plax._src.primitive import Primitive, primitives_named, all_primitive_names
from plax._src.primitive import rules_of as _rules_of


def list_primitives() -> list[str]:
    """Names of all primitives defined by plax and by installed plugins."""
    plugins.ensure_primitives_loaded()
    return all_primitive_names()


def rules_of(primitive: Primitive | str) -> dict[str, str]:
    """`{rule kind[:platform]: providing package}` for a primitive or primitive name."""
    plugins.ensure_primitives_loaded()
    if isinstance(primitive, Primitive):
        return _rules_of(primitive)
    found = primitives_named(primitive)
    if not found:
        raise ValueError(f"no primitive named {primitive!r}; known: {all_primitive_names()}")
    merged: dict[str, str] = {}
    for prim in found:
        merged.update(_rules_of(prim))
    return merged


__all__ = ["Primitive", "ShapedArray", "list_primitives", "rules_of"]

"""`jax._src.tree_util`: `_registry` (flax's graph utilities test `type in _registry`)
and `flatten_one_level` (equinox)."""
from __future__ import annotations

from collections.abc import Mapping

from plax.extend.tree_util import flatten_one_level, is_tree_node  # noqa: F401

PLAX_MODULE = None


class _RegistryView(Mapping):
    """Which types are pytree nodes, as a read-only set-like mapping of types."""

    def __contains__(self, typ):
        return isinstance(typ, type) and is_tree_node(typ)

    def __getitem__(self, typ):
        if typ not in self:
            raise KeyError(typ)
        return typ

    def __iter__(self):
        raise TypeError("the pytree registry cannot be listed; ask `type in _registry`")

    def __len__(self):
        raise TypeError("the pytree registry cannot be counted; ask `type in _registry`")


_registry = _RegistryView()

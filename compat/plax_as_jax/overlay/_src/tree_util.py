"""`jax._src.tree_util`: `_registry` (flax's graph utilities test `type in _registry`),
`flatten_one_level` (equinox) and `prefix_errors` (flax's struct tests)."""
from __future__ import annotations

from collections.abc import Mapping

from plax import tree_util
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


def prefix_errors(prefix_tree, full_tree, is_leaf=None) -> list:
    """Where `prefix_tree` is not a prefix of `full_tree`: one function per
    disagreement, taking the prefix's name (`in_axes`) and returning a ValueError
    that names the key path (`in_axes.y`)."""
    return list(_prefix_errors((), prefix_tree, full_tree, is_leaf))


def _children(tree) -> list:
    """(key, child) pairs one level down."""
    pairs, _ = tree_util.tree_flatten_with_path(tree, is_leaf=lambda x: x is not tree)
    return [(path[0], child) for path, child in pairs]


def _prefix_errors(path, prefix, full, is_leaf):
    if (is_leaf is not None and is_leaf(prefix)) or tree_util.treedef_is_leaf(
            tree_util.tree_structure(prefix)):
        return
    where = tree_util.keystr(path)
    if type(prefix) is not type(full):
        yield lambda name: ValueError(
            f"pytree structure error: different types at key path\n    {name}{where}\nAt "
            f"that key path, the prefix pytree {name} has a subtree of type\n    "
            f"{type(prefix)}\nbut at the same key path the full pytree has a subtree of "
            f"different type\n    {type(full)}.")
        return
    prefix_children, full_children = _children(prefix), _children(full)
    prefix_keys, full_keys = [k for k, _ in prefix_children], [k for k, _ in full_children]
    if prefix_keys != full_keys:
        yield lambda name: ValueError(
            f"pytree structure error: different pytree keys at key path\n    {name}{where}\n"
            f"the prefix pytree {name} has keys {prefix_keys} where the full pytree has "
            f"{full_keys}.")
        return
    for (key, sub_prefix), (_, sub_full) in zip(prefix_children, full_children):
        yield from _prefix_errors((*path, key), sub_prefix, sub_full, is_leaf)

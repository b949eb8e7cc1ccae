"""Pytrees: nested containers flattened to a list of leaves and a `PyTreeDef`.

Flattening runs in jaxlib's C++ pytree code, on plax's own `PyTreeRegistry`
instance (`registry`). JAX keeps its own registries, so a type registered with
plax is not registered with JAX and the two never overwrite each other.
Every part of plax flattens with `registry`; the C++ jit fast path is handed
the same object, so treedefs built here and there compare equal.
"""
from __future__ import annotations

import collections
import dataclasses
import functools
import operator
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, TypeVar

from jaxlib._jax import pytree

PyTreeDef = pytree.PyTreeDef
"""The structure of a pytree without its leaves (jaxlib's C++ type, as in JAX)."""
GetAttrKey = pytree.GetAttrKey
"""A key-path entry: the attribute `name` of an object (`.name`)."""
DictKey = pytree.DictKey
"""A key-path entry: the dict key `key` (`[key]`)."""
SequenceKey = pytree.SequenceKey
"""A key-path entry: the position `idx` in a sequence (`[idx]`)."""
FlattenedIndexKey = pytree.FlattenedIndexKey
"""A key-path entry: the position `key` among the children a flatten rule returned."""

KeyEntry = Hashable
"""One step of a key path (any hashable; plax's own are the four `*Key` types)."""
KeyPath = tuple[KeyEntry, ...]
"""Where a leaf sits in a pytree: the entries from the root to it."""
T = TypeVar("T")
Typ = TypeVar("Typ", bound=type)

registry = pytree.PyTreeRegistry(enable_none=True, enable_tuple=True, enable_namedtuple=True,
                                 enable_list=True, enable_dict=True)
"""plax's own pytree registry (not JAX's): every flatten in plax and its C++ paths."""
# Pickle refers to a registry by module and name; this lets treedefs round-trip.
registry.__module__ = __name__
registry.__name__ = "registry"
default_registry = registry
"""JAX's name for the registry every public pytree function uses (plax's own one)."""

_MISSING = object()


# --- flattening ----------------------------------------------------------------------

def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None
                 ) -> tuple[list[Any], PyTreeDef]:
    """Splits a pytree into its leaves and its structure.

    Args:
        tree: a pytree.
        is_leaf: a predicate that stops the flattening at the nodes it accepts.

    Returns:
        `(leaves, treedef)`: the leaves in depth-first order (dict entries by sorted
        key) and a `PyTreeDef`; `tree_unflatten(treedef, leaves)` rebuilds the tree.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> leaves, treedef = plax.tree_util.tree_flatten({"w": jnp.ones(2), "b": 0.0})
        >>> leaves, treedef
        ([0.0, Array([1., 1.], dtype=float32)], PyTreeDef({'b': *, 'w': *}))
    """
    return registry.flatten(tree, is_leaf)


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    """Rebuilds a pytree of structure `treedef` from `leaves` (the inverse of
    `tree_flatten`).

    Args:
        treedef: a `PyTreeDef`, from `tree_flatten` or `tree_structure`.
        leaves: as many leaves as `treedef` has, in flattening order.

    Returns:
        The pytree.

    Raises:
        ValueError: the number of leaves differs from `treedef.num_leaves`.

    Examples:
        >>> import plax
        >>> _, treedef = plax.tree_util.tree_flatten((1, {"x": 2}))
        >>> plax.tree_util.tree_unflatten(treedef, [10, 20])
        (10, {'x': 20})
    """
    return treedef.unflatten(leaves)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    """The leaves of `tree`, in flattening order (depth first, dicts by sorted key).

    Args:
        tree: a pytree.
        is_leaf: a predicate that stops the flattening at the nodes it accepts.

    Returns:
        A list of leaves; None is an empty subtree, not a leaf.

    Examples:
        >>> import plax
        >>> plax.tree_util.tree_leaves({"a": [1, 2], "b": None, "c": (3,)})
        [1, 2, 3]
    """
    return registry.flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    """The structure of `tree` (a `PyTreeDef`): its containers, with the leaves left out.

    Two trees with equal structures can be mapped over together, and
    `treedef.unflatten(leaves)` rebuilds a tree of this structure from new leaves.

    Args:
        tree: a pytree.
        is_leaf: a predicate that stops the flattening at the nodes it accepts.

    Returns:
        A `PyTreeDef`; `*` marks the leaves in its text.

    Examples:
        >>> plax.tree_util.tree_structure({"a": [1, 2], "b": None})
        PyTreeDef({'a': [*, *], 'b': None})
    """
    return registry.flatten(tree, is_leaf)[1]


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    """Whether `treedef` is the structure of a single leaf (or of a childless node such as
    `None`).

    Args:
        treedef: a `PyTreeDef`.

    Returns:
        A bool.

    Examples:
        >>> tu = plax.tree_util
        >>> tu.treedef_is_leaf(tu.tree_structure(1.0)), tu.treedef_is_leaf(tu.tree_structure([1.0]))
        (True, False)
    """
    return treedef.num_nodes == 1


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    """The structures of the root node's children, one `PyTreeDef` each.

    Args:
        treedef: a `PyTreeDef`.

    Returns:
        A list of `PyTreeDef`s (empty for a leaf).

    Examples:
        >>> tu = plax.tree_util
        >>> tu.treedef_children(tu.tree_structure((1, [2, 3])))
        [PyTreeDef(*), PyTreeDef([*, *])]
    """
    return treedef.children()


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
    """The structure of a tuple whose elements have the structures `treedefs`.

    Args:
        treedefs: an iterable of `PyTreeDef`s.

    Returns:
        A `PyTreeDef` whose root is a tuple.

    Examples:
        >>> tu = plax.tree_util
        >>> tu.treedef_tuple([tu.tree_structure(1), tu.tree_structure([1, 2])])
        PyTreeDef((*, [*, *]))
    """
    return pytree.treedef_tuple(registry, list(treedefs))


def is_tree_node(typ: type) -> bool:
    """Whether values of type `typ` are pytree nodes (containers that flattening opens):
    the built-in ones (tuple, list, dict, None), namedtuples and registered classes.

    Args:
        typ: a type.

    Returns:
        A bool.

    Examples:
        >>> plax.tree_util.is_tree_node(dict), plax.tree_util.is_tree_node(float)
        (True, False)
    """
    return registry.is_node(typ)


def flatten_one_level(tree: Any) -> tuple[Iterable[Any], Hashable]:
    """Opens one level of a pytree node: its direct children (not flattened further) and
    its auxiliary data (for a dict, its keys).

    Args:
        tree: a pytree node (not a leaf).

    Returns:
        A pair `(children, aux_data)`.

    Raises:
        ValueError: `tree` is a leaf.

    Examples:
        >>> plax.tree_util.flatten_one_level({"a": [1, 2], "b": 3})
        (([1, 2], 3), ('a', 'b'))
    """
    out = registry.flatten_one_level(tree)
    if out is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    return out


def flatten_one_level_with_keys(tree: Any) -> tuple[Iterable[tuple[KeyEntry, Any]], Hashable]:
    """As `flatten_one_level`, with each child paired with the key entry that names it.

    Args:
        tree: a pytree node (not a leaf).

    Returns:
        A pair `(((key, child), ...), aux_data)`.

    Raises:
        ValueError: `tree` is a leaf.

    Examples:
        >>> plax.tree_util.flatten_one_level_with_keys((1, [2]))
        (((SequenceKey(idx=0), 1), (SequenceKey(idx=1), [2])), None)
    """
    out = registry.flatten_one_level_with_keys(tree)
    if out is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    return out


def all_leaves(iterable: Iterable[Any], is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """Whether every element of `iterable` is a leaf, i.e. none is a pytree node.

    Handy to check that a list came out of `tree_leaves` rather than holding subtrees.

    Args:
        iterable: the values to check.
        is_leaf: a predicate that makes the nodes it accepts count as leaves.

    Returns:
        A bool.

    Examples:
        >>> plax.tree_util.all_leaves([1, 2.0, jnp.zeros(2)]), plax.tree_util.all_leaves([1, [2]])
        (True, False)
    """
    if is_leaf is None:
        return pytree.all_leaves(registry, iterable)
    return all(_is_strict_leaf(registry.flatten(x, is_leaf)[1]) for x in iterable)


def _is_strict_leaf(treedef: PyTreeDef) -> bool:
    return treedef.num_nodes == 1 and treedef.num_leaves == 1


def _flatten_up_to(treedef: PyTreeDef, tree: Any, fn: str, name: str, ref: str) -> list[Any]:
    """`treedef.flatten_up_to(tree)`, with an error naming both structures."""
    try:
        return treedef.flatten_up_to(tree)
    except ValueError as e:
        raise ValueError(
            f"{fn}: {name} has pytree structure {tree_structure(tree)}, which is neither "
            f"{ref}'s structure {treedef} nor an extension of it ({e})") from None


# --- mapping and reducing ------------------------------------------------------------

def tree_map(f: Callable[..., Any], tree: Any, *rest: Any,
             is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Applies `f` to every leaf of `tree` (and the matching leaves of `rest`).

    Args:
        f: a function of `1 + len(rest)` leaves.
        tree: a pytree: nested lists, tuples, dicts, None, and registered classes.
        *rest: more pytrees with `tree`'s structure, or structures that extend it
            (a leaf of `tree` may face a whole subtree in `rest`, passed to `f`).
        is_leaf: a predicate that stops the flattening at the nodes it accepts.

    Returns:
        A pytree of `tree`'s structure holding `f`'s results.

    Raises:
        ValueError: a pytree of `rest` does not have `tree`'s structure.

    Examples:
        >>> import plax
        >>> plax.tree_util.tree_map(lambda x, y: x + y, {"a": 1, "b": (2, 3)},
        ...                         {"a": 10, "b": (20, 30)})
        {'a': 11, 'b': (22, 33)}
    """
    leaves, treedef = registry.flatten(tree, is_leaf)
    others = [_flatten_up_to(treedef, r, "tree_map", f"rest[{i}]", "tree")
              for i, r in enumerate(rest)]
    return treedef.unflatten(f(*xs) for xs in zip(leaves, *others))


def tree_all(tree: Any, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """Whether every leaf of `tree` is truthy (as Python's `all` over `tree_leaves`).

    Args:
        tree: a pytree.
        is_leaf: a predicate that stops the flattening at the nodes it accepts.

    Returns:
        A bool; True for a tree without leaves.

    Examples:
        >>> plax.tree_util.tree_all([True, (1, 0)])
        False
    """
    return all(tree_leaves(tree, is_leaf))


def tree_reduce(function: Callable[[Any, Any], Any], tree: Any, initializer: Any = _MISSING,
                is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Folds the leaves of `tree` with a two-argument `function`, left to right, as
    `functools.reduce(function, leaves[, initializer])` does.

    Args:
        function: `(accumulated, leaf) -> accumulated`.
        tree: a pytree.
        initializer: the starting value; required when the tree may have no leaves.
        is_leaf: a predicate that stops the flattening at the nodes it accepts.

    Returns:
        The reduced value.

    Raises:
        TypeError: the tree has no leaves and no `initializer` is given.

    Examples:
        >>> plax.tree_util.tree_reduce(lambda a, b: a + b, [1, (2, 3)])
        6
        >>> plax.tree_util.tree_reduce(max, {"x": 3, "y": 7}, 0)
        7
    """
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _MISSING:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_reduce_associative(operation: Callable[[T, T], T], tree: Any, *,
                            identity: Any = _MISSING,
                            is_leaf: Callable[[Any], bool] | None = None) -> T:
    """Reduces the leaves with an associative `operation`, pairing them as a balanced
    binary tree (logarithmic depth: the operations of one level are independent, which
    suits large arrays or collective operations).

    Args:
        operation: an associative `(a, b) -> c`.
        tree: a pytree.
        identity: the result for a tree without leaves (required only then).
        is_leaf: a predicate that stops the flattening at the nodes it accepts.

    Returns:
        `operation` applied over the leaves, pairwise, level by level.

    Raises:
        TypeError: the tree has no leaves and no `identity` is given.

    Examples:
        >>> plax.tree_util.tree_reduce_associative(lambda a, b: a + b, [1, 2, 3, 4])
        10
    """
    leaves = tree_leaves(tree, is_leaf)
    if not leaves:
        if identity is _MISSING:
            raise TypeError("Must specify identity for parallel reduction of empty sequence.")
        return identity
    return _reduce_balanced(leaves, operation)


def _reduce_balanced(leaves: list, operation: Callable):
    if len(leaves) == 1:
        return leaves[0]
    half = len(leaves) // 2
    return operation(_reduce_balanced(leaves[:half], operation),
                     _reduce_balanced(leaves[half:], operation))


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None,
                   pytree_to_transpose: Any) -> Any:
    """Swaps the two levels of a nested pytree: a tree of structure "outer of inner"
    becomes one of structure "inner of outer".

    For instance a list of pairs becomes a pair of lists, which is how per-example
    results are regrouped by field.

    Args:
        outer_treedef: the structure of the outer level.
        inner_treedef: the structure of each inner tree; None infers it from the first.
        pytree_to_transpose: the tree, of structure outer composed with inner.

    Returns:
        The transposed tree.

    Raises:
        TypeError: the tree's structure is not outer composed with inner.
        ValueError: `inner_treedef` is None and the outer level has no leaves.

    Examples:
        >>> tu = plax.tree_util
        >>> outer, inner = tu.tree_structure([0, 0]), tu.tree_structure((0, 0))
        >>> tu.tree_transpose(outer, inner, [(1, 2), (3, 4)])
        ([1, 3], [2, 4])
    """
    if inner_treedef is None:
        first = _flatten_up_to(outer_treedef, pytree_to_transpose, "tree_transpose",
                               "pytree_to_transpose", "outer_treedef")
        if not first:
            raise ValueError("tree_transpose: cannot infer inner_treedef from an outer "
                             f"structure {outer_treedef} with no leaves")
        inner_treedef = tree_structure(first[0])
    leaves, treedef = registry.flatten(pytree_to_transpose)
    expected = outer_treedef.compose(inner_treedef)
    if treedef != expected:
        raise TypeError(f"tree_transpose: the pytree has structure {treedef}, but outer "
                        f"{outer_treedef} composed with inner {inner_treedef} is {expected}")
    n_outer, n_inner = outer_treedef.num_leaves, inner_treedef.num_leaves
    columns = [[leaves[o * n_inner + i] for o in range(n_outer)] for i in range(n_inner)]
    return inner_treedef.unflatten(outer_treedef.unflatten(col) for col in columns)


def broadcast_prefix(prefix_tree: Any, full_tree: Any,
                     is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    """One entry per leaf of `full_tree`: the `prefix_tree` leaf covering it.

    Used for per-argument options such as `in_axes` or shardings, where one value may
    stand for a whole subtree.
    """
    prefix_leaves, prefix_def = registry.flatten(prefix_tree, is_leaf)
    subtrees = _flatten_up_to(prefix_def, full_tree, "broadcast_prefix", "full_tree",
                              "prefix_tree")
    return [x for x, sub in zip(prefix_leaves, subtrees)
            for _ in range(tree_structure(sub).num_leaves)]


def tree_broadcast(prefix_tree: Any, full_tree: Any,
                   is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Expands a prefix of a tree to the tree's full structure: each leaf of
    `prefix_tree` is repeated over the whole subtree of `full_tree` it faces.

    This is how a per-argument option (one `in_axes` for a whole dict) applies to each
    array below it.

    Args:
        prefix_tree: a pytree whose structure is a prefix of `full_tree`'s.
        full_tree: the pytree giving the target structure.
        is_leaf: a predicate that stops the flattening of `prefix_tree`.

    Returns:
        A pytree of `full_tree`'s structure holding `prefix_tree`'s leaves.

    Raises:
        ValueError: `prefix_tree` is not a prefix of `full_tree`.

    Examples:
        >>> plax.tree_util.tree_broadcast([1, 2], [(0, 0), {"x": 0}])
        [(1, 1), {'x': 2}]
    """
    return tree_structure(full_tree).unflatten(broadcast_prefix(prefix_tree, full_tree, is_leaf))


# --- key paths -----------------------------------------------------------------------

def _path_predicate(is_leaf, is_leaf_takes_path):
    if is_leaf is None or is_leaf_takes_path:
        return is_leaf
    return lambda _, x: is_leaf(x)


def tree_flatten_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                           is_leaf_takes_path: bool = False
                           ) -> tuple[list[tuple[KeyPath, Any]], PyTreeDef]:
    """Like `tree_flatten`, with each leaf paired with its key path: the tuple of keys
    (`DictKey`, `SequenceKey`, `GetAttrKey`...) that leads from the root to it.

    Args:
        tree: a pytree.
        is_leaf: a predicate that stops the flattening at the nodes it accepts.
        is_leaf_takes_path: call `is_leaf(path, node)` instead of `is_leaf(node)`.

    Returns:
        A pair `([(path, leaf), ...], treedef)`.

    Examples:
        >>> pairs, treedef = plax.tree_util.tree_flatten_with_path({"a": [1, 2]})
        >>> pairs
        [((DictKey(key='a'), SequenceKey(idx=0)), 1), ((DictKey(key='a'), SequenceKey(idx=1)), 2)]
    """
    return registry.flatten_with_path(tree, _path_predicate(is_leaf, is_leaf_takes_path))


def tree_leaves_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                          is_leaf_takes_path: bool = False) -> list[tuple[KeyPath, Any]]:
    """The `(key path, leaf)` pairs of `tree`, in flattening order.

    Args:
        tree: a pytree.
        is_leaf: a predicate that stops the flattening at the nodes it accepts.
        is_leaf_takes_path: call `is_leaf(path, node)` instead of `is_leaf(node)`.

    Returns:
        A list of `(path, leaf)` pairs.

    Examples:
        >>> for path, leaf in plax.tree_util.tree_leaves_with_path((1, {"b": 2})):
        ...     print(plax.tree_util.keystr(path), leaf)
        [0] 1
        [1]['b'] 2
    """
    return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def tree_map_with_path(f: Callable[..., Any], tree: Any, *rest: Any,
                       is_leaf: Callable[..., bool] | None = None,
                       is_leaf_takes_path: bool = False) -> Any:
    """Like `tree_map`, but `f` also receives each leaf's key path:
    `f(path, leaf, *matching_leaves_of_rest)`.

    Useful to treat leaves by name, e.g. to leave biases out of weight decay.

    Args:
        f: a function `(path, leaf, *others) -> new_leaf`.
        tree: a pytree.
        *rest: more pytrees with `tree`'s structure (or extending it).
        is_leaf: a predicate that stops the flattening at the nodes it accepts.
        is_leaf_takes_path: call `is_leaf(path, node)` instead of `is_leaf(node)`.

    Returns:
        A pytree of `tree`'s structure holding `f`'s results.

    Raises:
        ValueError: a pytree of `rest` does not have `tree`'s structure.

    Examples:
        >>> params = {"w": 2.0, "b": 1.0}
        >>> plax.tree_util.tree_map_with_path(
        ...     lambda path, x: x * 0.5 if path[0].key == "w" else x, params)
        {'b': 1.0, 'w': 1.0}
    """
    path_leaves, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    others = [_flatten_up_to(treedef, r, "tree_map_with_path", f"rest[{i}]",
                             "tree")
              for i, r in enumerate(rest)]
    return treedef.unflatten(f(path, x, *xs) for (path, x), *xs in zip(path_leaves, *others))


def _simple_key_str(key: Any) -> str:
    if isinstance(key, SequenceKey):
        return str(key.idx)
    if isinstance(key, DictKey):
        return str(key.key)
    if isinstance(key, GetAttrKey):
        return key.name
    if isinstance(key, FlattenedIndexKey):
        return str(key.key)
    return str(key)


def keystr(keys: KeyPath, *, simple: bool = False, separator: str = "") -> str:
    """Renders a key path as text.

    Args:
        keys: a key path, as from `tree_flatten_with_path`.
        simple: write bare keys (`a`, `0`) instead of Python's indexing syntax
            (`['a']`, `[0]`, `.name`).
        separator: put between the keys.

    Returns:
        A string.

    Examples:
        >>> (path, _), = plax.tree_util.tree_leaves_with_path({"a": [1]})
        >>> plax.tree_util.keystr(path), plax.tree_util.keystr(path, simple=True, separator="/")
        ("['a'][0]", 'a/0')
    """
    return separator.join(map(_simple_key_str if simple else str, keys))


# --- registration --------------------------------------------------------------------

def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable,
                         flatten_with_keys_func: Callable | None = None) -> None:
    """Makes `nodetype` a pytree node, so transformations see through its instances.

    Once registered, instances can be arguments and results of `jit`, `grad`,
    `vmap`..., and `tree_map` maps over their children.

    Args:
        nodetype: the class.
        flatten_func: `x -> (children, aux_data)`: the children (pytrees) and any
            static data, which must be hashable (it is part of jit's cache key).
        unflatten_func: `(aux_data, children) -> x`, rebuilding an instance.
        flatten_with_keys_func: `x -> (((key, child), ...), aux_data)`, naming the
            children in key paths; without it they are keyed by
            `FlattenedIndexKey`.

    Raises:
        ValueError: `nodetype` is already registered.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> class Point:
        ...     def __init__(self, x, y):
        ...         self.x, self.y = x, y
        >>> plax.tree_util.register_pytree_node(
        ...     Point, lambda p: ((p.x, p.y), None), lambda aux, xy: Point(*xy))
        >>> moved = plax.jit(lambda p: Point(p.x * 2, p.y + 1))(Point(1.0, 2.0))
        >>> float(moved.x), float(moved.y)
        (2.0, 3.0)
    """
    registry.register_node(nodetype, flatten_func, unflatten_func, flatten_with_keys_func)


def register_pytree_with_keys(nodetype: type, flatten_with_keys: Callable,
                              unflatten_func: Callable,
                              flatten_func: Callable | None = None) -> None:
    """Makes `nodetype` a pytree node, given a flattening that names its children.

    Like `register_pytree_node`, except that the keyed flattening is the one you write
    (the plain one is derived from it unless `flatten_func` is also given): key paths
    then say `.x` or `['name']` instead of a flat index.

    Args:
        nodetype: the class.
        flatten_with_keys: `x -> (((key, child), ...), aux_data)`, keys being e.g.
            `GetAttrKey("x")` or `DictKey("name")`.
        unflatten_func: `(aux_data, children) -> x`.
        flatten_func: an optional faster `x -> (children, aux_data)`.

    Raises:
        ValueError: `nodetype` is already registered.

    Examples:
        >>> tu = plax.tree_util
        >>> class Pair:
        ...     def __init__(self, a, b):
        ...         self.a, self.b = a, b
        >>> tu.register_pytree_with_keys(
        ...     Pair, lambda p: (((tu.GetAttrKey("a"), p.a), (tu.GetAttrKey("b"), p.b)), None),
        ...     lambda aux, children: Pair(*children))
        >>> [tu.keystr(path) for path, _ in tu.tree_leaves_with_path(Pair(1, 2))]
        ['.a', '.b']
    """
    if flatten_func is None:
        def flatten_func(x):
            keyed_children, aux = flatten_with_keys(x)
            return [child for _, child in keyed_children], aux
    registry.register_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_node_class(cls: Typ) -> Typ:
    """Class decorator that registers `cls` as a pytree node through its own methods: the
    instance method `tree_flatten() -> (children, aux_data)` and the classmethod
    `tree_unflatten(aux_data, children)`.

    Args:
        cls: the class to register.

    Returns:
        `cls` itself, so it works as a decorator.

    Raises:
        ValueError: `cls` is already registered.

    Examples:
        >>> @plax.tree_util.register_pytree_node_class
        ... class Scaled:
        ...     def __init__(self, value, factor):
        ...         self.value, self.factor = value, factor
        ...     def tree_flatten(self):
        ...         return (self.value,), self.factor  # factor is static
        ...     @classmethod
        ...     def tree_unflatten(cls, factor, children):
        ...         return cls(children[0], factor)
        >>> plax.tree_util.tree_leaves(Scaled(jnp.ones(2), 3))
        [Array([1., 1.], dtype=float32)]
    """
    register_pytree_node(cls, operator.methodcaller("tree_flatten"), cls.tree_unflatten)
    return cls


def register_pytree_with_keys_class(cls: Typ) -> Typ:
    """Class decorator that registers `cls` as a pytree node through its methods
    `tree_flatten_with_keys() -> (((key, child), ...), aux_data)` and the classmethod
    `tree_unflatten(aux_data, children)` (and `tree_flatten` if it defines one).

    Args:
        cls: the class to register.

    Returns:
        `cls` itself.

    Examples:
        >>> tu = plax.tree_util
        >>> @tu.register_pytree_with_keys_class
        ... class Box:
        ...     def __init__(self, item):
        ...         self.item = item
        ...     def tree_flatten_with_keys(self):
        ...         return ((tu.GetAttrKey("item"), self.item),), None
        ...     @classmethod
        ...     def tree_unflatten(cls, aux, children):
        ...         return cls(*children)
        >>> tu.keystr(tu.tree_leaves_with_path(Box(5))[0][0])
        '.item'
    """
    flatten = operator.methodcaller("tree_flatten") if hasattr(cls, "tree_flatten") else None
    register_pytree_with_keys(cls, operator.methodcaller("tree_flatten_with_keys"),
                              cls.tree_unflatten, flatten)
    return cls


def _field_names(what: str, names: Any) -> list[str]:
    names = list(names) if isinstance(names, Iterable) and not isinstance(names, str) else None
    if names is None or not all(isinstance(n, str) for n in names):
        raise TypeError(f"register_dataclass: {what} must be a sequence of field names")
    return names


def register_dataclass(nodetype: Typ, data_fields: Sequence[str] | None = None,
                       meta_fields: Sequence[str] | None = None,
                       drop_fields: Sequence[str] = ()) -> Typ:
    """Makes a dataclass (or a class built like one) a pytree node.

    `data_fields` become the node's children (arrays that transformations trace);
    `meta_fields` become its static auxiliary data (hashable values, part of `jit`'s
    cache key). For a dataclass both may be omitted: fields declared with
    `dataclasses.field(metadata=dict(static=True))` are meta fields and the other
    `init=True` fields data fields. The constructor must accept every field by
    keyword. Usable as a decorator.

    Args:
        nodetype: the class.
        data_fields: names of the fields that hold pytrees of arrays.
        meta_fields: names of the static fields.
        drop_fields: `init=True` fields to leave out of both.

    Returns:
        `nodetype` itself.

    Raises:
        TypeError: only one of `data_fields`/`meta_fields` given, or neither for a type
            that is not a dataclass.
        ValueError: a field listed twice, or the lists do not cover the dataclass's
            `init=True` fields exactly.

    Examples:
        >>> import dataclasses
        >>> @plax.tree_util.register_dataclass
        ... @dataclasses.dataclass
        ... class Layer:
        ...     w: object
        ...     name: str = dataclasses.field(metadata=dict(static=True), default="dense")
        >>> plax.tree_util.tree_leaves(Layer(w=jnp.zeros(2)))
        [Array([0., 0.], dtype=float32)]
    """
    if (data_fields is None) != (meta_fields is None):
        raise TypeError("register_dataclass: give both data_fields and meta_fields, or "
                        f"neither; got data_fields={data_fields!r}, meta_fields={meta_fields!r}")
    is_dc = dataclasses.is_dataclass(nodetype)
    if data_fields is None:
        if not is_dc:
            raise TypeError("register_dataclass: data_fields and meta_fields are required "
                            f"when the type is not a dataclass; got {nodetype!r}")
        init_fields = [f for f in dataclasses.fields(nodetype)
                       if f.init and f.name not in drop_fields]
        meta_fields = [f.name for f in init_fields if f.metadata.get("static", False)]
        data_fields = [f.name for f in init_fields if not f.metadata.get("static", False)]
    data_fields = _field_names("data_fields", data_fields)
    meta_fields = _field_names("meta_fields", meta_fields)
    if overlap := set(data_fields) & set(meta_fields):
        raise ValueError(f"register_dataclass: fields {sorted(overlap)} are listed both as "
                         "data_fields and as meta_fields")
    if is_dc:
        init_names = {f.name for f in dataclasses.fields(nodetype) if f.init} - set(drop_fields)
        given = set(data_fields) | set(meta_fields)
        if given != init_names:
            raise ValueError(
                f"register_dataclass: data_fields and meta_fields of {nodetype.__name__} "
                "must list exactly its init=True fields (minus drop_fields); missing "
                f"{sorted(init_names - given)}, unexpected {sorted(given - init_names)}")
    registry.register_dataclass_node(nodetype, data_fields, meta_fields)
    return nodetype


def static(**kwargs) -> Any:
    """`dataclasses.field(**kwargs)` marked static for `register_dataclass`."""
    metadata = {**kwargs.pop("metadata", {}), "static": True}
    return dataclasses.field(metadata=metadata, **kwargs)


def register_static(cls: Typ) -> Typ:
    """Registers `cls` as a pytree without leaves: a whole instance is static auxiliary
    data, so it passes through `jit` and `tree_map` untouched (and is part of `jit`'s
    cache key).

    Args:
        cls: a hashable class.

    Returns:
        `cls` itself, so it works as a decorator.

    Raises:
        TypeError: instances of `cls` are not hashable.

    Examples:
        >>> @plax.tree_util.register_static
        ... class Tag(str):
        ...     pass
        >>> plax.tree_util.tree_leaves([Tag("frozen"), 1.0])
        [1.0]
    """
    if cls.__hash__ is None:
        raise TypeError(f"register_static: {cls.__name__} must be hashable, since its "
                        "instances become part of treedefs and cache keys")
    register_pytree_with_keys(cls, lambda x: ((), x), lambda x, _: x)
    return cls


# --- standard node types beyond the C++ built-ins --------------------------------------

register_pytree_with_keys(
    collections.OrderedDict,
    lambda d: (tuple((DictKey(k), v) for k, v in d.items()), tuple(d)),
    lambda keys, values: collections.OrderedDict(zip(keys, values)),
    lambda d: (tuple(d.values()), tuple(d)))


def _flatten_defaultdict_with_keys(d):
    keys = tuple(sorted(d))
    return tuple((DictKey(k), d[k]) for k in keys), (d.default_factory, keys)


register_pytree_with_keys(
    collections.defaultdict, _flatten_defaultdict_with_keys,
    lambda aux, values: collections.defaultdict(aux[0], zip(aux[1], values)))


class Partial(functools.partial):
    """A `functools.partial` that is a pytree, so a function with bound arguments can be
    passed to and returned from transformed functions.

    Its bound positional and keyword arguments are the children (traced like any
    array); the wrapped function is static auxiliary data (so it must be hashable,
    and a new function means a new compilation).

    Args:
        func: the function to wrap.
        *args: positional arguments to bind.
        **keywords: keyword arguments to bind.

    Examples:
        >>> scale = plax.tree_util.Partial(jnp.multiply, 3.0)
        >>> plax.jit(lambda f, x: f(x))(scale, 2.0)
        Array(6., dtype=float32, weak_type=True)
        >>> plax.tree_util.tree_leaves(scale)
        [3.0]
    """

    def __new__(cls, func, /, *args, **keywords):
        self = super().__new__(cls, func, *args, **keywords)
        # partial.__new__ merges a partial `func` into the new object, which would turn
        # its (static) bound arguments into children; keep `func` opaque instead.
        self.__setstate__((func, args, keywords, None))
        return self


register_pytree_with_keys(
    Partial,
    lambda p: (((GetAttrKey("args"), p.args), (GetAttrKey("keywords"), p.keywords)), p.func),
    lambda func, children: Partial(func, *children[0], **children[1]),
    lambda p: ((p.args, p.keywords), p.func))

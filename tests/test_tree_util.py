"""Pytrees: flattening, key paths, registration, and the public `tree_util`/`tree` APIs."""
import collections
import dataclasses
import functools
import operator
import pickle

import pytest
from hypothesis import given, strategies as st
from jaxlib._jax import pytree as jaxlib_pytree

import plax.tree
import plax.tree_util as tu
from plax.extend.tree_util import broadcast_prefix

Point = collections.namedtuple("Point", ["x", "y"])


@dataclasses.dataclass
class Params:
    w: object
    b: object
    name: str = plax.tree.static(default="dense")


tu.register_dataclass(Params)


@dataclasses.dataclass
class Explicit:
    a: object
    tag: str


tu.register_dataclass(Explicit, data_fields=["a"], meta_fields=["tag"])


class Box:
    """A custom node without keys: its children get flat-index keys."""

    def __init__(self, items, label):
        self.items, self.label = items, label

    def __eq__(self, other):
        return type(other) is Box and (self.items, self.label) == (other.items, other.label)


tu.register_pytree_node(Box, lambda b: (b.items, b.label),
                        lambda label, items: Box(list(items), label))


class Pair:
    def __init__(self, left, right):
        self.left, self.right = left, right

    def __eq__(self, other):
        return type(other) is Pair and (self.left, self.right) == (other.left, other.right)


tu.register_pytree_with_keys(
    Pair, lambda p: (((tu.GetAttrKey("left"), p.left), (tu.DictKey("R"), p.right)), None),
    lambda _, children: Pair(*children))


@tu.register_pytree_node_class
class Scaled:
    def __init__(self, value, scale):
        self.value, self.scale = value, scale

    def tree_flatten(self):
        return (self.value,), self.scale

    @classmethod
    def tree_unflatten(cls, scale, children):
        return cls(children[0], scale)


@tu.register_pytree_with_keys_class
class Named:
    def __init__(self, first, second):
        self.first, self.second = first, second

    def tree_flatten_with_keys(self):
        return ((tu.GetAttrKey("first"), self.first), (tu.GetAttrKey("second"), self.second)), None

    @classmethod
    def tree_unflatten(cls, _, children):
        return cls(*children)


@tu.register_static
@dataclasses.dataclass(frozen=True)
class Mode:
    kind: str


# --- flatten / unflatten -------------------------------------------------------------

ROUNDTRIP_CASES = [
    1,
    None,
    (),
    [1, (2, 3), [4, [5]]],
    {"b": 1, "a": (2, None), "c": {"d": [3]}},
    Point(1, (2, 3)),
    Params(w=[1, 2], b=3),
    Explicit(a=(1, 2), tag="t"),
    Box([1, {"k": 2}], "lbl"),
    Pair(1, [2, 3]),
    collections.OrderedDict([("z", 1), ("a", 2)]),
    collections.defaultdict(list, {"b": 1, "a": [2]}),
    [Mode("fast"), 1],
]


@pytest.mark.parametrize("tree", ROUNDTRIP_CASES, ids=lambda t: type(t).__name__)
def test_flatten_unflatten_roundtrip(tree):
    leaves, treedef = tu.tree_flatten(tree)
    assert treedef.num_leaves == len(leaves)
    rebuilt = tu.tree_unflatten(treedef, leaves)
    assert rebuilt == tree and type(rebuilt) is type(tree)
    assert tu.tree_structure(rebuilt) == treedef
    assert tu.tree_leaves(tree) == leaves


def test_leaf_order_is_depth_first_with_sorted_dict_keys():
    tree = {"b": [1, 2], "a": (3, {"y": 4, "x": 5}), "c": None}
    assert tu.tree_leaves(tree) == [3, 5, 4, 1, 2]


def test_ordered_dict_keeps_insertion_order_and_defaultdict_sorts():
    assert tu.tree_leaves(collections.OrderedDict([("z", 1), ("a", 2)])) == [1, 2]
    assert tu.tree_leaves(collections.defaultdict(int, {"z": 1, "a": 2})) == [2, 1]
    rebuilt = tu.tree_map(lambda x: x, collections.defaultdict(int, {"z": 1}))
    assert rebuilt.default_factory is int


def test_none_is_an_empty_node_unless_is_leaf_says_so():
    assert tu.tree_leaves([1, None, 2]) == [1, 2]
    assert tu.tree_leaves([1, None, 2], is_leaf=lambda x: x is None) == [1, None, 2]
    assert tu.treedef_is_leaf(tu.tree_structure(None))
    assert tu.tree_structure(None).num_leaves == 0


def test_is_leaf_stops_descent():
    tree = {"a": [1, 2], "b": (3, [4])}
    leaves = tu.tree_leaves(tree, is_leaf=lambda x: isinstance(x, list))
    assert leaves == [[1, 2], 3, [4]]


def test_registry_is_plax_own():
    # JAX's default registry does not know plax's custom types.
    leaves, _ = jaxlib_pytree.default_registry().flatten(Box([1, 2], "x"))
    assert len(leaves) == 1 and isinstance(leaves[0], Box)
    assert tu.tree_leaves(Box([1, 2], "x")) == [1, 2]


def test_treedef_pickles():
    treedef = tu.tree_structure({"a": [1, (2, None)], "b": Point(3, 4)})
    assert pickle.loads(pickle.dumps(treedef)) == treedef


def test_unflatten_with_wrong_leaf_count_raises():
    treedef = tu.tree_structure([1, (2, 3)])
    with pytest.raises(ValueError, match="expected 3, got 2"):
        tu.tree_unflatten(treedef, [1, 2])


def test_treedef_helpers():
    x, y = [1, 2], {"a": 3}
    assert tu.treedef_tuple([tu.tree_structure(x), tu.tree_structure(y)]) == \
        tu.tree_structure((x, y))
    assert tu.treedef_children(tu.tree_structure((x, y))) == \
        [tu.tree_structure(x), tu.tree_structure(y)]
    assert tu.treedef_is_leaf(tu.tree_structure(1.0))
    assert not tu.treedef_is_leaf(tu.tree_structure([1.0]))
    assert tu.all_leaves([1, "a", 2.0])
    assert not tu.all_leaves([1, (2,)])
    assert not tu.all_leaves([1, None])
    assert tu.all_leaves([1, [2]], is_leaf=lambda v: isinstance(v, list))


# --- map, reduce, transpose, broadcast ---------------------------------------------

def test_tree_map_several_trees():
    out = tu.tree_map(lambda a, b, c: a + b * c, {"x": (1, 2)}, {"x": (3, 4)}, {"x": (5, 6)})
    assert out == {"x": (16, 26)}


def test_tree_map_rest_may_extend_the_first_tree():
    out = tu.tree_map(lambda x, y: (x, y), [1, 2], [(3, 4), {"k": 5}])
    assert out == [(1, (3, 4)), (2, {"k": 5})]


@pytest.mark.parametrize("other", [{"x": (3, 4, 5)}, {"y": (3, 4)}, {"x": [3, 4]}])
def test_tree_map_mismatch_names_both_structures(other):
    tree = {"x": (1, 2)}
    with pytest.raises(ValueError) as info:
        tu.tree_map(operator.add, tree, other)
    message = str(info.value)
    assert str(tu.tree_structure(tree)) in message
    assert str(tu.tree_structure(other)) in message
    assert "rest[0]" in message


def test_tree_map_is_leaf_and_custom_nodes():
    tree = [Params(w=1, b=2), None, Box([3], "k")]
    assert tu.tree_map(lambda v: v * 10, tree) == [Params(w=10, b=20), None, Box([30], "k")]
    assert tu.tree_map(lambda v: v is None, [1, None], is_leaf=lambda v: v is None) == \
        [False, True]


def test_tree_all_and_reduce():
    assert tu.tree_all({"a": [True, 1], "b": (2,)})
    assert not tu.tree_all({"a": [True, 0]})
    assert tu.tree_all([])
    assert tu.tree_reduce(operator.add, {"a": [1, 2], "b": 3}) == 6
    assert tu.tree_reduce(operator.add, [], 10) == 10
    assert tu.tree_reduce(lambda acc, v: acc + [v], [[1], [2]], [],
                          is_leaf=lambda v: isinstance(v, list) and len(v) == 1) == [[1], [2]]
    with pytest.raises(TypeError):
        tu.tree_reduce(operator.add, [])


def test_tree_transpose():
    tree = [(1, 2), (3, 4), (5, 6)]
    outer, inner = tu.tree_structure([0, 0, 0]), tu.tree_structure((0, 0))
    assert tu.tree_transpose(outer, inner, tree) == ([1, 3, 5], [2, 4, 6])
    assert tu.tree_transpose(outer, None, tree) == ([1, 3, 5], [2, 4, 6])
    dict_inner = tu.tree_structure({"a": 0, "b": 0})
    assert tu.tree_transpose(tu.tree_structure((0, 0)), dict_inner,
                             ({"a": 1, "b": 2}, {"a": 3, "b": 4})) == \
        {"a": (1, 3), "b": (2, 4)}
    with pytest.raises(TypeError, match="composed"):
        tu.tree_transpose(outer, inner, [(1, 2), (3, 4), [5, 6]])
    with pytest.raises(ValueError, match="no leaves"):
        tu.tree_transpose(tu.tree_structure(()), None, ())


def test_broadcast_prefix():
    full = ({"a": 1, "b": [2, 3]}, 4, None)
    assert broadcast_prefix((0, 1, None), full) == [0, 0, 0, 1]
    assert broadcast_prefix(({"a": 5, "b": 6}, 7, None), full) == [5, 6, 6, 7]
    assert broadcast_prefix(9, full) == [9, 9, 9, 9]
    assert broadcast_prefix((None, 1, 2), full, is_leaf=lambda v: v is None) == \
        [None, None, None, 1]
    assert plax.tree.broadcast((0, 1, None), full) == ({"a": 0, "b": [0, 0]}, 1, None)


def test_broadcast_prefix_mismatch_names_both_structures():
    prefix, full = (0, 1), (1, 2, 3)
    with pytest.raises(ValueError) as info:
        broadcast_prefix(prefix, full)
    message = str(info.value)
    assert str(tu.tree_structure(prefix)) in message
    assert str(tu.tree_structure(full)) in message


# --- key paths -----------------------------------------------------------------------

def test_flatten_with_path_keys():
    tree = {"a": [1, (2,)], "b": Point(3, 4)}
    path_leaves, treedef = tu.tree_flatten_with_path(tree)
    assert treedef == tu.tree_structure(tree)
    assert path_leaves == [
        ((tu.DictKey("a"), tu.SequenceKey(0)), 1),
        ((tu.DictKey("a"), tu.SequenceKey(1), tu.SequenceKey(0)), 2),
        ((tu.DictKey("b"), tu.GetAttrKey("x")), 3),
        ((tu.DictKey("b"), tu.GetAttrKey("y")), 4),
    ]


@pytest.mark.parametrize("tree, expected", [
    ({"a": [{"b": 1}]}, ["['a'][0]['b']"]),
    ([Point(1, 2)], ["[0].x", "[0].y"]),
    (Params(w=[1], b=2), [".w[0]", ".b"]),
    (Box([1, (2, 3)], "l"), ["[<flat index 0>]", "[<flat index 1>][0]", "[<flat index 1>][1]"]),
    (Pair(1, 2), [".left", "['R']"]),
    (Named(1, 2), [".first", ".second"]),
    (tu.Partial(max, 1, key=2), [".args[0]", ".keywords['key']"]),
    (collections.OrderedDict([("z", 1), ("a", 2)]), ["['z']", "['a']"]),
    (7, [""]),
])
def test_keystr_of_paths(tree, expected):
    assert [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(tree)] == expected


def test_keystr_simple_and_separator():
    path = (tu.DictKey("a"), tu.SequenceKey(0), tu.GetAttrKey("b"), tu.FlattenedIndexKey(2))
    assert tu.keystr(path) == "['a'][0].b[<flat index 2>]"
    assert tu.keystr(path, simple=True, separator="/") == "a/0/b/2"
    assert tu.keystr(()) == ""


def test_path_is_leaf_variants():
    tree = {"a": [1, 2], "b": 3}
    by_value = tu.tree_leaves_with_path(tree, is_leaf=lambda v: isinstance(v, list))
    assert by_value == [((tu.DictKey("a"),), [1, 2]), ((tu.DictKey("b"),), 3)]
    by_path = tu.tree_leaves_with_path(tree, is_leaf=lambda p, v: len(p) == 1,
                                       is_leaf_takes_path=True)
    assert by_path == by_value


def test_map_with_path():
    out = tu.tree_map_with_path(lambda p, x, y: f"{tu.keystr(p)}={x + y}",
                                {"a": [1, 2]}, {"a": [10, 20]})
    assert out == {"a": ["['a'][0]=11", "['a'][1]=22"]}
    with pytest.raises(ValueError, match="rest\\[0\\]"):
        tu.tree_map_with_path(lambda p, x, y: x, {"a": 1}, {"b": 1})


# --- registration --------------------------------------------------------------------

def test_register_static_has_no_leaves_and_keys_structure_by_value():
    assert tu.tree_leaves([Mode("a"), 1]) == [1]
    assert tu.tree_structure(Mode("a")) == tu.tree_structure(Mode("a"))
    assert tu.tree_structure(Mode("a")) != tu.tree_structure(Mode("b"))
    assert tu.tree_unflatten(tu.tree_structure(Mode("a")), []) == Mode("a")


def test_register_static_requires_hashable():
    class Unhashable:
        __hash__ = None
    with pytest.raises(TypeError, match="hashable"):
        tu.register_static(Unhashable)


def test_register_dataclass_infers_static_fields():
    leaves, treedef = tu.tree_flatten(Params(w=1, b=2, name="x"))
    assert leaves == [1, 2]
    assert treedef != tu.tree_structure(Params(w=1, b=2, name="y"))
    assert tu.tree_unflatten(treedef, [5, 6]) == Params(w=5, b=6, name="x")


def test_register_dataclass_non_dataclass_with_fields():
    class Plain:
        def __init__(self, a, k):
            self.a, self.k = a, k
    tu.register_dataclass(Plain, data_fields=("a",), meta_fields=("k",))
    out = tu.tree_map(lambda v: v + 1, Plain(1, "z"))
    assert (type(out), out.a, out.k) == (Plain, 2, "z")


def test_register_dataclass_errors():
    @dataclasses.dataclass
    class D:
        a: int
        b: int

    class NotDC:
        pass

    with pytest.raises(TypeError, match="both"):
        tu.register_dataclass(D, data_fields=["a", "b"])
    with pytest.raises(TypeError, match="not a dataclass"):
        tu.register_dataclass(NotDC)
    with pytest.raises(ValueError, match=r"missing \['b'\]"):
        tu.register_dataclass(D, data_fields=["a"], meta_fields=[])
    with pytest.raises(ValueError, match="both as"):
        tu.register_dataclass(D, data_fields=["a", "b"], meta_fields=["b"])
    with pytest.raises(TypeError, match="sequence of field names"):
        tu.register_dataclass(D, data_fields="ab", meta_fields=[])


def test_register_dataclass_drop_fields():
    @dataclasses.dataclass
    class WithDerived:
        a: int
        cache: int = 0

    tu.register_dataclass(WithDerived, drop_fields=["cache"])
    assert tu.tree_leaves(WithDerived(a=1, cache=9)) == [1]


def test_duplicate_registration_raises():
    with pytest.raises(ValueError, match="Duplicate"):
        tu.register_pytree_node(Box, lambda b: ((), None), lambda _, __: Box([], ""))


def test_pytree_node_class_roundtrip():
    out = tu.tree_map(lambda v: v * 2, Scaled(3, scale=0.5))
    assert (out.value, out.scale) == (6, 0.5)
    assert tu.tree_map(lambda v: -v, Named(1, 2)).second == -2


# --- Partial -------------------------------------------------------------------------

def test_partial_is_a_pytree_with_static_func():
    def f(a, b, *, c):
        return a * 100 + b * 10 + c

    p = tu.Partial(f, 1, c=3)
    assert p(2) == 123
    leaves, treedef = tu.tree_flatten(p)
    assert leaves == [1, 3]
    q = tu.tree_unflatten(treedef, [4, 5])
    assert isinstance(q, tu.Partial) and q.func is f and q(6) == 465
    assert tu.tree_structure(tu.Partial(f, 7, c=8)) == treedef
    assert tu.tree_structure(tu.Partial(max, 7, c=8)) != treedef


def test_partial_keeps_an_inner_functools_partial_opaque():
    inner = functools.partial(lambda a, b, c: (a, b, c), 1)
    p = tu.Partial(inner, 2)
    assert p.func is inner and p.args == (2,)
    assert tu.tree_leaves(p) == [2]
    assert p(3) == (1, 2, 3)


def test_partial_pickles():
    p = pickle.loads(pickle.dumps(tu.Partial(max, 1, key=abs)))
    assert type(p) is tu.Partial and p.args == (1,) and p(-5) == -5


# --- the short-name module -----------------------------------------------------------

def test_plax_tree_short_names():
    tree = {"a": (1, 2), "b": [3]}
    leaves, treedef = plax.tree.flatten(tree)
    assert plax.tree.unflatten(treedef, leaves) == tree
    assert plax.tree.leaves(tree) == leaves
    assert plax.tree.structure(tree) == treedef
    assert plax.tree.map(lambda v: v + 1, tree) == {"a": (2, 3), "b": [4]}
    assert plax.tree.all(tree)
    assert plax.tree.reduce(operator.add, tree) == 6
    assert plax.tree.transpose(plax.tree.structure([0, 0]), None, [(1, 2), (3, 4)]) == \
        ([1, 3], [2, 4])
    assert plax.tree.flatten_with_path(tree) == tu.tree_flatten_with_path(tree)
    assert plax.tree.leaves_with_path(tree) == tu.tree_leaves_with_path(tree)
    assert plax.tree.map_with_path(lambda p, v: len(p), tree) == {"a": (2, 2), "b": [2]}


# --- property: flatten then unflatten gives the tree back ----------------------------

_leaf = st.one_of(st.integers(), st.text(max_size=3), st.floats(allow_nan=False))
_trees = st.recursive(
    st.one_of(_leaf, st.none()),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
        st.dictionaries(st.text(max_size=3), children, max_size=4),
        st.tuples(children, children).map(lambda xy: Point(*xy)),
        st.dictionaries(st.text(max_size=3), children, max_size=3).map(
            lambda d: collections.OrderedDict(sorted(d.items(), reverse=True))),
        st.tuples(children, children).map(lambda wb: Params(*wb)),
    ),
    max_leaves=20)


def _follow(tree, path):
    for key in path:
        if isinstance(key, tu.SequenceKey):
            tree = tree[key.idx]
        elif isinstance(key, tu.DictKey):
            tree = tree[key.key]
        else:
            tree = getattr(tree, key.name)
    return tree


@given(_trees)
def test_property_flatten_unflatten_roundtrip(tree):
    leaves, treedef = tu.tree_flatten(tree)
    rebuilt = tu.tree_unflatten(treedef, leaves)
    assert rebuilt == tree
    assert tu.tree_structure(rebuilt) == treedef
    assert len(leaves) == treedef.num_leaves


@given(_trees)
def test_property_paths_address_their_leaves(tree):
    path_leaves = tu.tree_leaves_with_path(tree)
    assert [leaf for _, leaf in path_leaves] == tu.tree_leaves(tree)
    for path, leaf in path_leaves:
        assert _follow(tree, path) is leaf


# --- one-level flattening, node test, associative reduction ---------------------------

def test_flatten_one_level_gives_children_unflattened():
    children, aux = tu.flatten_one_level({"a": [1, 2], "b": {"c": 3}})
    assert list(children) == [[1, 2], {"c": 3}]
    assert aux == ("a", "b")
    children, _ = tu.flatten_one_level(Point(1, (2, 3)))
    assert list(children) == [1, (2, 3)]


def test_flatten_one_level_with_keys_pairs_children_with_their_keys():
    pairs, aux = tu.flatten_one_level_with_keys({"a": [1, 2], "b": 3})
    assert list(pairs) == [(tu.DictKey("a"), [1, 2]), (tu.DictKey("b"), 3)]
    pairs, _ = tu.flatten_one_level_with_keys(Params(w=1, b=2))
    assert [k for k, _ in pairs] == [tu.GetAttrKey("w"), tu.GetAttrKey("b")]


@pytest.mark.parametrize("leaf", [1, 2.5, "text", object()])
def test_flatten_one_level_of_a_leaf_is_a_value_error(leaf):
    with pytest.raises(ValueError, match="can't tree-flatten type"):
        tu.flatten_one_level(leaf)
    with pytest.raises(ValueError, match="can't tree-flatten type"):
        tu.flatten_one_level_with_keys(leaf)


def test_is_tree_node_knows_builtins_registered_types_and_namedtuples():
    for typ in (tuple, list, dict, type(None), collections.OrderedDict, Point, Params,
                tu.Partial):
        assert tu.is_tree_node(typ), typ
    for typ in (int, float, str, object):
        assert not tu.is_tree_node(typ), typ


def test_default_registry_is_the_registry_flattening_uses():
    leaves, treedef = tu.default_registry.flatten({"x": Params(w=1, b=2)})
    assert leaves == tu.tree_leaves({"x": Params(w=1, b=2)})
    assert treedef == tu.tree_structure({"x": Params(w=1, b=2)})


def test_reduce_associative_sums_leaves_in_a_balanced_tree():
    assert plax.tree.reduce_associative(operator.add, [1, (2, 3), [4, 5, 6]]) == 21
    calls = []

    def concat(a, b):
        calls.append((a, b))
        return a + b
    assert tu.tree_reduce_associative(concat, [["a"], ["b"], ["c"], ["d"]],
                                      is_leaf=lambda x: isinstance(x, list) and len(x) == 1
                                      and isinstance(x[0], str)) == ["a", "b", "c", "d"]
    # balanced: (a+b) and (c+d) first, then their concatenation
    assert calls == [(["a"], ["b"]), (["c"], ["d"]), (["a", "b"], ["c", "d"])]


def test_reduce_associative_of_one_leaf_is_the_leaf_and_empty_needs_identity():
    assert tu.tree_reduce_associative(operator.add, {"only": 7}) == 7
    assert tu.tree_reduce_associative(operator.add, [], identity=0) == 0
    assert tu.tree_reduce_associative(operator.add, [None, ()], identity=5) == 5
    with pytest.raises(TypeError, match="identity"):
        tu.tree_reduce_associative(operator.add, [])

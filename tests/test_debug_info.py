"""Debug info: argument names, result paths, source info and the JaxprDebugInfo record."""
import dataclasses
import functools
import inspect

import pytest
from jax_reference import requires_jax, run_reference

import plax.numpy
import plax.tree_util as tu
from plax.extend.core import (
    JaxprDebugInfo,
    TracingDebugInfo,
    check_debug_info_counts,
    finalize_debug_info as finalize,
    fun_sourceinfo,
    make_tracing_debug_info,
    resolve_argnums,
    result_paths_from_tree,
)

THIS_FILE = __file__


def names(fun, *args, static_argnums=(), static_argnames=(), **kwargs):
    dbg = make_tracing_debug_info("jit", fun, args, kwargs, static_argnums=static_argnums,
                                  static_argnames=static_argnames)
    return dbg.arg_names


def line_of(fun):
    return inspect.getsourcelines(fun)[1]


# --- argument names ------------------------------------------------------------------

def test_positional_names():
    def f(x, y):
        pass
    assert names(f, 1.0, 2.0) == ("x", "y")


def test_keyword_arguments_come_after_positional_ones_sorted_by_keyword():
    def f(x, *, zeta, alpha):
        pass
    assert names(f, 1, zeta=2, alpha=3) == ("x", "alpha", "zeta")

    def g(a, b, c):
        pass
    assert names(g, 1, c=2, b=3) == ("a", "b", "c")


def test_var_keyword_arguments_are_indexed_by_key():
    def f(x, **kw):
        pass
    assert names(f, 1, b=2, a={"u": 3}) == ("x", "kw['a']['u']", "kw['b']")


def test_positional_only_name_passed_by_keyword_lands_in_var_keyword():
    def f(x, /, **kw):
        pass
    assert names(f, 1, x=2) == ("x", "kw['x']")


def test_var_positional_arguments_are_indexed():
    def f(x, *rest):
        pass
    assert names(f, 1, (2, 3), 4) == ("x", "rest[0][0]", "rest[0][1]", "rest[1]")


@dataclasses.dataclass
class Layer:
    w: object
    b: object


tu.register_dataclass(Layer, data_fields=["w", "b"], meta_fields=[])


class Opaque:
    """Registered without keys, so its children are named by flat index."""

    def __init__(self, *children):
        self.children = children


tu.register_pytree_node(Opaque, lambda o: (o.children, None), lambda _, c: Opaque(*c))


def test_container_arguments_are_named_by_key_path():
    def f(params, xs, pair, layer, opaque, nothing):
        pass
    got = names(f, {"w": [1, 2], "b": 3}, [4, (5,)], (6, 7), Layer(8, 9), Opaque(10, [11]),
                None)
    assert got == ("params['b']", "params['w'][0]", "params['w'][1]", "xs[0]", "xs[1][0]",
                   "pair[0]", "pair[1]", "layer.w", "layer.b", "opaque[0]", "opaque[1][0]")


def test_names_follow_plax_flattening_order():
    # Each leaf is its own expected name: flattening (args, kwargs) must list them in
    # the same order as the names.
    def f(a, b=None, *more, k2, k1, **rest):
        pass
    args = ({"y": "a['y']", "x": ["a['x'][0]"]}, "b", ("more[0][0]",), "more[1]")
    kwargs = {"k2": "k2", "zz": {"q": "rest['zz']['q']"}, "k1": ["k1[0]"], "aa": "rest['aa']"}
    dbg = make_tracing_debug_info("jit", f, args, kwargs)
    assert list(dbg.arg_names) == tu.tree_leaves((args, kwargs))


def test_fallback_names_when_binding_fails():
    def f(x):
        pass
    assert names(f, 1, (2, 3), k=4) == ("args[0]", "args[1][0]", "args[1][1]", "kwargs['k']")
    # max has no Python signature.
    assert names(max, 1, 2) == ("args[0]", "args[1]")


def test_static_argnums_are_excluded():
    def f(x, n, y):
        pass
    assert names(f, 1, 2, [3, 4], static_argnums=(1,)) == ("x", "y[0]", "y[1]")
    assert names(f, 1, 2, 3, static_argnums=(-1,)) == ("x", "n")
    # An index beyond the passed positional arguments excludes nothing.
    assert names(f, 1, 2, y=3, static_argnums=(2,)) == ("x", "n", "y")


def test_static_argnames_are_excluded():
    def f(x, *, mode, scale):
        pass
    assert names(f, 1, mode="fast", scale=2.0, static_argnames=("mode",)) == ("x", "scale")
    # A required keyword-only argument that is static still binds normally.
    assert names(f, {"a": 1}, mode="m", scale="s", static_argnames=("mode", "scale")) == \
        ("x['a']",)


def test_static_argnames_with_var_keyword_and_static_args_in_var_positional():
    def f(*args, **kwargs):
        pass
    assert names(f, 1, 2, 3, static_argnums=(1,), a=4, b=5, static_argnames=("b",)) == \
        ("args[0]", "args[2]", "kwargs['a']")


def test_partial_function_names():
    def f(a, b, c):
        pass
    p = functools.partial(f, 1)
    assert names(p, 2, 3) == ("b", "c")
    assert names(functools.partial(f, c=3), 1, 2) == ("a", "b")
    assert fun_sourceinfo(p) == f"f at {THIS_FILE}:{line_of(f)}"
    assert fun_sourceinfo(tu.Partial(p, 2)) == fun_sourceinfo(p)


def test_lambda_names_and_source():
    f = lambda x, y=2: x  # noqa: E731
    dbg = make_tracing_debug_info("make_jaxpr", f, (1,), {"y": 3})
    assert dbg.arg_names == ("x", "y")
    assert dbg.func_src_info == f"<lambda> at {THIS_FILE}:{line_of(f)}"
    assert dbg.func_name == "<lambda>"


class Model:
    def apply(self, params, x):
        pass

    def __call__(self, x):
        pass


def test_bound_methods_skip_self():
    m = Model()
    dbg = make_tracing_debug_info("jit", m.apply, ({"w": 1}, 2), {})
    assert dbg.arg_names == ("params['w']", "x")
    assert dbg.func_src_info == f"apply at {THIS_FILE}:{line_of(Model.apply)}"


def test_fun_sourceinfo_has_no_object_addresses():
    def deco(g):
        @functools.wraps(g)
        def wrapper(*a, **k):
            return g(*a, **k)
        return wrapper

    def inner(x):
        pass
    assert fun_sourceinfo(deco(inner)) == f"inner at {THIS_FILE}:{line_of(inner)}"
    assert fun_sourceinfo(print) == "print"
    assert fun_sourceinfo([].append) == "list.append"
    assert fun_sourceinfo(Model()) == "<unknown>"
    # a named callable object is called by its name (what JAX's jit of it prints)
    assert fun_sourceinfo(Model) == "Model"
    assert fun_sourceinfo(plax.numpy.negative) == "negative"
    assert "0x" not in fun_sourceinfo(functools.partial(Model(), 1))


def test_tracing_debug_info_is_deterministic_and_hashable():
    def f(x, y):
        pass
    a = make_tracing_debug_info("jit", f, ({"k": 1}, 2), {})
    b = make_tracing_debug_info("jit", f, ({"k": 5}, 6), {})
    assert isinstance(a, TracingDebugInfo)
    assert a == b and hash(a) == hash(b)
    assert {a: 1}[b] == 1
    assert str(a) == f"f at {THIS_FILE}:{line_of(f)} for jit"
    assert a.safe_arg_name(1) == "y" and a.safe_arg_name(2) == ""


# --- resolve_argnums -----------------------------------------------------------------

def _sig_fun(a, b, /, c, d=1, *args, e, f=2, **kw):
    pass


def test_resolve_argnums_completes_names_from_numbers():
    # Only positional-or-keyword parameters have both a number and a name.
    assert resolve_argnums(_sig_fun, (0, 2, 3), None) == ((0, 2, 3), ("c", "d"))
    assert resolve_argnums(_sig_fun, 3, None) == ((3,), ("d",))


def test_resolve_argnums_completes_numbers_from_names():
    assert resolve_argnums(_sig_fun, None, ("d", "e")) == ((3,), ("d", "e"))
    assert resolve_argnums(_sig_fun, None, "c") == ((2,), ("c",))


def test_resolve_argnums_given_both_or_neither():
    assert resolve_argnums(_sig_fun, (0,), ("e",)) == ((0,), ("e",))
    assert resolve_argnums(_sig_fun, None, None) == ((), ())


def test_resolve_argnums_normalizes_negative_numbers():
    def f(x, y, z):
        pass
    assert resolve_argnums(f, -1, None) == ((2,), ("z",))
    assert resolve_argnums(f, (-3, 0, 1), None) == ((0, 1), ("x", "y"))


def test_resolve_argnums_allows_numbers_in_var_positional():
    def f(x, *args):
        pass
    assert resolve_argnums(f, (0, 5), None) == ((0, 5), ("x",))


def test_resolve_argnums_accepts_any_name_with_var_keyword():
    def f(x, **kw):
        pass
    assert resolve_argnums(f, None, "anything") == ((), ("anything",))


def test_resolve_argnums_without_signature_only_normalizes_types():
    assert resolve_argnums(max, [1, 0, 1], "k") == ((0, 1), ("k",))


@pytest.mark.parametrize("nums, names_, error, match", [
    (4, None, ValueError, "out of range"),
    (-4, None, ValueError, "out of range"),
    (None, "zz", ValueError, "'zz', which is not a parameter of f at"),
    (None, "x", ValueError, "'x', which is a positional-only parameter"),
    ("x", None, TypeError, "static_argnums must be an int"),
    (1.5, None, TypeError, "static_argnums must be an int"),
    ((True,), None, TypeError, "static_argnums must be an int"),
    (None, 3, TypeError, "static_argnames must be a str"),
    (None, ["y", 1], TypeError, "static_argnames must be a str"),
])
def test_resolve_argnums_errors(nums, names_, error, match):
    def f(x, /, y, z):
        pass
    with pytest.raises(error, match=match):
        resolve_argnums(f, nums, names_)


def test_resolve_argnums_rejects_variadic_parameter_names():
    def f(x, *rest):
        pass
    with pytest.raises(ValueError, match="'rest', which is a variadic positional parameter"):
        resolve_argnums(f, None, "rest")


# --- result paths and finalize -------------------------------------------------------

class Strict:
    """A node whose unflatten rejects anything but ints."""

    def __init__(self, v):
        if not isinstance(v, int):
            raise TypeError("ints only")
        self.v = v


tu.register_pytree_node(Strict, lambda s: ((s.v,), None), lambda _, c: Strict(*c))


@pytest.mark.parametrize("out, expected", [
    (1.0, ("result",)),
    ((1, {"c": 2, "a": [3]}), ("result[0]", "result[1]['a'][0]", "result[1]['c']")),
    (None, ()),
    (Layer(1, 2), ("result.w", "result.b")),
    (Opaque(1, 2), ("result[0]", "result[1]")),
])
def test_result_paths_from_value_and_treedef(out, expected):
    assert result_paths_from_tree(out) == expected
    assert result_paths_from_tree(tu.tree_structure(out)) == expected


def test_result_paths_unknown_when_treedef_cannot_be_rebuilt():
    assert result_paths_from_tree([Strict(1)]) == ("result[0][0]",)
    assert result_paths_from_tree(tu.tree_structure([Strict(1)])) is None


def test_finalize():
    def f(x):
        pass
    tracing = make_tracing_debug_info("vmap", f, ([1, 2],), {})
    dbg = finalize(tracing, ["result[0]", "result[1]"])
    assert dbg == JaxprDebugInfo("vmap", tracing.func_src_info, ("x[0]", "x[1]"),
                                 ("result[0]", "result[1]"))
    assert finalize(tracing, None).result_paths is None


# --- JaxprDebugInfo ------------------------------------------------------------------

DBG = JaxprDebugInfo("jit", "f at /src/my:file.py:12", ("x", "y['a']", "z"), ("result",))


def test_source_fields():
    assert DBG.func_name == "f"
    assert DBG.func_filename == "/src/my:file.py"
    assert DBG.func_lineno == 12
    unknown = JaxprDebugInfo("jit", "<unknown>", None, None)
    assert (unknown.func_name, unknown.func_filename, unknown.func_lineno) == \
        ("<unknown>", None, None)
    assert JaxprDebugInfo("jit", "print", None, None).func_lineno is None
    assert str(DBG) == "f at /src/my:file.py:12 for jit"


def test_safe_names():
    assert [DBG.safe_arg_name(i) for i in (0, 1, 2, 3, -1)] == ["x", "y['a']", "z", "", ""]
    assert [DBG.safe_result_path(i) for i in (0, 1)] == ["result", ""]
    unknown = DBG.with_unknown_names()
    assert unknown.safe_arg_name(0) == "" and unknown.safe_result_path(0) == ""


def test_filters_keep_counts():
    kept = DBG.filter_arg_names([True, False, True]).filter_result_paths([False])
    assert kept.arg_names == ("x", "z") and kept.result_paths == ()
    check_debug_info_counts(kept, 2, 0)
    unknown = DBG.with_unknown_names().filter_arg_names([True]).filter_result_paths([])
    assert unknown.arg_names is None and unknown.result_paths is None
    with pytest.raises(ValueError, match="2 keep flags for 3 arg_names"):
        DBG.filter_arg_names([True, False])
    with pytest.raises(ValueError, match="0 keep flags for 1 result_paths"):
        DBG.filter_result_paths([])


def test_replacements():
    assert DBG.with_arg_names(["p"]).arg_names == ("p",)
    assert DBG.with_arg_names(None).arg_names is None
    assert DBG.with_result_paths(("r0", "r1")).result_paths == ("r0", "r1")
    renamed = DBG.replace_func_name("jvp(f)")
    assert renamed.func_name == "jvp(f)" and renamed.func_lineno == 12
    assert JaxprDebugInfo("jit", "<unknown>", None, None).replace_func_name("g").func_src_info \
        == "g"
    assert DBG.with_unknown_names() == JaxprDebugInfo("jit", DBG.func_src_info, None, None)


def test_hashable():
    same = JaxprDebugInfo("jit", "f at /src/my:file.py:12", ("x", "y['a']", "z"), ("result",))
    assert same == DBG and hash(same) == hash(DBG)
    assert DBG != DBG.filter_arg_names([True, True, False])


def test_check_debug_info_counts():
    check_debug_info_counts(DBG, 3, 1)
    check_debug_info_counts(DBG.with_unknown_names(), 7, 9)
    with pytest.raises(ValueError, match="3 arg_names for 2 invars"):
        check_debug_info_counts(DBG, 2, 1)
    with pytest.raises(ValueError, match="1 result_paths for 2 outvars"):
        check_debug_info_counts(DBG, 3, 2)
    with pytest.raises(TypeError, match="JaxprDebugInfo"):
        check_debug_info_counts(("jit", "f", None, None), 0, 0)


_SOURCES = """
from importlib import import_module
if jax.__name__ == "jax":
    summarize = import_module("jax._src.source_info_util").summarize
else:
    user_frame = import_module("plax.extend.core").user_frame
    summarize = lambda source_info: user_frame(source_info)

def f(x):
    y = jnp.sin(x)
    return jnp.sum(jnp.cos(y) * y)

def sources(jaxpr):
    out = []
    for eqn in jaxpr.eqns:
        inner = [getattr(p, "jaxpr", p) for p in eqn.params.values()]
        inner = [j for j in inner if hasattr(j, "eqns")]
        # (a call's own source is not compared: JAX leaves it out where reverse mode
        # makes the call)
        out.append([eqn.primitive.name, *map(sources, inner)] if inner
                   else [eqn.primitive.name, summarize(eqn.source_info)])
    return out

result = {name: sources(jax.make_jaxpr(fn)(jnp.ones((2, 3))).jaxpr) for name, fn in [
    ("f", f), ("grad", jax.grad(f)), ("grad of checkpoint", jax.grad(jax.checkpoint(f))),
    ("grad of jit", jax.grad(jax.jit(f))), ("vmap", jax.vmap(f)),
    ("jvp", lambda x: jax.jvp(f, (x,), (x,))), ("vmap of grad", jax.vmap(jax.grad(f)))]}
"""


@requires_jax
def test_equation_sources_are_jaxs():
    """Each equation's source is the user's line and column (`file:line:column
    (function)`), as JAX summarizes it, also where transformations (jvp, transpose,
    checkpoint's recomputation, vmap) stage it again. (Not compared: what the
    transformations add themselves, such as a Jacobian's basis, where JAX records no
    user frame.)"""
    assert run_reference(_SOURCES, "plax") == run_reference(_SOURCES)

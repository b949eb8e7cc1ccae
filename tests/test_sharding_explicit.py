"""Sharding in types on meshes with Explicit axes: `typeof(x).sharding`, the sharding
rules of the common primitives, their errors, `reshard`, `auto_axes`/`explicit_axes`,
`make_mesh`'s default axis types; and shardings whose addressable and global shard
counts differ."""
import numpy as np
import pytest

import plax
import plax.numpy as jnp
from plax.sharding import AbstractMesh, AxisType, NamedSharding, PartitionSpec as P

EXPLICIT = (AxisType.Explicit, AxisType.Explicit)


@pytest.fixture(scope="module")
def emesh():
    return plax.make_mesh((2, 4), ("x", "y"), axis_types=EXPLICIT)


@pytest.fixture(scope="module")
def data():
    return np.arange(32, dtype=np.float32).reshape(4, 8) / 7


def put(mesh, value, *spec):
    return plax.device_put(value, NamedSharding(mesh, P(*spec)))


def spec_of(x):
    return tuple(plax.typeof(x).sharding.spec)


def traced_specs(fn, *args):
    """The spec in the type of `fn`'s result inside jit, and the jitted result."""
    seen = []

    def body(*a):
        out = fn(*a)
        seen.append(spec_of(out))
        return out
    out = plax.jit(body)(*args)
    return seen[0], out


def test_typeof_array_on_explicit_mesh(emesh, data):
    x = put(emesh, data, "x", "y")
    typed = plax.typeof(x).sharding
    assert typed.spec == P("x", "y") and isinstance(typed.mesh, AbstractMesh)
    assert typed.mesh.axis_types == EXPLICIT and typed.mesh is emesh.abstract_mesh
    assert repr(plax.typeof(x)) == "ShapedArray(float32[4@x,8@y])"
    assert spec_of(put(emesh, data, "x")) == ("x", None)
    assert spec_of(put(emesh, data[0], ("x", "y"))) == (("x", "y"),)


def test_only_explicit_axes_are_in_the_type(data):
    mixed = plax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Explicit, AxisType.Auto))
    assert spec_of(put(mixed, data, "x", "y")) == ("x", None)
    auto = plax.make_mesh((2, 4), ("x", "y"), axis_types=AxisType.Auto)
    # no layout in the type: JAX's unsplit spec (plax shows it on the empty mesh)
    assert spec_of(put(auto, data, "x", "y")) == (None, None)
    assert plax.typeof(put(auto, data, "x", "y")).typed_sharding is None
    assert plax.typeof(jnp.ones(3)).typed_sharding is None
    # JAX's `are_all_axes_explicit`: False on the empty mesh too
    assert [m.are_all_axes_explicit for m in (mixed, auto, plax.make_mesh((2,), ("x",)),
                                              plax.sharding.get_abstract_mesh())] == [
        False, False, True, False]
    # and its twins (flax reads are_all_axes_auto)
    assert [(m.are_all_axes_auto, m.are_all_axes_manual) for m in (
        mixed, auto, plax.sharding.get_abstract_mesh())] == [(False, False), (True, False),
                                                             (False, False)]


def test_make_mesh_defaults_to_explicit_and_context_reports_types():
    mesh = plax.make_mesh((2, 4), ("x", "y"))
    assert mesh.axis_types == EXPLICIT
    with plax.sharding.use_mesh(mesh):
        assert plax.sharding.get_abstract_mesh().axis_types == EXPLICIT
    assert plax.sharding.get_abstract_mesh().empty


RULES = [  # name, function, operand specs, expected result spec
    ("elementwise", lambda a, b: jnp.sin(a) * b, [("x", "y"), ("x", "y")], ("x", "y")),
    ("partial specs merge", lambda a, b: a + b, [("x", "y"), ("x", None)], ("x", "y")),
    ("scalar", lambda a: a * 2 + 1, [("x", "y")], ("x", "y")),
    ("broadcast row", lambda a, v: a + v, [("x", "y"), ("y",)], ("x", "y")),
    ("reduce axis 0", lambda a: a.sum(0), [("x", "y")], ("y",)),
    ("max axis 1", lambda a: a.max(1), [("x", "y")], ("x",)),
    ("reduce all", lambda a: a.sum(), [("x", "y")], ()),
    ("argmax", lambda a: jnp.argmax(a, axis=1), [("x", "y")], ("x",)),
    ("transpose", lambda a: a.T, [("x", "y")], ("y", "x")),
    ("broadcast_in_dim", lambda v: plax.lax.broadcast_in_dim(v, (3, 8), (1,)), [("y",)],
     (None, "y")),
    ("expand dims", lambda v: v[None], [("y",)], (None, "y")),
    ("reshape split", lambda a: a.reshape(2, 2, 8), [("x", "y")], ("x", None, "y")),
    ("reshape merge", lambda a: a.reshape(32), [("x", "y")], (("x", "y"),)),
    ("reshape singleton", lambda a: a.reshape(4, 1, 8), [("x", "y")], ("x", None, "y")),
    ("squeeze", lambda a: plax.lax.squeeze(a, (1,)), [("x", None, "y")], ("x", "y")),
    ("slice", lambda a: a[1:3], [("x", "y")], ("x", "y")),
    ("concatenate", lambda a, b: jnp.concatenate([a, b]), [("x", "y"), (None, "y")],
     ("x", "y")),
    ("cumsum over an unsplit axis", lambda a: jnp.cumsum(a, 1), [("x", None)], ("x", None)),
    ("matmul free dims", lambda a, w: a @ w, [("x", None), ()], ("x", None)),
    ("matmul one side contracted", lambda a, w: a @ w, [("x", "y"), ()], ("x", None)),
    ("batched dot", lambda a, b: jnp.einsum("bij,bjk->bik", a, b),
     [("x", None, None), ("x", None, "y")], ("x", None, "y")),
]

SHAPES = {"elementwise": [(4, 8), (4, 8)], "partial specs merge": [(4, 8), (4, 8)],
          "broadcast row": [(4, 8), (8,)], "broadcast_in_dim": [(8,)], "expand dims": [(8,)],
          "matmul free dims": [(4, 8), (8, 4)], "matmul one side contracted": [(4, 8), (8, 4)],
          "batched dot": [(2, 3, 4), (2, 4, 8)], "squeeze": [(4, 1, 8)]}


@pytest.mark.parametrize("name,fn,specs,expected", RULES, ids=[r[0] for r in RULES])
def test_sharding_rules(emesh, name, fn, specs, expected):
    rng = np.random.default_rng(0)
    shapes = SHAPES.get(name, [(4, 8)] * len(specs))
    values = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    args = [put(emesh, v, *s) for v, s in zip(values, specs)]
    inside, out = traced_specs(fn, *args)
    assert inside == expected
    assert spec_of(out) == expected  # the executable laid the result out as typed
    assert out.sharding == NamedSharding(emesh, P(*expected))
    assert out.sharding.spec == P(*expected)  # spelled as the type, as in JAX
    np.testing.assert_allclose(np.asarray(out), fn(*values), rtol=1e-5, atol=1e-5)


ERRORS = [
    ("conflicting operands", lambda a, b: a + b, [("x", "y"), ("y", "x")],
     "incompatible shardings"),
    ("both contractions sharded", lambda a: a.T @ a, [("x", "y")], "ambiguous"),
    ("reshape across a sharded split", lambda a: a.reshape(4, 2, 4), [("x", "y")],
     "reshape is not supported"),
    ("one axis on two dimensions", lambda a, b: a @ b, [("x", None), (None, "x")],
     "illegally sharded result"),
    ("cumsum over a split axis", lambda a: jnp.cumsum(a, 0), [("x", "y")], "unsharded"),
    ("batch dimensions split differently", lambda a, b: jnp.einsum("bi,bj->bij", a, b),
     [("x", None), ("y", None)], "sharded differently"),
]


@pytest.mark.parametrize("name,fn,specs,message", ERRORS, ids=[e[0] for e in ERRORS])
def test_sharding_rule_errors(emesh, name, fn, specs, message):
    shape = (8, 8) if name == "one axis on two dimensions" else (4, 8)
    args = [put(emesh, np.ones(shape, np.float32), *s) for s in specs]
    with pytest.raises(TypeError, match=message):
        plax.jit(fn)(*args)


def np_conv_nchw(x, w, stride: int, pad: tuple[int, int]):
    """A 2-D cross-correlation (NCHW input, OIHW kernel) by NumPy's sliding windows."""
    x = np.pad(x, ((0, 0), (0, 0), pad, pad))
    windows = np.lib.stride_tricks.sliding_window_view(x, w.shape[2:], axis=(2, 3))
    return np.einsum("nchwij,ocij->nohw", windows, w)[:, :, ::stride, ::stride]


def np_scatter_rows(a, u, combine):
    out = a.copy()
    out[[1, 2]] = combine(out[[1, 2]], u)
    return out


ROWS = np.array([[1], [2]])
ROW_DNUMS = plax.lax.ScatterDimensionNumbers((1,), (0,), (0,))
ZERO_BATCHED = plax.lax.GatherDimensionNumbers((), (1,), (1,), (0,), (0,))
NHWC = ("NHWC", "HWIO", "NHWC")

# name, function, NumPy's answer, [(shape, spec)] of the operands, expected result spec
MORE_RULES = [
    ("dynamic_slice keeps divisible splits",
     lambda a: plax.lax.dynamic_slice(a, (1, 0), (2, 8)), lambda a: a[1:3],
     [((4, 8), ("x", "y"))], ("x", "y")),
    ("dynamic_update_slice", lambda a, u: plax.lax.dynamic_update_slice(a, u, (0, 2)),
     lambda a, u: np.concatenate([a[:, :2], u, a[:, 4:]], 1),
     [((4, 8), ("x", None)), ((4, 2), ("x", None))], ("x", None)),
    ("take along an unsplit axis", lambda a: jnp.take(a, jnp.array([1, 2]), axis=0),
     lambda a: a[[1, 2]], [((4, 8), (None, "y"))], (None, "y")),
    ("take keeps the other axis", lambda a: jnp.take(a, jnp.array([1, 2]), axis=1),
     lambda a: a[:, [1, 2]], [((4, 8), ("x", None))], ("x", None)),
    ("gather with batching dims",
     lambda a: plax.lax.gather(a, (jnp.arange(4) * 2 + 1).reshape(4, 1, 1), ZERO_BATCHED,
                               (1, 1)),
     lambda a: a[np.arange(4), [1, 3, 5, 7]][:, None], [((4, 8), ("x", None))], ("x", None)),
    ("scatter_add", lambda a, u: plax.lax.scatter_add(a, ROWS, u, ROW_DNUMS),
     lambda a, u: np_scatter_rows(a, u, np.add),
     [((4, 8), (None, "y")), ((2, 8), (None, "y"))], (None, "y")),
    ("scatter", lambda a, u: plax.lax.scatter(a, ROWS, u, ROW_DNUMS),
     lambda a, u: np_scatter_rows(a, u, lambda old, new: new),
     [((4, 8), (None, "y")), ((2, 8), (None, "y"))], (None, "y")),
    ("scatter_max", lambda a, u: plax.lax.scatter_max(a, ROWS, u, ROW_DNUMS),
     lambda a, u: np_scatter_rows(a, u, np.maximum),
     [((4, 8), (None, "y")), ((2, 8), (None, "y"))], (None, "y")),
    ("select_n", lambda a, b: plax.lax.select_n(a > 0, a, b),
     lambda a, b: np.where(a > 0, b, a), [((4, 8), ("x", "y"))] * 2, ("x", "y")),
    ("select_n with a scalar predicate", lambda a, b: plax.lax.select_n(True, a, b),
     lambda a, b: b, [((4, 8), ("x", "y"))] * 2, ("x", "y")),
    ("clamp keeps the operand's spec", lambda lo, a: plax.lax.clamp(lo, a, 0.5),
     lambda lo, a: np.minimum(np.maximum(a, lo), 0.5),
     [((4, 8), (None, "y")), ((4, 8), ("x", None))], ("x", None)),
    ("convert_element_type", lambda a: plax.lax.convert_element_type(a * 4, jnp.int32),
     lambda a: (a * 4).astype(np.int32), [((4, 8), ("x", "y"))], ("x", "y")),
    ("conv keeps the batch split",
     lambda x, w: plax.lax.conv_general_dilated(x, w, (1, 1), "SAME"),
     lambda x, w: np_conv_nchw(x, w, 1, (1, 1)),
     [((2, 3, 4, 4), ("x", None, None, None)), ((4, 3, 3, 3), ())], ("x", None, None, None)),
    ("conv keeps a divisible spatial split",
     lambda x, w: plax.lax.conv_general_dilated(x, w, (2, 2), "SAME"),
     lambda x, w: np_conv_nchw(x, w, 2, (0, 1)),
     [((2, 3, 8, 8), (None, None, "x", None)), ((4, 3, 3, 3), ())], (None, None, "x", None)),
    ("conv NHWC",
     lambda x, w: plax.lax.conv_general_dilated(x, w, (1, 1), "VALID",
                                                dimension_numbers=NHWC),
     lambda x, w: np_conv_nchw(x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1), 1,
                               (0, 0)).transpose(0, 2, 3, 1),
     [((2, 4, 4, 3), ("x", None, None, None)), ((3, 3, 3, 4), ())], ("x", None, None, None)),
]


@pytest.mark.parametrize("name,fn,np_fn,operands,expected", MORE_RULES,
                         ids=[r[0] for r in MORE_RULES])
def test_indexing_select_conversion_and_conv_rules(emesh, name, fn, np_fn, operands,
                                                   expected):
    rng = np.random.default_rng(1)
    values = [rng.standard_normal(shape).astype(np.float32) for shape, _ in operands]
    inside, out = traced_specs(fn, *[put(emesh, v, *spec)
                                     for v, (_, spec) in zip(values, operands)])
    assert inside == expected and spec_of(out) == expected
    assert out.sharding == NamedSharding(emesh, P(*expected))
    want = np_fn(*values)
    assert out.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-5)


def test_select_n_with_only_the_predicate_typed(emesh, data):
    which = put(emesh, data > 2, "x", "y")
    inside, out = traced_specs(lambda p, a, b: plax.lax.select_n(p, a, b), which, data, -data)
    assert inside == ("x", "y") and spec_of(out) == ("x", "y")
    np.testing.assert_array_equal(np.asarray(out), np.where(data > 2, -data, data))


def test_rules_where_only_a_side_operand_is_typed(emesh, data):
    """An untyped operand with a typed start index or kernel: an unsplit result."""
    start = put(emesh, np.int32(1))
    inside, out = traced_specs(lambda a, i: plax.lax.dynamic_slice(a, (i, 0), (2, 8)),
                               data, start)
    assert inside == (None, None)
    np.testing.assert_array_equal(np.asarray(out), data[1:3])
    x, w = data.reshape(1, 1, 4, 8), np.ones((1, 1, 3, 3), np.float32)
    inside, out = traced_specs(
        lambda x, w: plax.lax.conv_general_dilated(x, w, (1, 1), "SAME"), x, put(emesh, w))
    assert inside == (None,) * 4
    np.testing.assert_allclose(np.asarray(out), np_conv_nchw(x, w, 1, (1, 1)), rtol=1e-5)


# name, function, [(shape, spec)] of the operands, words of the error
MORE_ERRORS = [
    ("slice leaving an undivisible split", lambda a: a[1:2], [((4, 8), ("x", "y"))],
     r"out dim \(1\) is not divisible by mesh axes \(2\)"),
    ("dynamic_slice leaving an undivisible split",
     lambda a: plax.lax.dynamic_slice(a, (0, 1), (4, 2)), [((4, 8), ("x", "y"))],
     r"dynamic_slice on sharded dims .*f32\[4@x,8@y\]"),
    ("dynamic_update_slice of a differently sharded update",
     lambda a, u: plax.lax.dynamic_update_slice(a, u, (0, 2)),
     [((4, 8), ("x", None)), ((4, 2), ())], "operand sharding must be equal to update"),
    ("take along a split axis", lambda a: jnp.take(a, jnp.array([1, 2]), axis=0),
     [((4, 8), ("x", "y"))], r"\.at\[\.\.\.\]\.get\(out_sharding=\)"),
    ("gather with split indices",
     lambda a, i: plax.lax.gather(a, i.astype(jnp.int32)[:, :1],
                                  plax.lax.GatherDimensionNumbers((1,), (0,), (0,)), (1, 8)),
     [((4, 8), ()), ((8, 2), ("x", None))], "out_sharding"),
    ("scatter into a split axis", lambda a, u: plax.lax.scatter_add(a, ROWS, u, ROW_DNUMS),
     [((4, 8), ("x", "y")), ((2, 8), ())], r"set/add/mul/\.\.\.\(out_sharding=\)"),
    ("scatter whose window specs differ",
     lambda a, u: plax.lax.scatter_add(a, ROWS, u, ROW_DNUMS),
     [((4, 8), (None, "y")), ((2, 8), ())], "resolved unambiguously"),
    ("scatter with split update queries",
     lambda a, u: plax.lax.scatter_add(a, ROWS, u, ROW_DNUMS),
     [((4, 8), (None, "y")), ((2, 8), ("x", "y"))], "resolved unambiguously"),
    ("select_n cases sharded differently", lambda a, b: plax.lax.select_n(a > 0, a, b),
     [((4, 8), ("x", "y")), ((4, 8), ("x", None))], "select cases must have the same"),
    ("select_n predicate sharded differently",
     lambda p, a: plax.lax.select_n(p > 0, a, a),
     [((4, 8), ("y", None)), ((4, 8), ("x", None))], "`which` must be scalar"),
    ("conv with a split kernel",
     lambda x, w: plax.lax.conv_general_dilated(x, w, (1, 1), "SAME"),
     [((2, 3, 4, 4), ("x", None, None, None)), ((4, 3, 3, 3), ("y", None, None, None))],
     "kernel must be unsharded"),
    ("conv with a split input feature",
     lambda x, w: plax.lax.conv_general_dilated(x, w, (1, 1), "SAME"),
     [((2, 4, 4, 4), (None, "y", None, None)), ((4, 4, 3, 3), ())], "out_sharding"),
    ("conv batch groups leaving an undivisible batch split",
     lambda x, w: plax.lax.conv_general_dilated(x, w, (1, 1), "SAME", batch_group_count=2),
     [((2, 4, 4, 4), ("x", None, None, None)), ((4, 4, 3, 3), ())],
     r"out dim \(1\) is not divisible"),
]


@pytest.mark.parametrize("name,fn,operands,message", MORE_ERRORS,
                         ids=[e[0] for e in MORE_ERRORS])
def test_indexing_select_and_conv_rule_errors(emesh, name, fn, operands, message):
    args = [put(emesh, np.ones(shape, np.float32), *spec) for shape, spec in operands]
    with pytest.raises(TypeError, match=message):  # a ShardingTypeError
        plax.jit(fn)(*args)


def test_explicit_out_sharding_resolves_ambiguity(emesh, data):
    x = put(emesh, data, "x", "y")
    f = plax.jit(lambda a: plax.lax.reshape(a, (4, 2, 4), out_sharding=P("x", None, "y")))
    with plax.set_mesh(emesh):
        out = f(x)
    assert spec_of(out) == ("x", None, "y")
    np.testing.assert_array_equal(np.asarray(out), data.reshape(4, 2, 4))
    # a bare PartitionSpec names the axes of the mesh in context: none here (JAX's error,
    # though the argument's type names a mesh)
    with pytest.raises(ValueError, match="PartitionSpec P\\('x', None, 'y'\\) as out_sharding "
                                         "outside a mesh context"):
        f(x)


def test_lowering_states_typed_results_as_constraints(emesh, data):
    text = plax.jit(lambda a: a.sum(0)).lower(put(emesh, data, "x", "y")).as_text()
    assert 'sdy.sharding_constraint' in text and '[{"y"}]' in text


def test_meshes_of_one_shape_share_a_typed_trace(devs, data):
    traces = []

    @plax.jit
    def f(a):
        traces.append(plax.typeof(a))
        return a * 2
    one = plax.sharding.Mesh(np.array(devs[:4]), "d", AxisType.Explicit)
    two = plax.sharding.Mesh(np.array(devs[4:]), "d", AxisType.Explicit)
    outs = [f(put(m, data, "d")) for m in (one, two)]
    assert len(traces) == 1 and traces[0].sharding.spec == P("d", None)
    assert [o.sharding.mesh for o in outs] == [one, two]


def test_reshard_outside_and_inside_jit(emesh, data):
    x = put(emesh, data, "x", "y")
    with pytest.raises(ValueError, match="outside a mesh context"):
        plax.sharding.reshard(x, P(None, "x"))
    y = plax.sharding.reshard(x, NamedSharding(emesh, P(None, "x")))
    assert spec_of(y) == (None, "x") and y.sharding.spec == P(None, "x")
    np.testing.assert_array_equal(np.asarray(y), data)
    with plax.set_mesh(emesh):
        inside, z = traced_specs(lambda a: plax.sharding.reshard(a, P("y", None)), x)
    assert inside == ("y", None) and z.sharding.spec == P("y", None)
    w = plax.sharding.reshard(x, NamedSharding(emesh, P()))
    assert spec_of(w) == (None, None) and w.sharding.is_fully_replicated
    with plax.set_mesh(emesh):
        host = plax.sharding.reshard(np.arange(4, dtype=np.float32), P("x"))
    assert spec_of(host) == ("x",) and np.asarray(host).tolist() == [0, 1, 2, 3]


def test_auto_axes_and_explicit_axes(emesh, data):
    x = put(emesh, data, "x", "y")
    inside = []

    def double(b):
        inside.append((plax.typeof(b).typed_sharding, plax.sharding.get_abstract_mesh().axis_types))
        return b * 2

    with plax.sharding.use_mesh(emesh):
        out = plax.sharding.auto_axes(double, out_sharding=P("x", None))(x)
    assert inside[-1] == (None, (AxisType.Auto, AxisType.Auto))
    assert spec_of(out) == ("x", None)
    np.testing.assert_allclose(np.asarray(out), data * 2)

    auto = plax.make_mesh((2, 4), ("x", "y"), axis_types=AxisType.Auto)
    xa = put(auto, data, "x", "y")
    with plax.sharding.use_mesh(auto):
        out = plax.sharding.explicit_axes(double, in_sharding=P("x", None))(xa)
    typed, types = inside[-1]
    assert typed.spec == P("x", None) and types == EXPLICIT
    assert plax.typeof(out).typed_sharding is None
    np.testing.assert_allclose(np.asarray(out), data * 2)
    with pytest.raises(ValueError, match="not Explicit axes"):
        with plax.sharding.use_mesh(auto):
            plax.sharding.auto_axes(double, axes="x")(xa, out_sharding=P("x"))
    with pytest.raises(TypeError, match="in_sharding"):  # as in JAX, missed at call time
        plax.sharding.explicit_axes(double)(xa)
    with plax.sharding.use_mesh(auto):  # in_sharding= given to the call, as in JAX
        out = plax.sharding.explicit_axes(double)(xa, in_sharding=P(None, "y"))
    assert inside[-1][0].spec == P(None, "y")
    with pytest.raises(ValueError, match="outside a mesh context"):
        plax.sharding.auto_axes(double)(x, out_sharding=P("x"))
    with pytest.raises(TypeError, match="out_sharding"):
        plax.sharding.auto_axes(double)(x)
    with plax.sharding.use_mesh(emesh):  # out_sharding= given to the call, as in JAX
        out = plax.sharding.auto_axes(double)(x, out_sharding=P(None, "y"))
    assert spec_of(out) == (None, "y")


# --- out_sharding= (values against NumPy; types and errors against JAX in
# test_sharding_explicit_vs_jax.py) ------------------------------------------------------

AT_UPDATES = [  # method, value, NumPy's update of the indexed row
    ("set", 1.5, lambda r, v: np.full_like(r, v)), ("add", 1.5, np.add),
    ("subtract", 1.5, np.subtract), ("multiply", 3.0, np.multiply),
    ("divide", 2.0, np.divide), ("power", 2.0, np.power),
    ("min", 1.0, np.minimum), ("max", 1.0, np.maximum),
]


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_at_updates_take_out_sharding(emesh, data, jitted):
    x = put(emesh, data, "x", "y")
    for method, value, combine in AT_UPDATES:
        fn = lambda a, m=method, v=value: getattr(a.at[1], m)(v, out_sharding=P("x", "y"))
        with plax.sharding.use_mesh(emesh):
            out = plax.jit(fn)(x) if jitted else fn(x)
        want = data.copy()
        want[1] = combine(want[1], value)
        assert spec_of(out) == ("x", "y") and out.sharding.spec == P("x", "y"), method
        np.testing.assert_allclose(np.asarray(out), want, rtol=1e-6, err_msg=method)
    rows = np.array([3, 0, 3])
    with plax.sharding.use_mesh(emesh):
        got = x.at[rows].get(out_sharding=P(None, "y"))
        added = x.at[rows].add(1.0, out_sharding=P(None, "x"))  # a new layout too
    assert spec_of(got) == (None, "y")
    np.testing.assert_array_equal(np.asarray(got), data[rows])
    want = data.copy()
    np.add.at(want, rows, 1.0)
    assert spec_of(added) == (None, "x")
    np.testing.assert_allclose(np.asarray(added), want, rtol=1e-6)


def test_at_out_sharding_errors_and_meshes(emesh, data):
    x = put(emesh, data, "x", "y")
    with plax.sharding.use_mesh(emesh):
        with pytest.raises(TypeError, match=r"at\[...\].set/add/mul/...\(out_sharding=\)"):
            x.at[1].set(0.0)  # a ShardingTypeError: the result layout is ambiguous
        with pytest.raises(TypeError, match="out_sharding` argument of .set only supports"):
            x.at[1].set(0.0, out_sharding="x")
        with pytest.raises(ValueError, match="axis 0 of size 3"):
            x.at[np.array([1, 2, 3])].get(out_sharding=P("x", "y"))  # 3 rows over 'x' (2)
        with pytest.raises(TypeError, match="unexpected keyword argument 'out_sharding'"):
            x.at[1].apply(np.sin, out_sharding=P("x", "y"))  # as in JAX
    with pytest.raises(ValueError, match="outside a mesh context"):
        x.at[1].set(0.0, out_sharding=P("x", "y"))
    # a NamedSharding brings its own mesh
    out = x.at[1].set(0.0, out_sharding=NamedSharding(emesh, P(None, "y")))
    assert spec_of(out) == (None, "y") and out.sharding.mesh == emesh


def test_at_out_sharding_where_plax_is_more_permissive_than_jax(emesh, data):
    """JAX 0.10.2 lowers a basic index inside jit to a slice that ignores out_sharding
    (then refuses the split row); plax honours out_sharding on every path. `apply`
    (which takes no out_sharding) refuses a split operand, as JAX's does."""
    x = put(emesh, data, "x", "y")
    with plax.sharding.use_mesh(emesh):
        row = plax.jit(lambda a: a.at[1].get(out_sharding=P("y")))(x)
        with pytest.raises(TypeError, match="out_sharding"):
            x.at[1].apply(jnp.negative)
    assert spec_of(row) == ("y",)
    np.testing.assert_array_equal(np.asarray(row), data[1])


def test_conv_out_sharding(emesh):
    rng = np.random.RandomState(0)
    lhs, rhs = rng.randn(2, 3, 4, 4).astype(np.float32), rng.randn(4, 3, 3, 3).astype(np.float32)
    want = np_conv_nchw(lhs, rhs, 1, (1, 1))
    x, w = put(emesh, lhs, "x"), put(emesh, rhs, "y")

    def conv(a, b, spec):
        return plax.lax.conv_general_dilated(a, b, (1, 1), "SAME", out_sharding=spec)
    with plax.set_mesh(emesh):
        for spec, expected in ((P("x", "y"), ("x", "y", None, None)),
                               (P(), (None,) * 4), (P("x", "y", None, None, None), None)):
            inside, out = traced_specs(lambda a, b, s=spec: conv(a, b, s), x, w)
            assert inside == (expected or ("x", "y", None, None)), spec
            np.testing.assert_allclose(np.asarray(out), want, rtol=1e-4, atol=1e-4)
        with pytest.raises(TypeError, match="only supports instances of"):
            conv(x, w, "x")
        with pytest.raises(ValueError, match="more than the result's rank"):
            plax.jit(lambda a, b: conv(a, b, P("x", None, None, None, "y")))(x, w)
        with pytest.raises(ValueError, match="not divisible"):  # 4 features, 8 pieces
            plax.jit(lambda a, b: conv(a, b, P(None, ("x", "y"))))(x, w)
    with pytest.raises(ValueError, match="outside a mesh context"):
        plax.jit(lambda a, b: conv(a, b, P("x", "y")))(x, w)


def test_cotangents_keep_explicit_shardings(emesh, data):
    """grad through a nested jit types each cotangent as its primal (as JAX does);
    the gradients against NumPy's."""
    rng = np.random.RandomState(1)
    b_np = rng.randn(8, 4).astype(np.float32) / 4
    a, b = put(emesh, data, "x", None), put(emesh, b_np, None, "y")
    inner = plax.jit(lambda a, b: jnp.tanh(a @ b))
    loss = lambda a, b: inner(a, b).sum()  # noqa: E731
    with plax.sharding.use_mesh(emesh):
        ga, gb = plax.jit(plax.grad(loss, argnums=(0, 1)))(a, b)
        eager_ga = plax.grad(loss)(a, b)
    d = 1 - np.tanh(data @ b_np) ** 2
    for g, spec, want in ((ga, ("x", None), d @ b_np.T), (eager_ga, ("x", None), d @ b_np.T),
                          (gb, (None, "y"), data.T @ d)):
        assert spec_of(g) == spec and g.sharding.spec == P(*spec)
        np.testing.assert_allclose(np.asarray(g), want, rtol=1e-4, atol=1e-5)



def test_cotangents_of_untyped_values_through_reshard_and_explicit_axes(emesh, data):
    """As JAX: under the mesh, reshard's cotangent of an untyped (uncommitted) input
    is unsplit, eagerly and under jit; explicit_axes from an Auto mesh gives an
    untyped gradient, eagerly too (it used to raise for a NumPy input)."""
    loss = lambda a: (plax.sharding.reshard(a, P("x", None)) ** 2).sum()  # noqa: E731
    with plax.set_mesh(emesh):
        x = jnp.asarray(data)
        for grad in (plax.grad(loss), plax.jit(plax.grad(loss))):
            g = grad(x)
            assert str(plax.typeof(g)) == "float32[4,8]" and spec_of(g) == (None, None)
            np.testing.assert_allclose(g, 2 * data, rtol=1e-6)
    auto = plax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    inner = plax.sharding.explicit_axes(lambda b: b * 2, in_sharding=P("x"))
    with plax.set_mesh(auto):
        for grad in (plax.grad(lambda a: (inner(a) ** 2).sum()),
                     plax.jit(plax.grad(lambda a: (inner(a) ** 2).sum()))):
            g = grad(data)
            assert str(plax.typeof(g)) == "float32[4,8]"
            np.testing.assert_allclose(g, 8 * data, rtol=1e-6)


# --- global versus addressable shard counts -------------------------------------------

def test_shard_counts_are_global_when_some_devices_are_not_addressable(monkeypatch, mesh,
                                                                       devs):
    """With the second half of the devices seen as another process's, a sharding keeps
    counting its shards over all of its devices (replicas included); only the
    `addressable_*` views shrink."""
    from plax._src import sharding as kernel_sharding
    remote = set(devs[4:])
    monkeypatch.setattr(kernel_sharding, "_is_addressable", lambda d: d not in remote)
    s = NamedSharding(mesh, P("x"))  # 2 row blocks, each on a row of 4 devices
    shape = (8, 3)
    assert s.num_devices == 8 and len(s.device_set) == 8
    assert s.addressable_devices == set(devs[:4])
    full, local = s.devices_indices_map(shape), s.addressable_devices_indices_map(shape)
    assert len(full) == 8 and len(local) == 4 and all(full[d] == local[d] for d in local)
    assert s.shard_shape(shape) == (4, 3)
    jaxlib_sharding = s._to_jaxlib_sharding(2)
    assert len(jaxlib_sharding._internal_device_list) == 8  # (jaxlib's own attribute)
    assert s._to_xla_hlo_sharding(2).tile_assignment_devices() == list(range(8))


@pytest.mark.parametrize("axis_types", [AxisType.Auto, AxisType.Explicit])
def test_replicated_shards_count_globally_and_stay_on_the_fast_path(devs, axis_types):
    """P('x') on a (2, 4) mesh: 2 distinct blocks, 8 shards (4 replicas each). Outputs
    of a cached call keep all 8 with their replica ids, and every call after the
    first takes the fast path."""
    from plax_transforms.fastpath import fastpath_stats
    mesh = plax.sharding.Mesh(np.array(devs).reshape(2, 4), ("x", "y"), axis_types)
    x = put(mesh, np.arange(16, dtype=np.float32).reshape(8, 2), "x")
    f = plax.jit(lambda v: v * 2)
    for _ in range(3):
        x = f(x)
    shards = x.global_shards
    assert len(shards) == 8 and len(x.addressable_shards) == 8
    by_block = {}
    for shard in shards:
        by_block.setdefault(shard.index[0].start, []).append(shard.replica_id)
    assert {k: sorted(v) for k, v in by_block.items()} == {0: [0, 1, 2, 3], 4: [0, 1, 2, 3]}
    assert fastpath_stats(f)["hits"] == 2
    np.testing.assert_array_equal(np.asarray(x), np.arange(16).reshape(8, 2) * 8)


def test_with_sharding_constraint_names_only_auto_axes_and_asserts_on_explicit_meshes(
        emesh, data):
    """JAX's rules (checked against JAX 0.10.2): a constraint is for the partitioner;
    `reshard` is what changes the layout over Explicit axes."""
    wsc = plax.lax.with_sharding_constraint
    x = put(emesh, data, "x")
    with plax.set_mesh(emesh):  # every axis Explicit: an assertion on the type
        out = plax.jit(lambda a: wsc(a * 2, P("x")))(x)
        assert spec_of(out) == ("x", None) and out.sharding.spec == P("x", None)
        np.testing.assert_allclose(np.asarray(out), data * 2)
        assert wsc(x, NamedSharding(emesh, P("x", None))) is x
        for bad in (P("y"), P(None, "x")):
            with pytest.raises(AssertionError, match="has the spec P\\('x', None\\), not"):
                plax.jit(lambda a, s=bad: wsc(a * 2, s))(x)
            with pytest.raises(AssertionError, match="use `plax.sharding.reshard`"):
                wsc(x, bad)
    # elsewhere a constraint names Auto axes only
    with pytest.raises(ValueError, match="names the mesh axes \\('y',\\), which are not Auto"):
        plax.jit(lambda a: wsc(a, NamedSharding(emesh, P(None, "y"))))(x)
    # ... and leaves the type as it is: an unsplit constraint keeps the type's split
    kept = plax.jit(lambda a: wsc(a * 2, NamedSharding(emesh, P())))(x)
    assert spec_of(kept) == ("x", None)
    mixed = plax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Explicit, AxisType.Auto))
    xm = put(mixed, data, "x")
    with plax.set_mesh(mixed):
        out = plax.jit(lambda a: wsc(a * 2, P(None, "y")))(xm)
        with pytest.raises(ValueError, match="not Auto"):
            plax.jit(lambda a: wsc(a * 2, P(None, "x")))(xm)
    assert spec_of(out) == ("x", None)
    np.testing.assert_allclose(np.asarray(out), data * 2)
    # no Auto axis for the partitioner to choose over
    with pytest.raises(ValueError, match="cannot contain P.UNCONSTRAINED"):
        NamedSharding(emesh, P(P.UNCONSTRAINED))


def test_reshard_and_out_sharding_results_spell_one_entry_per_dimension(emesh, data):
    # as JAX's results do (a device_put keeps the spec as given)
    with plax.set_mesh(emesh):
        assert plax.sharding.reshard(data, P("x")).sharding.spec == P("x", None)
        assert jnp.zeros((4, 8), out_sharding=P("x")).sharding.spec == P("x", None)
        assert jnp.full_like(data, 1, out_sharding=P("x")).sharding.spec == P("x", None)
    assert plax.device_put(data, NamedSharding(emesh, P("x"))).sharding.spec == P("x")
    moved = plax.sharding.reshard(put(emesh, data), NamedSharding(emesh, P(None, "y")))
    assert moved.sharding.spec == P(None, "y") and spec_of(moved) == (None, "y")


def test_types_on_a_mesh_with_auto_axes_leave_those_axes_to_the_partitioner(data):
    # As JAX lowers types (results checked against JAX 0.10.2): a typed value's
    # constraint is open in every dimension to the Auto axes and holds the Explicit
    # axes its type does not name replicated, so an Auto split of the inputs survives.
    mixed = plax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Explicit, AxisType.Auto))
    x, w = put(mixed, data, "x", "y"), put(mixed, data.T @ data, None, "y")
    for f, want in ((lambda a, b: a * 2, data * 2), (lambda a, b: a @ b, data @ (data.T @ data))):
        out = plax.jit(f)(x, w)
        assert out.sharding.spec == P("x", "y") and spec_of(out) == ("x", None)
        np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5)
    grad = plax.jit(plax.grad(lambda b, a: ((a @ b) ** 2).sum()))(w, x)
    assert grad.sharding.spec == P(None, "y") and spec_of(grad) == (None, None)
    text = plax.jit(lambda a: a * 2).lower(x).as_text()
    assert 'sdy.sharding_constraint %1 <@mesh, [{"x", ?}, {?}]>' in text
    unsplit = put(mixed, data, None, "y")  # its type names no Explicit axis
    text = plax.jit(lambda a: a * 2).lower(unsplit).as_text()
    assert 'sdy.sharding_constraint %1 <@mesh, [{?}, {?}], replicated={"x"}>' in text

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
    assert plax.typeof(put(auto, data, "x", "y")).sharding is None
    assert plax.typeof(jnp.ones(3)).sharding is None


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
     "more than one dimension"),
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


def test_explicit_out_sharding_resolves_ambiguity(emesh, data):
    x = put(emesh, data, "x", "y")
    out = plax.jit(lambda a: plax.lax.reshape(a, (4, 2, 4), out_sharding=P("x", None, "y")))(x)
    assert spec_of(out) == ("x", None, "y")
    np.testing.assert_array_equal(np.asarray(out), data.reshape(4, 2, 4))


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
        inside.append((plax.typeof(b).sharding, plax.sharding.get_abstract_mesh().axis_types))
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
    assert plax.typeof(out).sharding is None
    np.testing.assert_allclose(np.asarray(out), data * 2)
    with pytest.raises(ValueError, match="not Explicit axes"):
        with plax.sharding.use_mesh(auto):
            plax.sharding.auto_axes(double, axes="x")(xa)
    with pytest.raises(TypeError, match="in_sharding"):
        plax.sharding.explicit_axes(double)
    with pytest.raises(ValueError, match="outside a mesh context"):
        plax.sharding.auto_axes(double)(x)


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
    assert len(jaxlib_sharding._device_assignment) == 8
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

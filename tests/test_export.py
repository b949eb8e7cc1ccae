"""plax.export: exporting jitted functions, calling and serializing `Exported`s,
symbolic (batch) dimensions, and the serialized format shared with JAX 0.10.2."""
import collections
import importlib.util
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import plax
from plax import export
from plax import numpy as jnp

requires_jax_export = pytest.mark.skipif(
    importlib.util.find_spec("jax") is None or importlib.util.find_spec("flatbuffers") is None,
    reason="JAX (with flatbuffers, which jax.export's serialization needs) is not installed")

f32 = np.float32


def _mlp(x, params):
    return {"y": jnp.tanh(x @ params["w"] + params["b"]), "n": (x * x).sum(axis=1)}


_W = np.linspace(-1, 1, 12, dtype=f32).reshape(3, 4)
_B = np.linspace(0, 1, 4, dtype=f32)


def _mlp_numpy(x):
    return {"y": np.tanh(x @ _W + _B), "n": (x * x).sum(axis=1)}


def _params():
    return {"w": _W, "b": _B}


@pytest.fixture(scope="module")
def static_exp():
    return export.export(plax.jit(_mlp))(plax.ShapeDtypeStruct((2, 3), f32), _params())


@pytest.fixture(scope="module")
def poly_exp():
    b, = export.symbolic_shape("b")
    spec = plax.ShapeDtypeStruct((b, 3), f32)
    return export.export(plax.jit(_mlp))(spec, _params())


def _x(n):
    return np.arange(3 * n, dtype=f32).reshape(n, 3) / 7


def _check_mlp(out, n):
    want = _mlp_numpy(_x(n))
    assert sorted(out) == ["n", "y"]
    for key in want:
        assert out[key].shape == want[key].shape
        np.testing.assert_allclose(np.asarray(out[key]), want[key], rtol=1e-5, atol=1e-6)


# --- Exported ----------------------------------------------------------------------------

def test_exported_fields(static_exp):
    exp = static_exp
    assert exp.fun_name == "_mlp"
    assert exp.in_tree == plax.tree_util.tree_structure(((0, {"b": 0, "w": 0}), {}))
    assert exp.out_tree == plax.tree_util.tree_structure({"n": 0, "y": 0})
    assert [a.str_short() for a in exp.in_avals] == ["f32[2,3]", "f32[4]", "f32[3,4]"]
    assert [a.str_short() for a in exp.out_avals] == ["f32[2]", "f32[2,4]"]
    assert exp.in_shardings_hlo == (None,) * 3 and exp.out_shardings_hlo == (None,) * 2
    assert exp.in_shardings_jax(None) == (None,) * 3
    assert exp.nr_devices == 1
    assert exp.platforms == (export.default_export_platform(),) == ("cpu",)
    assert (export.minimum_supported_calling_convention_version
            <= exp.calling_convention_version
            <= export.maximum_supported_calling_convention_version)
    assert exp.module_kept_var_idx == (0, 1, 2)
    assert not exp.uses_global_constants and exp.has_vjp()
    assert str(exp) == "Exported(fun_name=_mlp, ...)"
    text = exp.mlir_module()
    assert "func.func public @main(%arg0: tensor<2x3xf32>" in text
    assert "jax.uses_shape_polymorphism = false" in text
    assert 'jax.result_info = "result[\'y\']"' in text


def test_unused_inputs_are_dropped_from_the_module():
    exp = export.export(plax.jit(lambda x, unused, y: x * y))(f32(1), f32(2), f32(3))
    assert exp.module_kept_var_idx == (0, 2)
    assert len(exp.in_avals) == 3
    assert float(exp.call(f32(2), f32(100), f32(5))) == 10.0


def test_call_matches_numpy_eagerly_and_under_jit(static_exp):
    _check_mlp(static_exp.call(_x(2), _params()), 2)
    outer = plax.jit(lambda x: static_exp.call(2 * x, _params())["n"] + 1)
    np.testing.assert_allclose(outer(_x(2)), (4 * _x(2) ** 2).sum(1) + 1, rtol=1e-5)


def test_closed_over_constants_are_inlined():
    big = np.arange(300_000, dtype=f32)  # above the size jit passes as an argument
    exp = export.export(plax.jit(lambda x: (x + big).sum()))(f32(1))
    assert exp.module_kept_var_idx == (0,) and len(exp.in_avals) == 1
    np.testing.assert_allclose(exp.call(f32(2)), (big + 2).sum(dtype=np.float64), rtol=1e-5)


def test_serialize_round_trip(static_exp):
    blob = static_exp.serialize()
    assert isinstance(blob, bytearray)
    back = export.deserialize(blob)
    for field in ("fun_name", "in_tree", "out_tree", "in_avals", "out_avals", "nr_devices",
                  "platforms", "calling_convention_version", "module_kept_var_idx",
                  "uses_global_constants", "mlir_module_serialized", "in_shardings_hlo"):
        assert getattr(back, field) == getattr(static_exp, field), field
    _check_mlp(back.call(_x(2), _params()), 2)


def test_custom_pytree_nodes_need_registration():
    Pair = collections.namedtuple("Pair", "a b")
    exp = export.export(plax.jit(lambda p: Pair(p.b, p.a)))(Pair(f32(1), f32(2)))
    with pytest.raises(ValueError, match="unregistered type"):
        exp.serialize()
    export.register_namedtuple_serialization(Pair, serialized_name="test_export.Pair")
    with pytest.raises(ValueError, match="Duplicate serialization registration"):
        export.register_namedtuple_serialization(Pair, serialized_name="other")
    back = export.deserialize(exp.serialize())
    out = back.call(Pair(f32(1), f32(2)))
    assert type(out) is Pair and (float(out.a), float(out.b)) == (2.0, 1.0)
    ordered = export.export(plax.jit(lambda d: d["z"] - d["a"]))(
        collections.OrderedDict(z=f32(5), a=f32(1)))
    assert float(export.deserialize(ordered.serialize()).call(
        collections.OrderedDict(z=f32(5), a=f32(1)))) == 4.0


def test_grad_through_call_uses_the_exported_vjp():
    exp = export.export(plax.jit(lambda x, n: (jnp.sin(x) * x).sum() * n))(
        np.ones(3, f32), np.int32(1))
    assert exp.has_vjp()
    vjp = exp.vjp()
    assert [a.str_short() for a in vjp.in_avals] == ["f32[3]", "i32[]", "f32[]"]
    assert vjp.out_avals[0].str_short() == "f32[3]"
    assert vjp.out_avals[1].shape == () and vjp.out_avals[1].dtype == plax.dtypes.float0
    x = np.linspace(-1, 1, 3, dtype=f32)
    want = 2 * (np.cos(x) * x + np.sin(x))
    np.testing.assert_allclose(plax.grad(lambda x: exp.call(x, np.int32(2)))(x), want,
                               rtol=1e-5)
    back = export.deserialize(exp.serialize(vjp_order=2))
    np.testing.assert_allclose(plax.grad(lambda x: back.call(x, np.int32(2)))(x), want,
                               rtol=1e-5)
    second = plax.grad(plax.grad(lambda t: back.call(jnp.full(3, t), np.int32(1))))(f32(0.5))
    np.testing.assert_allclose(second, 3 * (2 * np.cos(0.5) - 0.5 * np.sin(0.5)), rtol=1e-5)
    without = export.deserialize(exp.serialize())
    assert not without.has_vjp()
    with pytest.raises(ValueError, match="has no VJP"):
        plax.grad(lambda x: without.call(x, np.int32(2)))(x)
    with pytest.raises(ValueError, match="high-enough order"):
        without.serialize(vjp_order=1)


def test_multi_platform_export_takes_a_platform_index():
    exp = export.export(plax.jit(jnp.sin), platforms=("cpu", "tpu"))(np.ones(3, f32))
    assert exp.platforms == ("cpu", "tpu") and exp.uses_global_constants
    assert 'jax.global_constant = "_platform_index"' in exp.mlir_module()
    np.testing.assert_allclose(exp.call(np.ones(3, f32)), np.sin(np.ones(3, f32)), rtol=1e-6)


def test_platform_dependent_lowerings_are_chosen_by_the_platform_index():
    a = np.array([[4, 2], [2, 3]], f32)
    exp = export.export(plax.jit(jnp.linalg.cholesky), platforms=("cuda", "cpu"))(a)
    text = exp.mlir_module()
    assert '"stablehlo.case"(%arg0)' in text
    assert "@_platform_cuda_main" in text and "@_platform_cpu_main" in text
    np.testing.assert_allclose(export.deserialize(exp.serialize()).call(a),
                               np.linalg.cholesky(a), rtol=1e-6)
    b, = export.symbolic_shape("b")
    poly = export.export(plax.jit(lambda x, m: jnp.tanh(x) @ jnp.linalg.cholesky(m)),
                         platforms=("cpu", "cuda"))(plax.ShapeDtypeStruct((b, 2), f32), a)
    x = np.linspace(-1, 1, 6, dtype=f32).reshape(3, 2)
    np.testing.assert_allclose(poly.call(x, a), np.tanh(x) @ np.linalg.cholesky(a),
                               rtol=1e-5)


# --- bad inputs ------------------------------------------------------------------------------

def test_call_with_wrong_arguments(static_exp):
    with pytest.raises(ValueError, match=r"Shape mismatch for args\[0\].shape\[0\] "
                                         r"\(expected same constant\): expected \(2, 3\)"):
        static_exp.call(_x(4), _params())
    with pytest.raises(ValueError, match=r"Dtype mismatch for args\[1\]\['b'\]: expected "
                                         "float32 and called with int32"):
        static_exp.call(_x(2), {"w": _W, "b": _B.astype(np.int32)})
    with pytest.raises(ValueError, match=r"Rank mismatch for args\[0\]"):
        static_exp.call(_x(2)[None], _params())
    with pytest.raises(ValueError, match="same pytree structure"):
        static_exp.call(_x(2))


def test_export_rejects_what_it_cannot_export():
    with pytest.raises(ValueError, match="must be the result of `jit`"):
        export.export(lambda x: jnp.sin(x))
    with pytest.raises(ValueError, match="unsupported platform 'foo'"):
        export.export(plax.jit(jnp.sin), platforms=["foo"])
    with pytest.raises(TypeError, match="sequence of platform names"):
        export.export(plax.jit(jnp.sin), platforms="cpu")


def test_platform_check_and_its_disabling():
    x = np.ones(3, f32)
    tpu_only = export.export(plax.jit(jnp.cos), platforms=["tpu"])(x)
    with pytest.raises(ValueError, match=r"exported for platforms '\('tpu',\)' but it is "
                                         r"used on '\('cpu',\)'"):
        tpu_only.call(x)
    allowed = export.export(plax.jit(jnp.cos), platforms=["tpu"],
                            disabled_checks=[export.DisabledSafetyCheck.platform()])(x)
    back = export.deserialize(allowed.serialize())
    assert back.disabled_safety_checks == (export.DisabledSafetyCheck.platform(),)
    np.testing.assert_allclose(back.call(x), np.cos(x), rtol=1e-6)


def test_deserialize_rejects_garbage():
    with pytest.raises(TypeError, match="bytes of a serialized Exported"):
        export.deserialize("not bytes")
    with pytest.raises(ValueError, match="not a serialized Exported"):
        export.deserialize(b"\xff\xff\xff\x7f" + bytes(8))
    with pytest.raises(ValueError, match="not a serialized Exported"):
        export.deserialize(b"\x01")


# --- sharded exports --------------------------------------------------------------------------

# What JAX 0.10.2 gives for the same program: the HloShardings of P('x', None) and
# P(None, 'y') on a 4 x 2 mesh ('x', 'y').
_HLO_X = "{devices=[4,1,2]<=[8] last_tile_dim_replicate}"
_HLO_Y = "{devices=[1,2,4]<=[4,2]T(1,0) last_tile_dim_replicate}"


def _sharded_fn(a, b):
    return a * 2, a.sum(0) + b


@pytest.fixture(scope="module")
def mesh42():
    return plax.make_mesh((4, 2), ("x", "y"))


@pytest.fixture(scope="module")
def sharded_exp(mesh42):
    from plax.sharding import NamedSharding, PartitionSpec as P
    fn = plax.jit(_sharded_fn, in_shardings=(NamedSharding(mesh42, P("x", None)), None),
                  out_shardings=(NamedSharding(mesh42, P(None, "y")), None))
    return export.export(fn)(plax.ShapeDtypeStruct((8, 4), f32),
                             plax.ShapeDtypeStruct((4,), f32))


def _a():
    return np.arange(32, dtype=f32).reshape(8, 4)


def _check_sharded_results(out, mesh):
    from plax.sharding import NamedSharding, PartitionSpec as P
    np.testing.assert_allclose(np.asarray(out[0]), 2 * _a())
    np.testing.assert_allclose(np.asarray(out[1]), _a().sum(0) + 1)
    assert out[0].sharding == NamedSharding(mesh, P(None, "y"))
    assert out[1].sharding.is_fully_replicated


def test_sharded_export_records_devices_and_shardings(sharded_exp, mesh42):
    from plax.sharding import NamedSharding, PartitionSpec as P
    exp = sharded_exp
    assert exp.nr_devices == 8
    # As in JAX 0.10.2: a fresh export keeps named shardings only ...
    assert exp.in_shardings_hlo == (None, None) and exp.out_shardings_hlo == (None, None)
    assert exp.in_shardings_jax(mesh42) == (NamedSharding(mesh42, P("x", None)), None)
    assert exp.out_shardings_jax(mesh42) == (NamedSharding(mesh42, P(None, "y")), None)
    abstract = exp.in_shardings_jax(mesh42.abstract_mesh)[0]
    assert abstract.mesh == mesh42.abstract_mesh and abstract.spec == P("x", None)
    text = exp.mlir_module()
    assert "mhlo.num_partitions = 8" in text
    assert 'sdy.mesh @mesh = <["x"=4, "y"=2]>' in text
    assert 'sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>' in text
    assert 'sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>' in text
    # ... and one read back from bytes has their HloShardings too.
    back = export.deserialize(exp.serialize())
    assert back.nr_devices == 8
    assert [str(s) for s in back.in_shardings_hlo] == [_HLO_X, "None"]
    assert [str(s) for s in back.out_shardings_hlo] == [_HLO_Y, "None"]
    assert back.in_shardings_jax(mesh42) == exp.in_shardings_jax(mesh42)
    assert back.out_shardings_jax(mesh42) == exp.out_shardings_jax(mesh42)


def test_sharded_call_runs_spmd_with_the_exported_shardings(sharded_exp, mesh42):
    back = export.deserialize(sharded_exp.serialize(vjp_order=1))
    for exp in (sharded_exp, back):
        a = plax.device_put(_a(), exp.in_shardings_jax(mesh42)[0])
        b = np.ones(4, f32)
        _check_sharded_results(exp.call(a, b), mesh42)
        _check_sharded_results(plax.jit(exp.call)(a, b), mesh42)
        loss = lambda a, exp=exp, b=b: (exp.call(a, b)[0] * _a()).sum()
        with pytest.raises(ValueError, match="enter your `jit` into a mesh context"):
            plax.grad(loss)(a)  # results typed on the Explicit mesh need it (as in JAX)
        with plax.set_mesh(mesh42):
            g = plax.grad(loss)(a)
        np.testing.assert_allclose(np.asarray(g), 2 * _a())
        assert g.sharding == exp.in_shardings_jax(mesh42)[0]
    vjp = sharded_exp.vjp()
    assert vjp.nr_devices == 8
    assert vjp.out_shardings_jax(mesh42) == (sharded_exp.in_shardings_jax(mesh42)[0], None)


def test_argument_shardings_come_from_shape_dtype_structs(mesh42):
    from plax.sharding import NamedSharding, PartitionSpec as P
    s = NamedSharding(mesh42, P("x", "y"))
    exp = export.export(plax.jit(jnp.sin))(plax.ShapeDtypeStruct((8, 4), f32, sharding=s))
    assert exp.nr_devices == 8 and exp.in_shardings_jax(mesh42) == (s,)
    # Over explicit axes the layout is part of the result's type, which JAX records.
    assert exp.out_shardings_jax(mesh42) == (s,)
    assert plax.jit(jnp.sin).trace(plax.ShapeDtypeStruct((8, 4), f32, sharding=s)
                                   ).jaxpr.in_avals[0].str_short() == "f32[8@x,4@y]"
    a = plax.device_put(_a(), s)
    out = exp.call(a)
    np.testing.assert_allclose(np.asarray(out), np.sin(_a()), rtol=1e-6)
    assert out.sharding.num_devices == 8


def test_polymorphic_sharded_export_keeps_its_result_layout(mesh42):
    from plax.sharding import NamedSharding, PartitionSpec as P
    b, = export.symbolic_shape("b")
    fn = plax.jit(lambda a: a * 2, in_shardings=NamedSharding(mesh42, P("x")),
                  out_shardings=NamedSharding(mesh42, P(None, "y")))
    exp = export.export(fn)(plax.ShapeDtypeStruct((4 * b, 4), f32))
    a = plax.device_put(_a(), exp.in_shardings_jax(mesh42)[0])
    back = export.deserialize(exp.serialize())
    for out in (exp.call(a), plax.jit(exp.call)(a), back.call(a)):
        np.testing.assert_allclose(np.asarray(out), 2 * _a())
        assert out.sharding == NamedSharding(mesh42, P(None, "y"))


def test_calls_keep_the_explicit_types_their_bodies_compute(mesh42):
    """Under explicit axes a call's results have its body's layouts (what makes the
    results of `Exported.call`, a custom_vjp, come out as exported), not the
    operands' as for an elementwise op."""
    from plax.sharding import NamedSharding, PartitionSpec as P, reshard
    a = plax.device_put(_a(), NamedSharding(mesh42, P("x")))

    def body(x):
        return reshard(x, NamedSharding(mesh42, P(None, "y"))) * 2
    with_jvp = plax.custom_jvp(body)
    with_jvp.defjvp(lambda primals, tangents: (with_jvp(*primals), tangents[0]))
    with_vjp = plax.custom_vjp(body)
    with_vjp.defvjp(lambda x: (with_vjp(x), None), lambda _, ct: (ct,))
    with_out_sharding = plax.jit(lambda x: x * 2,
                                 out_shardings=NamedSharding(mesh42, P(None, "y")))
    for fn in (plax.jit(body), with_jvp, with_vjp, with_out_sharding):
        out_aval = plax.make_jaxpr(lambda x, fn=fn: fn(x))(a).jaxpr.outvars[0].aval
        assert out_aval.str_short() == "f32[8,4@y]"
        assert plax.jit(fn)(a).sharding == NamedSharding(mesh42, P(None, "y"))


def test_sharded_export_runs_on_a_mesh_of_other_devices():
    """JAX's documented example: exported on one mesh, run on the devices reversed."""
    from plax.sharding import Mesh, NamedSharding, PartitionSpec as P
    exp_mesh = Mesh(plax.devices(), ("a",))
    exp = export.export(plax.jit(lambda x: x + x,
                                 in_shardings=NamedSharding(exp_mesh, P("a"))))(np.arange(8))
    run_mesh = Mesh(plax.devices()[::-1], ("a",))
    res = exp.call(plax.device_put(np.arange(8), exp.in_shardings_jax(run_mesh)[0]))
    assert [(s.device.id, s.index[0].start, int(np.asarray(s.data)[0]))
            for s in res.addressable_shards] == [(7 - i, i, 2 * i) for i in range(8)]


def test_sharded_export_errors(sharded_exp, mesh42):
    with pytest.raises(ValueError, match="exported for 8 devices and is called in a context "
                                         "with 1 devices"):
        sharded_exp.call(_a(), np.ones(4, f32))
    other = plax.make_mesh((2,), ("x",), devices=plax.devices()[:2])
    with pytest.raises(ValueError, match="does not match the mesh used for export"):
        sharded_exp.in_shardings_jax(other)
    swapped = plax.make_mesh((2, 4), ("y", "x"))
    with pytest.raises(ValueError, match="does not match the mesh used for export"):
        sharded_exp.out_shardings_jax(swapped)


# --- effects ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["debug.print", "io_callback", "pure_callback"])
def test_host_callbacks_cannot_be_exported(name):
    """As JAX 0.10.2: a module that calls back into this process is refused."""
    from plax.experimental import io_callback
    out = plax.ShapeDtypeStruct((3,), f32)
    fn = {"debug.print": lambda x: (plax.debug.print("x={}", x), x + 1)[1],
          "io_callback": lambda x: io_callback(lambda y: y, out, x, ordered=True),
          "pure_callback": lambda x: plax.pure_callback(lambda y: y, out, x)}[name]
    with pytest.raises(NotImplementedError,
                       match="serialization of host_callbacks is not yet implemented"):
        export.export(plax.jit(fn))(np.ones(3, f32))


class _TestOrderedEffect(plax.extend.core.Effect):
    """An ordered effect that JAX's rules can serialize: its class makes it again."""

    def __init__(self):
        super().__init__("TestOrdered", ordered=True)

    def __eq__(self, other):
        return type(other) is type(self)

    def __hash__(self):
        return hash(type(self))


_ORDERED = _TestOrderedEffect()
_effectful_p = plax.extend.core.Primitive("tests.export_ordered_effect")
_effectful_p.def_abstract_eval(lambda x: x)
_effectful_p.define_rule("effects", lambda: frozenset({_ORDERED}))
_effectful_p.def_lowering(lambda ctx, x: [x])
_unserializable_p = plax.extend.core.Primitive("tests.export_unserializable_effect")
_unserializable_p.def_abstract_eval(lambda x: x)
_unserializable_p.define_rule("effects", lambda: frozenset({
    plax.extend.core.Effect("TestUnordered")}))
_unserializable_p.def_lowering(lambda ctx, x: [x])


def test_effects_are_recorded_threaded_and_serialized():
    fn = plax.jit(lambda x: _effectful_p.bind(x) * 2)
    b, = export.symbolic_shape("b")
    for spec, n in ((plax.ShapeDtypeStruct((3,), f32), 3),
                    (plax.ShapeDtypeStruct((b,), f32), 5)):
        exp = export.export(fn)(spec)
        assert exp.ordered_effects == (_ORDERED,) and exp.unordered_effects == ()
        assert "%arg0: !stablehlo.token {jax.token = true}" in exp.mlir_module()
        back = export.deserialize(exp.serialize())
        assert back.ordered_effects == (_ORDERED,)
        np.testing.assert_allclose(back.call(np.ones(n, f32)), 2 * np.ones(n))
        twice = plax.jit(lambda x, back=back, exp=exp: back.call(x) + exp.call(x))
        np.testing.assert_allclose(twice(np.ones(n, f32)), 4 * np.ones(n))
        assert _ORDERED in plax.make_jaxpr(twice)(np.ones(n, f32)).jaxpr.effects


def test_effects_without_a_nullary_class_are_not_serializable():
    exp = export.export(plax.jit(lambda x: _unserializable_p.bind(x) + 1))(np.ones(2, f32))
    assert [str(e) for e in exp.unordered_effects] == ["TestUnordered"]
    np.testing.assert_allclose(exp.call(np.ones(2, f32)), [2, 2])
    with pytest.raises(NotImplementedError, match="must have a nullary class constructor"):
        exp.serialize()


# --- symbolic shapes --------------------------------------------------------------------------

def test_symbolic_shape_parsing_and_arithmetic():
    scope = export.SymbolicScope()
    b, c = export.symbolic_shape("b, c", scope=scope)
    assert export.is_symbolic_dim(b) and not export.is_symbolic_dim(3)
    assert export.symbolic_shape("(b, 2*b + 1, 3)", scope=scope) == (b, 2 * b + 1, 3)
    assert export.symbolic_shape("b, ...", scope=scope, like=(None, 4, 5)) == (b, 4, 5)
    assert export.symbolic_shape("_, c", scope=scope, like=(7, None)) == (7, c)
    # As JAX: each call without a scope makes a new one, whose dimensions are others.
    assert export.symbolic_shape("b")[0] != b and str(export.symbolic_shape("b")[0]) == "b"
    assert str(2 * b - c + 1) == "2*b - c + 1" and str(3 - b) == "-b + 3"
    assert (b + 1) - b == 1 and isinstance((b + 1) - b, int)
    assert b == b and b != c and b != 3 and hash(b) == hash(export.symbolic_shape("b")[0])
    assert b >= 1 and b + 1 > 1 and not (b < 1) and b - 1 >= 0
    with pytest.raises(export.InconclusiveDimensionOperation, match="inconclusive"):
        assert b >= 2
    with pytest.raises(export.InconclusiveDimensionOperation, match="requires a constant"):
        int(b)
    assert (6 * b + 3) // 3 == 2 * b + 1 and (3 * b) // b == 3 and (4 * b) % 2 == 0
    with pytest.raises(ValueError, match="no 'like' shape"):
        export.symbolic_shape("b, ...")
    with pytest.raises(ValueError, match="syntax error"):
        export.symbolic_shape("b +")
    with pytest.raises(ValueError, match="unknown function 'foo'"):
        export.symbolic_shape("foo(b, 2)")
    with pytest.raises(ValueError, match="'mod' takes two arguments"):
        export.symbolic_shape("mod(b)")
    specs = export.symbolic_args_specs((np.zeros((2, 3)), np.zeros(4, f32)), "b, ...",
                                       scope=scope)
    assert specs[0].shape == (b, 3) and specs[1].shape == (b,) and specs[1].dtype == f32


def test_non_linear_dimensions_as_jax_writes_them():
    """`//`, `%` that are not exact, and max/min that the bounds cannot decide, are
    terms of their own, printed, parsed and compared as JAX 0.10.2 does."""
    from plax.extend.core import max_dim, min_dim
    b, c = export.symbolic_shape("b, c")
    assert [str(d) for d in (b // 2, b % 2, max_dim(b, c), min_dim(b, 4),
                             2 * ((b + 1) // 2))] == [
        "floordiv(b, 2)", "mod(b, 2)", "max(b, c)", "min(b, 4)", "2*floordiv(b + 1, 2)"]
    assert export.symbolic_shape("floordiv(b, 2), mod(b, 3), max(b, c), min(b, 4)",
                                 scope=b.scope) == (
        b // 2, b % 3, max_dim(b, c), min_dim(b, 4))
    assert max_dim(b, 1) == b and min_dim(b + 1, b) == b and (2 * b) // 2 == b
    assert b % 3 < 3 and b % 3 >= 0 and (b + 1) // 2 >= 1 and max_dim(b, c) >= c
    with pytest.raises(export.InconclusiveDimensionOperation, match="inconclusive"):
        assert b // 2 >= 1
    with pytest.raises(ZeroDivisionError):
        assert b // 0
    env = {"b": 7, "c": 2}
    assert [d.evaluate(env) for d in (b // 2, (-b) % 4, max_dim(b, c), min_dim(c, 4))] == [
        3, 1, 7, 2]


def test_products_of_dimension_variables():
    b, c = export.symbolic_shape("b, c")
    assert [str(d) for d in (b * c, c * b, b * b, b * c * b, (b * c) // c, (b * c) // 2)] == [
        "b*c", "b*c", "b^2", "b^2*c", "b", "floordiv(b*c, 2)"]
    assert export.symbolic_shape("b*c, b^2, 2*b*c", scope=b.scope) == (b * c, b * b, 2 * b * c)
    assert (2 * b * c + 4 * b) // (2 * b) == c + 2 and b * c >= 1
    with pytest.raises(export.InconclusiveDimensionOperation, match="inconclusive"):
        assert b * c >= b + 1
    flat = export.export(plax.jit(lambda x: x.reshape(-1) * 2))(
        plax.ShapeDtypeStruct((b, c), f32))
    assert [str(a.shape) for a in flat.out_avals] == ["(b*c,)"]
    back = export.deserialize(flat.serialize())
    x = np.arange(12, dtype=f32).reshape(4, 3)
    np.testing.assert_allclose(back.call(x), 2 * x.reshape(-1))
    with pytest.raises(ValueError, match=r"Cannot solve for values of dimension variables "
                                         r"\{'b'\}"):
        export.export(plax.jit(lambda x: x))(
            plax.ShapeDtypeStruct(export.symbolic_shape("b^2"), f32))


def test_powers_of_dimension_variables():
    b, c = export.symbolic_shape("b, c")
    assert [str(d) for d in (b ** 2, (b + 1) ** 2, b ** 1, (b * c) ** 2.0)] == [
        "b^2", "2*b + b^2 + 1", "b", "b^2*c^2"]
    assert b ** 0 == 1
    with pytest.raises(ValueError, match="negative powers: 'b' \\*\\* '-1'"):
        b ** -1
    with pytest.raises(ValueError, match="non-integer powers: 'b' \\*\\* '0.5'"):
        b ** 0.5
    with pytest.raises(NotImplementedError, match="modulus"):
        pow(b, 2, 3)
    # A symbolic exponent, or a symbolic power of a number, is a value computed when
    # the module runs, as in JAX.
    exp = export.export(plax.jit(lambda x: (jnp.ones(x.shape[0] ** 2), x * 2 ** x.shape[0],
                                            x.shape[0] ** x.shape[0])))(
        plax.ShapeDtypeStruct((b,), f32))
    assert [str(a.shape) for a in exp.out_avals] == ["(b^2,)", "(b,)", "()"]
    ones, scaled, self_power = exp.call(np.ones(3, f32))
    assert ones.shape == (9,) and int(self_power) == 27
    np.testing.assert_allclose(scaled, np.full(3, 8, f32))


def test_weak_types_are_kept_in_memory_and_dropped_by_serialization():
    """As JAX's Exported: its serialized form has no weak types."""
    exp = export.export(plax.jit(lambda x: (x * 2, x.astype(f32))))(
        plax.ShapeDtypeStruct((), f32, weak_type=True))
    assert [a.weak_type for a in (*exp.in_avals, *exp.out_avals)] == [True, True, False]
    back = export.deserialize(exp.serialize())
    assert [a.weak_type for a in (*back.in_avals, *back.out_avals)] == [False] * 3
    assert [float(v) for v in back.call(1.5)] == [3.0, 1.5]


@pytest.mark.parametrize("n", [1, 6, 7])
def test_non_linear_output_shapes_run_in_plax_and_their_round_trip(n):
    from plax.extend.core import max_dim
    b, = export.symbolic_shape("b")
    fn = plax.jit(lambda x: (jnp.zeros((x.shape[0] // 2, max_dim(x.shape[0], 4))),
                             jnp.ones(((-x.shape[0]) % 4,))))
    exp = export.export(fn)(plax.ShapeDtypeStruct((b,), f32))
    assert [str(a.shape) for a in exp.out_avals] == ["(floordiv(b, 2), max(b, 4))",
                                                     "(mod(-b, 4),)"]
    back = export.deserialize(exp.serialize())
    assert str(back.out_avals) == str(exp.out_avals)
    x = np.arange(n, dtype=f32)
    for out in (exp.call(x), back.call(x), plax.jit(back.call)(x)):
        assert out[0].shape == (n // 2, max(n, 4)) and out[1].shape == ((-n) % 4,)
    with pytest.raises(ValueError, match=r"Cannot solve for values of dimension variables "
                                         r"\{'b'\}.*'floordiv\(b, 2\)'"):
        export.export(plax.jit(lambda x: x))(
            plax.ShapeDtypeStruct(export.symbolic_shape("floordiv(b, 2)"), f32))


def test_polymorphic_export_module(poly_exp):
    assert [str(a.shape) for a in poly_exp.in_avals] == ["(b, 3)", "(4,)", "(3, 4)"]
    assert [str(a.shape) for a in poly_exp.out_avals] == ["(b,)", "(b, 4)"]
    assert poly_exp.uses_global_constants
    text = poly_exp.mlir_module()
    assert "jax.uses_shape_polymorphism = true" in text
    assert "func.func public @main(%arg0: tensor<?x3xf32>" in text
    assert "stablehlo.get_dimension_size %arg0, dim = 0" in text
    assert "stablehlo.custom_call @shape_assertion" in text
    assert 'func.func private @_wrapped_jax_export_main(%arg0: tensor<i32> ' \
           '{jax.global_constant = "b"}' in text


@pytest.mark.parametrize("n", [1, 2, 5])
def test_polymorphic_call_matches_numpy(poly_exp, n):
    _check_mlp(poly_exp.call(_x(n), _params()), n)


def test_polymorphic_call_checks_shapes(poly_exp):
    with pytest.raises(ValueError, match=r"Shape mismatch for args\[0\].shape\[1\]"):
        poly_exp.call(np.zeros((2, 4), f32), _params())
    b, = export.symbolic_shape("b")
    two = export.export(plax.jit(lambda x, y: x + y))(plax.ShapeDtypeStruct((b,), f32),
                                                        plax.ShapeDtypeStruct((b,), f32))
    with pytest.raises(ValueError, match=r"args\[1\].shape\[0\] is 3, but 'b' = 2"):
        two.call(np.zeros(2, f32), np.zeros(3, f32))
    with pytest.raises(ValueError, match="Expected value >= 1 for dimension variable 'b'"):
        two.call(np.zeros(0, f32), np.zeros(0, f32))


def test_variables_solved_from_linear_dimensions():
    """As JAX: a variable is solved from a dimension where it is the only unknown with
    an integer coefficient (`2*b`, `b + 1`, then `2*b + c` once `b` is known)."""
    two_b = export.export(plax.jit(lambda x: x.reshape(x.shape[0] // 2, 2).sum(1)))(
        plax.ShapeDtypeStruct(export.symbolic_shape("2*b"), f32))
    assert [str(a.shape) for a in two_b.out_avals] == ["(b,)"]
    back = export.deserialize(two_b.serialize())
    for exp in (two_b, back):
        np.testing.assert_allclose(exp.call(np.arange(6, dtype=f32)), [1, 5, 9])
        with pytest.raises(ValueError, match=r"Division had remainder 1 when computing the "
                                             r"value of 'b'. Using the following polymorphic "
                                             r"shapes specifications: args\[0\].shape = "
                                             r"\(2\*b,\)"):
            exp.call(np.arange(7, dtype=f32))
    b_plus = export.export(plax.jit(lambda x, y: (x * 3, y * 2)))(
        *(plax.ShapeDtypeStruct((s,), f32) for s in export.symbolic_shape("b + 1, 2*b + c")))
    assert [str(a.shape) for a in b_plus.out_avals] == ["(b + 1,)", "(2*b + c,)"]
    x, y = b_plus.call(np.arange(4, dtype=f32), np.ones(8, f32))  # b = 3, c = 2
    np.testing.assert_allclose(x, [0, 3, 6, 9])
    np.testing.assert_allclose(y, 2 * np.ones(8))
    with pytest.raises(ValueError, match=r"Expected value >= 1 for dimension variable 'b'.*"
                                         r"'b' = 0 from specification 'b \+ 1' for dimension "
                                         r"args\[0\].shape\[0\] \(= 1\)"):
        b_plus.call(np.arange(1, dtype=f32), np.ones(3, f32))
    with pytest.raises(ValueError, match=r"Expected value >= 1 for dimension variable 'c'"):
        b_plus.call(np.arange(4, dtype=f32), np.ones(6, f32))
    # Called on static shapes under jit, the module's own assertions check the sizes.
    np.testing.assert_allclose(plax.jit(two_b.call)(np.arange(4, dtype=f32)), [1, 5])
    nested = export.export(plax.jit(two_b.call))(
        plax.ShapeDtypeStruct(export.symbolic_shape("2*n"), f32))
    assert [str(a.shape) for a in nested.out_avals] == ["(n,)"]
    np.testing.assert_allclose(nested.call(np.arange(4, dtype=f32)), [1, 5])


def test_unsolvable_dimension_variables_are_a_value_error():
    with pytest.raises(ValueError, match=r"Cannot solve for values of dimension variables "
                                         r"\{'b', 'c'\}. We can only solve linear "
                                         r"uni-variate constraints.*Unprocessed "
                                         r"specifications: '2\*b \+ c' for dimension size "
                                         r"args\[0\].shape\[0\]"):
        export.export(plax.jit(lambda x: x))(
            plax.ShapeDtypeStruct(export.symbolic_shape("2*b + c"), f32))


def test_polymorphic_round_trip_and_nesting(poly_exp):
    back = export.deserialize(poly_exp.serialize())
    assert str((back.in_avals, back.out_avals)) == str((poly_exp.in_avals, poly_exp.out_avals))
    _check_mlp(back.call(_x(3), _params()), 3)
    # A polymorphic export calling another one stays polymorphic.
    b, = export.symbolic_shape("b")
    outer = export.export(plax.jit(lambda x: back.call(x, _params())["n"] * 2))(
        plax.ShapeDtypeStruct((b, 3), f32))
    assert [a.shape for a in outer.out_avals] == [(b,)]
    np.testing.assert_allclose(outer.call(_x(4)), 2 * _mlp_numpy(_x(4))["n"], rtol=1e-5)


_POLY_PROGRAMS = {
    "flatten": lambda x: x.reshape(-1),
    "reshape": lambda x: x.reshape((x.shape[0], 3, 1)) * 2,
    "transpose": lambda x: x.T @ x,
    "concatenate": lambda x: jnp.concatenate([x, -x], axis=0),
    "slice_and_expand": lambda x: x[:, 1:, None] * x[:, None, :2],
    "creation": lambda x: jnp.where(x > 0, jnp.ones(x.shape), jnp.zeros_like(x)),
    "softmax": lambda x: jnp.exp(x) / jnp.exp(x).sum(axis=-1, keepdims=True),
    "inner_jit_and_cond": lambda x: plax.lax.cond(True, plax.jit(lambda y: y * 3),
                                                  lambda y: y, x),
    "sort_and_max": lambda x: jnp.sort(x, axis=0).max(axis=0),
    "grad": plax.grad(lambda x: (jnp.sin(x) ** 2).sum()),
    "vmap": plax.vmap(lambda row: row @ row),
}


@pytest.mark.parametrize("name", sorted(_POLY_PROGRAMS))
def test_polymorphic_programs_match_their_concrete_versions(name):
    fn = _POLY_PROGRAMS[name]
    b, = export.symbolic_shape("b")
    exp = export.export(plax.jit(fn))(plax.ShapeDtypeStruct((b, 3), f32))
    assert any(export.is_symbolic_dim(d) for a in exp.out_avals for d in a.shape) or \
        name in ("transpose", "sort_and_max")
    for n in (1, 4):
        x = np.linspace(-2, 2, 3 * n, dtype=f32).reshape(n, 3)
        np.testing.assert_allclose(np.asarray(exp.call(x)), np.asarray(fn(x)), rtol=1e-5,
                                   atol=1e-6)


def _static_only_lowering(ctx, x):
    """A lowering written for static shapes only: its result type takes the sizes as ints."""
    from plax.extend.mlir import hlo, ir
    out_type = ir.RankedTensorType.get(list(ctx.avals_out[0].shape), ir.F32Type.get())
    return [hlo.convert(out_type, x)]


_static_only_p = plax.extend.core.Primitive("tests.export_static_only")
_static_only_p.def_abstract_eval(lambda x: x)
_static_only_p.def_lowering(_static_only_lowering)


def test_symbolic_dimension_in_a_constant_context_is_a_clear_error():
    b, = export.symbolic_shape("b")
    with pytest.raises(NotImplementedError, match=r"lowering of 'export_static_only' on "
                                                  r"cpu does not support symbolic dimensions"
                                                  r".*f32\[b,2,2\]"):
        export.export(plax.jit(_static_only_p.bind))(plax.ShapeDtypeStruct((b, 2, 2), f32))
    with pytest.raises(export.InconclusiveDimensionOperation, match="'b'"):
        export.export(plax.jit(lambda x: jnp.zeros(int(x.shape[0]))))(
            plax.ShapeDtypeStruct((b,), f32))


# --- other processes ------------------------------------------------------------------------

def _run(lib: str, script: str, tmp_path) -> None:
    path = tmp_path / f"{lib}_script.py"
    path.write_text(textwrap.dedent(script))
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, str(path), str(tmp_path)], capture_output=True,
                          text=True, env=env, timeout=300)
    if proc.returncode:
        raise AssertionError(f"the {lib} subprocess failed:\n{proc.stderr[-3000:]}")


_CALL_PLAX_BLOBS = """
    import sys, pathlib
    import numpy as np
    import {lib}
    from {lib} import export
    from {lib}.sharding import PartitionSpec
    tmp = pathlib.Path(sys.argv[1])
    p = {{"w": np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4),
         "b": np.linspace(0, 1, 4, dtype=np.float32)}}
    results = {{}}
    for name in ("static", "poly"):
        exp = export.deserialize(bytearray((tmp / f"{{name}}.bin").read_bytes()))
        results[name + "_avals"] = np.array([str(a.shape) for a in exp.in_avals])
        for n in ((2,) if name == "static" else (1, 3)):
            x = np.arange(3 * n, dtype=np.float32).reshape(n, 3) / 7
            out = exp.call(x, p)
            results[f"{{name}}_{{n}}_y"], results[f"{{name}}_{{n}}_n"] = out["y"], out["n"]
    grad_exp = export.deserialize(bytearray((tmp / "grad.bin").read_bytes()))
    results["grad"] = {lib}.grad(lambda x: grad_exp.call(x, p)["n"].sum())(
        np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3))
    keyed = export.deserialize(bytearray((tmp / "key.bin").read_bytes()))
    results["key"] = keyed.call({lib}.random.key(7))
    chol = export.deserialize(bytearray((tmp / "chol.bin").read_bytes()))
    results["chol"] = chol.call(np.array([[4, 2], [2, 3]], np.float32))
    nonlinear = export.deserialize(bytearray((tmp / "nonlinear.bin").read_bytes()))
    first, second = nonlinear.call(np.arange(10, dtype=np.float32), np.ones((5, 2), np.float32))
    results["nonlinear_0"], results["nonlinear_1_shape"] = first, np.array(second.shape)
    try:
        nonlinear.call(np.arange(9, dtype=np.float32), np.ones((4, 2), np.float32))
    except ValueError as err:
        results["nonlinear_error"] = np.array(str(err))
    sharded = export.deserialize(bytearray((tmp / "sharded.bin").read_bytes()))
    mesh = {lib}.make_mesh((4, 2), ("x", "y"))
    a = {lib}.device_put(np.arange(32, dtype=np.float32).reshape(8, 4),
                         sharded.in_shardings_jax(mesh)[0])
    out = sharded.call(a, np.ones(4, np.float32))
    results["sharded_0"], results["sharded_1"] = out
    results["sharded_info"] = np.array([
        out[0].sharding.spec == PartitionSpec(None, "y"), out[1].sharding.is_fully_replicated,
        sharded.nr_devices, str(sharded.in_shardings_hlo[0]),
        str(sharded.out_shardings_hlo[0])])
    np.savez(tmp / "{lib}_results.npz", **results)
"""


def _write_plax_blobs(tmp_path, static_exp, poly_exp, sharded_exp):
    from plax.extend.core import max_dim
    (tmp_path / "sharded.bin").write_bytes(sharded_exp.serialize())
    nonlinear = plax.jit(lambda x, y: (x.reshape(x.shape[0] // 2, 2).sum(1) + y.sum(),
                                       jnp.zeros((x.shape[0] // 3, max_dim(x.shape[0], 4)))))
    scope = export.SymbolicScope()
    (tmp_path / "nonlinear.bin").write_bytes(export.export(nonlinear)(
        *(plax.ShapeDtypeStruct(export.symbolic_shape(s, scope=scope), f32)
          for s in ("2*b", "b, c"))).serialize())
    (tmp_path / "static.bin").write_bytes(static_exp.serialize())
    (tmp_path / "poly.bin").write_bytes(poly_exp.serialize())
    (tmp_path / "grad.bin").write_bytes(poly_exp.serialize(vjp_order=1))
    chol = export.export(plax.jit(jnp.linalg.cholesky), platforms=("cuda", "cpu"))(
        np.eye(2, dtype=f32))
    (tmp_path / "chol.bin").write_bytes(chol.serialize())
    keyed = export.export(plax.jit(lambda k: plax.random.uniform(k, (3,))))(
        plax.random.key(0))
    (tmp_path / "key.bin").write_bytes(keyed.serialize())


def _check_blob_results(path):
    with np.load(path) as data:
        for name, sizes in (("static", (2,)), ("poly", (1, 3))):
            for n in sizes:
                _check_mlp({"y": data[f"{name}_{n}_y"], "n": data[f"{name}_{n}_n"]}, n)
        x = np.linspace(-1, 1, 6, dtype=f32).reshape(2, 3)
        np.testing.assert_allclose(data["grad"], 2 * x, rtol=1e-5)
        np.testing.assert_allclose(data["key"], plax.random.uniform(plax.random.key(7), (3,)))
        np.testing.assert_allclose(data["chol"], np.linalg.cholesky(
            np.array([[4, 2], [2, 3]], f32)), rtol=1e-6)
        np.testing.assert_allclose(data["nonlinear_0"], [11, 15, 19, 23, 27])
        assert list(data["nonlinear_1_shape"]) == [3, 10]
        assert "Input shapes do not match the polymorphic shapes specification" in str(
            data["nonlinear_error"])
        np.testing.assert_allclose(data["sharded_0"], 2 * _a())
        np.testing.assert_allclose(data["sharded_1"], _a().sum(0) + 1)
        assert list(data["sharded_info"]) == ["True", "True", "8", _HLO_X, _HLO_Y]
        return dict(data)


@pytest.fixture(scope="module")
def plax_blobs(tmp_path_factory, static_exp, poly_exp, sharded_exp):
    """A folder with plax's serialized exports (written once for the processes below)."""
    path = tmp_path_factory.mktemp("export_blobs")
    _write_plax_blobs(path, static_exp, poly_exp, sharded_exp)
    return path


@pytest.fixture(scope="module")
def jax_process(plax_blobs):
    """One JAX process (they are slow to start) that calls plax's exports, then writes
    its own beside them (`_JAX_EXPORTS`)."""
    _run("jax", _CALL_PLAX_BLOBS.format(lib="jax") + _JAX_EXPORTS, plax_blobs)
    return plax_blobs


def test_exported_runs_in_another_plax_process(plax_blobs):
    _run("plax", _CALL_PLAX_BLOBS.format(lib="plax"), plax_blobs)
    _check_blob_results(plax_blobs / "plax_results.npz")


@requires_jax_export
def test_plax_exports_deserialize_and_run_in_jax(jax_process):
    data = _check_blob_results(jax_process / "jax_results.npz")
    assert list(data["poly_avals"]) == ["(b, 3)", "(4,)", "(3, 4)"]


_JAX_EXPORTS = """
    import collections, sys, pathlib
    import numpy as np
    import jax
    import jax.numpy as jnp
    from jax import export
    tmp = pathlib.Path(sys.argv[1])
    def mlp(x, params):
        return {"y": jnp.tanh(x @ params["w"] + params["b"]), "n": (x * x).sum(axis=1)}
    p = {"w": jax.ShapeDtypeStruct((3, 4), np.float32),
         "b": jax.ShapeDtypeStruct((4,), np.float32)}
    b, = export.symbolic_shape("b")
    exports = {
        "static": export.export(jax.jit(mlp))(jax.ShapeDtypeStruct((2, 3), np.float32), p),
        "poly": export.export(jax.jit(mlp))(jax.ShapeDtypeStruct((b, 3), np.float32), p),
        "unused": export.export(jax.jit(lambda x, u, y: (x - y, None)))(
            np.float32(0), np.float32(0), np.float32(0)),
        "multi": export.export(jax.jit(jnp.exp), platforms=("cpu", "cuda"))(
            np.zeros(3, np.float32)),
    }
    for name, exp in exports.items():
        (tmp / f"jax_{name}.bin").write_bytes(exp.serialize())
    (tmp / "jax_grad.bin").write_bytes(exports["poly"].serialize(vjp_order=1))
    keyed = export.export(jax.jit(lambda k: jax.random.normal(k, (2,))))(jax.random.key(0))
    (tmp / "jax_key.bin").write_bytes(keyed.serialize())
    from jax.sharding import NamedSharding, PartitionSpec as P
    mesh = jax.make_mesh((4, 2), ("x", "y"))
    sharded = jax.jit(lambda a, b: (a * 2, a.sum(0) + b),
                      in_shardings=(NamedSharding(mesh, P("x", None)), None),
                      out_shardings=(NamedSharding(mesh, P(None, "y")), None))
    (tmp / "jax_sharded.bin").write_bytes(export.export(sharded)(
        jax.ShapeDtypeStruct((8, 4), np.float32), jax.ShapeDtypeStruct((4,), np.float32)
        ).serialize())
    nonlinear = jax.jit(lambda x: (jnp.zeros((x.shape[0] // 3, jax.core.max_dim(x.shape[0], 4))),
                                   x[: x.shape[0] % 4], x.reshape(-1, 2)))
    (tmp / "jax_nonlinear.bin").write_bytes(export.export(nonlinear)(
        jax.ShapeDtypeStruct(export.symbolic_shape("2*n"), np.float32)).serialize())
    auto = jax.make_mesh((4, 2), ("x", "y"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
    sine = jax.jit(jnp.sin, in_shardings=NamedSharding(auto, P("x")),
                   out_shardings=NamedSharding(auto, P(None, "y")))
    (tmp / "jax_sine.bin").write_bytes(export.export(sine)(
        jax.ShapeDtypeStruct((8, 4), np.float32)).serialize(vjp_order=1))
    # a stablehlo.dynamic_reduce_window, whose reducer is a public function
    windows = jax.jit(lambda x: jnp.cumsum(x) + jax.lax.cummax(x, reverse=True))
    (tmp / "jax_windows.bin").write_bytes(export.export(windows)(
        jax.ShapeDtypeStruct((b,), np.float32)).serialize())
"""


@requires_jax_export
def test_jax_exports_deserialize_and_run_in_plax(jax_process):
    tmp_path = jax_process
    load = {name: export.deserialize((tmp_path / f"jax_{name}.bin").read_bytes())
            for name in ("static", "poly", "unused", "multi")}
    static, poly = load["static"], load["poly"]
    assert static.fun_name == "mlp" and static.platforms == ("cpu",)
    assert static.in_tree == plax.tree_util.tree_structure(((0, {"b": 0, "w": 0}), {}))
    assert [str(a.shape) for a in poly.in_avals] == ["(b, 3)", "(4,)", "(3, 4)"]
    assert [str(a.shape) for a in poly.out_avals] == ["(b,)", "(b, 4)"]
    assert poly.uses_global_constants and not static.uses_global_constants
    _check_mlp(static.call(_x(2), _params()), 2)
    for n in (1, 4):
        _check_mlp(poly.call(_x(n), _params()), n)
    _check_mlp(plax.jit(lambda x: poly.call(x, _params()))(_x(3)), 3)
    unused = load["unused"]
    assert unused.module_kept_var_idx == (0, 2)
    diff, none = unused.call(f32(5), f32(9), f32(2))
    assert float(diff) == 3.0 and none is None
    multi = load["multi"]
    assert multi.platforms == ("cpu", "cuda")
    np.testing.assert_allclose(multi.call(np.ones(3, f32)), np.exp(np.ones(3, f32)), rtol=1e-6)
    with pytest.raises(ValueError, match="Shape mismatch"):
        static.call(_x(3), _params())
    keyed = export.deserialize((tmp_path / "jax_key.bin").read_bytes())
    assert str(keyed.in_avals[0].dtype) == "key<fry>"
    k = plax.random.key(3)
    np.testing.assert_allclose(keyed.call(k), plax.random.normal(k, (2,)))  # bit-exact PRNG
    np.testing.assert_allclose(plax.jit(lambda k: keyed.call(k) - keyed.call(k))(k), 0)
    grad_exp = export.deserialize((tmp_path / "jax_grad.bin").read_bytes())
    assert grad_exp.has_vjp() and not poly.has_vjp()
    x = _x(3)
    g = plax.grad(lambda x: grad_exp.call(x, _params())["y"].sum())(x)
    np.testing.assert_allclose(g, (1 - np.tanh(x @ _W + _B) ** 2) @ _W.T, rtol=1e-5,
                               atol=1e-6)
    sharded = export.deserialize((tmp_path / "jax_sharded.bin").read_bytes())
    mesh = plax.make_mesh((4, 2), ("x", "y"))
    assert sharded.nr_devices == 8
    assert [str(s) for s in sharded.in_shardings_hlo] == [_HLO_X, "None"]
    assert [str(s) for s in sharded.out_shardings_hlo] == [_HLO_Y, "None"]
    a = plax.device_put(_a(), sharded.in_shardings_jax(mesh)[0])
    _check_sharded_results(sharded.call(a, np.ones(4, f32)), mesh)
    sine = export.deserialize((tmp_path / "jax_sine.bin").read_bytes())
    auto = plax.make_mesh((4, 2), ("x", "y"), axis_types=(plax.sharding.AxisType.Auto,) * 2)
    a = plax.device_put(_a(), sine.in_shardings_jax(auto)[0])
    assert sine.call(a).sharding == sine.out_shardings_jax(auto)[0]
    g = plax.grad(lambda a: sine.call(a).sum())(a)
    np.testing.assert_allclose(np.asarray(g), np.cos(_a()), rtol=1e-5)
    assert g.sharding == sine.in_shardings_jax(auto)[0] and sine.vjp().nr_devices == 8
    nonlinear = export.deserialize((tmp_path / "jax_nonlinear.bin").read_bytes())
    assert [str(a.shape) for a in nonlinear.out_avals] == [
        "(floordiv(2*n, 3), max(2*n, 4))", "(min(2*n, mod(2*n, 4)),)", "(n, 2)"]
    for n in (1, 5):
        x = np.arange(2 * n, dtype=f32)
        zeros, head, pairs = nonlinear.call(x)
        assert zeros.shape == (2 * n // 3, max(4, 2 * n))
        np.testing.assert_allclose(head, x[: (2 * n) % 4])
        np.testing.assert_allclose(pairs, x.reshape(n, 2))
    with pytest.raises(ValueError, match="Division had remainder 1"):
        nonlinear.call(np.arange(3, dtype=f32))


@requires_jax_export
def test_jax_dynamic_reduce_window_runs_in_plax(jax_process):
    windows = export.deserialize((jax_process / "jax_windows.bin").read_bytes())
    for n in (1, 5):
        x = np.linspace(-1, 2, n, dtype=f32)
        want = np.cumsum(x) + np.maximum.accumulate(x[::-1])[::-1]
        np.testing.assert_allclose(windows.call(x), want, rtol=1e-6)
        np.testing.assert_allclose(plax.jit(lambda y: windows.call(y) + windows.call(y))(x),
                                   2 * want, rtol=1e-6)

"""jit over several devices: in/out shardings, propagation, with_sharding_constraint,
AbstractMesh caching (counted with plax.monitoring), errors, stages, memory kinds."""
import collections
import logging

import numpy as np
import pytest

import plax
from plax.extend import config
from plax.sharding import AbstractMesh, Mesh, NamedSharding, PartitionSpec as P

wsc = plax.lax.with_sharding_constraint
EVENTS = {"/jax/core/compile/jaxpr_trace_duration": "trace",
          "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
          "/jax/core/compile/backend_compile_duration": "compile"}


@pytest.fixture
def counts():
    """How many traces, lowerings and backend compiles happen, from plax.monitoring."""
    seen = collections.Counter()

    def listener(event, duration, **kwargs):
        if event in EVENTS:
            assert duration >= 0 and "fun_name" in kwargs
            seen[EVENTS[event]] += 1

    plax.monitoring.register_event_duration_secs_listener(listener)
    yield seen
    plax.monitoring.unregister_event_duration_listener(listener)


@pytest.fixture(scope="module")
def meshes(devs):
    return Mesh(devs[:2], "x"), Mesh(devs[2:4], "x")


def f32(*shape):
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)


# --- in/out shardings --------------------------------------------------------------------

def test_matmul_with_in_and_out_shardings(mesh):
    a, b = f32(8, 4), f32(4, 8)
    out = NamedSharding(mesh, P("x", "y"))
    f = plax.jit(lambda a, b: a @ b, in_shardings=(NamedSharding(mesh, P("x", None)),
                                                   NamedSharding(mesh, P(None, "y"))),
                 out_shardings=out)
    r = f(a, b)
    np.testing.assert_allclose(np.asarray(r), a @ b)
    assert r.sharding == out and r.committed
    text = f.lower(a, b).as_text()
    assert 'sdy.mesh @mesh = <["x"=2, "y"=4]>' in text
    assert '#sdy.sharding<@mesh, [{"x"}, {}]>' in text and "mhlo.num_partitions = 8" in text
    compiled = f.lower(a, b).compile()
    assert compiled.output_shardings == out
    assert compiled.input_shardings[0][1] == NamedSharding(mesh, P(None, "y"))


def test_propagation_without_out_shardings(mesh):
    a = plax.device_put(f32(8, 4), NamedSharding(mesh, P("x", None)))
    b = plax.device_put(f32(4, 8), NamedSharding(mesh, P(None, "y")))
    r = plax.jit(lambda a, b: a @ b)(a, b)
    assert r.sharding == NamedSharding(mesh, P("x", "y"))  # the partitioner's choice
    np.testing.assert_allclose(np.asarray(r), f32(8, 4) @ f32(4, 8))
    s = plax.jit(lambda a: a.sum())(a)  # a reduction comes back replicated
    assert s.sharding.is_fully_replicated and float(s) == f32(8, 4).sum()


@pytest.mark.parametrize("shardy", [True, False])
def test_hoisted_constants_are_replicated_on_every_device(mesh, shardy):
    c = np.arange(32.0, dtype=np.float32).reshape(4, 8)  # big enough to be an argument
    a = plax.device_put(f32(4, 8), NamedSharding(mesh, P("x", None)))
    with config.use_shardy_partitioner(shardy):
        r = plax.jit(lambda a: a + plax.numpy.array(c))(a)
    np.testing.assert_array_equal(np.asarray(r), f32(4, 8) + c)


def test_outputs_reuse_the_inputs_sharding_objects_on_the_fast_path(mesh):
    s = NamedSharding(mesh, P("x"))
    x = plax.device_put(f32(8, 2), s)
    f = plax.jit(lambda v: v * 2)
    y = f(x)
    assert y.sharding is s
    z = f(y)
    assert z.sharding is s and len(f._fast_entries()) == 1
    np.testing.assert_array_equal(np.asarray(z), f32(8, 2) * 4)


def test_uncommitted_inputs_move_to_the_sharded_ones(mesh):
    x = plax.device_put(f32(8, 2), NamedSharding(mesh, P("x")))
    r = plax.jit(lambda a, b, c: a + b * c)(x, f32(8, 2), 3.0)
    np.testing.assert_array_equal(np.asarray(r), f32(8, 2) * 4)
    assert r.sharding.num_devices == 8


def test_pytree_shardings_and_donation(mesh):
    s, r = NamedSharding(mesh, P("x")), NamedSharding(mesh, P())
    f = plax.jit(lambda p: {"w": p["w"] + 1, "b": p["b"] * 2},
                 in_shardings=({"w": s, "b": r},), out_shardings={"w": s, "b": r},
                 donate_argnums=0)
    params = plax.device_put({"w": f32(8, 2), "b": f32(2)}, {"w": s, "b": r})
    out = f(params)
    assert out["w"].sharding == s and out["b"].sharding == r
    assert params["w"].is_deleted()
    np.testing.assert_array_equal(np.asarray(out["w"]), f32(8, 2) + 1)
    with pytest.raises(ValueError, match="pytree prefix"):
        plax.jit(lambda p: p, in_shardings=({"v": s},))({"w": f32(8, 2)})


def test_committed_input_with_another_sharding_raises(mesh):
    f = plax.jit(lambda v: v, in_shardings=NamedSharding(mesh, P("x")))
    with pytest.raises(ValueError, match="Sharding passed to jit does not match the sharding "
                                         "on the respective arg"):
        f(plax.device_put(f32(8, 2), NamedSharding(mesh, P())))


def test_incompatible_devices_name_each_argument(meshes):
    m1, m2 = meshes
    a = plax.device_put(f32(4), NamedSharding(m1, P("x")))
    b = plax.device_put(f32(4), NamedSharding(m2, P("x")))
    with pytest.raises(ValueError, match=r"incompatible devices.*argument a of <lambda> with "
                                         r"shape float32\[4\] and with device ids \[0, 1\]"
                                         r".*argument b of <lambda> .*device ids \[2, 3\]"):
        plax.jit(lambda a, b: a + b)(a, b)


def test_bare_partition_specs_need_a_mesh(mesh):
    f = plax.jit(lambda v: v * 2, in_shardings=P("x"))
    with pytest.raises(RuntimeError, match="needs a mesh in context"):
        f(f32(8, 2))
    with plax.set_mesh(mesh):
        r = f(f32(8, 2))
        assert r.sharding == NamedSharding(mesh, P("x"))
        c = plax.jit(lambda v: wsc(v, P(None, "y")))(f32(2, 8))
        assert c.sharding == NamedSharding(mesh, P(None, "y"))


def test_the_context_mesh_places_calls_and_conflicts_are_named(mesh, meshes, devs):
    m1, m2 = meshes
    with plax.set_mesh(m1):
        r = plax.jit(lambda v: v * 2)(f32(4))
        assert r.sharding == NamedSharding(m1, P())  # replicated over the context mesh
        e = plax.numpy.ones(3) + 1  # eager ops too
        assert e.sharding == NamedSharding(m1, P())
        with pytest.raises(ValueError, match=r"argument v .*device ids \[0, 1, 2, 3, 4, 5, 6, "
                                             r"7\].* and jit's context mesh .*device ids "
                                             r"\[0, 1\]"):
            plax.jit(lambda v: v * 2)(plax.device_put(f32(4), NamedSharding(mesh, P())))
        with pytest.raises(ValueError, match=r"in_shardings of argument v .*\[2, 3\].*"
                                             r"jit's context mesh"):
            plax.jit(lambda v: v, in_shardings=NamedSharding(m2, P("x")))(f32(4))
    r = plax.jit(lambda v: v * 2)(f32(4))
    assert r.sharding.device_set == {devs[0]}


# --- AbstractMesh: one trace, one lowering, one compile per device assignment ------------

def test_abstract_mesh_constraint_shares_trace_and_lowering(meshes, counts):
    m1, m2 = meshes
    f = plax.jit(lambda v: wsc(v * 2, NamedSharding(AbstractMesh((2,), ("x",)), P("x"))))
    x1 = plax.device_put(f32(4, 4), NamedSharding(m1, P()))
    x2 = plax.device_put(f32(4, 4), NamedSharding(m2, P()))
    o1, o2 = f(x1), f(x2)
    assert counts == {"trace": 1, "lower": 1, "compile": 2}
    assert o1.sharding == NamedSharding(m1, P("x")) and o2.sharding == NamedSharding(m2, P("x"))
    assert o2.devices() == set(m2.devices.flat)
    np.testing.assert_array_equal(np.asarray(o2), f32(4, 4) * 2)
    text = f.lower(x1).as_text()
    assert 'sdy.sharding_constraint %1 <@mesh, [{"x"}, {}]>' in text


def test_bare_spec_under_use_abstract_mesh_shares_trace_and_lowering(meshes, counts):
    m1, m2 = meshes
    f = plax.jit(lambda v: wsc(v + 1, P("x")))
    x1 = plax.device_put(f32(4, 4), NamedSharding(m1, P()))
    x2 = plax.device_put(f32(4, 4), NamedSharding(m2, P()))
    with plax.sharding.use_abstract_mesh(m1.abstract_mesh):
        o1, o2 = f(x1), f(x2)
    assert counts == {"trace": 1, "lower": 1, "compile": 2}
    assert o1.sharding == NamedSharding(m1, P("x")) and o2.sharding == NamedSharding(m2, P("x"))


def test_concrete_mesh_constraint_on_other_devices_raises(meshes):
    m1, m2 = meshes
    f = plax.jit(lambda v: wsc(v * 2, NamedSharding(m1, P("x"))))
    f(plax.device_put(f32(4), NamedSharding(m1, P())))
    with pytest.raises(ValueError, match=r"incompatible devices.*device ids \[2, 3\].*"
                                         r"sharding_constraint inside jit at .*test_sharding_jit"
                                         r".*device ids \[0, 1\]"):
        f(plax.device_put(f32(4), NamedSharding(m2, P())))


def test_abstract_mesh_of_another_size_is_explained(mesh):
    f = plax.jit(lambda v: wsc(v, NamedSharding(AbstractMesh((2,), ("x",)), P("x"))))
    with pytest.raises(ValueError, match="spans 2 devices, but the computation runs on 8"):
        f(plax.device_put(f32(4, 2), NamedSharding(mesh, P())))


def test_eager_constraint(meshes, mesh):
    m1, _ = meshes
    x = plax.device_put(f32(4, 2), NamedSharding(m1, P()))
    y = wsc(x, NamedSharding(AbstractMesh((2,), ("x",)), P("x")))
    assert y.sharding == NamedSharding(m1, P("x"))
    z = wsc(f32(8), NamedSharding(mesh, P(("x", "y"))))
    assert z.sharding == NamedSharding(mesh, P(("x", "y")))
    with pytest.raises(ValueError, match="input must be a plax Array"):
        wsc(f32(4), NamedSharding(AbstractMesh((2,), ("x",)), P("x")))
    with pytest.raises(ValueError, match="same axis names and sizes"):
        wsc(x, NamedSharding(AbstractMesh((2,), ("y",)), P("y")))


def test_constraint_under_grad_and_vmap(mesh):
    s = NamedSharding(mesh, P("x"))
    g = plax.jit(plax.grad(lambda v: (wsc(v, s) ** 2).sum()))
    x = f32(8)
    np.testing.assert_allclose(np.asarray(g(x)), 2 * x)
    v = plax.jit(plax.vmap(lambda row: wsc(row * 2, NamedSharding(mesh, P("y")))))
    np.testing.assert_array_equal(np.asarray(v(f32(3, 8))), f32(3, 8) * 2)
    assert "P(None, 'y')" in str(plax.make_jaxpr(
        plax.vmap(lambda row: wsc(row, NamedSharding(mesh, P("y")))))(f32(3, 8)))


def test_eager_ops_on_sharded_arrays_stay_sharded(mesh):
    s = NamedSharding(mesh, P("x", "y"))
    a = plax.device_put(f32(4, 8), s)
    b = plax.numpy.sin(a) + 1
    assert b.sharding == s
    np.testing.assert_allclose(np.asarray(b), np.sin(f32(4, 8)) + 1, rtol=1e-6)


def test_nested_jit_with_shardings(mesh):
    inner = plax.jit(lambda v: v * 3, out_shardings=NamedSharding(mesh, P("x")))
    outer = plax.jit(lambda v: inner(v) + 1)
    r = outer(plax.device_put(f32(8), NamedSharding(mesh, P())))
    np.testing.assert_array_equal(np.asarray(r), f32(8) * 3 + 1)
    assert "sdy.sharding_constraint" in outer.lower(
        plax.device_put(f32(8), NamedSharding(mesh, P()))).as_text()


# --- memory kinds, GSPMD, explanations ----------------------------------------------------

def test_pinned_host_memory(mesh):
    s = NamedSharding(mesh, P("x"))
    pinned = s.with_memory_kind("pinned_host")
    f = plax.jit(lambda v: v * 2, in_shardings=s, out_shardings=pinned)
    text = f.lower(f32(8, 2)).as_text()
    assert 'mhlo.memory_kind = "pinned_host"' in text and "annotate_device_placement" in text
    r = f(f32(8, 2))
    assert r.sharding.memory_kind == "pinned_host"
    assert r.addressable_shards[0].data.sharding.memory_kind == "pinned_host"
    np.testing.assert_array_equal(np.asarray(r), f32(8, 2) * 2)
    back = plax.jit(lambda v: v + 1, in_shardings=pinned, out_shardings=s)(r)
    assert back.sharding == s
    np.testing.assert_array_equal(np.asarray(back), f32(8, 2) * 2 + 1)


def test_gspmd_partitioner(mesh):
    with config.use_shardy_partitioner(False):
        f = plax.jit(lambda v: wsc(v * 2, NamedSharding(mesh, P("x", "y"))))
        x = plax.device_put(f32(4, 8), NamedSharding(mesh, P()))
        text = f.lower(x).as_text()
        assert "@Sharding" in text and 'mhlo.sharding = "{devices=[2,4]<=[8]}"' in text
        r = f(x)
    assert r.sharding == NamedSharding(mesh, P("x", "y"))
    np.testing.assert_array_equal(np.asarray(r), f32(4, 8) * 2)


def test_explain_cache_misses_names_the_sharding_and_the_devices(meshes, caplog):
    m1, m2 = meshes
    f = plax.jit(lambda v: v + 1)
    with config.explain_cache_misses(True), caplog.at_level(logging.WARNING):
        f(plax.device_put(f32(4), NamedSharding(m1, P())))
        f(plax.device_put(f32(4), NamedSharding(m1, P("x"))))
        f(plax.device_put(f32(4), NamedSharding(m2, P("x"))))
    text = caplog.text
    assert "LOWERING CACHE MISS for jit(<lambda>)" in text
    assert "the sharding of v changed from (None) over mesh x=2 to ('x') over mesh x=2" in text
    assert "COMPILATION CACHE MISS for jit(<lambda>)" in text
    assert "now on devices [2, 3] (compiled before for [0, 1])" in text


def test_log_compiles_names_the_function(mesh, caplog):
    with config.log_compiles(True), caplog.at_level(logging.WARNING):
        plax.jit(lambda v: v - 1)(plax.device_put(f32(8), NamedSharding(mesh, P("x"))))
    assert "Finished XLA compilation of jit(<lambda>)" in caplog.text
    assert "Compiling jit(<lambda>) for devices [0, 1, 2, 3, 4, 5, 6, 7]" in caplog.text

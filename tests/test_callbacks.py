"""Callbacks into Python from staged code: `debug.print`, `debug.callback`,
`pure_callback`, `experimental.io_callback`, their effects (kept by DCE, ordered by
tokens, waited for by `effects_barrier`) and their rules under jit, vmap, grad and
control flow. Printed output is read with capfd after `effects_barrier()`.
"""
from __future__ import annotations

import numpy as np
import pytest

import plax
import plax.numpy as jnp
from plax import lax


def printed(capfd) -> list[str]:
    plax.effects_barrier()
    return capfd.readouterr().out.splitlines()


# --- debug.print ---------------------------------------------------------------------

def test_print_eager_and_jit(capfd):
    def f(x):
        plax.debug.print("x={x} y={}", x + 1, x=x)
        return x * 2
    f(np.float32(1.5))
    out = plax.jit(f)(np.arange(3, dtype=np.float32))
    np.testing.assert_array_equal(out, [0, 2, 4])
    assert printed(capfd) == ["x=1.5 y=2.5", "x=[0. 1. 2.] y=[1. 2. 3.]"]


def test_print_without_placeholders_and_format_specs(capfd):
    plax.jit(lambda x: (plax.debug.print("values:", x, x + 1, skip_format_check=True),
                        plax.debug.print("{:.2f}|{x:>6}", x, x=np.int32(7))))(np.float32(0.5))
    assert sorted(printed(capfd)) == ["0.50|     7", "values: 0.5 1.5"]  # unordered


def test_print_uses_numpy_printoptions_of_the_call(capfd):
    with np.printoptions(precision=2):
        f = plax.jit(lambda x: plax.debug.print("{}", x))
        f(np.array([1 / 3, 2 / 3], np.float32))
    assert printed(capfd) == ["[0.33 0.67]"]


def test_print_format_errors():
    with pytest.raises(ValueError, match="Unused positional arguments"):
        plax.debug.print("{}", 1, 2)
    with pytest.raises(ValueError, match="Unused positional arguments"):
        plax.debug.print("no placeholders", 1)
    with pytest.raises(ValueError, match="f-string"):
        plax.jit(lambda x: plax.debug.print("x", x=x))(1.0)
    with pytest.raises(TypeError, match="format must be a string"):
        plax.debug.print(3)
    with pytest.raises(TypeError, match="two-call form"):
        plax.debug.print(None, 1)


def test_print_two_call_form_and_ordered(capfd):
    @plax.jit
    def f(x):
        plax.debug.print(ordered=True)("first {}", x)
        plax.debug.print("second {}", x * 2, ordered=True)
        return x
    for i in range(4):
        f(np.float32(i))
    assert printed(capfd) == [line for i in range(4)
                              for line in (f"first {float(i)}", f"second {float(2 * i)}")]


def test_print_under_vmap_grad_and_control_flow(capfd):
    plax.vmap(lambda v: plax.debug.print("v={}", v))(np.arange(3))
    assert printed(capfd) == ["v=0", "v=1", "v=2"]

    def loss(x):
        plax.debug.print("primal {}", x)
        return jnp.sin(x) * 2
    g = plax.jit(plax.grad(loss))(np.float32(0.0))
    assert float(g) == 2.0
    assert printed(capfd) == ["primal 0.0"]

    def body(carry, x):
        plax.debug.print("c={} x={}", carry, x, ordered=True)
        return carry + x, carry
    plax.jit(lambda xs: lax.scan(body, np.float32(0), xs))(np.arange(3, dtype=np.float32))
    assert printed(capfd) == ["c=0.0 x=0.0", "c=0.0 x=1.0", "c=1.0 x=2.0"]

    def branch(name):
        return lambda v: (plax.debug.print(name + " {}", v, ordered=True), v)[1]
    cond = plax.jit(lambda p, v: lax.cond(p, branch("yes"), branch("no"), v))
    cond(True, np.float32(1)), cond(False, np.float32(2))

    def step(c):
        plax.debug.print("w {}", c, ordered=True)
        return c + 1
    plax.jit(lambda n: lax.while_loop(lambda c: c < n, step, 0))(2)
    assert printed(capfd) == ["yes 1.0", "no 2.0", "w 0", "w 1"]


def test_ordered_effect_in_while_cond_is_refused():
    def cond_fun(c):
        plax.debug.print("c {}", c, ordered=True)
        return c < 2
    with pytest.raises(NotImplementedError, match="cond_fun"):
        plax.jit(lambda: lax.while_loop(cond_fun, lambda c: c + 1, 0))()


def test_print_once_over_several_devices(capfd, mesh):
    from plax.sharding import NamedSharding, PartitionSpec as P
    x = plax.device_put(np.arange(16, dtype=np.float32).reshape(2, 8),
                        NamedSharding(mesh, P("x", "y")))
    out = plax.jit(lambda v: (plax.debug.print("total {}", v.sum()), v * 2)[1])(x)
    assert len(out.addressable_shards) == 8
    assert printed(capfd) == ["total 120.0"]


# --- effects, tokens, DCE ---------------------------------------------------------------

def test_effects_in_jaxpr_and_tokens_in_lowering():
    def f(x):
        plax.debug.print("{}", x, ordered=True)
        plax.debug.print("{}", x)
        return x
    jaxpr = plax.make_jaxpr(f)(1.0)
    assert {repr(e) for e in jaxpr.effects} == {"OrderedDebug", "Debug"}
    text = plax.jit(f).lower(1.0).as_text()
    assert "@main(%arg0: !stablehlo.token {jax.token = true}" in text
    assert "-> (!stablehlo.token {jax.token = true}" in text
    assert text.count("xla_ffi_python_cpu_callback") == 2
    # A nested jit threads the token through its private function.
    text = plax.jit(lambda x: plax.jit(f)(x) + 1).lower(1.0).as_text()
    assert "func.func private @f(%arg0: !stablehlo.token" in text


def test_dce_keeps_effects_and_prunes_pure_callbacks(capfd):
    calls = []

    def pure(v):
        calls.append(1)
        return v

    def f(x):
        plax.debug.print("kept {}", x)
        plax.experimental.io_callback(lambda v: calls.append("io") or v,
                                      plax.ShapeDtypeStruct((), np.float32), x)
        plax.pure_callback(pure, plax.ShapeDtypeStruct((), np.float32), x)
        return x + 1
    plax.jit(f)(np.float32(1))
    assert printed(capfd) == ["kept 1.0"]
    assert calls == ["io"]  # the unused pure callback was pruned, the io one kept


def test_effects_barrier_waits_for_callbacks():
    seen = []
    f = plax.jit(lambda x: plax.debug.callback(lambda v: seen.append(float(v)), x))
    for i in range(5):
        f(np.float32(i))
    plax.effects_barrier()
    assert seen == [0.0, 1.0, 2.0, 3.0, 4.0]


# --- debug.callback ------------------------------------------------------------------------

def test_debug_callback_static_and_pytree_arguments():
    seen = []

    def record(tag, tree, *, scale):
        seen.append((tag, float(tree["a"]), np.asarray(tree["b"]).tolist(), scale))
    f = plax.jit(lambda a, b: plax.debug.callback(record, "t", {"a": a, "b": b}, scale=None))
    f(np.float32(1), np.arange(2))
    plax.debug.callback(ordered=True)(record, "eager", {"a": 2.0, "b": [3]}, scale=2)
    plax.effects_barrier()
    assert seen == [("t", 1.0, [0, 1], None), ("eager", 2.0, [3], 2)]
    with pytest.raises(TypeError, match="must be callable"):
        plax.debug.callback(3)


def test_callbacks_see_cpu_arrays():
    kinds = []
    plax.jit(lambda x: plax.debug.callback(lambda v: kinds.append(
        (type(v).__name__, v.devices().pop().platform)), x))(np.ones(2))
    plax.effects_barrier()
    assert kinds == [("Array", "cpu")]


# --- pure_callback ----------------------------------------------------------------------------

def test_pure_callback_jit_pytrees_and_kwargs():
    def host(x, *, y):
        return {"sum": np.asarray(x) + y, "neg": -np.asarray(x)}
    shapes = {"sum": plax.ShapeDtypeStruct((3,), np.float32),
              "neg": plax.ShapeDtypeStruct((3,), np.float32)}
    x = np.arange(3, dtype=np.float32)
    out = plax.jit(lambda v: plax.pure_callback(host, shapes, v, y=np.float32(1)))(x)
    np.testing.assert_array_equal(out["sum"], x + 1)
    np.testing.assert_array_equal(out["neg"], -x)


@pytest.mark.parametrize("method, expected", [
    ("sequential", [((), ())] * 3),
    ("sequential_unrolled", [((), ())] * 3),
    ("expand_dims", [((3,), (1,))]),
    ("broadcast_all", [((3,), (3,))]),
    ("legacy_vectorized", [((3,), ())]),
])
def test_pure_callback_vmap_methods(method, expected):
    seen = []

    def host(x, y):
        seen.append((np.shape(x), np.shape(y)))
        return np.asarray(x) + np.asarray(y)

    def f(x, y):
        return plax.pure_callback(host, plax.ShapeDtypeStruct(x.shape, x.dtype), x, y,
                                  vmap_method=method)
    out = plax.vmap(f, in_axes=(0, None))(np.arange(3, dtype=np.float32), np.float32(1))
    np.testing.assert_array_equal(out, [1, 2, 3])
    assert seen == expected


def test_pure_callback_errors():
    shape = plax.ShapeDtypeStruct((), np.float32)
    with pytest.raises(NotImplementedError, match="vmap_method"):
        plax.vmap(lambda x: plax.pure_callback(np.sin, shape, x))(np.ones(2, np.float32))
    with pytest.raises(ValueError, match="do not support JVP"):
        plax.grad(lambda x: plax.pure_callback(np.sin, shape, x))(np.float32(1))
    with pytest.raises(ValueError, match="vmap_method must be one of"):
        plax.pure_callback(np.sin, shape, 1.0, vmap_method="parallel")
    with pytest.raises(ValueError, match="64-bit"):
        plax.pure_callback(np.sin, plax.ShapeDtypeStruct((), np.float64), 1.0)
    with pytest.raises(ValueError, match="'shape' and 'dtype'"):
        plax.pure_callback(np.sin, (3,), 1.0)
    with pytest.raises(RuntimeError, match="declares f32"):
        plax.pure_callback(lambda x: np.zeros(2, np.float32), shape, 1.0)
    with pytest.raises(Exception, match="declares f32"):  # raised in the compiled call
        plax.jit(lambda x: plax.pure_callback(lambda v: np.zeros(2, np.float32), shape, x))(
            1.0)


def test_pure_callback_through_custom_jvp():
    @plax.custom_jvp
    def host_sin(x):
        return plax.pure_callback(np.sin, plax.ShapeDtypeStruct(x.shape, x.dtype), x)
    host_sin.defjvp(lambda primals, tangents: (host_sin(primals[0]),
                                               jnp.cos(primals[0]) * tangents[0]))
    g = plax.jit(plax.grad(host_sin))(np.float32(0.5))
    np.testing.assert_allclose(g, np.cos(0.5), rtol=1e-6)


# --- io_callback --------------------------------------------------------------------------------

def test_io_callback_ordered_and_vmap():
    log = []

    def record(x):
        log.append(float(x))
        return np.asarray(x) * 2

    shape = plax.ShapeDtypeStruct((), np.float32)
    f = plax.jit(lambda x: plax.experimental.io_callback(record, shape, x, ordered=True))
    assert [float(f(np.float32(i))) for i in range(3)] == [0.0, 2.0, 4.0]
    out = plax.vmap(lambda x: plax.experimental.io_callback(record, shape, x))(
        np.arange(3, dtype=np.float32) + 10)
    np.testing.assert_array_equal(out, [20, 22, 24])
    plax.effects_barrier()
    assert log == [0.0, 1.0, 2.0, 10.0, 11.0, 12.0]
    with pytest.raises(ValueError, match="Cannot `vmap` ordered IO callback"):
        plax.vmap(lambda x: plax.experimental.io_callback(record, shape, x, ordered=True))(
            np.ones(2, np.float32))
    with pytest.raises(ValueError, match="IO callbacks do not support JVP"):
        plax.grad(lambda x: plax.experimental.io_callback(record, shape, x))(np.float32(1))


# --- named_scope / named_call --------------------------------------------------------------------

def test_named_scope_names_equations_lowering_and_hlo():
    def f(x):
        with plax.named_scope("outer"):
            with plax.named_scope("inner"):
                y = jnp.sin(x)
            z = plax.jit(plax.named_call(lambda a: a * 2, name="double"))(y)
        return jnp.cos(z)
    jaxpr = plax.make_jaxpr(f)(1.0)
    assert [(e.primitive.name, e.name_stack) for e in jaxpr.eqns] == [
        ("sin", "outer/inner"), ("jit", "outer"), ("cos", "")]
    assert jaxpr.eqns[1].params["jaxpr"].eqns[0].name_stack == "double"
    lowered = plax.jit(f).lower(1.0)
    text = lowered.as_text(debug_info=True)
    assert 'loc("jit(f)/outer/inner/sin"' in text
    assert 'jit(f)/outer/jit(<lambda>)/double/mul' in text
    assert 'op_name="jit(f)/outer/inner/sin"' in lowered.compile().as_text()
    # The backward pass of grad keeps the names of the forward operations.
    grad_eqns = plax.make_jaxpr(plax.grad(f))(1.0).eqns
    assert {e.name_stack for e in grad_eqns if e.primitive.name == "cos"} == {
        "", "outer/inner"}


def test_named_scope_as_decorator_and_errors():
    @plax.named_scope("layer")
    def layer(x):
        return x + 1
    assert plax.make_jaxpr(layer)(1.0).eqns[0].name_stack == "layer"
    assert plax.make_jaxpr(plax.named_call(layer))(1.0).eqns[0].name_stack == "layer/layer"
    with pytest.raises(TypeError, match="must be a string"):
        plax.named_scope(3)


def test_donation_beside_effect_tokens(capfd):
    f = plax.jit(lambda x: (plax.debug.print("x {}", x, ordered=True), x * 2)[1],
                 donate_argnums=0)
    assert "tf.aliasing_output = 1 : i32" in f.lower(np.ones(3, np.float32)).as_text()
    x = plax.device_put(np.ones(3, np.float32))
    np.testing.assert_array_equal(f(x), [2, 2, 2])
    assert x.is_deleted()
    assert printed(capfd) == ["x [1. 1. 1.]"]


def test_debug_log_and_effect_types(caplog):
    import logging
    with caplog.at_level(logging.INFO, logger="plax.debug"):
        plax.jit(lambda x: plax.debug.log("logged {}", x))(np.float32(2))
        plax.effects_barrier()
    (record,) = [r for r in caplog.records if r.name == "plax.debug"]
    assert record.getMessage() == "logged 2.0" and record.pathname == __file__
    effects = plax.make_jaxpr(lambda x: (plax.debug.print("{}", x),
                                         plax.debug.print("{}", x, ordered=True)))(1.0).effects
    assert {type(e) for e in effects} == {plax.debug.DebugEffect, plax.debug.OrderedDebugEffect}

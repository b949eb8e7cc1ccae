"""Tracing to Jaxprs: make_jaxpr, debug info, constants, and tracer misuse."""
import threading

import numpy as np
import pytest

import plax
import plax.numpy as jnp
from plax import lax
from plax.extend.core import check_jaxpr


def test_make_jaxpr_prints_jax_style_and_names_arguments():
    closed = plax.make_jaxpr(lambda x, y: jnp.sin(x) * y)(1.0, 2.0)
    check_jaxpr(closed)
    assert str(closed) == ("{ lambda ; a:f32[] b:f32[]. let c:f32[] = sin a; "
                           "d:f32[] = mul c b in (d,) }")
    assert closed.jaxpr.debug_info.arg_names == ("x", "y")
    assert closed.jaxpr.debug_info.result_paths == ("result",)


def test_static_argnums_are_absent_from_arg_names():
    def f(x, n, y):
        return x * n + y
    closed = plax.make_jaxpr(f, static_argnums=1)(1.0, 3, 2.0)
    assert closed.jaxpr.debug_info.arg_names == ("x", "y")
    assert len(closed.jaxpr.invars) == 2


def test_pytree_arguments_and_results_are_named_by_path():
    def loss(params, x, *, scale):
        return {"out": params["w"] * x + params["b"], "scale": scale}
    closed = plax.make_jaxpr(loss)({"w": 1.0, "b": 2.0}, 3.0, scale=4.0)
    dbg = closed.jaxpr.debug_info
    assert dbg.arg_names == ("params['b']", "params['w']", "x", "scale")
    assert dbg.result_paths == ("result['out']", "result['scale']")
    assert dbg.func_name == "loss"


def test_return_shape_gives_shape_dtype_structs():
    _, shape = plax.make_jaxpr(lambda x: (x, x.sum()), return_shape=True)(np.ones((2, 3)))
    assert shape[0].shape == (2, 3) and shape[1].shape == ()
    assert shape[0].dtype == np.float32  # x64 is off


def test_constants_are_hoisted_and_scalars_inlined():
    table = np.arange(3.0, dtype=np.float32)
    closed = plax.make_jaxpr(lambda x: x * table + 2.0)(np.ones(3, np.float32))
    assert len(closed.jaxpr.constvars) == 1
    assert np.array_equal(closed.consts[0], table)
    assert "2.0" in str(closed)


def test_shape_dtype_struct_inputs():
    closed = plax.make_jaxpr(jnp.sin)(plax.ShapeDtypeStruct((2, 2), np.float32))
    assert closed.in_avals[0].shape == (2, 2)


def test_python_branch_on_traced_value_names_the_argument():
    def f(x, y):
        if x + 1 > 0:
            return y
        return -y
    with pytest.raises(plax.ConcretizationTypeError, match="argument x") as info:
        plax.make_jaxpr(f)(1.0, 2.0)
    assert isinstance(info.value, TypeError)
    message = info.value.args[0].split("\n\nRun `python -m plax.errors")[0]  # not the pointer
    assert "y" not in message.split("argument")[-1]


def test_int_and_array_conversion_of_tracers_raise():
    with pytest.raises(TypeError):
        plax.make_jaxpr(lambda x: int(x))(1)
    with pytest.raises(plax.TracerArrayConversionError):
        plax.make_jaxpr(lambda x: np.asarray(x))(1.0)


def test_leaked_tracer_raises_when_used():
    leaked = []
    plax.make_jaxpr(lambda x: leaked.append(x) or x)(1.0)
    with pytest.raises(plax.UnexpectedTracerError, match="already finished"):
        plax.make_jaxpr(lambda y: y + leaked[0])(1.0)


def test_outputs_must_be_arrays():
    with pytest.raises(TypeError, match="not a valid plax type"):
        plax.make_jaxpr(lambda x: "hello")(1.0)


def test_tracing_is_thread_local():
    results = {}

    def trace(name, shape):
        results[name] = plax.make_jaxpr(lambda x: lax.sin(x))(np.ones(shape, np.float32))

    threads = [threading.Thread(target=trace, args=(f"t{i}", (i + 1,))) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(4):
        assert results[f"t{i}"].in_avals[0].shape == (i + 1,)


def test_traced_values_are_instances_of_plax_array():
    seen = []
    plax.make_jaxpr(lambda x: seen.append(isinstance(x, plax.Array)) or x)(1.0)
    assert seen == [True]
    assert not isinstance(np.ones(3), plax.Array)


def test_tracers_have_numpy_methods_and_python_operator_fallbacks():
    def f(x):
        assert (x == None) is False  # noqa: E711  (NotImplemented → identity comparison)
        return x.var(), x.flatten(), x.reshape(3, 1)
    closed = plax.make_jaxpr(f)(np.ones((1, 3), np.float32))
    assert [a.shape for a in closed.out_avals] == [(), (3,), (3, 1)]


@pytest.mark.parametrize("api", ["make_jaxpr", "jit", "grad", "value_and_grad", "vmap",
                                 "jacfwd", "jacrev", "hessian", "checkpoint", "custom_jvp",
                                 "custom_vjp"])
def test_transformations_reject_non_callables_when_applied(api):
    with pytest.raises(TypeError, match="Expected a callable value, got 3 of type int"):
        getattr(plax, api)(3)


@pytest.mark.parametrize("api", ["jvp", "linearize", "vjp", "linear_transpose"])
def test_function_transformations_taking_arguments_reject_non_callables(api):
    args = {"jvp": ((1.0,), (1.0,)), "linearize": (1.0,), "vjp": (1.0,),
            "linear_transpose": (1.0,)}[api]
    with pytest.raises(TypeError, match="Expected a callable value"):
        getattr(plax, api)("not a function", *args)


def test_folded_constants_are_still_traced_arrays():
    """A scalar's `ones_like`, a folded conversion and a gradient seed that flows out
    unchanged are literals in the Jaxpr, as in JAX, but the code being traced still sees
    tracers, with a dtype and a shape (as JAX's tracers holding literals)."""
    seen = []

    def f(x):
        values = (jnp.ones_like(x), lax.convert_element_type(2, jnp.float32) * 1,
                  plax.grad(lambda y: y)(x), plax.grad(jnp.sum)(x), jnp.zeros_like(x) + 0)
        seen.extend((type(v).__name__, str(v.dtype), v.shape) for v in values)
        return values

    closed = plax.make_jaxpr(f)(1.0)  # (printed as JAX's: jaxpr_print_cases.py)
    assert all(name == "StagingTracer" and dtype == "float32" and shape == ()
               for name, dtype, shape in seen), seen
    assert str(closed).endswith("in (1.0:f32[], b, 1.0:f32[], 1.0:f32[], d) }"), str(closed)
    assert [float(v) for v in plax.jit(f)(1.0)] == [1.0, 2.0, 1.0, 1.0, 0.0]

"""`jit`: results, the tracing cache, static and donated arguments, nesting, the AOT
stages, devices, and error messages."""
from __future__ import annotations

import functools
import logging

import numpy as np
import pytest

import plax
import plax.numpy as jnp
from plax import lax
from plax.sharding import SingleDeviceSharding
from plax.extend.config import explain_cache_misses
from plax.extend.core import check_jaxpr, dce_jaxpr
from plax_transforms.fastpath import fastpath_stats

MATMUL_DIMS = (((1,), (0,)), ((), ()))


class TraceCounter:
    """Wraps a function and counts how often it is traced."""

    def __init__(self, fun):
        self.fun = fun
        self.count = 0
        functools.update_wrapper(self, fun)

    def __call__(self, *args, **kwargs):
        self.count += 1
        return self.fun(*args, **kwargs)


def f32(*shape, start=0.0):
    return (np.arange(np.prod(shape), dtype=np.float32) + start).reshape(shape) / 4


# --- results --------------------------------------------------------------------------

def test_matmul_plus_one_matches_numpy():
    a, b = f32(2, 3), f32(3, 4, start=1)
    np.testing.assert_allclose(plax.jit(lambda x, y: x @ y + 1)(a, b), a @ b + 1, rtol=1e-6)
    via_lax = plax.jit(lambda x, y: lax.add(lax.dot_general(x, y, MATMUL_DIMS), 1.0))
    np.testing.assert_allclose(via_lax(a, b), a @ b + 1, rtol=1e-6)


def test_pytree_inputs_and_outputs():
    @plax.jit
    def f(params, xs):
        w, b = params["w"], params["b"]
        return {"y": [x * w + b for x in xs], "n": xs[0].sum()}

    params = {"w": np.float32(2), "b": f32(3)}
    out = f(params, (f32(3), f32(3, start=1)))
    assert sorted(out) == ["n", "y"] and len(out["y"]) == 2
    np.testing.assert_allclose(out["y"][1], f32(3, start=1) * 2 + f32(3))
    np.testing.assert_allclose(out["n"], f32(3).sum())


def test_keyword_arguments():
    f = TraceCounter(lambda x, *, scale, shift=0.0: x * scale + shift)
    jf = plax.jit(f)
    np.testing.assert_allclose(jf(f32(3), scale=2.0), f32(3) * 2)
    np.testing.assert_allclose(jf(f32(3), scale=2.0, shift=1.0), f32(3) * 2 + 1)
    np.testing.assert_allclose(jf(f32(3), shift=1.0, scale=3.0), f32(3) * 3 + 1)
    assert f.count == 2  # the order of keywords does not matter


def test_weak_types_survive_jit():
    out = plax.jit(lambda x: x * 2)(3.0)
    assert out.dtype == np.float32 and out.weak_type
    strong = plax.jit(lambda x: x * 2)(np.float32(3.0))
    assert not strong.weak_type


# --- the tracing cache ---------------------------------------------------------------------

def test_same_signature_does_not_retrace_and_new_ones_do():
    f = TraceCounter(lambda x, y: x * y + 1)
    jf = plax.jit(f)
    x = f32(3)
    jf(x, x)
    jf(x + 1, x)
    jf(plax.device_put(x), x)
    assert f.count == 1
    jf(f32(4), f32(4))  # new shape
    assert f.count == 2
    jf(x.astype(np.int32), x.astype(np.int32))  # new dtype
    assert f.count == 3
    jf(x, 2.0)  # a weakly typed scalar...
    assert f.count == 4
    jf(x, np.float32(2.0))  # ...is not the same as a strongly typed one
    assert f.count == 5
    jf(x, 3.0)
    assert f.count == 5


def test_new_pytree_structure_retraces():
    f = TraceCounter(lambda t: t[0] + t[1])
    jf = plax.jit(f)
    jf((1.0, 2.0))
    jf([1.0, 2.0])
    assert f.count == 2


def test_config_change_retraces():
    f = TraceCounter(lambda x: x + 1)
    jf = plax.jit(f)
    jf(np.arange(3))
    with plax.enable_x64(True):
        assert jf(np.arange(3)).dtype == np.int64
    assert f.count == 2
    assert jf(np.arange(3)).dtype == np.int32


def test_inner_jit_is_traced_once_across_outer_traces():
    inner_fun = TraceCounter(lambda v: v * 2)

    def outer(x):
        inner = plax.jit(inner_fun)  # a new wrapper on every trace, same function
        return inner(x) + inner(x + 1)

    plax.jit(outer)(f32(3))
    plax.jit(outer)(f32(4))
    plax.make_jaxpr(outer)(f32(3))
    assert inner_fun.count == 2  # once per input shape


def test_the_tracing_cache_is_shared_safely_across_threads():
    """Threads tracing outer functions that call one inner jit (the jit_add_chain
    pattern) while others call it at top level: right Jaxprs and values, one trace per
    input shape, whatever the interleaving."""
    import threading
    inner_fun = TraceCounter(lambda a, b: a * b + 1)
    inner = plax.jit(inner_fun)
    errors = []

    def tracer(n):
        try:
            for k in range(20):
                def outer(v):
                    for _ in range(n):
                        v = inner(v, v)
                    return v
                closed = plax.make_jaxpr(outer)(f32(2 + k % 2))
                assert [e.primitive.name for e in closed.jaxpr.eqns] == ["jit"] * n
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)

    def caller():
        try:
            x = plax.device_put(f32(2))
            for _ in range(50):
                np.testing.assert_allclose(np.asarray(inner(x, x)), f32(2) * f32(2) + 1)
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=tracer, args=(n,)) for n in (3, 5, 7)]
    threads += [threading.Thread(target=caller) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    # Two shapes under the tracers; a concurrent first trace of one key may repeat.
    assert 2 <= inner_fun.count <= 2 + len(threads)


def _in_threads(n: int, work) -> list:
    """Runs `work(i)` in `n` threads started together; the exceptions they raised."""
    import threading
    start, errors = threading.Barrier(n), []

    def run(i):
        start.wait()
        try:
            work(i)
        except Exception as err:  # noqa: BLE001 - reported to the caller
            errors.append(err)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_threads_calling_new_shapes_wait_for_one_compile():
    """Eight threads calling one jitted function with the same new shapes compile each
    shape once (the others wait for that compile), with right values."""
    names = []

    def listener(event, secs, **kw):
        if event == "/jax/core/compile/backend_compile_duration":
            names.append(kw.get("fun_name"))

    def storm_fun(x):
        return jnp.tanh(x) * 2.0 + x.sum()
    f = plax.jit(storm_fun)
    sizes = range(1, 7)

    def work(_):
        for n in sizes:
            np.testing.assert_allclose(f(np.ones(n, np.float32)), np.tanh(1.0) * 2 + n,
                                       rtol=1e-6)

    plax.monitoring.register_event_duration_secs_listener(listener)
    try:
        assert _in_threads(8, work) == []
    finally:
        plax.monitoring.unregister_event_duration_listener(listener)
    assert len([n for n in names if "storm_fun" in str(n)]) == len(sizes)


def test_threads_waiting_for_a_failed_compile_compile_it_themselves(monkeypatch):
    from plax_runtime import executable
    module = plax.jit(lambda x: x * 3.0 + 1.0).lower(f32(5)).as_text()
    real, calls = executable._compile_and_load, []

    def first_fails(*args):
        calls.append(1)
        if len(calls) == 1:
            import time
            time.sleep(0.2)  # the other threads are waiting by now
            raise RuntimeError("the first compile fails")
        return real(*args)

    monkeypatch.setattr(executable, "_compile_and_load", first_fails)
    results = []
    errors = _in_threads(4, lambda _: results.append(
        executable.compile(module, plax.devices()[:1])))
    assert [str(e) for e in errors] == ["the first compile fails"]
    assert len(calls) == 2 and len(results) == 3 and len({id(r) for r in results}) == 1


def test_explain_cache_misses(caplog):
    jf = plax.jit(lambda alpha, n: alpha * n, static_argnums=1)
    with explain_cache_misses(True), caplog.at_level(logging.WARNING):
        jf(f32(3), 2)
        jf(f32(4), 2)
        jf(f32(4), 3)
        jf(f32(4).astype(np.int32), 3)
    messages = [r.getMessage() for r in caplog.records if "TRACING CACHE MISS" in r.getMessage()]
    assert len(messages) == 4
    assert "never seen" in messages[0]
    assert "alpha" in messages[1] and "f32[3] to f32[4]" in messages[1]
    assert "static argument 1 changed from 2 to 3" in messages[2]
    assert "f32[4] to i32[4]" in messages[3]


def test_traces_differ_by_the_manual_axes_arguments_vary_over(caplog):
    """Avals' equality ignores the manual axes a shard_map value varies over, but a trace
    depends on them (the pvarys it inserts): one traced for an argument varying over y
    is not reused for one varying over x."""
    mesh = plax.sharding.Mesh(np.array(plax.devices()[:8]).reshape(2, 4), ("x", "y"))
    scale = plax.jit(lambda v: v * 4, inline=True)
    body = lambda a: a * scale(lax.axis_index("y")) * scale(lax.axis_index("x"))  # noqa: E731
    mapped = plax.shard_map(body, mesh=mesh, in_specs=plax.P(("x", "y")),
                            out_specs=plax.P(("x", "y")))
    with explain_cache_misses(True), caplog.at_level(logging.WARNING):
        inner = plax.make_jaxpr(mapped)(np.ones(8, np.int32)).eqns[0].params["jaxpr"]
    products = [str(e.outvars[0].aval) for e in inner.eqns if e.primitive.name == "mul"]
    assert products[:3] == ["int32[]{V:y}", "int32[1]{V:(x,y)}", "int32[]{V:x}"]
    assert any("type of v changed from i32[]{V:y} to i32[]{V:x}" in r.getMessage()
               for r in caplog.records)


def test_disable_jit_calls_the_function_directly():
    seen = []
    jf = plax.jit(lambda x: seen.append(type(x)) or x)
    with plax.disable_jit(True):
        jf(np.ones(2))
    assert seen == [np.ndarray]


# --- static arguments ------------------------------------------------------------------------

def test_static_argnums_and_argnames():
    f = TraceCounter(lambda x, n, *, mode="add": x + n if mode == "add" else x * n)
    jf = plax.jit(f, static_argnums=1, static_argnames="mode")
    x = f32(3)
    np.testing.assert_allclose(jf(x, 2), x + 2)
    np.testing.assert_allclose(jf(x, 2), x + 2)
    assert f.count == 1
    np.testing.assert_allclose(jf(x, 3), x + 3)
    np.testing.assert_allclose(jf(x, 3, mode="mul"), x * 3)
    assert f.count == 3
    np.testing.assert_allclose(jf(x, n=4), x + 4)  # static by position, passed by name


def test_unhashable_static_argument_names_the_argument():
    jf = plax.jit(lambda x, shape: x.reshape(shape), static_argnums=1)
    with pytest.raises(ValueError, match=r"Non-hashable static arguments.*'shape'.*list"):
        jf(f32(6), [2, 3])
    np.testing.assert_allclose(jf(f32(6), (2, 3)), f32(2, 3))


def test_bad_static_and_donate_options():
    with pytest.raises(ValueError, match="out of range"):
        plax.jit(lambda x: x, static_argnums=3)
    with pytest.raises(ValueError, match="cannot intersect"):
        plax.jit(lambda x, y: x, static_argnums=0, donate_argnums=0)
    with pytest.raises(TypeError, match="Expected a callable"):
        plax.jit(3)


def test_invalid_argument_type_names_the_argument():
    with pytest.raises(TypeError, match="path y"):
        plax.jit(lambda x, y: x)(1.0, "text")


# --- donation and deleted arrays ---------------------------------------------------------------

def test_donated_arrays_are_deleted_and_raise_on_use():
    jf = plax.jit(lambda x, y: x + y, donate_argnums=0)
    x, y = plax.device_put(f32(3)), plax.device_put(f32(3))
    out = jf(x, y)
    np.testing.assert_allclose(out, 2 * f32(3))
    assert x.is_deleted() and not y.is_deleted()
    with pytest.raises(RuntimeError, match="deleted"):
        jf(x, y)
    with pytest.raises(RuntimeError, match="deleted"):
        np.asarray(x)


def test_donate_argnames_covers_every_leaf():
    jf = plax.jit(lambda state, g: {k: v - g for k, v in state.items()},
                  donate_argnames="state")
    state = {"a": plax.device_put(f32(2)), "b": plax.device_put(f32(2))}
    g = plax.device_put(f32(2))
    jf(state, g)
    assert state["a"].is_deleted() and state["b"].is_deleted() and not g.is_deleted()


def test_deleted_input_raises():
    x = plax.device_put(f32(3))
    x.delete()
    with pytest.raises(RuntimeError, match="deleted"):
        plax.jit(lambda v: v + 1)(x)


# --- nesting and inlining ---------------------------------------------------------------------

def test_nested_jit_is_staged_as_a_jit_equation():
    inner = plax.jit(lambda v: jnp.sin(v) * 2)

    @plax.jit
    def outer(x):
        return inner(x) + 1

    jaxpr = plax.make_jaxpr(outer)(f32(3))
    (eqn,) = jaxpr.eqns
    assert eqn.primitive.name == "jit" and eqn.params["name"] == "outer"
    inner_eqn = eqn.params["jaxpr"].eqns[0]
    assert inner_eqn.primitive.name == "jit" and inner_eqn.params["name"] == "<lambda>"
    assert "jit[" in str(jaxpr)
    assert "call @" in outer.lower(f32(3)).as_text()
    np.testing.assert_allclose(outer(f32(3)), np.sin(f32(3)) * 2 + 1, rtol=1e-6)


def test_dead_code_elimination_prunes_inside_inner_jit():
    inner = plax.jit(lambda a, b: (a * 2, jnp.sin(b)))
    closed = plax.make_jaxpr(lambda x, y: inner(x, y)[0])(f32(3), f32(3))
    pruned, used_inputs = dce_jaxpr(closed.jaxpr, [True])
    check_jaxpr(pruned)
    assert used_inputs == [True, False]
    (eqn,) = pruned.eqns
    inner_jaxpr = eqn.params["jaxpr"].jaxpr
    assert len(inner_jaxpr.invars) == 1 and len(inner_jaxpr.outvars) == 1
    assert [e.primitive.name for e in inner_jaxpr.eqns] == ["mul"]
    assert eqn.params["donated_invars"] == (False,)
    text = plax.jit(lambda x, y: inner(x, y)[0]).lower(f32(3), f32(3)).as_text()
    assert "sine" not in text


def test_inline_jit_is_not_staged():
    inner = plax.jit(lambda v: v * 2, inline=True)
    jaxpr = plax.make_jaxpr(lambda x: inner(x) + 1)(f32(3))
    assert [e.primitive.name for e in jaxpr.eqns] == ["mul", "add"]


def test_inner_jit_closing_over_an_outer_tracer():
    def outer(x):
        inner = plax.jit(lambda v: v * x)
        return inner(x + 1)

    np.testing.assert_allclose(plax.jit(outer)(f32(3)), (f32(3) + 1) * f32(3))
    jaxpr = plax.make_jaxpr(outer)(f32(3))
    assert len(jaxpr.eqns[-1].invars) == 2  # the closed-over tracer is an argument


def test_jit_of_method():
    class Scaler:
        def __init__(self, k):
            self.k = k

        @functools.partial(plax.jit, static_argnums=0)
        def apply(self, x):
            return x * self.k

        def __hash__(self):
            return hash(self.k)

        def __eq__(self, other):
            return isinstance(other, Scaler) and other.k == self.k

    np.testing.assert_allclose(Scaler(3.0).apply(f32(2)), f32(2) * 3)


def test_jit_as_decorator_with_options():
    @plax.jit(static_argnames="n")
    def power(x, n):
        return x ** n
    np.testing.assert_allclose(power(f32(3), n=3), f32(3) ** 3, rtol=1e-6)


# --- ahead-of-time stages ------------------------------------------------------------------------

def test_lower_as_text_names_the_arguments():
    """By their locations, shown with debug info (as JAX 0.10's)."""
    lowered = plax.jit(lambda alpha, beta: alpha * beta).lower(1., 2.)
    assert "alpha" not in lowered.as_text() and "stablehlo.multiply" in lowered.as_text()
    assert 'loc("alpha")' in lowered.as_text(debug_info=True)
    assert 'loc("beta")' in lowered.as_text(debug_info=True)


def test_trace_lower_compile_call():
    def f(x, n):
        return jnp.sin(x) * n

    jf = plax.jit(f, static_argnums=1)
    traced = jf.trace(f32(2, 2), 3)
    assert "sin" in str(traced.jaxpr) and traced.out_info.shape == (2, 2)
    lowered = traced.lower()
    assert lowered.compiler_ir().operation.name == "builtin.module"
    compiled = lowered.compile()
    np.testing.assert_allclose(compiled(f32(2, 2, start=1)), np.sin(f32(2, 2, start=1)) * 3,
                               rtol=1e-6)
    assert "sine" in compiled.as_text()
    with pytest.raises(TypeError, match=r"x compiled with f32\[2,2\] and called with f32\[3\]"):
        compiled(f32(3))
    with pytest.raises(TypeError, match="pytree structure"):
        compiled(f32(2, 2), 3)


def test_compiled_cost_analysis_counts_flops():
    a = f32(8, 16)
    cost = plax.jit(lambda x, y: x @ y).lower(a, a.T).compile().cost_analysis()
    assert cost["flops"] >= 2 * 8 * 16 * 8 - 8 * 8


def test_eval_shape():
    def f(x, y):
        return {"sum": x + y, "first": x[0]}

    x = plax.ShapeDtypeStruct((3, 4), np.float32)
    out = plax.eval_shape(f, x, 1.0)
    assert out["sum"] == plax.ShapeDtypeStruct((3, 4), np.float32)
    assert out["first"].shape == (4,)
    assert plax.jit(f).eval_shape(f32(2, 2), 1.0)["sum"].shape == (2, 2)
    scalar = plax.eval_shape(lambda v: v * 2, 1.0)
    assert scalar.weak_type and scalar.dtype == np.float32


# --- devices -----------------------------------------------------------------------------------

def test_outputs_live_on_the_committed_inputs_device():
    device3 = plax.devices()[3]
    x = plax.device_put(f32(3), device3)
    out = plax.jit(lambda v, w: v * w)(x, 2.0)
    assert out.sharding.device_set == {device3} and out.committed
    loose = plax.jit(lambda v: v * 2)(plax.device_put(f32(3)))
    assert not loose.committed


def test_conflicting_committed_devices_raise():
    d3, d4 = plax.devices()[3:5]
    with pytest.raises(ValueError, match=r"incompatible devices.*argument a .*device ids \[3\]"
                                         r".*argument b .*device ids \[4\]"):
        plax.jit(lambda a, b: a + b)(plax.device_put(f32(2), d3), plax.device_put(f32(2), d4))


def test_pruned_inputs_name_no_devices():
    # As in JAX: an input no output needs is pruned before the devices are chosen, so
    # its commitment (or its in_sharding) neither places nor conflicts; keep_unused
    # makes it count again.
    d3, d4, d5 = plax.devices()[3:6]
    x3, x5, y = plax.device_put(f32(3), d3), plax.device_put(f32(3), d5), f32(3)
    loose = plax.jit(lambda a, b: b * 2)(x3, y)
    assert loose.sharding.device_set == {plax.devices()[0]} and not loose.committed
    np.testing.assert_array_equal(loose, y * 2)
    out = plax.jit(lambda a, unused, b: a + b)(x3, x5, y)
    assert out.sharding.device_set == {d3} and out.committed
    given = plax.jit(lambda a, b: b * 2, in_shardings=(SingleDeviceSharding(d4), None))
    assert given(x3, y).sharding.device_set == {plax.devices()[0]}
    compiled = plax.jit(lambda a, b: b * 2).lower(x3, y).compile()
    assert compiled(x5, y).sharding.device_set == {plax.devices()[0]}
    kept = plax.jit(lambda a, b: b * 2, keep_unused=True)(x3, y)
    assert kept.sharding.device_set == {d3} and kept.committed
    with pytest.raises(ValueError, match="incompatible devices"):
        plax.jit(lambda a, unused, b: a + b, keep_unused=True)(x3, x5, y)


def test_jit_device_option_places_the_computation():
    device5 = plax.devices()[5]
    out = plax.jit(lambda v: v + 1, device=device5)(f32(3))
    assert out.sharding.device_set == {device5}
    with pytest.raises(ValueError, match="both a device and a backend"):
        plax.jit(lambda v: v, device=device5, backend="cpu")


def test_fast_path_reuses_one_executable_per_device():
    jf = plax.jit(lambda v: v * 3)
    d1, d2 = plax.devices()[1:3]
    for _ in range(3):
        assert jf(plax.device_put(f32(2), d1)).devices() == {d1}
        assert jf(plax.device_put(f32(2), d2)).devices() == {d2}
    assert len(jf._fast_entries()) == 2
    assert fastpath_stats(jf) == {"hits": 4, "slow_path": {
        "first call": 1, "an argument sharding, device or commitment not seen before": 1}}


def test_bad_donate_argnums_error_names_the_option():
    with pytest.raises(ValueError, match="donate_argnums"):
        plax.jit(lambda x: x, donate_argnums=3)


def test_jit_of_a_function_wrapping_another_jit_keeps_its_own_target():
    inner = plax.jit(lambda v: v * 2)
    outer = plax.jit(functools.wraps(inner)(lambda v: inner(v) + 1))
    np.testing.assert_array_equal(outer(f32(3)), f32(3) * 2 + 1)


def test_dce_keeps_what_a_pruned_inner_jit_still_reads():
    """DCE of an outer Jaxpr pairs the inner jit's used-input flags with the inputs the
    equation had before its own pruning (a jit ignoring its first argument, inside
    grad, inside jit, once lost the argument it did use)."""
    inner = plax.jit(lambda unused, s: plax.numpy.sin(s))
    f = plax.jit(plax.grad(lambda s: inner(np.ones(2, np.float32), s)))
    np.testing.assert_allclose(f(1.2), np.cos(1.2), rtol=1e-6)

"""Process state and its guards: live_arrays, clear_caches, default_device, typeof,
device_get, copy_to_host_async, print_environment_info, process and host queries,
effects_barrier, no_tracing/no_execution, enable_checks and user contexts."""
from __future__ import annotations

import gc
import numpy as np
import pytest
from jax_reference import requires_jax, run_reference

import plax
import plax.numpy as jnp
from plax_runtime import effects


def test_live_arrays_lists_live_plax_arrays():
    x = jnp.arange(5.0) + 1
    y = x * 2
    live = plax.live_arrays()
    assert any(a is x for a in live) and any(a is y for a in live)
    y.delete()
    assert not any(a is y for a in plax.live_arrays())
    del x
    gc.collect()
    assert all(isinstance(a, plax.Array) for a in plax.live_arrays("cpu"))
    with pytest.raises(RuntimeError):
        plax.live_arrays("no_such_platform")


def test_clear_caches_forgets_traces_and_executables():
    traces = []

    @plax.jit
    def f(a):
        traces.append(1)
        return a * 3
    x = jnp.ones(2)
    f(x)
    f(x)
    assert len(traces) == 1
    plax.clear_caches()
    np.testing.assert_array_equal(f(x), [3.0, 3.0])
    assert len(traces) == 2
    np.testing.assert_array_equal(x + x, [2.0, 2.0])  # eager caches were cleared too


def test_default_device_context_manager():
    devices = plax.devices()
    assert len(devices) > 1
    with plax.default_device(devices[1]):
        x = jnp.ones(3)
        y = plax.jit(lambda a: a + 1)(np.ones(3, np.float32))
    assert x.devices() == {devices[1]} and y.devices() == {devices[1]}
    assert not x.committed
    assert (jnp.ones(3) + 0).devices() == {devices[0]}
    with plax.default_device("cpu"):
        assert jnp.ones(1).devices() == {devices[0]}
    with pytest.raises(ValueError, match="must be None, a device"):
        plax.default_device(3)


def test_typeof():
    aval = plax.typeof(jnp.ones((2, 3), jnp.int8))
    assert (aval.shape, aval.dtype, aval.weak_type) == ((2, 3), np.int8, False)
    weak = plax.typeof(1.0)
    assert (weak.shape, weak.dtype, weak.weak_type) == ((), np.float32, True)
    assert plax.typeof(np.ones(2)).dtype == np.float32  # canonical dtype
    seen = []
    plax.jit(lambda a: seen.append(plax.typeof(a)) or a)(np.zeros(4, np.int16))
    assert seen[0].shape == (4,) and seen[0].dtype == np.int16
    with pytest.raises(TypeError, match="not a valid plax type"):
        plax.typeof("a string")


def test_device_get_and_copy_to_host_async():
    x = jnp.arange(3) + 1
    tree = {"a": x, "b": 1, "c": np.ones(2), "d": "text", "e": [x * 2]}
    assert plax.copy_to_host_async(tree) is tree
    got = plax.device_get(tree)
    assert type(got["a"]) is np.ndarray and got["b"] == 1 and got["d"] == "text"
    np.testing.assert_array_equal(got["e"][0], [2, 4, 6])
    assert got["c"] is tree["c"]
    assert plax.device_get(5) == 5


def test_process_queries_and_host_aliases():
    assert plax.process_indices() == [0]
    with pytest.warns(UserWarning, match="host_id has been renamed to plax.process_index"):
        assert plax.host_id() == 0
    with pytest.warns(UserWarning, match="renamed to plax.process_count"):
        assert plax.host_count() == 1
    with pytest.warns(UserWarning, match="renamed to plax.process_indices"):
        assert plax.host_ids() == [0]


def test_print_environment_info(capsys):
    text = plax.print_environment_info(return_string=True)
    assert "jaxlib: 0.10.2" in text and "plax-runtime" in text
    assert "device info: cpu-8, 8 local devices" in text
    assert plax.print_environment_info() is None
    assert capsys.readouterr().out.strip() == text


class _Token:
    def __init__(self):
        self.waited = 0

    def block_until_ready(self):
        self.waited += 1


def test_effects_barrier_waits_for_registered_tokens():
    tokens = effects.RuntimeTokens()
    ordered, output = _Token(), _Token()
    device = plax.devices()[0]
    tokens.set_token("print", device, ordered)
    tokens.set_output_token(device, output)
    assert tokens.get_token("print", device) is ordered
    tokens.block_until_ready()
    assert (ordered.waited, output.waited) == (1, 1)
    tokens.block_until_ready()  # an output token is waited for once; ordered ones stay
    assert (ordered.waited, output.waited) == (2, 1)
    effects.runtime_tokens.set_output_token(device, jnp.ones(2) * 2)  # an Array serves
    plax.effects_barrier()
    tokens.clear()
    assert tokens.get_token("print", device) is None


def test_no_tracing():
    f = plax.jit(lambda a: a * 2)
    x = jnp.ones(3)
    f(x)
    x * x
    y = np.ones((2, 2), np.float32)
    with plax.no_tracing(True):
        f(x)  # cached: nothing is traced
        x * x  # an eager operation compiled before
        with pytest.raises(RuntimeError, match="re-tracing function <lambda>.*'no_tracing'"):
            f(y)
        with pytest.raises(RuntimeError, match="'no_tracing' is set"):
            plax.make_jaxpr(lambda a: a + 1)(x)
        with pytest.raises(RuntimeError, match="re-tracing function cosh"):
            jnp.cosh(x)
    f(y)


def test_no_execution():
    f = plax.jit(lambda a: a - 1)
    x = jnp.ones(3)
    f(x)
    with plax.no_execution(True):
        with pytest.raises(RuntimeError, match=r"execute function jit\(<lambda>\), but the "
                                               "no_execution config option is set"):
            f(x)
        with pytest.raises(RuntimeError, match=r"jit\(add\)"):
            x + x
        assert plax.make_jaxpr(f)(x) is not None
        assert plax.eval_shape(f, x).shape == (3,)
        f.lower(x)  # lowering runs nothing
    np.testing.assert_array_equal(f(x), [0.0, 0.0, 0.0])


def test_enable_checks_type_checks_traced_jaxprs():
    from plax.errors import JaxprTypeError
    from plax.extend.core import Primitive, ShapedArray
    calls = []
    fickle = Primitive("tests.fickle_shape")  # its abstract evaluation changes its mind

    @fickle.def_abstract_eval
    def _(x):
        calls.append(1)
        return ShapedArray((len(calls),), x.dtype)

    plax.make_jaxpr(lambda a: fickle.bind(a))(np.ones(2))
    with plax.enable_checks(True):
        with pytest.raises(JaxprTypeError, match=r"fickle_shape produces f32\[3\] but "
                                                 r"its output variable has type f32\[2\]"):
            plax.make_jaxpr(lambda a: fickle.bind(a))(np.ones(2))
        plax.make_jaxpr(lambda a: jnp.sin(a) * 2)(np.ones(2))


def test_user_context_keys_the_caches():
    traces = []
    f = plax.jit(lambda a: traces.append(1) or a + 1)
    context = plax.make_user_context(default_value=None)
    f(1.0)
    with context(1):
        f(1.0)
        f(1.0)
        assert context.value == 1
    with context(2):
        f(1.0)
    assert len(traces) == 3
    with pytest.raises(TypeError, match="takes hashable values"):
        context([1])
    # As JAX's: a user context is no named option (listings of options stay JAX's).
    assert not any(name.startswith("jax_user_context") for name in plax.config.values())


def test_allow_f16_reductions():
    x = jnp.ones((3, 2), jnp.float16)
    with plax.allow_f16_reductions(False):
        with pytest.raises(ValueError, match=r"reduce_sum on operand f16\[3,2\] is not allowed"):
            plax.lax.reduce_sum(x, (0,))
        assert plax.lax.reduce_sum(x[:1], (0,)).shape == (2,)  # one element: exact
        assert float(x.sum()) == 6.0  # plax.numpy sums 16-bit floats in float32
    assert plax.lax.reduce_sum(x, (0,)).dtype == np.float16


def test_config_api_names_at_the_top_level():
    names = ["check_tracer_leaks", "checking_leaks", "debug_infs", "debug_nans",
             "default_device", "default_matmul_precision", "default_prng_impl", "disable_jit",
             "enable_checks", "enable_x64", "explain_cache_misses", "log_compiles",
             "numpy_dtype_promotion", "numpy_rank_promotion", "threefry_partitionable",
             "no_tracing", "no_execution", "transfer_guard", "array_garbage_collection_guard",
             "jax2tf_associative_scan_reductions", "allow_f16_reductions"]
    for name in names:
        assert name in dir(plax), name
        getattr(plax, name)
    with plax.checking_leaks():
        assert plax.config.jax_check_tracer_leaks is True
    with plax.debug_nans(True):
        assert plax.config.read("jax_debug_nans") is True
    with plax.numpy_rank_promotion("raise"):
        with pytest.raises(ValueError):
            jnp.ones(3) + jnp.ones((2, 3))
    with plax.numpy_dtype_promotion("strict"):
        with pytest.raises(plax.dtypes.TypePromotionError):
            jnp.ones(2, jnp.int8) + jnp.ones(2, jnp.float32)
    assert plax.jacobian is plax.jacrev


def test_log_compiles(caplog):
    import logging
    with caplog.at_level(logging.WARNING), plax.log_compiles(True):
        plax.jit(lambda a: a * 7)(np.ones(5, np.int8))
    assert any("Compiling" in r.getMessage() for r in caplog.records)


@requires_jax
def test_state_functions_match_jax():
    code = """
    x = jnp.arange(6.0).reshape(2, 3)
    result = {
        "typeof": [str(jax.typeof(x).shape), str(jax.typeof(x).dtype), jax.typeof(1).weak_type],
        "device_get": jax.device_get({"a": x, "b": 2}) == {"b": 2} or
                      sorted(jax.device_get({"a": x, "b": 2})),
        "process_indices": jax.process_indices(),
        "live": any(a is x for a in jax.live_arrays()),
        "copy": jax.copy_to_host_async([x, 1])[1],
        "f16": [],
    }
    with jax.allow_f16_reductions(False):
        try:
            jax.lax.reduce_sum(jnp.ones((3, 2), jnp.float16), (0,))
        except ValueError as e:
            result["f16"] = str(e)
    """
    assert run_reference(code, "jax") == run_reference(code, "plax")


def test_array_garbage_collection_guard_logs_arrays_freed_by_the_collector(caplog):
    import logging
    with caplog.at_level(logging.ERROR, logger="plax.gc_guard"):
        with plax.array_garbage_collection_guard("log"):
            x, y = jnp.ones(3) + 1, jnp.ones(2, jnp.int8) + 1
            cycle = [x]
            cycle.append(cycle)
            del x, y  # y goes by reference counting: not reported
            del cycle
            gc.collect()
        z = jnp.ones(4) + 1  # made with the guard off: not watched
        cycle = [z]
        cycle.append(cycle)
        del z, cycle
        gc.collect()
    reports = [r.getMessage() for r in caplog.records if r.name == "plax.gc_guard"]
    assert len(reports) == 1 and "plax.Array f32[3] was freed by Python's garbage " \
        "collector" in reports[0]


def test_array_garbage_collection_guard_fatal_aborts():
    import subprocess
    import sys
    code = ("import gc, plax, plax.numpy as jnp\n"
            "plax.config.update('jax_array_garbage_collection_guard', 'fatal')\n"
            "x = jnp.ones(3) + 1; c = [x]; c.append(c); del x, c\n"
            "gc.collect()\nprint('survived')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode != 0 and "survived" not in proc.stdout
    assert "freed by Python's garbage collector" in proc.stderr

"""The C++ fast path of cached jit calls (`plax_runtime._fastpath.JitCache`): hit
counts, the reasons slow-path calls are counted and logged under, results equal to
the slow path's for every argument kind, and the eager operators that ride on it."""
from __future__ import annotations

import gc
import operator
import logging
import subprocess
import sys
import weakref

import numpy as np
import pytest

import plax
from plax import lax
from plax.extend import config
from plax.sharding import Mesh, NamedSharding, PartitionSpec as P
from plax_transforms.fastpath import fastpath_stats


def f32(*shape):
    return (np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) + 1) / 4


def hits(f) -> int:
    return fastpath_stats(f)["hits"]


def slow(f) -> dict:
    return fastpath_stats(f)["slow_path"]


def assert_same_array(fast, slow_result):
    """Equal values, avals (weak type included), sharding and commitment."""
    assert isinstance(fast, plax.Array) and isinstance(slow_result, plax.Array)
    assert fast.aval.str_short() == slow_result.aval.str_short()
    assert fast.weak_type == slow_result.weak_type
    assert fast.sharding == slow_result.sharding
    assert fast.committed == slow_result.committed
    np.testing.assert_array_equal(np.asarray(fast), np.asarray(slow_result))


def test_a_thousand_calls_are_one_miss_and_999_hits():
    f = plax.jit(lambda x: x * 2 + 1)
    x = plax.device_put(f32(3))
    for _ in range(1000):
        out = f(x)
    np.testing.assert_array_equal(np.asarray(out), f32(3) * 2 + 1)
    assert fastpath_stats(f) == {"hits": 999, "slow_path": {"first call": 1}}


@pytest.mark.parametrize("spec", [P(), P("x"), P("y"), P(("x", "y")), P(None, "y")],
                         ids=str)
def test_partially_replicated_shardings_never_fall_back(mesh, spec):
    """8 addressable shards but fewer distinct pieces (or one): always the fast path."""
    s = NamedSharding(mesh, spec)
    x = plax.device_put(f32(8, 4), s)
    f = plax.jit(lambda v: v + 1)
    outs = [f(x) for _ in range(20)]
    assert fastpath_stats(f) == {"hits": 19, "slow_path": {"first call": 1}}
    for out in outs:
        assert out.sharding.is_equivalent_to(s, 2)
        np.testing.assert_array_equal(np.asarray(out), f32(8, 4) + 1)


def test_arrays_on_a_subset_of_the_devices_stay_fast(devs):
    s = NamedSharding(Mesh(np.array(devs[4:8]), ("x",)), P("x"))
    x = plax.device_put(f32(8), s)
    f = plax.jit(lambda v: v * 3)
    for _ in range(5):
        out = f(x)
    assert out.sharding == s and hits(f) == 4
    np.testing.assert_array_equal(np.asarray(out), f32(8) * 3)


# --- the fast path's results are the slow path's --------------------------------------

def _first_then_fast(f, *args, **kwargs):
    """(the slow path's result, the fast path's result) of the same call."""
    before = hits(f)
    slow_result = f(*args, **kwargs)
    fast = f(*args, **kwargs)
    assert hits(f) == before + 1, "the second call should have been a fast-path hit"
    return slow_result, fast


@pytest.mark.parametrize("index", [0, 3, 7])
def test_arrays_on_each_device(devs, index):
    f = plax.jit(lambda x, y: x * y)
    x = plax.device_put(f32(4), devs[index])
    slow_result, fast = _first_then_fast(f, x, x)
    assert_same_array(fast, slow_result)
    assert fast.devices() == {devs[index]} and fast.committed


def test_uncommitted_arrays(devs):
    f = plax.jit(lambda x: x - 1)
    slow_result, fast = _first_then_fast(f, plax.device_put(f32(2, 2)))
    assert_same_array(fast, slow_result)
    assert not fast.committed


def test_sharded_arrays(mesh):
    f = plax.jit(lambda x, y: (x @ y.T, x.sum()))
    x = plax.device_put(f32(8, 4), NamedSharding(mesh, P("x", "y")))
    (slow_a, slow_b), (fast_a, fast_b) = _first_then_fast(f, x, x)
    assert_same_array(fast_a, slow_a)
    assert_same_array(fast_b, slow_b)


@pytest.mark.parametrize("value", [np.float32(2.5), np.arange(6, dtype=np.int32),
                                   np.ones((2, 3), np.float64), np.bool_(True)],
                         ids=["f32 scalar", "i32 vector", "f64 matrix", "bool"])
def test_numpy_arguments(value):
    f = plax.jit(lambda x, y: x + y)
    x = plax.device_put(np.ones((), np.float32))
    slow_result, fast = _first_then_fast(f, x, value)
    assert_same_array(fast, slow_result)
    np.testing.assert_allclose(np.asarray(fast), np.float32(1) + value, rtol=1e-6)


def test_numpy_arguments_placed_from_cpp_see_each_calls_contents(monkeypatch):
    """After the first call the executor places NumPy arguments itself (the Python
    placement runs once): the same array mutated in place, or a new one each call, is
    read afresh every time."""
    from plax_runtime import executable
    python_placements = []
    place = executable._HostValues.__call__
    monkeypatch.setattr(executable._HostValues, "__call__",
                        lambda self, x, j: python_placements.append(j) or place(self, x, j))
    f = plax.jit(lambda x: x * 2)
    a = f32(4)
    for k in range(4):
        a[0] = k
        np.testing.assert_array_equal(np.asarray(f(a)), a * 2)
        b = np.full(4, k, np.float32)
        np.testing.assert_array_equal(np.asarray(f(b)), b * 2)
    assert fastpath_stats(f) == {"hits": 7, "slow_path": {"first call": 1}}
    # With JAX loaded in this process (an earlier test imported it), the executor leaves
    # every placement to Python, out of the transfer guard JAX sets (dispatch.cc)
    assert python_placements == ([0] * 8 if "jax" in sys.modules else [0])


def test_numpy_arguments_are_copied_before_the_call_returns():
    """A write to a NumPy argument right after the call (the computation still running,
    dispatch being asynchronous) never reaches it, on the first call and on fast calls.
    (JAX 0.10.2 places jit arguments zero-copy, and there the write can show.)"""
    def slow_sum(a):
        return plax.lax.fori_loop(0, 20, lambda i, m: plax.numpy.tanh(m @ a), a).sum()
    f = plax.jit(slow_sum)
    a = np.full((256, 256), 1 / 256, np.float32)
    m = a.astype(np.float64)
    for _ in range(20):
        m = np.tanh(m @ a)
    for _ in range(4):
        b = a.copy()
        out = f(b)
        b[:] = 7.0  # would make the sum 65536
        np.testing.assert_allclose(float(out), m.sum(), rtol=1e-4)
    assert fastpath_stats(f) == {"hits": 3, "slow_path": {"first call": 1}}


def test_eager_operations_place_numpy_arguments_before_any_jit_is_set_up():
    """Executors run eager primitives before the jit fast path is configured (a fresh
    process that never imports it): their C++ placement of NumPy arguments needs none
    of its state. The process refuses plax.numpy, whose import makes its jit functions
    (and so configures the fast path), and which a lowering plugin (Pallas's) imports
    on the first lowering; that plugin is then skipped with a warning."""
    script = ("import sys, numpy as np\n"
              "class NoNumpy:\n"
              "    def find_spec(self, name, path, target=None):\n"
              "        if name == 'plax_stdlib.numpy':\n"
              "            raise ImportError(name)\n"
              "sys.meta_path.insert(0, NoNumpy())\n"
              "from plax import lax\n"
              "a = np.ones(3, np.float32)\n"
              "outs = [lax.add(a, a) for _ in range(3)]\n"
              "assert 'plax_transforms.fastpath' not in sys.modules\n"
              "print(np.asarray(outs[-1])[0])")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "2.0"


def test_numpy_arguments_onto_a_split_input_take_the_python_placement(mesh):
    s = NamedSharding(mesh, P("x", "y"))
    f = plax.jit(lambda x: x + 1, in_shardings=s)
    for k in range(3):
        out = f(f32(2, 4) + k)
        assert out.sharding == s
        np.testing.assert_array_equal(np.asarray(out), f32(2, 4) + k + 1)
    assert hits(f) == 2


def test_numpy_arguments_are_still_transfers_under_a_host_to_device_guard():
    f = plax.jit(lambda x: x + 1)
    a = f32(3)
    f(a), f(a)  # the second call is placed from C++
    with plax.transfer_guard_host_to_device("disallow"):
        with pytest.raises(Exception, match="Disallowed host-to-device transfer"):
            f(a)
    np.testing.assert_array_equal(np.asarray(f(a)), f32(3) + 1)


@pytest.mark.parametrize("value", [3, 2.5, 1 + 2j, True, -0.0, float("nan"), float("inf")],
                         ids=repr)
def test_python_scalars_and_their_weak_types(value):
    f = plax.jit(lambda x, s: x * s)
    x = plax.device_put(np.full(3, 2, np.float32))
    slow_result, fast = _first_then_fast(f, x, value)
    assert_same_array(fast, slow_result)
    weak = plax.jit(lambda s: s)
    slow_result, fast = _first_then_fast(weak, value)
    assert_same_array(fast, slow_result)
    assert fast.weak_type == (type(value) is not bool)


def test_scalar_buffers_reused_by_value_keep_signed_zeros_and_nans_apart():
    f = plax.jit(lambda x, s: x / s)
    x = plax.device_put(np.ones(2, np.float32))
    for _ in range(3):  # alternating values of one signature: each call its own scalar
        np.testing.assert_array_equal(np.asarray(f(x, 0.0)), [np.inf, np.inf])
        np.testing.assert_array_equal(np.asarray(f(x, -0.0)), [-np.inf, -np.inf])
        assert np.isnan(np.asarray(f(x, float("nan")))).all()
        np.testing.assert_array_equal(np.asarray(f(x, np.float32(4))), [0.25, 0.25])
        np.testing.assert_array_equal(np.asarray(f(x, np.float32(8))), [0.125, 0.125])
    assert slow(f) == {"first call": 1,
                       "new argument shapes, dtypes or weak types": 1}


def test_repeated_scalars_are_still_transfers_under_a_host_to_device_guard():
    """A reused scalar buffer skips a transfer, so a guard that sees every one wins."""
    f = plax.jit(lambda x, s: x * s)
    x = plax.device_put(f32(2))
    f(x, 3.0), f(x, 3.0)  # the second call reuses the buffer of 3.0
    with plax.transfer_guard_host_to_device("disallow"):
        with pytest.raises(Exception, match="Disallowed host-to-device transfer"):
            f(x, 3.0)
    np.testing.assert_array_equal(np.asarray(f(x, 3.0)), f32(2) * 3)


def test_donated_scalar_positions_get_a_fresh_buffer_each_call():
    f = plax.jit(lambda x, s: (x + s, s * 2), donate_argnums=1)  # s's buffer -> s * 2
    x = plax.device_put(f32(2))
    for _ in range(3):
        total, doubled = f(x, np.float32(2))
        np.testing.assert_array_equal(np.asarray(total), f32(2) + 2)
        assert float(doubled) == 4


def test_signatures_travel_with_arrays_from_call_to_call():
    """An output's fast-path signature is made with it and is what a fresh look says."""
    from plax_runtime._fastpath import arg_signature
    f = plax.jit(lambda x: x + 1)
    y = f(f(plax.device_put(f32(3))))
    for _ in range(3):
        y = f(y)
    assert y._sig is not None
    assert arg_signature([y], False) == ((y.shape, y.dtype, False, y.sharding, y.committed),)
    fresh = plax.device_put(f32(3))
    assert fresh._sig is None
    assert arg_signature([fresh], False) == arg_signature([y], False)
    assert fresh._sig == y._sig
    assert fastpath_stats(f) == {"hits": 4, "slow_path": {"first call": 1}}


def test_pytrees_of_arrays():
    f = plax.jit(lambda tree: {"sum": tree["a"] + tree["b"][0], "b": tree["b"]})
    tree = {"a": plax.device_put(f32(3)), "b": (plax.device_put(f32(3)), 2.0)}
    slow_result, fast = _first_then_fast(f, tree)
    assert_same_array(fast["sum"], slow_result["sum"])
    assert_same_array(fast["b"][0], slow_result["b"][0])
    assert_same_array(fast["b"][1], slow_result["b"][1])


def test_lists_and_tuples_of_leaves_are_keyed_without_flattening_and_keep_apart():
    """Exact lists and tuples of leaves get a structure key of their own (no registry
    flattening); a list, a tuple, a nested list and an empty one are four entries."""
    f = plax.jit(lambda xs, y: (xs, y * len(xs)))
    a, b = plax.device_put(f32(2)), plax.device_put(f32(2) + 1)
    for _ in range(2):
        as_list, as_tuple = f([a, b], 2.0), f((a, b), 2.0)
        nested, empty = f([a, [b]], 2.0), f([], a)
    assert type(as_list[0]) is list and type(as_tuple[0]) is tuple
    assert type(nested[0][1]) is list and empty[0] == []
    for out in (as_list, as_tuple):
        np.testing.assert_array_equal(np.asarray(out[0][1]), f32(2) + 1)
        assert float(out[1]) == 4.0
    np.testing.assert_array_equal(np.asarray(nested[0][1][0]), f32(2) + 1)
    np.testing.assert_array_equal(np.asarray(empty[1]), np.zeros(2, np.float32))
    assert fastpath_stats(f) == {"hits": 4, "slow_path": {
        "first call": 1, "new pytree structure or static arguments": 3}}


def test_keyword_and_static_arguments():
    f = plax.jit(lambda x, n, *, scale: x * n * scale, static_argnums=1)
    x = plax.device_put(f32(3))
    slow_result, fast = _first_then_fast(f, x, 3, scale=2.0)
    assert_same_array(fast, slow_result)
    np.testing.assert_allclose(np.asarray(f(x, 4, scale=2.0)), f32(3) * 8)
    assert slow(f) == {"first call": 1, "new pytree structure or static arguments": 1}


def test_unhashable_static_arguments_take_the_slow_path_and_raise():
    f = plax.jit(lambda x, opts: x, static_argnums=1)
    with pytest.raises(ValueError, match="Non-hashable static arguments"):
        f(plax.device_put(f32(2)), {"a": 1})
    assert slow(f) == {"an unhashable static argument": 1}


def test_donated_arguments_are_deleted_on_the_fast_path_too():
    f = plax.jit(lambda x, y: x + y, donate_argnums=0)
    y = plax.device_put(f32(3))
    for i in range(3):
        x = plax.device_put(f32(3) + i)
        out = f(x, y)
        assert x.is_deleted() and not y.is_deleted()
        np.testing.assert_array_equal(np.asarray(out), 2 * f32(3) + i)
    assert hits(f) == 2
    with pytest.raises(RuntimeError, match="deleted"):
        f(x, y)


def test_deleted_arguments_raise_a_clear_error_on_the_fast_path():
    f = plax.jit(lambda x, y: x * y)
    x, y = plax.device_put(f32(3)), plax.device_put(f32(3))
    f(x, y)
    y.delete()
    with pytest.raises(RuntimeError, match=r"Array passed as argument 1 .* has been deleted"):
        f(x, y)
    assert hits(f) == 1  # a hit, whose execution failed and was explained
    np.testing.assert_array_equal(np.asarray(f(x, x)), f32(3) ** 2)


def test_invalid_arguments_are_reported_by_the_slow_path():
    f = plax.jit(lambda x: x)
    with pytest.raises(TypeError, match="Error interpreting argument"):
        f("a string")
    assert slow(f) == {"an argument or static value the key cannot describe": 1}
    for array in (np.zeros(2, [("a", "f4"), ("b", "i4")]), np.array(["a"])):  # as JAX
        with pytest.raises(TypeError, match="Error interpreting argument.*at path x"):
            f(array)


# --- slow-path reasons: counted, logged once, never switching the fast path off ----------

def test_each_reason_is_counted_and_the_fast_path_stays_on(devs):
    f = plax.jit(lambda x: x + 1)
    a, b = plax.device_put(f32(3), devs[0]), plax.device_put(f32(3), devs[1])
    f(a)
    f(plax.device_put(f32(4), devs[0]))
    f(b)
    with config.default_matmul_precision("highest"):
        f(a)
    plax.make_jaxpr(f)(a)
    for _ in range(3):  # every key seen before is a hit again
        f(a), f(b)
    assert fastpath_stats(f) == {"hits": 6, "slow_path": {
        "first call": 1,
        "new argument shapes, dtypes or weak types": 1,
        "an argument sharding, device or commitment not seen before": 1,
        "a config state changed": 1,
        "called inside a transformation": 1}}


def test_a_mesh_in_context_is_a_reason_of_its_own(mesh):
    f = plax.jit(lambda x: x * 2)
    x = plax.device_put(f32(2))
    f(x)
    with plax.set_mesh(mesh):
        f(x)
    assert slow(f) == {"first call": 1, "another mesh in context": 1}


def test_misses_are_logged_once_per_reason_when_asked(caplog):
    f = plax.jit(lambda x: x + 1)
    config.config.update("plax_log_fastpath_misses", True)
    try:
        with caplog.at_level(logging.WARNING, logger="plax_transforms.fastpath"):
            for n in (1, 2, 3, 4):
                f(plax.device_put(f32(n)))
    finally:
        config.config.update("plax_log_fastpath_misses", False)
    messages = [r.getMessage() for r in caplog.records if r.name == "plax_transforms.fastpath"]
    assert messages == ["jit(<lambda>): a call took the slow path: first call",
                        "jit(<lambda>): a call took the slow path: new argument shapes, "
                        "dtypes or weak types"]
    assert slow(f)["new argument shapes, dtypes or weak types"] == 3


def test_nothing_is_logged_by_default(caplog):
    f = plax.jit(lambda x: x + 1)
    with caplog.at_level(logging.DEBUG, logger="plax_transforms.fastpath"):
        f(plax.device_put(f32(5)))
    assert not [r for r in caplog.records if r.name == "plax_transforms.fastpath"]


def test_clear_cache_also_forgets_the_latest_hit():
    """The latest hit is found by comparison, without the dict: clearing must drop it."""
    f = plax.jit(lambda x: x + 1)
    x = plax.device_put(f32(3))
    f(x), f(x)
    f.clear_cache()
    np.testing.assert_array_equal(np.asarray(f(x)), f32(3) + 1)
    assert fastpath_stats(f) == {"hits": 1, "slow_path": {"first call": 2}}


def test_a_full_cache_is_emptied_latest_hit_included(monkeypatch):
    from plax_transforms import jit as jit_module
    monkeypatch.setattr(jit_module, "_FAST_CACHE_SIZE", 2)
    f = plax.jit(lambda x: x * 2)
    xs = [plax.device_put(f32(n)) for n in (1, 2, 3)]
    f(xs[0]), f(xs[0]), f(xs[1])
    f(xs[2])  # the third entry empties the cache, the latest hit with it
    np.testing.assert_array_equal(np.asarray(f(xs[0])), f32(1) * 2)
    assert len(f._fast_entries()) == 2
    assert fastpath_stats(f)["hits"] == 1


def test_disable_jit_is_not_a_miss():
    f = plax.jit(lambda x: x + 1)
    with config.disable_jit(True):
        np.testing.assert_array_equal(np.asarray(f(f32(2))), f32(2) + 1)
    assert fastpath_stats(f) == {"hits": 0, "slow_path": {}}


def test_a_dropped_jitted_function_is_freed_after_fast_calls():
    def fun(x):
        return x + 1
    f = plax.jit(fun)
    x = plax.device_put(f32(2))
    f(x), f(x)
    ref = weakref.ref(f)
    del f
    gc.collect()
    assert ref() is None


# --- eager operators ride on the jit fast path ----------------------------------------------

def test_eager_operators_match_numpy_with_python_scalars():
    x = plax.device_put(np.linspace(-1, 1, 16, dtype=np.float32))
    expected = np.linspace(-1, 1, 16, dtype=np.float32)
    for _ in range(3):
        x, expected = x * 1.0001 + 0.1, expected * np.float32(1.0001) + np.float32(0.1)
        assert x.dtype == np.float32 and not x.weak_type
    np.testing.assert_allclose(np.asarray(x), expected, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(2 - x / 3), 2 - expected / 3, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.int32, np.bool_, np.float16])
def test_eager_operators_promote_as_before(dtype):
    x = plax.device_put(np.ones(3, dtype))
    for op in (lambda a: a * 2.5, lambda a: a + 1, lambda a: 3 - a, lambda a: a / 2):
        eager = op(x)
        traced = plax.jit(op)(x)
        assert eager.dtype == traced.dtype and eager.weak_type == traced.weak_type
        np.testing.assert_array_equal(np.asarray(eager), np.asarray(traced))


def test_array_operators_go_from_cpp_to_the_jitted_function():
    from plax_runtime._fastpath import Operator
    from plax_stdlib.numpy.array_methods import jitted
    assert isinstance(plax.Array.__dict__["__rmul__"], Operator)
    x = plax.device_put(f32(3))
    multiply = jitted("multiply")
    2.0 * x
    before = hits(multiply)
    for _ in range(10):
        out = 2.0 * x  # reflected: the scalar stays the left operand
    assert hits(multiply) == before + 10
    np.testing.assert_array_equal(np.asarray(out), 2 * f32(3))
    np.testing.assert_array_equal(np.asarray(x.__mul__(3)), 3 * f32(3))  # a bound method
    np.testing.assert_array_equal(np.asarray(plax.Array.__sub__(x, 1)), f32(3) - 1)
    np.testing.assert_array_equal(np.asarray(x - np.ones(3, np.float32)), f32(3) - 1)
    with pytest.raises(TypeError):
        x * "a"  # the generic operator's NotImplemented, then Python's TypeError
    with plax.disable_jit():
        np.testing.assert_array_equal(np.asarray(x / 2), f32(3) / 2)
    assert hits(multiply) == before + 10 and x.__eq__(None) is NotImplemented


def test_unary_operators_go_from_cpp_to_the_jitted_function():
    from plax_runtime._fastpath import Operator
    from plax_stdlib.numpy.array_methods import jitted
    x, i = plax.device_put(f32(3) - 1), plax.device_put(np.arange(3, dtype=np.int32))
    for dunder, name, operand in (("neg", "negative", x), ("pos", "positive", x),
                                  ("abs", "absolute", x), ("invert", "invert", i)):
        method = plax.Array.__dict__[f"__{dunder}__"]
        assert isinstance(method, Operator)
        expected = getattr(operator, dunder)(np.asarray(operand))
        method(operand)
        before = hits(jitted(name))
        out = getattr(operator, dunder)(operand)
        assert hits(jitted(name)) == before + 1, name
        np.testing.assert_array_equal(np.asarray(out), expected)
        assert out.dtype == operand.dtype
    with pytest.raises(TypeError, match="float32"):
        ~x  # noqa: B018 - jnp.invert's TypeError for floats, through the fast path
    with plax.disable_jit():
        np.testing.assert_array_equal(np.asarray(-x), -(f32(3) - 1))
    assert [e.primitive.name for e in plax.make_jaxpr(lambda a: -abs(a))(x).jaxpr.eqns] == [
        "abs", "neg"]


def test_operators_inside_a_trace_stay_plain_equations():
    c = plax.device_put(f32(3))
    jaxpr = plax.make_jaxpr(lambda x: (x * 2.0 + c) - c / 4.0)(f32(3))
    assert [e.primitive.name for e in jaxpr.jaxpr.eqns] == ["mul", "add", "div", "sub"]


def test_eager_primitives_use_a_prepared_executor(devs):
    x = plax.device_put(f32(4), devs[2])
    for _ in range(3):
        out = lax.add(x, 1.0)
    assert out.devices() == {devs[2]} and out.committed
    np.testing.assert_array_equal(np.asarray(out), f32(4) + 1)


# --- one device_put of a pytree with mixed sources and destinations ----------------------

def test_mixed_moves_are_one_batched_copy_checked_shard_by_shard(devs, monkeypatch):
    """Sources and destinations on different device sets and memory kinds, split and
    replicated: one `batched_copy_array_to_devices_with_sharding` call (which groups
    them in C++), and every addressable shard of every result holds its slice."""
    from plax_runtime import placement
    calls = []
    real = placement._batched_copy
    monkeypatch.setattr(placement, "_batched_copy",
                        lambda *a: calls.append(len(a[0])) or real(*a))
    mesh_a = Mesh(np.array(devs[:4]), ("x",))
    mesh_b = Mesh(np.array(devs[4:8]), ("x",))
    pair = Mesh(np.array(devs[2:4]), ("x",))
    values = {f"v{i}": f32(8, 2) + 100 * i for i in range(8)}
    sources = {
        "v0": plax.device_put(values["v0"], devs[0]),
        "v1": plax.device_put(values["v1"], devs[1]),
        "v2": plax.device_put(values["v2"], NamedSharding(mesh_a, P("x"))),
        "v3": plax.device_put(values["v3"], NamedSharding(mesh_a, P("x"))),
        "v4": plax.device_put(values["v4"], NamedSharding(mesh_a, P())),
        "v5": plax.device_put(values["v5"], NamedSharding(pair, P("x"))),
        "v6": plax.device_put(values["v6"], devs[0]),
        "v7": plax.device_put(values["v7"], NamedSharding(mesh_b, P("x"))),
    }
    targets = {
        "v0": plax.sharding.SingleDeviceSharding(devs[5]),
        "v1": plax.sharding.SingleDeviceSharding(devs[5], memory_kind="pinned_host"),
        "v2": NamedSharding(mesh_b, P("x")),
        "v3": NamedSharding(mesh_b, P("x"), memory_kind="pinned_host"),
        "v4": NamedSharding(mesh_b, P()),
        "v5": NamedSharding(Mesh(np.array(devs[6:8]), ("x",)), P("x")),
        "v6": plax.sharding.SingleDeviceSharding(devs[7]),
        "v7": NamedSharding(mesh_a, P("x")),
    }
    moved = plax.device_put(sources, targets)
    assert calls == [8]
    for name, out in moved.items():
        target = targets[name]
        assert out.sharding == target and out.committed, name
        assert out.sharding.memory_kind == target.memory_kind
        index_map = target.addressable_devices_indices_map(out.shape)
        shards = out.addressable_shards
        assert {s.device for s in shards} == set(index_map), name
        for shard in shards:
            np.testing.assert_array_equal(np.asarray(shard.data),
                                          values[name][index_map[shard.device]])
        np.testing.assert_array_equal(np.asarray(out), values[name])
    for source in sources.values():  # copies, not moves: the sources are intact
        assert not source.is_deleted()


def test_concurrent_callers_share_the_cache():
    import threading
    f = plax.jit(lambda x, s: x * s)
    x = plax.device_put(f32(4))
    errors = []

    def work(k):
        try:
            for _ in range(100):
                np.testing.assert_array_equal(np.asarray(f(x, float(k))), f32(4) * k)
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    stats = fastpath_stats(f)
    assert stats["hits"] + sum(stats["slow_path"].values()) == 400
    assert stats["hits"] >= 396


def test_fast_calls_leak_no_references():
    """The C++ path's reference counting: arguments, scalars, the jitted function and
    live arrays are where they were after many calls."""
    import sys
    f = plax.jit(lambda x, s, h: ({"a": x * s}, h + 1))
    x, s, h = plax.device_put(f32(4)), 1.25, np.ones(4, np.float32)
    for _ in range(3):
        plax.block_until_ready(f(x, s, h))
    gc.collect()
    before = [sys.getrefcount(v) for v in (x, s, h, f)]
    live = len(plax.live_arrays())
    for _ in range(500):
        out = f(x, s, h)
    del out
    gc.collect()
    after = [sys.getrefcount(v) for v in (x, s, h, f)]
    assert all(a <= b for a, b in zip(after, before)), (after, before)  # none gained
    assert len(plax.live_arrays()) == live
    assert hits(f) == 502


def test_effectful_calls_hit_and_keep_their_order():
    """Executables threading effect tokens run through Python's `execute` behind a
    fast-path hit: every call runs its callback, in call order."""
    from plax.experimental import io_callback
    seen = []

    def record(v):
        seen.append(float(v))
        return np.float32(v)

    f = plax.jit(lambda x: io_callback(record, plax.ShapeDtypeStruct((), np.float32), x,
                                       ordered=True) + 1)
    outs = [f(np.float32(i)) for i in range(4)]
    plax.effects_barrier()
    assert seen == [0.0, 1.0, 2.0, 3.0]
    assert [float(o) for o in outs] == [1.0, 2.0, 3.0, 4.0]
    assert fastpath_stats(f) == {"hits": 3, "slow_path": {"first call": 1}}

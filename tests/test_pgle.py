"""Profile-guided latency estimation (PGLE) and identical programs compiled once.

With `jax_enable_pgle`, a jitted module's first `jax_pgle_profiling_runs` runs are
profiled, the module is recompiled once with the aggregated profile and the new
executable takes over, fast path included. On CPU the profile (from the host plane)
changes no code, but every mechanic is checked: compile counts by the backend-compile
event, fast-path hits while profiling, the profile's percentile, the persistent cache's
PGLE entry in a second process, and two processes agreeing on one profile.
"""
import hashlib
import json
import logging
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import plax
import plax.numpy as jnp
from jaxlib import _profile_data, _profiler
from plax import monitoring
from plax.extend import config
from plax_runtime import executable as runtime_executable, pgle
from plax_transforms.fastpath import fastpath_stats

from test_distributed import child_env, free_port, run_processes

WORKER = pathlib.Path(__file__).with_name("pgle_worker.py")
BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"


@pytest.fixture
def events():
    """(event, fun_name, kwargs) of every duration event recorded during the test."""
    seen = []

    def listen(event, secs, **kw):
        seen.append((event, kw.get("fun_name"), kw))
    monitoring.register_event_duration_secs_listener(listen)
    yield seen
    monitoring.unregister_event_duration_listener(listen)


@pytest.fixture
def pgle_on():
    with config.enable_pgle(True), config.pgle_profiling_runs(2):
        yield


def _count(events, event, name) -> int:
    return sum(1 for e, n, _ in events if e == event and n == name)


def _fresh(scale: float):
    """A jitted function whose module no other test compiles (`scale` is a constant)."""
    return plax.jit(lambda x: jnp.tanh(x @ x.T) @ x * scale + 1.0)


def _expected(x, scale):
    return np.tanh(x @ x.T) @ x * scale + 1.0


X = np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(4, 6)


def test_two_profiling_runs_then_one_recompile_on_the_fast_path(events, pgle_on):
    f = _fresh(1.5)
    x = plax.device_put(X)
    outs = [np.asarray(f(x)) for _ in range(6)]
    for out in outs:  # before, during and after the swap: the same numbers
        np.testing.assert_array_equal(out, outs[0])
    np.testing.assert_allclose(outs[0], _expected(X, 1.5), rtol=1e-5)
    assert _count(events, BACKEND_COMPILE, "jit(<lambda>)") == 2
    assert _count(events, pgle.PROFILING_RUN_EVENT, "jit(<lambda>)") == 2
    assert _count(events, pgle.RECOMPILE_EVENT, "jit(<lambda>)") == 1
    # one slow call; the second profiled run and every later call were fast-path hits
    assert fastpath_stats(f) == {"hits": 5, "slow_path": {"first call": 1}}
    (runner, _, _), = f._fast_entries().values()
    assert isinstance(runner, runtime_executable._fastpath.Executor)  # the new executable
    for _ in range(5):
        f(x)
    assert _count(events, BACKEND_COMPILE, "jit(<lambda>)") == 2  # nothing more for PGLE


def test_pgle_off_compiles_once(events):
    f = _fresh(2.5)
    x = plax.device_put(X)
    for _ in range(5):
        np.testing.assert_allclose(f(x), _expected(X, 2.5), rtol=1e-5)
    assert _count(events, BACKEND_COMPILE, "jit(<lambda>)") == 1
    assert not [e for e, _, _ in events if e.startswith("/plax/pgle/")]


def test_the_profile_is_the_runs_percentile(events, pgle_on):
    """AOT-compiled calls are profiled too; the profile compiled with holds, per
    instruction, the configured percentile of the runs' latencies (max at 100)."""
    with config.pgle_aggregation_percentile(100):
        compiled = _fresh(3.5).lower(X).compile()
        state = compiled._compiled._pgle
        for _ in range(3):
            np.testing.assert_allclose(compiled(X), _expected(X, 3.5), rtol=1e-5)
    runs = [pgle.decode_costs(p) for p in state.runner.profiles]
    assert len(runs) == 2 and runs[0] and set(runs[0]) == set(runs[1])
    applied = pgle.decode_costs(compiled._compiled.executable.fdo_profile)
    assert applied == {op: max(r[op] for r in runs) for op in runs[0]}
    (_, _, kw), = [e for e in events if e[0] == pgle.RECOMPILE_EVENT]
    assert kw["profile_sha256"] == hashlib.sha256(
        compiled._compiled.executable.fdo_profile).hexdigest()


def test_a_redefined_function_finds_its_profiled_executable(events, pgle_on):
    """A module PGLE already optimized in this process is neither profiled nor
    compiled again when a new function lowers to it."""
    x = plax.device_put(X)
    for _ in range(3):
        f = _fresh(4.5)
        for _ in range(3):
            np.testing.assert_allclose(f(x), _expected(X, 4.5), rtol=1e-5)
    assert _count(events, BACKEND_COMPILE, "jit(<lambda>)") == 2
    assert _count(events, pgle.PROFILING_RUN_EVENT, "jit(<lambda>)") == 2


def test_explain_cache_misses_says_the_recompile_is_pgle(caplog, pgle_on):
    f = _fresh(5.5)
    with config.explain_cache_misses(True), caplog.at_level(logging.WARNING):
        for _ in range(3):
            f(X)
    assert any("PGLE: recompiling with the profile of its first 2 runs" in r.getMessage()
               for r in caplog.records)


def test_aggregation_percentile_out_of_range_is_a_value_error(pgle_on):
    with config.pgle_aggregation_percentile(101):
        with pytest.raises(ValueError, match="jax_pgle_aggregation_percentile"):
            _fresh(6.5)(X)


def test_profiles_encode_and_aggregate_with_jaxlib():
    runs = [{"fusion": 1.0, "dot.1": 5.0}, {"fusion": 3.0, "dot.1": 7.0}, {"fusion": 2.0}]
    profiles = [pgle.encode_costs(r) for r in runs]
    assert [pgle.decode_costs(p) for p in profiles] == runs
    for percentile, pick in ((0, min), (100, max)):
        aggregated = _profiler.aggregate_profiled_instructions(profiles, percentile)
        assert pgle.decode_costs(aggregated) == {
            "fusion": pick([1.0, 3.0, 2.0]), "dot.1": pick([5.0, 7.0])}
    with pytest.raises(ValueError, match="wire type"):
        list(pgle.proto_fields(b"\x0f"))


# A TPU's trace as libtpu 0.0.42 writes it (read on a v5e chip): a run of each module
# on the "XLA Modules" line, each instruction on "XLA Ops", named by its HLO text.
_TPU_XSPACE = """
planes {
  id: 1 name: "/device:TPU:0"
  lines { id: 1 name: "XLA Modules" timestamp_ns: 1000
    events { metadata_id: 1 offset_ps: 0 duration_ps: 9000000 }
    events { metadata_id: 2 offset_ps: 20000000 duration_ps: 5000000 } }
  lines { id: 2 name: "XLA Ops" timestamp_ns: 1000
    events { metadata_id: 3 offset_ps: 1000000 duration_ps: 2000000 }
    events { metadata_id: 4 offset_ps: 4000000 duration_ps: 3000000 }
    events { metadata_id: 3 offset_ps: 7000000 duration_ps: 1000000 }
    events { metadata_id: 5 offset_ps: 21000000 duration_ps: 4000000 } }
  event_metadata { key: 1 value { id: 1 name: "jit_step(7022006063745061446)" } }
  event_metadata { key: 2 value { id: 2 name: "jit_other(1)" } }
  event_metadata { key: 3 value { id: 3 name: "%fusion.1 = f32[8]{0} fusion(%p), kind=kLoop" } }
  event_metadata { key: 4 value { id: 4 name: "%convolution.2 = f32[8]{0} convolution(%a, %b)" } }
  event_metadata { key: 5 value { id: 5 name: "%fusion.9 = f32[8]{0} fusion(f32[8]{0} %q)" } }
}
"""


def test_a_tpu_trace_gives_each_instructions_mean_latency():
    """jaxlib's get_fdo_profile finds nothing in libtpu 0.0.42's trace (JAX's PGLE then
    recompiles with an empty profile); plax reads the instructions of its module's
    runs from the device plane, in microseconds."""
    xspace = _profile_data.ProfileData.text_proto_to_serialized_xspace(_TPU_XSPACE)
    assert _profiler.get_fdo_profile(xspace) == b""
    assert pgle.decode_costs(pgle.profile_of(xspace, "jit_step")) == {
        "fusion.1": 1.5, "convolution.2": 3.0}
    assert pgle.decode_costs(pgle.profile_of(xspace, "jit_other")) == {"fusion.9": 4.0}


def test_aot_compile_takes_a_users_profile(events, pgle_on):
    """`compiler_options={'fdo_profile': ...}` compiles with it (no profiling runs);
    each profile is its own executable; anything but bytes is a TypeError."""
    lowered = _fresh(7.5).lower(X)
    profile = pgle.encode_costs({"dot.1": 3.0})
    compiled = lowered.compile({"fdo_profile": profile})
    assert compiled._compiled.executable.fdo_profile == profile
    for _ in range(3):
        np.testing.assert_allclose(compiled(X), _expected(X, 7.5), rtol=1e-5)
    other = lowered.compile({"fdo_profile": pgle.encode_costs({"dot.1": 4.0})})
    assert other._compiled.executable is not compiled._compiled.executable
    assert not [e for e, _, _ in events if e.startswith("/plax/pgle/")]
    with pytest.raises(TypeError, match=r"fdo_profile.*must be bytes.*got str"):
        lowered.compile({"fdo_profile": "dot.1: 3.0"})


def test_identical_programs_compile_once(events):
    """JAX's jit_add_chain: a new outer function each round calling one inner jit;
    every round after the first finds the executable of the same module."""
    inner = plax.jit(lambda a, b: a + b)
    x = plax.device_put(np.ones((2, 2), np.float32))
    for _ in range(4):
        @plax.jit
        def outer(v):
            for _ in range(10):
                v = inner(v, v)
            return v
        np.testing.assert_array_equal(outer(x), np.full((2, 2), 1024.0))
    assert _count(events, BACKEND_COMPILE, "jit(outer)") == 1


def _worker(*args: str) -> dict:
    done = subprocess.run([sys.executable, str(WORKER), *args], capture_output=True,
                          text=True, timeout=120, env=child_env())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    line, = [s for s in done.stdout.splitlines() if s.startswith("RESULT ")]
    return json.loads(line[len("RESULT "):])


def test_a_warm_second_process_loads_the_profiled_executable(tmp_path):
    """The profiled executable is stored under its own key: a second process with
    PGLE on loads it (no compile, no profiling); one with PGLE off loads the unprofiled
    one, unless it expects PGLE's (jax_compilation_cache_expect_pgle)."""
    first = _worker("cache", str(tmp_path), "pgle")
    assert first["compiles"].count("jit(step)") == 2 and first["profiling_runs"] == 2
    assert first["profiled"]
    entries = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("jit_step"))
    assert len(entries) == 2
    np.testing.assert_allclose(first["outs"][0], np.tanh(_X_WORKER @ _X_WORKER.T) @ _X_WORKER
                               + 1.0, rtol=1e-5)
    for mode, profiled in (("pgle", True), ("off", False), ("expect", True)):
        later = _worker("cache", str(tmp_path), mode)
        assert later["compiles"] == [] and later["profiling_runs"] == 0, mode
        assert later["recompiles"] == [] and later["stats"]["misses"] == 0, mode
        assert later["profiled"] == profiled, mode
        assert later["outs"] == first["outs"], mode


_X_WORKER = np.linspace(-1.0, 1.0, 32, dtype=np.float32).reshape(4, 8)


def _distributed(mode: str) -> list[dict]:
    address = f"127.0.0.1:{free_port()}"
    outputs = run_processes([[sys.executable, str(WORKER), "distributed", address, "2",
                              str(pid), mode] for pid in range(2)])
    results = []
    for _, out in outputs:
        lines = [s for s in out.splitlines() if s.startswith("RESULT ")]
        assert lines, out[-4000:]
        results.append(json.loads(lines[-1][len("RESULT "):]))
    return results


def test_two_processes_compile_with_one_profile():
    """Each process profiles its runs; process 0's profile (from its own runs) is the
    one both compile with (its hash is the same in both), once, and the results
    agree."""
    runs = _distributed("pgle")
    for seen in runs:
        assert "error" not in seen, seen.get("error")
        assert seen["compiles"].count("jit(step)") == 2 and seen["profiling_runs"] == 2
        assert len(seen["recompiles"]) == 1
        np.testing.assert_allclose(seen["outs"][-1], np.tanh(_X_WORKER @ _X_WORKER.T)
                                   @ _X_WORKER + 1.0, rtol=1e-5)
        assert seen["outs"] == runs[0]["outs"]
    assert runs[0]["recompiles"] == runs[1]["recompiles"] == runs[0]["own_profiles"]


def test_a_profile_that_never_comes_is_a_clear_error():
    """Process 0 runs without PGLE: process 1 waits for its profile for the timeout
    (2 s) and fails naming it, instead of compiling a different executable."""
    first, second = _distributed("one_sided")
    assert "error" not in first and first["profiling_runs"] == 0
    assert "did not receive the profile of jit(step) from process 0 within 2000 ms" in (
        second["error"])
    assert second["compiles"].count("jit(step)") == 1


def test_runs_under_a_users_trace_are_not_profiled(events, pgle_on, tmp_path):
    """Only one profiler session runs at a time: during the user's trace, calls run
    unprofiled and do not count; the profiling runs come after it."""
    import plax.profiler
    f = _fresh(8.5)
    x = plax.device_put(X)
    with plax.profiler.trace(str(tmp_path)):
        for _ in range(3):
            f(x)
    assert _count(events, pgle.PROFILING_RUN_EVENT, "jit(<lambda>)") == 0
    for _ in range(3):
        np.testing.assert_allclose(f(x), _expected(X, 8.5), rtol=1e-5)
    assert _count(events, pgle.PROFILING_RUN_EVENT, "jit(<lambda>)") == 2
    assert _count(events, BACKEND_COMPILE, "jit(<lambda>)") == 2


def test_a_computation_over_8_devices_is_profiled_and_swapped(events, pgle_on):
    from plax.sharding import Mesh, NamedSharding, PartitionSpec as P
    mesh = Mesh(np.array(plax.devices()[:8]), ("x",))
    data = np.arange(8 * 6, dtype=np.float32).reshape(8, 6) / 48
    x = plax.device_put(data, NamedSharding(mesh, P("x")))
    f = plax.jit(lambda v: jnp.sin(v) * 9.5 + v.sum(axis=0))
    outs = [f(x) for _ in range(4)]
    for out in outs:
        assert out.sharding.is_equivalent_to(outs[0].sharding, 2)
        np.testing.assert_allclose(out, np.sin(data) * 9.5 + data.sum(axis=0), rtol=1e-5)
    assert _count(events, BACKEND_COMPILE, "jit(<lambda>)") == 2
    assert _count(events, pgle.RECOMPILE_EVENT, "jit(<lambda>)") == 1
    assert fastpath_stats(f)["hits"] == 3

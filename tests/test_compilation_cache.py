"""The persistent compilation cache: a second process loads what the first compiled;
bad entries are rebuilt; thresholds, size bounds and uncacheable modules."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import plax
import plax.numpy as jnp
from plax.experimental.compilation_cache import compilation_cache as cc
from plax.extend import config
from jaxlib import xla_client as xc
from plax_runtime import persistent_cache

from jax_reference import requires_jax, run_reference

# Prints what one fresh process saw: the result, the cache's counters, how many
# backend compiles ran (the event that times `compile_and_load`) and the entries.
_CHILD = textwrap.dedent("""
    import json, os, sys
    import plax, plax.numpy as jnp
    from plax.experimental.compilation_cache import compilation_cache as cc
    from plax_runtime import persistent_cache
    if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
        cc.set_cache_dir(sys.argv[1])
    plax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    compiles = []
    plax.monitoring.register_event_duration_secs_listener(
        lambda event, secs, **kw: compiles.append(kw.get("fun_name"))
        if event == "/jax/core/compile/backend_compile_duration" else None)
    f = plax.jit(lambda x: jnp.tanh(x) @ x.T + 1.0)
    out = f(jnp.full((3, 3), 0.5, dtype=jnp.float32))
    print(json.dumps({"out": out.tolist(), "stats": persistent_cache.stats(),
                      "compiles": compiles, "entries": sorted(os.listdir(sys.argv[1]))}))
""")


def _run_child(cache_dir, via_env: bool = False) -> dict:
    """Runs `_CHILD` in a fresh process, the cache directory set with `set_cache_dir`
    or (`via_env`) by the environment variable."""
    env = {**os.environ, "PLAX_PLATFORMS": "cpu"}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    if via_env:
        env["JAX_COMPILATION_CACHE_DIR"] = str(cache_dir)
    done = subprocess.run([sys.executable, "-c", _CHILD, str(cache_dir)], capture_output=True,
                          text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_second_process_loads_instead_of_compiling(tmp_path):
    first = _run_child(tmp_path)
    assert first["stats"]["writes"] >= 1 and first["stats"]["hits"] == 0
    assert "jit(<lambda>)" in first["compiles"]
    assert len(first["entries"]) == first["stats"]["writes"]
    second = _run_child(tmp_path, via_env=True)
    assert second["stats"]["hits"] == first["stats"]["writes"]
    assert second["stats"]["misses"] == 0 and second["stats"]["writes"] == 0
    assert second["compiles"] == []  # compile_and_load never ran
    assert second["entries"] == first["entries"]
    np.testing.assert_array_equal(second["out"], first["out"])
    x = np.full((3, 3), 0.5, np.float32)
    np.testing.assert_allclose(first["out"], np.tanh(x) @ x.T + 1.0, rtol=1e-6)


@pytest.fixture
def cache_dir(tmp_path):
    """The cache on in `tmp_path` for this test (every compile written), with clean
    counters and no executables left in memory."""
    plax.clear_caches()
    cc.reset_cache()
    with config.compilation_cache_dir(str(tmp_path)), \
            config.persistent_cache_min_compile_time_secs(0.0):
        yield tmp_path
    plax.clear_caches()
    cc.reset_cache()


def _entries(path) -> list[str]:
    return sorted(name for name in os.listdir(path) if name.endswith("-cache"))


def _x(n: int) -> np.ndarray:
    """A host input (made without compiling anything)."""
    return np.arange(n, dtype=np.float32)


def _fresh_call(x):
    """Traces, lowers and compiles again (nothing kept in memory), then runs."""
    plax.clear_caches()
    return plax.jit(lambda v: jnp.sin(v) * 3.0)(x)


def test_hit_in_the_same_process_after_clearing_memory(cache_dir):
    x = _x(4)
    expected = np.sin(np.arange(4.0, dtype=np.float32)) * 3.0
    np.testing.assert_allclose(_fresh_call(x), expected, rtol=1e-6)
    assert persistent_cache.stats()["writes"] == 1
    np.testing.assert_allclose(_fresh_call(x), expected, rtol=1e-6)
    assert persistent_cache.stats()["hits"] == 1


def test_different_shapes_and_dtypes_have_different_keys(cache_dir):
    _fresh_call(_x(4))
    _fresh_call(_x(5))
    _fresh_call(np.arange(4, dtype=np.int32))
    assert len(_entries(cache_dir)) == 3
    assert persistent_cache.stats()["hits"] == 0


def test_corrupt_entry_is_compiled_again_and_rewritten(cache_dir):
    x = _x(4)
    _fresh_call(x)
    (entry,) = _entries(cache_dir)
    path = cache_dir / entry
    data = path.read_bytes()
    damaged = data[:-60] + bytes(b ^ 0xFF for b in data[-60:-30]) + data[-30:]  # its code
    path.write_bytes(damaged)
    with pytest.warns(RuntimeWarning, match="cannot be used and will be rebuilt"):
        out = _fresh_call(x)
    np.testing.assert_allclose(out, np.sin(np.arange(4.0)) * 3.0, rtol=1e-6)
    assert persistent_cache.stats()["errors"] == 1
    assert path.read_bytes() != damaged  # rebuilt in place
    _fresh_call(x)
    assert persistent_cache.stats()["hits"] == 1


@pytest.mark.parametrize("damage", [lambda d: d[:10], lambda d: b"", lambda d: b"x" * len(d)])
def test_truncated_or_foreign_entries_fall_back_to_compiling(cache_dir, damage):
    _fresh_call(_x(3))
    (entry,) = _entries(cache_dir)
    (cache_dir / entry).write_bytes(damage((cache_dir / entry).read_bytes()))
    with pytest.warns(RuntimeWarning, match="rebuilt"):
        np.testing.assert_allclose(_fresh_call(_x(3)), np.sin(np.arange(3.0)) * 3,
                                   rtol=1e-6)


def test_a_problem_is_warned_about_once(cache_dir):
    _fresh_call(_x(3))
    _fresh_call(_x(2))
    for entry in _entries(cache_dir):
        (cache_dir / entry).write_bytes(b"junk")
    with pytest.warns(RuntimeWarning) as record:
        _fresh_call(_x(3))
        _fresh_call(_x(2))
    assert len([w for w in record if "rebuilt" in str(w.message)]) == 1
    assert persistent_cache.stats()["errors"] == 2


def test_swapped_entries_are_misses_and_compile_again(cache_dir):
    x = _x(4)
    programs = {"sin": (lambda v: jnp.sin(v) * 3.0, np.sin(x) * 3.0),
                "cos": (lambda v: jnp.cos(v) + 1.0, np.cos(x) + 1.0)}

    def run_all():
        for fun, expected in programs.values():
            plax.clear_caches()
            np.testing.assert_allclose(plax.jit(fun)(x), expected, rtol=1e-6)

    run_all()
    first, second = (cache_dir / name for name in _entries(cache_dir))
    a, b = first.read_bytes(), second.read_bytes()
    first.write_bytes(b)
    second.write_bytes(a)
    cc.reset_cache()
    with pytest.warns(RuntimeWarning, match="holds the executable of another key"):
        run_all()  # each entry now holds the other program: never run, compiled again
    assert persistent_cache.stats() | {"errors": 0} == dict(
        hits=0, misses=2, writes=2, not_written=0, errors=0)
    run_all()  # the rewritten entries serve their own programs
    assert persistent_cache.stats()["hits"] == 2


def test_entry_from_other_versions_is_a_miss(cache_dir, monkeypatch):
    _fresh_call(_x(3))
    monkeypatch.setattr(persistent_cache, "_versions", lambda client: b"jaxlib 0.0.1")
    with pytest.warns(RuntimeWarning, match="was written by 'jaxlib 0.10.2; plax .*"
                                            "not 'jaxlib 0.0.1'"):
        np.testing.assert_allclose(_fresh_call(_x(3)), np.sin(np.arange(3.0)) * 3,
                                   rtol=1e-6)
    assert persistent_cache.stats()["misses"] == 2 and persistent_cache.stats()["hits"] == 0


def test_raise_persistent_cache_errors(cache_dir):
    _fresh_call(_x(3))
    (entry,) = _entries(cache_dir)
    (cache_dir / entry).write_bytes(b"junk")
    with config.raise_persistent_cache_errors(True), pytest.raises(RuntimeError,
                                                                   match="rebuilt"):
        _fresh_call(_x(3))


def test_min_compile_time_keeps_quick_compiles_out(cache_dir):
    with config.persistent_cache_min_compile_time_secs(1000.0):
        _fresh_call(_x(3))
    assert _entries(cache_dir) == []
    assert persistent_cache.stats()["not_written"] == 1


def test_min_entry_size_keeps_small_entries_out(cache_dir):
    with config.persistent_cache_min_entry_size_bytes(10 ** 9):
        _fresh_call(_x(3))
    assert _entries(cache_dir) == []
    with config.persistent_cache_min_entry_size_bytes(-1):
        _fresh_call(_x(3))
    assert len(_entries(cache_dir)) == 1


def test_max_size_evicts_least_recently_used(cache_dir):
    _fresh_call(_x(3))
    (first,) = _entries(cache_dir)
    size = (cache_dir / first).stat().st_size
    os.utime(cache_dir / first, (1, 1))  # long unused
    with config.compilation_cache_max_size(int(size * 1.5)):
        _fresh_call(_x(5))
    (left,) = _entries(cache_dir)
    assert left != first
    with config.compilation_cache_max_size(0):
        _fresh_call(_x(7))
    assert _entries(cache_dir) == [left]


def test_disabled_or_unset_cache_writes_nothing(cache_dir):
    with config.enable_compilation_cache(False):
        _fresh_call(_x(3))
    assert _entries(cache_dir) == []
    with config.compilation_cache_dir(None):
        _fresh_call(_x(3))
    assert _entries(cache_dir) == [] and persistent_cache.stats()["misses"] == 0


def test_set_cache_dir_turns_the_cache_on(tmp_path):
    plax.clear_caches()
    cc.reset_cache()
    try:
        cc.set_cache_dir(tmp_path)
        assert config.compilation_cache_dir.value == str(tmp_path)
        with config.persistent_cache_min_compile_time_secs(0.0):
            _fresh_call(_x(6))
        assert len(_entries(tmp_path)) == 1
        assert cc.is_initialized() is True
    finally:
        cc.set_cache_dir(None)
        cc.reset_cache()


def test_host_callbacks_are_not_cached(cache_dir):
    seen = []

    def f(x):
        plax.debug.callback(lambda v: seen.append(np.asarray(v)), x)
        return x + 1

    plax.clear_caches()
    out = plax.jit(f)(_x(3))
    plax.effects_barrier()
    np.testing.assert_array_equal(out, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(seen[0], [0.0, 1.0, 2.0])
    assert _entries(cache_dir) == []
    assert persistent_cache.stats()["not_written"] == 1


def test_cache_hit_is_logged_with_log_compiles(cache_dir, caplog):
    _fresh_call(_x(3))
    with config.log_compiles(True), caplog.at_level("WARNING"):
        _fresh_call(_x(3))
    assert "Persistent compilation cache hit for 'jit(<lambda>)'" in caplog.text
    with config.explain_cache_misses(True), caplog.at_level("WARNING"):
        _fresh_call(_x(9))
    assert "PERSISTENT COMPILATION CACHE MISS for 'jit(<lambda>)'" in caplog.text


def test_bad_config_values_are_rejected():
    with pytest.raises((TypeError, ValueError)):
        config.config.update("jax_compilation_cache_max_size", -2)
    with pytest.raises((TypeError, ValueError)):
        config.config.update("jax_persistent_cache_min_compile_time_secs", -1.0)


def test_sharded_program_loads_with_its_shardings(cache_dir, mesh):
    from plax.sharding import NamedSharding, PartitionSpec as P
    sharding = NamedSharding(mesh, P("x", "y"))
    x = plax.device_put(np.arange(32, dtype=np.float32).reshape(4, 8), sharding)

    def fresh():
        plax.clear_caches()
        return plax.jit(lambda v: (v * 2.0).sum(axis=0))(x)

    first = fresh()
    writes = persistent_cache.stats()["writes"]
    second = fresh()
    assert persistent_cache.stats()["hits"] == writes
    np.testing.assert_array_equal(second, first)
    np.testing.assert_array_equal(second, (np.arange(32).reshape(4, 8) * 2.0).sum(0))
    assert second.sharding.is_equivalent_to(first.sharding, 1)


def test_donation_survives_the_cache(cache_dir):
    def fresh():
        plax.clear_caches()
        x = jnp.asarray(_x(4))
        out = plax.jit(lambda v: v + 1.0, donate_argnums=0)(x)
        return x, out

    fresh()
    hits = persistent_cache.stats()["hits"]
    x, out = fresh()
    assert persistent_cache.stats()["hits"] > hits
    np.testing.assert_array_equal(out, _x(4) + 1.0)
    assert x.is_deleted()


def _key_of(source: str) -> str:
    """The cache key of the program `source` defines as `f`, compiled for one CPU."""
    namespace = {"jnp": jnp}
    exec(compile(source, "<generated>", "exec"), namespace)
    lowered = plax.jit(namespace["f"]).lower(np.float32(1.0))
    payload = lowered._lowering.bytecode
    device = plax.devices()[0]
    options = xc.CompileOptions()
    return persistent_cache.cache_key(payload, [device], options, device.client, "f")


def test_source_locations_stay_out_of_the_key_unless_asked():
    program = "def f(x):\n    return jnp.sin(x) + 1.0\n"
    moved = "\n\n\n" + program
    assert _key_of(program) == _key_of(moved)
    assert _key_of(program) != _key_of(program.replace("1.0", "2.0"))
    with config.compilation_cache_include_metadata_in_key(True):
        assert _key_of(program) != _key_of(moved)


_SAME_SCRIPT = """
import os, tempfile
from {library}.experimental.compilation_cache import compilation_cache as cc
cache_dir = tempfile.mkdtemp()
cc.set_cache_dir(cache_dir)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
f = jax.jit(lambda x: x * 2 + 1)
out = f(np.arange(3, dtype=np.float32))
defaults = {{name: getattr(jax.config, name) for name in (
    "jax_enable_compilation_cache", "jax_persistent_cache_min_entry_size_bytes",
    "jax_compilation_cache_max_size", "jax_raise_persistent_cache_errors",
    "jax_compilation_cache_include_metadata_in_key")}}
result = {{"out": out.tolist(), "written": any(n.startswith("jit_") for n in os.listdir(cache_dir)),
          "dir": jax.config.jax_compilation_cache_dir == cache_dir, "defaults": defaults,
          "initialized": cc.is_initialized() if hasattr(cc, "is_initialized") else True}}
cc.reset_cache()
"""


@requires_jax
def test_same_script_as_jax():
    ours = run_reference(_SAME_SCRIPT.format(library="plax"), "plax")
    theirs = run_reference(_SAME_SCRIPT.format(library="jax"))
    assert ours == theirs
    assert ours["written"] and ours["dir"]


def test_compiles_that_call_back_into_python_are_not_cached(cache_dir, mesh):
    """inspect_array_sharding reports from inside XLA's partitioner: a loaded entry
    would never call it, so such modules stay out of the cache."""
    from plax.sharding import NamedSharding, PartitionSpec as P
    x = plax.device_put(np.zeros((4, 8), np.float32), NamedSharding(mesh, P("x")))
    seen = []

    def f(v):
        plax.debug.inspect_array_sharding(v, callback=seen.append)
        return v * 2

    for _ in range(2):
        plax.clear_caches()
        plax.jit(f)(x).block_until_ready()
    assert len(seen) == 2
    assert _entries(cache_dir) == []


def test_unusable_directory_warns_and_still_computes(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    plax.clear_caches()
    cc.reset_cache()
    try:
        with config.compilation_cache_dir(str(blocker / "cache")), \
                config.persistent_cache_min_compile_time_secs(0.0), \
                pytest.warns(RuntimeWarning, match="persistent compilation cache"):
            np.testing.assert_allclose(_fresh_call(_x(3)), np.sin(_x(3)) * 3, rtol=1e-6)
        assert persistent_cache.stats()["errors"] >= 1
    finally:
        plax.clear_caches()
        cc.reset_cache()

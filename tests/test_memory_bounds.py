"""Memory stays bounded: dropped functions free their traces, lowerings and
executables, and every cache is bounded by entries and bytes."""
from __future__ import annotations

import gc
import os

import numpy as np

import plax
import plax.numpy as jnp
from plax import lax
from plax_runtime import caches, executable as runtime_executable
from plax_transforms import dispatch, executing, jit as jit_module


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _live_executables() -> int:
    return len(plax.devices()[0].client.live_executables())


def _plus_one():
    return plax.jit(lambda v: v + 1.0)


def test_dropping_2000_jitted_functions_keeps_rss_and_executables_flat():
    x = jnp.ones(3)
    keep = _plus_one()  # alive throughout: the others find its executable and skip XLA
    keep(x)
    for _ in range(100):
        _plus_one()(x)
    gc.collect()
    rss, live = _rss_mb(), _live_executables()
    sizes = (len(jit_module._traces), len(executing._lowerings), len(executing._compiled))
    for _ in range(2000):
        np.testing.assert_array_equal(_plus_one()(x), [2.0, 2.0, 2.0])
    gc.collect()
    # Before the caches held their keys weakly, each function kept ~1.2 MB (2.4 GB here).
    assert _rss_mb() - rss < 40
    assert _live_executables() <= live + 2
    assert (len(jit_module._traces), len(executing._lowerings),
            len(executing._compiled)) == sizes


def test_cached_calls_and_eager_ops_keep_python_memory_flat():
    """Thousands of cached calls (and eager operations) allocate nothing that stays:
    Python-level memory is measured by tracemalloc around them. (jaxlib defers the
    release of each asynchronous execution's traceback until `collect_garbage`;
    without plax emptying that queue at garbage collections, 72 bytes per call
    stayed for good.)"""
    import tracemalloc
    step = plax.jit(lambda v: v * 0.5 + 1.0)
    y = jnp.ones(3)
    runs = {"cached jit": lambda v: step(v), "eager": lambda v: lax.add(v, v) * 0.5}
    for name, run in runs.items():
        for _ in range(300):
            y = run(y)
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.take_snapshot()
            for _ in range(3000):
                y = run(y)
            y.block_until_ready()
            gc.collect()
            after = tracemalloc.take_snapshot()
        finally:
            tracemalloc.stop()
        grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
        assert grown / 3000 < 4, f"{name}: {grown / 3000:.1f} bytes kept per call"


def test_executables_of_dead_functions_are_freed_past_the_module_cache(monkeypatch):
    """A dead function's executable stays only in the bounded cache of compiled
    modules (so an identical program compiles once); past its bound, it is freed."""
    monkeypatch.setattr(runtime_executable._cache, "max_entries", 4)
    x = jnp.ones(2)
    gc.collect()
    live = _live_executables()
    for i in range(12):  # each compiles its own program
        out = plax.jit(lambda v, i=i: v * float(i + 3))(x)
        np.testing.assert_array_equal(out, [i + 3.0] * 2)
    gc.collect()
    assert len(runtime_executable._cache) <= 4
    assert _live_executables() <= live + 4


def test_eager_cond_entries_die_with_the_branch_functions():
    def run(k):
        return lax.cond(True, lambda v: v + k, lambda v: v - k, jnp.ones(2))

    run(1.0)
    gc.collect()
    before = len(dispatch._callers), len(dispatch._executables)
    for k in range(20):  # new branch functions every call, so new Jaxprs
        np.testing.assert_array_equal(run(float(k)), [1.0 + k] * 2)
    gc.collect()
    assert (len(dispatch._callers), len(dispatch._executables)) <= (before[0] + 1,
                                                                   before[1] + 1)


def test_a_kept_function_keeps_its_cache_entries():
    f = plax.jit(lambda v: v * 2.0)
    f(jnp.ones(4))
    gc.collect()
    assert any(len(c) for c in (jit_module._traces, executing._lowerings))
    traces = len(jit_module._traces)
    f(jnp.ones(4))
    assert len(jit_module._traces) == traces


# --- BoundedCache ---------------------------------------------------------------------

class _Owner:
    pass


def test_bounded_cache_evicts_least_recently_used_by_entries():
    cache = caches.BoundedCache("test entries", max_entries=2, max_bytes=1 << 20)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "b" is now the least recently used
    cache.put("c", 3)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (1, None, 3)


def test_bounded_cache_evicts_by_bytes():
    cache = caches.BoundedCache("test bytes", max_entries=100, max_bytes=100)
    cache.put("a", "A", nbytes=60)
    cache.put("b", "B", nbytes=60)
    assert cache.get("a") is None and cache.get("b") == "B" and cache.nbytes == 60
    cache.put("huge", "H", nbytes=1000)  # one entry over the bound is still cached
    assert cache.get("huge") == "H" and len(cache) == 1


def test_bounded_cache_front_holds_exactly_the_entries_without_owners():
    cache = caches.BoundedCache("test front", max_entries=2, max_bytes=100)
    owner = _Owner()
    cache.put("a", 1)
    cache.put((id(owner), "b"), 2, owners=(owner,))
    assert cache.front == {"a": 1}  # an owned entry needs its liveness checked
    cache.put("a", 10)
    assert cache.front == {"a": 10}
    cache.put("c", 3, nbytes=60)  # evicts the oldest entry, "a"
    cache.put("d", 4, nbytes=60)  # over the bytes: evicts the owned entry and "c"
    assert cache.front == {"d": 4} and len(cache) == 1
    cache.evict(lambda key: key == "d")
    assert cache.front == {}
    cache.put("e", 5)
    cache.clear()
    assert cache.front == {} and len(cache) == 0


def test_bounded_cache_forgets_entries_of_dead_owners():
    cache = caches.BoundedCache("test owners", max_entries=100, max_bytes=1 << 20)
    owner, other = _Owner(), _Owner()
    cache.put((id(owner), 1), "value", nbytes=10, owners=(owner,))
    cache.put((id(other), 1), "other", owners=(other,))
    assert cache.get((id(owner), 1)) == "value"
    dead = id(owner)
    del owner
    gc.collect()
    assert cache.get((dead, 1)) is None and len(cache) == 1 and cache.nbytes == 0
    assert cache.get((id(other), 1)) == "other"


def test_bounded_cache_never_mistakes_a_reused_identity():
    cache = caches.BoundedCache("test reuse", max_entries=100, max_bytes=1 << 20)
    owner = _Owner()
    key = id(owner)
    cache.put(key, "old", owners=(owner,))
    with cache._lock:  # death callbacks cannot purge while the lock is held...
        del owner
        gc.collect()
        assert key in cache._data  # ...so the entry is still stored,
        assert cache.get(key) is None  # yet a lookup (a new object, same id) misses
    assert cache.get(key) is None and len(cache) == 0


def test_cache_stats_name_every_cache():
    names = set(caches.cache_stats())
    assert {"traces", "lowerings", "executables", "eager callers",
            "eager executables", "compiled modules"} <= names

"""Memory kept by jitted functions the program dropped, for plax and for JAX.

Each round creates a new jitted function, calls it once and lets it go (the
pattern of `jit(lambda ...)` inside a loop). Printed: resident memory (RSS) growth
per 1,000 dropped functions, once for functions that compile the same program
(`v + 1.`) and once for functions that each compile a different one (`v + i`),
and how many executables are still alive at the end. Then 10,000 cached calls of one
jitted function (and 10,000 eager operations with a Python scalar): the growth of
RSS and of the count of live device arrays over them, which should be noise. Each
library runs in its own subprocess; the ratio plax / JAX is printed when both ran.

    python3 benchmarks/bench_leak.py [--quick]
"""
from __future__ import annotations

import gc
import os

import comparison


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def measure(lib_name: str, quick: bool) -> dict[str, float]:
    """Drop jitted functions with `plax` or `jax` (imported here, in this process only)."""
    lib = __import__(lib_name)
    jnp = __import__(f"{lib_name}.numpy", fromlist=["numpy"])
    x = jnp.ones(3)
    n = 500 if quick else 2000

    def same_program(i):
        return lib.jit(lambda v: v + 1.0)(x)

    def new_program(i):
        return lib.jit(lambda v: v + float(i))(x)

    results = {}
    # Distinct programs compile each time (tens of ms each): fewer of them.
    for name, make, count in (("same", same_program, n), ("distinct", new_program, n // 4)):
        for i in range(100):  # warm up allocators and caches
            make(-i - 1).block_until_ready()
        gc.collect()
        before = _rss_mb()
        for i in range(count):
            make(i).block_until_ready()
        gc.collect()
        results[f"{name}_mb_per_1000"] = (_rss_mb() - before) / count * 1000
    client = lib.devices()[0].client
    results["live_executables"] = float(len(client.live_executables()))

    step = lib.jit(lambda v: v * 0.5 + 1.0)
    calls = 2000 if quick else 10000
    for name, run in (("cached_jit", lambda v: step(v)), ("eager_op", lambda v: v * 0.5)):
        y = run(x)
        for _ in range(200):  # warm up
            y = run(y)
        y.block_until_ready()
        gc.collect()
        rss, buffers = _rss_mb(), len(client.live_arrays())
        for _ in range(calls):
            y = run(y)
        y.block_until_ready()
        gc.collect()
        results[f"{name}_rss_mb"] = _rss_mb() - rss
        results[f"{name}_live_arrays"] = float(len(client.live_arrays()) - buffers)
    return results


FIGURES = [
    ("same_mb_per_1000", "RSS MB per 1000 dropped jit(v + 1.)"),
    ("distinct_mb_per_1000", "RSS MB per 1000 dropped jit(v + i)"),
    ("live_executables", "live executables at the end"),
    ("cached_jit_rss_mb", "RSS MB growth over 10,000 cached calls"),
    ("cached_jit_live_arrays", "live arrays added by them"),
    ("eager_op_rss_mb", "RSS MB growth over 10,000 eager v * 0.5"),
    ("eager_op_live_arrays", "live arrays added by them"),
]

if __name__ == "__main__":
    comparison.run(measure, FIGURES, __file__, __doc__)

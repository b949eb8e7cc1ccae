"""Memory kept by jitted functions the program dropped, for plax and for JAX.

Each round creates a new jitted function, calls it once and lets it go (the
pattern of `jit(lambda ...)` inside a loop). Printed: resident memory (RSS) growth
per 1,000 dropped functions, once for functions that compile the same program
(`v + 1.`) and once for functions that each compile a different one (`v + i`),
and how many executables are still alive at the end. Each library runs in its own
subprocess; the ratio plax / JAX is printed when both ran.

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
    results["live_executables"] = float(len(lib.devices()[0].client.live_executables()))
    return results


FIGURES = [
    ("same_mb_per_1000", "RSS MB per 1000 dropped jit(v + 1.)"),
    ("distinct_mb_per_1000", "RSS MB per 1000 dropped jit(v + i)"),
    ("live_executables", "live executables at the end"),
]

if __name__ == "__main__":
    comparison.run(measure, FIGURES, __file__, __doc__)

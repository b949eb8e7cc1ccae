"""Persistent compilation cache figures for plax, and for JAX when it is installed.

Measured: the first call of `jit(value_and_grad)` of an 8-layer tanh MLP with an
empty cache directory (trace, lower, compile, write the entry), and the same call
after the in-memory caches are cleared (trace, lower, load the entry from disk),
each the median of several fresh directories. Each library runs in its own
subprocess; the ratios plax / JAX are printed (below 1 means plax is faster).

    python3 benchmarks/bench_compilation_cache.py [--quick] [--rounds N]
"""
from __future__ import annotations

import statistics
import tempfile
import time

import comparison
from comparison import tanh_mlp


def measure(lib_name: str, quick: bool) -> dict[str, float]:
    """Run the workload with `plax` or `jax` (imported here, in this process only)."""
    lib = __import__(lib_name)
    jnp = __import__(f"{lib_name}.numpy", fromlist=["numpy"])
    cc = __import__(f"{lib_name}.experimental.compilation_cache.compilation_cache",
                    fromlist=["compilation_cache"])
    import numpy as np

    lib.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    rng = np.random.default_rng(0)
    params = [(rng.normal(size=(64, 64)).astype(np.float32) * 0.1,
               np.zeros(64, np.float32)) for _ in range(8)]
    x = rng.normal(size=(16, 64)).astype(np.float32)

    def first_call() -> tuple[float, float]:
        """Seconds to the first result of a freshly traced step, and the result."""
        lib.clear_caches()
        start = time.perf_counter()
        step = lib.jit(lib.value_and_grad(lambda p, x: jnp.sum(tanh_mlp(jnp, p, x) ** 2)))
        value, _ = step(params, x)
        lib.block_until_ready(value)
        return time.perf_counter() - start, float(value)

    cold, warm = [], []
    for _ in range(2 if quick else 5):
        with tempfile.TemporaryDirectory() as path:
            cc.reset_cache()
            cc.set_cache_dir(path)
            seconds, check = first_call()
            cold.append(seconds)
            seconds, again = first_call()
            warm.append(seconds)
            assert again == check
            cc.set_cache_dir(None)
    cc.reset_cache()
    return {"cold_ms": statistics.median(cold) * 1e3, "warm_ms": statistics.median(warm) * 1e3,
            "check_value": check}


FIGURES = [
    ("cold_ms", "first call, empty cache (ms)"),
    ("warm_ms", "first call, entry on disk (ms)"),
]

if __name__ == "__main__":
    comparison.run(measure, FIGURES, __file__, __doc__)

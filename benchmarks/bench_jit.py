"""jit and eager dispatch figures for plax, and for JAX when it is installed.

Measured: the latency of a cached jit call, eager primitive operations per second,
an eager `grad(jit(loss))` step, `make_jaxpr` of a 2000-operation function, and
lowering + compiling a small MLP.
Each library runs in its own subprocess (plax and JAX never share a process), and
the ratios plax / JAX are printed when both ran (below 1 means plax is faster).

    python3 benchmarks/bench_jit.py [--quick]
"""
from __future__ import annotations

import time

import comparison
from comparison import best_seconds


def measure(lib_name: str, quick: bool) -> dict[str, float]:
    """Run the workloads with `plax` or `jax` (imported here, in this process only)."""
    lib = __import__(lib_name)
    jnp = __import__(f"{lib_name}.numpy", fromlist=["numpy"])
    lax = __import__(f"{lib_name}.lax", fromlist=["lax"])
    import numpy as np

    scale = 0.2 if quick else 1.0
    results = {}

    # Latency of a cached jit call on small arrays (dispatched asynchronously).
    f = lib.jit(lambda x, y: x * y + 1)
    x = lib.device_put(np.ones(8, np.float32))
    f(x, x).block_until_ready()
    n = int(20000 * scale)
    results["jit_dispatch_us"] = best_seconds(lambda: f(x, x), n, 5) * 1e6
    f(x, x).block_until_ready()

    # Eager primitives per second.
    lax.add(x, x).block_until_ready()
    results["eager_ops_per_s"] = 1 / best_seconds(lambda: lax.add(x, x), n, 5)
    lax.add(x, x).block_until_ready()

    # An eager gradient step of a jitted loss (`grad(jit(loss))` each call, no outer
    # jit): the jit call's jvp, split and transpose come from caches after the first.
    step = lib.grad(lib.jit(lambda w, v: jnp.sum(jnp.tanh(v @ w) ** 2)))
    w = lib.device_put(np.ones((8, 8), np.float32))
    v = lib.device_put(np.ones((4, 8), np.float32))
    step(w, v).block_until_ready()
    results["grad_of_jit_step_us"] = best_seconds(lambda: step(w, v).block_until_ready(),
                                                  int(200 * scale) or 1, 5) * 1e6

    # make_jaxpr of a function applying 2000 primitives (a new function each time,
    # so that no tracing cache answers).
    def trace_long_chain():
        def long_chain(v):
            for _ in range(500):
                v = lax.sin(v) * 1.001 + lax.cos(v) - 0.5
            return v
        return lib.make_jaxpr(long_chain)(np.ones(4, np.float32))

    results["make_jaxpr_2000_ops_ms"] = best_seconds(trace_long_chain, 1,
                                                      3 if quick else 5) * 1e3

    # Lowering and compiling an MLP; a new batch size each round, so no cache helps.
    def mlp(params, inputs):
        return comparison.tanh_mlp(jnp, params, inputs)

    rng = np.random.default_rng(0)
    sizes = [784, 512, 512, 10]
    params = [(rng.standard_normal((m, k), np.float32), np.zeros(k, np.float32))
              for m, k in zip(sizes[:-1], sizes[1:])]
    lower_times, compile_times = [], []
    for batch in range(16, 16 + (2 if quick else 4)):
        inputs = np.ones((batch, sizes[0]), np.float32)
        start = time.perf_counter()
        lowered = lib.jit(mlp).lower(params, inputs)
        lower_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        lowered.compile()
        compile_times.append(time.perf_counter() - start)
    results["mlp_lower_ms"] = min(lower_times) * 1e3
    results["mlp_compile_ms"] = min(compile_times) * 1e3
    return results


FIGURES = [("jit_dispatch_us", "cached jit call (us)"),
           ("eager_ops_per_s", "eager ops per second"),
           ("grad_of_jit_step_us", "eager grad(jit(loss)) step (us)"),
           ("make_jaxpr_2000_ops_ms", "make_jaxpr, 2000 ops (ms)"),
           ("mlp_lower_ms", "MLP lowering (ms)"),
           ("mlp_compile_ms", "MLP compilation (ms)")]


if __name__ == "__main__":
    comparison.run(measure, FIGURES, __file__, __doc__)

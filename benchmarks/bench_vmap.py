"""Per-example gradients of an MLP, `jit(vmap(grad(loss), in_axes=(None, 0, 0)))`,
for plax and, when it is installed, JAX.

Measured: the first call (tracing, batching, lowering, compiling), a cached call,
and, for scale, a Python loop of cached `jit(grad(loss))` calls, one per example.
Each library runs in its own subprocess; ratios plax / JAX are printed when both
ran (below 1 means plax is faster).

    python3 benchmarks/bench_vmap.py [--quick]
"""
from __future__ import annotations

import time

import comparison
from comparison import best_seconds

BATCH, SIZES = 64, [32, 64, 64, 10]


def measure(lib_name: str, quick: bool) -> dict[str, float]:
    lib = __import__(lib_name)
    jnp = __import__(f"{lib_name}.numpy", fromlist=["numpy"])

    def loss(params, x, y):
        return jnp.sum((comparison.tanh_mlp(jnp, params, x) - y) ** 2)

    params, xs, ys = lib.device_put(comparison.mlp_problem(SIZES, BATCH))

    per_example = lib.jit(lib.vmap(lib.grad(loss), in_axes=(None, 0, 0)))
    start = time.perf_counter()
    lib.block_until_ready(per_example(params, xs, ys))
    results = {"first_call_ms": (time.perf_counter() - start) * 1e3}
    number = 50 if quick else 300
    results["cached_call_us"] = best_seconds(
        lambda: lib.block_until_ready(per_example(params, xs, ys)), number, 5) * 1e6

    one = lib.jit(lib.grad(loss))
    rows = [(xs[i], ys[i]) for i in range(BATCH)]
    lib.block_until_ready(one(params, *rows[0]))
    results["loop_of_grads_us"] = best_seconds(
        lambda: lib.block_until_ready([one(params, x, y) for x, y in rows]),
        2 if quick else 10, 3) * 1e6
    return results


FIGURES = [("first_call_ms", "first call: trace+compile (ms)"),
           ("cached_call_us", f"cached call, batch {BATCH} (us)"),
           ("loop_of_grads_us", f"loop of {BATCH} jit(grad) (us)")]


if __name__ == "__main__":
    comparison.run(measure, FIGURES, __file__, __doc__)

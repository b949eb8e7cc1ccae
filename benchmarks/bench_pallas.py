"""A blocked matmul Pallas kernel (K-axis accumulation) in interpret mode, for plax
and, when it is installed, JAX.

Measured: the first jitted call (tracing the kernel, the grid loop, lowering,
compiling), a cached jitted call, and a cached call of the pallas_call itself
(eager dispatch). Each library runs in its own subprocess; ratios plax / JAX are
printed when both ran (below 1 means plax is faster).

    python3 benchmarks/bench_pallas.py [--quick] [--rounds N]
"""
from __future__ import annotations

import time

import numpy as np

import comparison
from comparison import best_seconds

N, BLOCK = 256, 64


def measure(lib_name: str, quick: bool) -> dict[str, float]:
    lib = __import__(lib_name)
    jnp = __import__(f"{lib_name}.numpy", fromlist=["numpy"])
    pl = __import__(f"{lib_name}.experimental.pallas", fromlist=["pallas"])

    def kernel(x_ref, y_ref, o_ref):
        @pl.when(pl.program_id(2) == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)
        o_ref[...] += jnp.dot(x_ref[...], y_ref[...])

    steps = N // BLOCK
    matmul = pl.pallas_call(
        kernel, out_shape=lib.ShapeDtypeStruct((N, N), jnp.float32), grid=(steps,) * 3,
        in_specs=[pl.BlockSpec((BLOCK, BLOCK), lambda i, j, k: (i, k)),
                  pl.BlockSpec((BLOCK, BLOCK), lambda i, j, k: (k, j))],
        out_specs=pl.BlockSpec((BLOCK, BLOCK), lambda i, j, k: (i, j)), interpret=True)
    rng = np.random.default_rng(0)
    x, y = (lib.device_put(rng.standard_normal((N, N), np.float32)) for _ in range(2))
    jitted = lib.jit(matmul)
    start = time.perf_counter()
    out = lib.block_until_ready(jitted(x, y))
    results = {"first_call_ms": (time.perf_counter() - start) * 1e3,
               "check_sum": float(np.asarray(out, np.float64).sum())}
    number = 5 if quick else 30
    results["cached_jit_us"] = best_seconds(
        lambda: lib.block_until_ready(jitted(x, y)), number, 5) * 1e6
    lib.block_until_ready(matmul(x, y))
    results["cached_eager_us"] = best_seconds(
        lambda: lib.block_until_ready(matmul(x, y)), number, 5) * 1e6
    return results


FIGURES = [("first_call_ms", "first jit call: trace+compile (ms)"),
           ("cached_jit_us", f"cached jit call, {N}^3 in {BLOCK}^3 blocks (us)"),
           ("cached_eager_us", "cached eager call (us)")]


if __name__ == "__main__":
    comparison.run(measure, FIGURES, __file__, __doc__)

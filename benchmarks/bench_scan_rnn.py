"""A 1000-step scan RNN, forward and backward, in plax and (when installed) JAX.

Measured: tracing + lowering + compiling `jit(value_and_grad(loss))` once, and the
time of one cached call (the forward scan and the reverse scan over 1000 steps of
a tanh RNN with a 64-wide hidden state). Each library runs in its own subprocess;
the ratio plax / JAX is printed when both ran (below 1 means plax is faster).

    python3 benchmarks/bench_scan_rnn.py [--quick]
"""
from __future__ import annotations

import time

import comparison

STEPS, HIDDEN = 1000, 64


def measure(lib_name: str, quick: bool) -> dict[str, float]:
    """Run the workload with `plax` or `jax` (imported here, in this process only)."""
    lib = __import__(lib_name)
    jnp = __import__(f"{lib_name}.numpy", fromlist=["numpy"])
    lax = __import__(f"{lib_name}.lax", fromlist=["lax"])
    import numpy as np

    rng = np.random.default_rng(0)
    params = {"w": (rng.standard_normal((HIDDEN, HIDDEN)) / np.sqrt(HIDDEN)).astype(np.float32),
              "u": (rng.standard_normal((HIDDEN, HIDDEN)) / np.sqrt(HIDDEN)).astype(np.float32)}
    xs = rng.standard_normal((STEPS, HIDDEN)).astype(np.float32)

    def loss(params, xs):
        def cell(h, x):
            h = jnp.tanh(params["w"] @ h + params["u"] @ x)
            return h, jnp.sum(h * h)
        _, per_step = lax.scan(cell, jnp.zeros(HIDDEN, np.float32), xs)
        return jnp.sum(per_step)

    step = lib.jit(lib.value_and_grad(loss))
    start = time.perf_counter()
    value, grads = step(params, xs)
    value.block_until_ready()
    first = time.perf_counter() - start
    best = float("inf")
    for _ in range(3 if quick else 10):
        start = time.perf_counter()
        value, grads = step(params, xs)
        grads["w"].block_until_ready()
        best = min(best, time.perf_counter() - start)
    return {"first_call_ms": first * 1e3, "cached_call_ms": best * 1e3,
            "check_loss": float(value)}


FIGURES = [("first_call_ms", "trace+compile+run (ms)"),
           ("cached_call_ms", "fwd+bwd, 1000 steps (ms)")]


if __name__ == "__main__":
    comparison.run(measure, FIGURES, __file__, __doc__)

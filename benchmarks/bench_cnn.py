"""A small CNN's training step in plax and (when installed) JAX.

Two 3x3 convolutions (1 -> 16 -> 32 channels, NHWC), ReLU, 2x2 max pooling with
`lax.reduce_window`, a dense head and softmax cross-entropy, on a batch of 64
28x28 images: one SGD step is `jit(value_and_grad)` plus the update, in one
jitted function. Measured: trace + compile + first run, and the best time of one
cached step. Each library runs in its own subprocess; the ratio plax / JAX is
printed (below 1 means plax is faster).

    python3 benchmarks/bench_cnn.py [--quick]
"""
from __future__ import annotations

import time

import comparison

BATCH, SIDE = 64, 28
DN = ("NHWC", "HWIO", "NHWC")


def measure(lib_name: str, quick: bool) -> dict[str, float]:
    """Run the workload with `plax` or `jax` (imported here, in this process only)."""
    lib = __import__(lib_name)
    jnp = __import__(f"{lib_name}.numpy", fromlist=["numpy"])
    lax = __import__(f"{lib_name}.lax", fromlist=["lax"])
    import numpy as np

    rng = np.random.default_rng(0)

    def normal(*shape, scale):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    params = {"c1": normal(3, 3, 1, 16, scale=0.3), "b1": np.zeros(16, np.float32),
              "c2": normal(3, 3, 16, 32, scale=0.1), "b2": np.zeros(32, np.float32),
              "w": normal(14 * 14 * 32, 10, scale=0.01), "b": np.zeros(10, np.float32)}
    images = rng.uniform(0, 1, (BATCH, SIDE, SIDE, 1)).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[rng.integers(0, 10, BATCH)]

    def loss(params, images, labels):
        x = lax.conv_general_dilated(images, params["c1"], (1, 1), "SAME", dimension_numbers=DN)
        x = jnp.maximum(x + params["b1"], 0.0)
        x = lax.conv_general_dilated(x, params["c2"], (1, 1), "SAME", dimension_numbers=DN)
        x = jnp.maximum(x + params["b2"], 0.0)
        x = lax.reduce_window(x, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        z = x.reshape(x.shape[0], -1) @ params["w"] + params["b"]
        z = z - jnp.max(z, axis=1, keepdims=True)
        log_probs = z - jnp.log(jnp.sum(jnp.exp(z), axis=1, keepdims=True))
        return -jnp.mean(jnp.sum(log_probs * labels, axis=1))

    @lib.jit
    def step(params, images, labels):
        value, grads = lib.value_and_grad(loss)(params, images, labels)
        return value, lib.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)

    start = time.perf_counter()
    value, new_params = step(params, images, labels)
    value.block_until_ready()
    first = time.perf_counter() - start
    best = float("inf")
    for _ in range(5 if quick else 30):
        start = time.perf_counter()
        value, new_params = step(params, images, labels)
        new_params["w"].block_until_ready()
        best = min(best, time.perf_counter() - start)
    return {"first_call_ms": first * 1e3, "cached_step_ms": best * 1e3,
            "check_loss": float(value)}


FIGURES = [("first_call_ms", "trace+compile+run (ms)"),
           ("cached_step_ms", "training step (ms)")]


if __name__ == "__main__":
    comparison.run(measure, FIGURES, __file__, __doc__)

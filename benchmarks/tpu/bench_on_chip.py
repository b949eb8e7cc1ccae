"""plax against JAX on a TPU chip: compiled programs, dispatch and eager ops.

Run on a machine with a TPU (benchmarks/tpu/run_on_chip.sh does, after installing
plax's wheels): each round runs plax, then JAX, in processes of their own (one program
at a time may hold the chip), and the table shows medians over rounds and the
per-round ratios plax / JAX (below 1: plax takes less time).

Figures: a bf16 8192³ matmul (ms; TFLOP/s printed beside), a training step of a
784-2048-2048-10 tanh MLP (batch 512, f32), a training step of a bf16 transformer
block (batch 8, sequence 1024, width 1024, 8 heads), a cached jit call on a small
array (µs, dispatch), and an eager op on a small array (µs).
"""
from __future__ import annotations

import importlib
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from comparison import best_seconds, mlp_problem, run, sgd_step, tanh_mlp  # noqa: E402

FIGURES = [
    ("matmul_ms", "bf16 matmul 8192^3 (ms)"),
    ("matmul_tflops", "bf16 matmul 8192^3 (TFLOP/s)"),
    ("mlp_step_ms", "MLP 784-2048-2048-10 step (ms)"),
    ("transformer_step_ms", "transformer block step, bf16 (ms)"),
    ("dispatch_us", "cached jit call (us)"),
    ("eager_us", "eager jnp.sin (us)"),
]


def transformer_block(jax, jnp, p, x, heads):
    b, t, d = x.shape
    h = x * jax.lax.rsqrt(jnp.mean(x.astype(jnp.float32) ** 2, -1, keepdims=True)
                          + 1e-6).astype(x.dtype)
    q, k, v = (jnp.einsum("btd,dhk->bhtk", h, p[w]) for w in ("wq", "wk", "wv"))
    scores = jnp.einsum("bhtk,bhsk->bhts", q, k).astype(jnp.float32) / np.sqrt(d // heads)
    causal = jnp.tril(jnp.ones((t, t), bool))
    weights = jax.nn.softmax(jnp.where(causal, scores, -1e9), axis=-1).astype(x.dtype)
    x = x + jnp.einsum("bhts,bhsk->bthk", weights, v).reshape(b, t, d) @ p["wo"]
    return x + jax.nn.gelu(x @ p["w1"]) @ p["w2"]


def transformer_problem(jnp, batch=8, t=1024, d=1024, heads=8, seed=0):
    rng = np.random.default_rng(seed)
    w = lambda *shape: jnp.asarray(rng.standard_normal(shape, np.float32)
                                   / np.sqrt(shape[0]), jnp.bfloat16)
    p = {name: w(d, heads, d // heads) for name in ("wq", "wk", "wv")}
    p.update(wo=w(d, d), w1=w(d, 4 * d), w2=w(4 * d, d))
    return p, jnp.asarray(rng.standard_normal((batch, t, d), np.float32), jnp.bfloat16)


def measure(lib_name: str, quick: bool) -> dict[str, float]:
    jax = importlib.import_module(lib_name)
    jnp = jax.numpy
    assert jax.devices()[0].platform == "tpu", jax.devices()
    n = 3 if quick else 10
    out = {}

    a = jnp.asarray(np.random.default_rng(0).standard_normal((8192, 8192), np.float32),
                    jnp.bfloat16)
    matmul = jax.jit(lambda x, y: x @ y)
    jax.block_until_ready(matmul(a, a))
    out["matmul_ms"] = 1e3 * best_seconds(lambda: jax.block_until_ready(matmul(a, a)), n, 3)
    out["matmul_tflops"] = 2 * 8192 ** 3 / (out["matmul_ms"] * 1e-3) / 1e12

    params, x, y = mlp_problem([784, 2048, 2048, 10], 512)
    params = jax.device_put(params)
    loss = lambda p, x, y: jnp.mean((tanh_mlp(jnp, p, x) - y) ** 2)
    step = sgd_step(jax, loss, 1e-3)
    state = {"p": step(params, x, y)[1]}
    x, y = jax.device_put(x), jax.device_put(y)

    def mlp_once():
        value, state["p"] = step(state["p"], x, y)
        jax.block_until_ready(value)
    mlp_once()
    out["mlp_step_ms"] = 1e3 * best_seconds(mlp_once, 5 * n, 3)

    tp, tx = transformer_problem(jnp)

    @jax.jit
    def tstep(p, x):
        value, grads = jax.value_and_grad(
            lambda p: jnp.mean(transformer_block(jax, jnp, p, x, 8).astype(jnp.float32) ** 2))(p)
        return value, jax.tree_util.tree_map(lambda w, g: w - (1e-3 * g).astype(w.dtype), p, grads)
    tstate = {"p": tstep(tp, tx)[1]}

    def transformer_once():
        value, tstate["p"] = tstep(tstate["p"], tx)
        jax.block_until_ready(value)
    transformer_once()
    out["transformer_step_ms"] = 1e3 * best_seconds(transformer_once, n, 3)

    small = jax.device_put(np.ones((8, 128), np.float32))
    add = jax.jit(lambda v: v + 1)
    jax.block_until_ready(add(small))
    out["dispatch_us"] = 1e6 * best_seconds(lambda: add(small), 2000, 5)
    jax.block_until_ready(add(small))
    jnp.sin(small).block_until_ready()
    out["eager_us"] = 1e6 * best_seconds(lambda: jnp.sin(small), 2000, 5)
    jax.block_until_ready(jnp.sin(small))
    out["check_mlp_loss"] = float(step(state["p"], x, y)[0])
    return out


if __name__ == "__main__":
    run(measure, FIGURES, __file__, __doc__, rounds=2)

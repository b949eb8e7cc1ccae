"""Profile-guided latency estimation on a TPU chip: the bf16 transformer block's
training step (bench_on_chip's) with PGLE off and on (2 profiling runs, then the
recompiled program), plax and JAX, each in a process of its own.

Prints ms per step for each library and setting, and for plax the number of backend
compiles of the step (2 with PGLE: the first compile and the one with the profile).
"""
from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_on_chip import transformer_block, transformer_problem  # noqa: E402
from comparison import best_seconds, median  # noqa: E402


def measure(lib_name: str, pgle: bool) -> dict:
    jax = importlib.import_module(lib_name)
    jnp = jax.numpy
    jax.config.update("jax_enable_pgle", pgle)
    jax.config.update("jax_pgle_profiling_runs", 2)
    compiles = []
    if lib_name == "plax":
        jax.monitoring.register_event_duration_secs_listener(
            lambda event, secs, **kw: compiles.append(secs)
            if event == "/jax/core/compile/backend_compile_duration" else None)
    p, x = transformer_problem(jnp)

    @jax.jit
    def step(p, x):
        value, grads = jax.value_and_grad(
            lambda p: jnp.mean(transformer_block(jax, jnp, p, x, 8).astype(jnp.float32) ** 2))(p)
        return value, jax.tree_util.tree_map(lambda w, g: w - (1e-3 * g).astype(w.dtype),
                                             p, grads)
    state = {"p": p}

    def once():
        value, state["p"] = step(state["p"], x)
        jax.block_until_ready(value)
    for _ in range(5):  # the profiling runs, the recompile, warm-up
        once()
    seconds = [best_seconds(once, 10, 1) for _ in range(5)]
    return {"ms_per_step": 1e3 * median(seconds), "backend_compiles": len(compiles)}


if __name__ == "__main__":
    if len(sys.argv) == 3:
        print(json.dumps(measure(sys.argv[1], sys.argv[2] == "on")))
        sys.exit()
    print(f"{'':8}{'PGLE':>6}{'ms/step':>10}{'compiles':>10}")
    for lib in ("plax", "jax"):
        for setting in ("off", "on"):
            proc = subprocess.run([sys.executable, __file__, lib, setting],
                                  capture_output=True, text=True)
            if proc.returncode:
                print(f"{lib} PGLE {setting} failed:\n{proc.stderr[-2000:]}")
                continue
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            compiles = r["backend_compiles"] if lib == "plax" else "-"
            print(f"{lib:8}{setting:>6}{r['ms_per_step']:>10.2f}{compiles:>10}")

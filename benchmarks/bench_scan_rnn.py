"""A 1000-step scan RNN, forward and backward, in plax and (when installed) JAX.

Measured: tracing + lowering + compiling `jit(value_and_grad(loss))` once, and the
time of one cached call (the forward scan and the reverse scan over 1000 steps of
a tanh RNN with a 64-wide hidden state). Each library runs in its own subprocess;
the ratio plax / JAX is printed when both ran (below 1 means plax is faster).

    python3 benchmarks/bench_scan_rnn.py [--quick]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time

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
            "loss": float(value)}


FIGURES = [("first_call_ms", "trace+compile+run (ms)"),
           ("cached_call_ms", "fwd+bwd, 1000 steps (ms)")]


def run_in_subprocess(lib_name: str, quick: bool) -> dict[str, float] | None:
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    cmd = [sys.executable, __file__, "--worker", lib_name] + (["--quick"] if quick else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        print(f"{lib_name} benchmark failed:\n{proc.stderr[-3000:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--worker", choices=["plax", "jax"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(measure(args.worker, args.quick)))
        return
    plax_figures = run_in_subprocess("plax", args.quick)
    jax_figures = (run_in_subprocess("jax", args.quick)
                   if importlib.util.find_spec("jax") is not None else None)
    if plax_figures is None:
        sys.exit(1)
    header = f"{'':30}{'plax':>12}"
    if jax_figures:
        header += f"{'jax':>12}{'plax/jax':>10}"
    print(header)
    for key, label in FIGURES:
        line = f"{label:30}{plax_figures[key]:>12.1f}"
        if jax_figures:
            line += f"{jax_figures[key]:>12.1f}{plax_figures[key] / jax_figures[key]:>10.2f}"
        print(line)
    if jax_figures and abs(plax_figures["loss"] - jax_figures["loss"]) > 1e-3 * abs(
            jax_figures["loss"]):
        print(f"losses differ: plax {plax_figures['loss']} vs jax {jax_figures['loss']}")
    if not jax_figures:
        print("(JAX is not installed: no comparison)")


if __name__ == "__main__":
    main()

"""The driver every plax-vs-JAX benchmark shares.

A benchmark module defines `measure(lib_name, quick) -> {figure: value}` and a list
of `(figure, label)` rows, and calls `run(measure, figures, __file__, __doc__)`. Each
library then runs in its own subprocess (plax and JAX never share a process), and
one table prints both figures and the ratio plax / JAX (below 1: plax is faster).
With `--rounds N` (or `run(..., rounds=N)`), N rounds alternate a plax and a JAX
subprocess; the table shows each figure's median, the median of the per-round
ratios and their min–max (this machine is noisy); `--cpu-time` times by process
CPU time instead of the wall clock.
Figures whose keys start with `check_` are not printed but compared: they are the
same computation's result in both libraries, and a disagreement is reported.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from typing import Callable

DEVICES_FLAG = "--xla_force_host_platform_device_count=8"


CLOCK_ENV = "PLAX_BENCH_CLOCK"  # "process": CPU time of the whole process (all threads)
ONLY_ENV = "PLAX_BENCH_ONLY"  # comma-separated substrings of the figure keys to measure


def wanted(*keys: str) -> bool:
    """Whether any of the figures `keys` is selected by `--only` (all are without it),
    so that a benchmark can skip the workloads of the others."""
    only = os.environ.get(ONLY_ENV)
    return not only or any(part in key for part in only.split(",") for key in keys)


def best_seconds(fn: Callable[[], object], number: int, repeat: int) -> float:
    """Seconds per call of `fn`: the best of `repeat` rounds of `number` calls, by the
    wall clock, or by process CPU time under `--cpu-time` (steadier on a loaded
    machine: time spent descheduled does not count)."""
    clock = time.process_time if os.environ.get(CLOCK_ENV) == "process" else time.perf_counter
    best = float("inf")
    for _ in range(repeat):
        start = clock()
        for _ in range(number):
            fn()
        best = min(best, (clock() - start) / number)
    return best


def tanh_mlp(jnp, params, x):
    """The benchmarks' MLP: tanh hidden layers over `params` [(w, b), ...], a linear
    last layer (`jnp` is the library's numpy module)."""
    h = x
    for w, b in params[:-1]:
        h = jnp.tanh(h @ w + b)
    w, b = params[-1]
    return h @ w + b


def mlp_problem(sizes: list[int], batch: int, seed: int = 0):
    """(params, x, y) as NumPy float32: a tanh MLP of layer `sizes` (weights scaled
    by 1/sqrt(fan-in), zero biases), `batch` random inputs and regression targets."""
    import numpy as np
    rng = np.random.default_rng(seed)
    params = [(rng.standard_normal((m, k), np.float32) / np.sqrt(m), np.zeros(k, np.float32))
              for m, k in zip(sizes[:-1], sizes[1:])]
    x = rng.standard_normal((batch, sizes[0]), np.float32)
    y = rng.standard_normal((batch, sizes[-1]), np.float32)
    return params, x, y


def sgd_step(lib, loss: Callable, lr: float):
    """`jit(value_and_grad(loss))` plus an SGD update of the parameters (the first
    argument): (params, *data) -> (loss value, new params)."""
    @lib.jit
    def step(params, *data):
        value, grads = lib.value_and_grad(loss)(params, *data)
        return value, lib.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)
    return step


def sgd_step_seconds(lib, loss: Callable, params, data: tuple, lr: float, number: int):
    """Seconds per step of `sgd_step` on `params` (best of 5 rounds of `number` steps,
    after one warm-up), the parameters it ends with, and the jitted step."""
    step = sgd_step(lib, loss, lr)
    state = {"params": step(params, *data)[1]}
    lib.block_until_ready(state["params"])

    def one_step():
        value, state["params"] = step(state["params"], *data)
        lib.block_until_ready(value)

    return best_seconds(one_step, number, 5), state["params"], step


def _in_subprocess(script: str, lib_name: str, quick: bool) -> dict[str, float] | None:
    env = dict(os.environ)
    env.setdefault("XLA_FLAGS", DEVICES_FLAG)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    cmd = [sys.executable, script, "--worker", lib_name] + (["--quick"] if quick else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        print(f"{lib_name} benchmark failed:\n{proc.stderr[-3000:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _ratio(mine: float, theirs: float) -> float:
    """mine / theirs; 1 for two zeros (equal counts), infinity over a lone zero."""
    if theirs == 0:
        return 1.0 if mine == 0 else float("inf")
    return mine / theirs


def _print_table(figures: list[tuple[str, str]], mine: list[dict],
                 theirs: list[dict] | None) -> None:
    """One row per figure: medians over rounds, and the per-round ratios' median and
    min–max when several rounds ran."""
    width = max(len(label) for _, label in figures) + 2
    spread = theirs is not None and len(theirs) > 1
    header = f"{'':{width}}{'plax':>12}"
    if theirs:
        header += f"{'jax':>12}{'plax/jax':>10}" + (f"{'min-max':>14}" if spread else "")
    print(header)
    for key, label in figures:
        line = f"{label:{width}}{median([m[key] for m in mine]):>12.1f}"
        if theirs:
            ratios = [_ratio(m[key], t[key]) for m, t in zip(mine, theirs)]
            line += f"{median([t[key] for t in theirs]):>12.1f}{median(ratios):>10.2f}"
            if spread:
                line += f"{min(ratios):>8.2f}-{max(ratios):.2f}"
        print(line)
    if not theirs:
        print("(JAX is not installed: no comparison)")
        return
    if len(mine) > 1:
        print(f"({len(mine)} rounds, plax and JAX alternating)")
    for key in sorted(k for k in mine[0] if k.startswith("check_")):
        a, b = mine[0][key], theirs[0][key]
        if abs(a - b) > 1e-3 * max(abs(b), 1e-6):
            print(f"{key[len('check_'):]} differs: plax {a} vs jax {b}")


def run(measure: Callable[[str, bool], dict[str, float]], figures: list[tuple[str, str]],
        script: str, doc: str, rounds: int = 1) -> None:
    """The command line of a benchmark script: measure in workers, then compare."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--rounds", type=int, default=rounds,
                        help="alternating plax/JAX subprocess pairs (medians are shown)")
    parser.add_argument("--cpu-time", action="store_true",
                        help="time by process CPU time instead of the wall clock")
    parser.add_argument("--only", metavar="KEYS",
                        help="measure only the figures whose keys contain one of these "
                             "comma-separated substrings (e.g. put_1000,move)")
    parser.add_argument("--worker", choices=["plax", "jax"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cpu_time:
        os.environ[CLOCK_ENV] = "process"  # inherited by the workers
    if args.only:
        os.environ[ONLY_ENV] = args.only
        figures = [(key, label) for key, label in figures if wanted(key)]
    if args.worker:
        print(json.dumps(measure(args.worker, args.quick)))
        return
    with_jax = importlib.util.find_spec("jax") is not None
    mine, theirs = [], []
    for _ in range(max(1, args.rounds)):
        result = _in_subprocess(script, "plax", args.quick)
        if result is None:
            sys.exit(1)
        mine.append(result)
        if with_jax:
            result = _in_subprocess(script, "jax", args.quick)
            if result is None:
                with_jax = False
                theirs = []
            else:
                theirs.append(result)
    _print_table(figures, mine, theirs if with_jax else None)

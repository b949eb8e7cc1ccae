"""Compiled-code quality against JAX: an MLP 784-512-512-10 training step and
per-example gradients, with the shape of the optimized HLO each library compiles.

Measured: steps per second of `jit(value_and_grad(loss))` + SGD on a batch of 128;
the time of a cached `jit(vmap(grad(loss)))` over 16 examples; and, from
`.lower(...).compile().as_text()` of each, the count of HLO instructions, fusions,
dots and copies in the entry computations and fused bodies (equal counts mean XLA
was given the same work; a difference names where to look). Each library runs in
its own subprocess, rounds alternate, medians and the min–max of the ratios print:

    python3 benchmarks/bench_mlp.py [--quick] [--rounds 3]

Both subprocesses run with glibc's malloc fixed (`FIXED_MALLOC`): its thresholds, and
one arena. By default glibc adapts the thresholds to what the process freed before
and gives XLA's threads arenas of their own, whose heaps (64 MB at most) are
unmapped when empty; so whether each call's 43 MB of per-example gradients reuses
heap memory or page-faults fresh memory depends on the process's history. With the
thresholds fixed but several arenas, after the training steps either library's
process took 1,000 to 9,000 minor faults per call from one run to the next (plax
fewer in some runs, JAX in others) and a median of 27 to 49 ms per call; with one
arena both take about 500 and 23 to 26 ms.
"""
from __future__ import annotations

import os
import re

import comparison
from comparison import best_seconds

SIZES, BATCH, PER_EXAMPLE_BATCH, LR = [784, 512, 512, 10], 128, 16, 1e-3

_INSTRUCTION = re.compile(r"^\s+(?:ROOT )?%?[\w.\-]+ = \S+ (\w[\w\-]*)\(", re.M)


def hlo_counts(text: str) -> dict[str, float]:
    """Instruction counts of an optimized HLO module's text, by kind of interest."""
    ops = _INSTRUCTION.findall(text)
    return {"instructions": float(len(ops)),
            "fusions": float(ops.count("fusion")),
            "dots": float(ops.count("dot") + ops.count("custom-call")),
            "copies": float(ops.count("copy") + ops.count("transpose"))}


def mlp_loss(jnp):
    """The benchmarked loss of `jnp` (a library's numpy module): the mean squared
    error of `comparison.tanh_mlp`."""
    def loss(params, x, y):
        return jnp.mean((comparison.tanh_mlp(jnp, params, x) - y) ** 2)
    return loss


def measure(lib_name: str, quick: bool) -> dict[str, float]:
    lib = __import__(lib_name)
    jnp = __import__(f"{lib_name}.numpy", fromlist=["numpy"])
    import numpy as np

    loss = mlp_loss(jnp)
    params, x, y = comparison.mlp_problem(SIZES, BATCH)

    results = {}
    seconds, trained, step = comparison.sgd_step_seconds(
        lib, loss, params, (x, y), LR, 10 if quick else 40)
    results["train_steps_per_s"] = 1 / seconds
    results["check_trained_loss"] = float(loss(trained, x, y))
    for kind, count in hlo_counts(step.lower(params, x, y).compile().as_text()).items():
        results[f"train_hlo_{kind}"] = count

    per_example = lib.jit(lib.vmap(lib.grad(loss), in_axes=(None, 0, 0)))
    xs, ys = x[:PER_EXAMPLE_BATCH, None], y[:PER_EXAMPLE_BATCH, None]
    lib.block_until_ready(per_example(params, xs, ys))
    results["per_example_ms"] = best_seconds(
        lambda: lib.block_until_ready(per_example(params, xs, ys)),
        3 if quick else 10, 5) * 1e3
    grads = per_example(params, xs, ys)
    results["check_per_example_grad"] = float(np.asarray(grads[0][0]).sum())
    for kind, count in hlo_counts(per_example.lower(params, xs, ys).compile().as_text()).items():
        results[f"per_example_hlo_{kind}"] = count
    return results


# kind of `hlo_counts` -> its row label, under each program's timing row
_HLO_LABELS = {"instructions": "  its HLO instructions", "fusions": "  its fusions",
               "dots": "  its dots", "copies": "  its copies/transposes"}


def _rows(program: str, timing: tuple[str, str]) -> list[tuple[str, str]]:
    return [timing] + [(f"{program}_hlo_{kind}", label) for kind, label in _HLO_LABELS.items()]


FIGURES = (_rows("train", ("train_steps_per_s", "MLP training steps/s"))
           + _rows("per_example", ("per_example_ms", "per-example grads (ms)")))

# glibc's mmap and trim thresholds (bytes), held at these values instead of adapting,
# and one arena for every thread
FIXED_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(1 << 30), "MALLOC_TRIM_THRESHOLD_": str(1 << 31),
                "MALLOC_ARENA_MAX": "1"}

if __name__ == "__main__":
    for variable, value in FIXED_MALLOC.items():
        os.environ.setdefault(variable, value)  # inherited by both subprocesses
    comparison.run(measure, FIGURES, __file__, __doc__, rounds=3)

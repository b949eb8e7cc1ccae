"""bench_mlp's two programs with plax and JAX in ONE process, their calls alternating
round by round: the compiled code compared without the process-to-process spread.

    python3 benchmarks/bench_mlp_one_process.py [--rounds 15]

`bench_mlp.py` runs each library in its own subprocess, as every other benchmark
does; there, from one process to the next, the same library's figures spread by
10-30%, more than the gap between the libraries. Here both libraries' executables
(each library has its own CPU client) run in the same process, on device-resident
arguments, so only the compiled code and the cached call differ. It needs JAX
installed; plax itself never imports it (the script imports both).
"""
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import comparison  # noqa: E402
from comparison import median  # noqa: E402
from bench_mlp import BATCH, FIXED_MALLOC, LR, PER_EXAMPLE_BATCH, SIZES, mlp_loss  # noqa: E402


def programs(lib):
    """() -> None callables running one training step and one per-example-gradients
    call with `lib` (plax or jax) on device-resident arguments."""
    loss = mlp_loss(lib.numpy)
    step = comparison.sgd_step(lib, loss, LR)
    per_example = lib.jit(lib.vmap(lib.grad(loss), in_axes=(None, 0, 0)))
    params, x, y = lib.device_put(comparison.mlp_problem(SIZES, BATCH))
    xs, ys = x[:PER_EXAMPLE_BATCH, None], y[:PER_EXAMPLE_BATCH, None]
    state = {"params": params}

    def train():
        value, state["params"] = step(state["params"], x, y)
        lib.block_until_ready(value)

    def grads():
        lib.block_until_ready(per_example(params, xs, ys))

    train(), grads()  # compiled before timing
    return {"train step (ms)": (train, 40), "per-example grads (ms)": (grads, 10)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    rounds = parser.parse_args().rounds
    missing = [v for v in FIXED_MALLOC if os.environ.get(v) != FIXED_MALLOC[v]]
    if missing:
        print(f"note: bench_mlp's malloc settings are not all set ({', '.join(missing)}); "
              "run with them for the same conditions, e.g. MALLOC_ARENA_MAX=1")
    import jax
    import plax
    libs = {"plax": programs(plax), "jax": programs(jax)}
    times = {(lib, row): [] for lib in libs for row in libs[lib]}
    for r in range(rounds):
        for lib in ("plax", "jax") if r % 2 else ("jax", "plax"):
            for row, (fn, number) in libs[lib].items():
                start = time.perf_counter()
                for _ in range(number):
                    fn()
                times[lib, row].append((time.perf_counter() - start) / number * 1e3)
    print(f"{'':26}{'plax':>9}{'jax':>9}{'ratio':>8}   (median; min plax / min jax)")
    for row in libs["plax"]:
        p, j = times["plax", row], times["jax", row]
        print(f"{row:26}{median(p):9.3f}{median(j):9.3f}{median(p) / median(j):8.2f}"
              f"   ({min(p):.3f} / {min(j):.3f})")
    print(f"({rounds} rounds, one process, plax and JAX alternating)")


if __name__ == "__main__":
    main()

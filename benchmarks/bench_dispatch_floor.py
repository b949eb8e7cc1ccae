"""How close plax's cached dispatch is to the jaxlib calls it cannot avoid: each
figure beside the bare binding(s) it is made of, in one process (best of several
rounds; microseconds, milliseconds for the moves):

    python3 benchmarks/bench_dispatch_floor.py [--rounds 9]

- a cached `jit` call on an Array, and on a pytree of 10 Arrays, against
  `LoadedExecutable.execute_sharded` + `consume_with_handlers` on the same buffers;
- a cached `jit` call on a NumPy argument, against that plus the one
  `batched_device_put` that places the argument;
- `device_put` of 1000 sharded Arrays from one 4-device mesh to another, against
  the one `batched_copy_array_to_devices_with_sharding` call it makes.

jaxlib 0.10.2 exports no C++ symbols of IFRT or PJRT, so every caller outside jaxlib
pays these bindings; JAX's own C++ dispatch calls IFRT directly. The gap between a
figure and its floor is what plax's code adds.
"""
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import numpy as np  # noqa: E402
from jaxlib import xla_client as xc  # noqa: E402

import plax  # noqa: E402
from plax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402
from plax_runtime import placement  # noqa: E402


def best_pair(fn, floor, number: int, rounds: int) -> tuple[float, float]:
    """Seconds per call of `fn` and of `floor`: the best of `rounds` rounds of
    `number` calls, the two alternating round by round (this machine's speed drifts
    between runs, so only figures measured side by side compare)."""
    times: tuple[list, list] = ([], [])
    for _ in range(rounds):
        for each, out in ((fn, times[0]), (floor, times[1])):
            start = time.perf_counter()
            for _ in range(number):
                each()
            out.append((time.perf_counter() - start) / number)
    return min(times[0]), min(times[1])


def bare_execute(jitted, *args):
    """() -> the executable's bare run on `args`' buffers: what a cached call of
    `jitted` must at least do."""
    executable = jitted.lower(*args).compile()._compiled.executable
    loaded, handlers = executable._loaded, executable._handlers[False]
    buffers = [leaf._impl for leaf in plax.tree_util.tree_leaves(args)]
    return lambda: loaded.execute_sharded(buffers).consume_with_handlers(handlers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    rounds = parser.parse_args().rounds
    rows = []

    f = plax.jit(lambda x: x + 1)
    host = np.ones(3, np.float32)
    x = plax.device_put(host)
    f(x), f(host)
    run_bare = bare_execute(f, x)
    put, head, tail, _, _ = placement.PreparedPut.of(
        host.shape, host.dtype, x.sharding, committed=False).replicated_call()
    rows.append(("jit call, Array arg (us)", *best_pair(lambda: f(x), run_bare, 20000, rounds),
                 1e6))

    def put_and_run():
        put(*head, [host], *tail, enable_x64=False)
        run_bare()
    rows.append(("jit call, NumPy arg (us)",
                 *best_pair(lambda: f(host), put_and_run, 20000, rounds), 1e6))

    g = plax.jit(lambda xs: sum(xs[1:], xs[0]))
    xs = [plax.device_put(np.full(3, i, np.float32)) for i in range(10)]
    g(xs)
    rows.append(("jit call, 10-Array pytree (us)",
                 *best_pair(lambda: g(xs), bare_execute(g, xs), 20000, rounds), 1e6))

    devices = plax.devices()
    if len(devices) >= 8:
        source = plax.device_put([np.full(64, i, np.float32) for i in range(1000)],
                                 NamedSharding(Mesh(np.array(devices[:4]), ("x",)), P("x")))
        target = NamedSharding(Mesh(np.array(devices[4:8]), ("x",)), P("x"))
        buffers, jaxlib_target = [a._impl for a in source], target._to_jaxlib_sharding(1)
        copy = [xc.ArrayCopySemantics.ALWAYS_COPY] * len(buffers)

        def bare_move():
            moved = placement.copy_buffers(buffers, [jaxlib_target] * len(buffers), copy)
            for buffer in moved:
                buffer.block_until_ready()
        move = lambda: plax.block_until_ready(plax.device_put(source, target))  # noqa: E731
        move()
        rows.append(("move 1000, mesh to mesh (ms)", *best_pair(move, bare_move, 1, rounds * 2),
                     1e3))

    print(f"{'':36}{'plax':>10}{'floor':>10}{'plax-floor':>12}")
    for label, got, floor, unit in rows:
        print(f"{label:36}{got * unit:10.2f}{floor * unit:10.2f}{(got - floor) * unit:12.2f}")
    print(f"(best of {rounds} rounds, one process)")


if __name__ == "__main__":
    main()

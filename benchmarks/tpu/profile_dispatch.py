"""Where the time of a cached jit call and of an eager op goes, plax and JAX on the
same chip. Run by run_on_chip.sh (part `profile`).

First a table of layers, each timed by the wall clock and by the process's CPU time
(per call, best of rounds), from the compiled executable's `execute_sharded` alone up
to `jnp.sin`: the step where a figure jumps is where the time goes, and a wall time
far above the CPU time means the host waits (on the device queue or the runtime).
"Two threads" runs the same executable from two threads at once: if the calls per
second double, the floor is a lock-free wait, not work. Then the Python profile of
2,000 calls, the functions that take the most time in themselves; last, the main
figures of both libraries in one process (`side_by_side`).
"""
from __future__ import annotations

import cProfile
import importlib
import io
import pstats
import subprocess
import sys
import threading
import time

import numpy as np


def per_call(fn, number=2000, rounds=5) -> tuple[float, float]:
    """Microseconds per call of `fn`, by the wall clock and by process CPU time (the
    best round of each)."""
    for _ in range(200):
        fn()
    wall, cpu = [], []
    for _ in range(rounds):
        w0, c0 = time.perf_counter(), time.process_time()
        for _ in range(number):
            fn()
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
    return min(wall) / number * 1e6, min(cpu) / number * 1e6


def two_threads(fn, number=2000) -> float:
    """Microseconds per call when two threads call `fn` at once (wall clock / calls)."""
    def work():
        for _ in range(number):
            fn()
    threads = [threading.Thread(target=work) for _ in range(2)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return (time.perf_counter() - start) / (2 * number) * 1e6


def layers(jax, lib_name: str) -> None:
    jnp, lax = jax.numpy, jax.lax
    x = jax.device_put(np.ones((8, 128), np.float32))
    executable = jax.jit(jnp.sin).lower(x).compile().runtime_executable()
    buffers = [x._impl] if hasattr(x, "_impl") else [x]
    add = jax.jit(lambda v: v + 1)
    rows = [("execute_sharded(sin) alone", lambda: executable.execute_sharded(buffers)),
            ("cached jit call v + 1", lambda: add(x)),
            ("cached jit call, blocked", lambda: add(x).block_until_ready()),
            ("lax.sin", lambda: lax.sin(x)),
            ("jnp.sin", lambda: jnp.sin(x)),
            ("jnp.sin, blocked", lambda: jnp.sin(x).block_until_ready())]
    if lib_name == "plax":
        from plax_stdlib.lax.elementwise import sin_p
        from plax_transforms.dispatch import apply_primitive
        rows.insert(3, ("apply_primitive(sin_p)", lambda: apply_primitive(sin_p, (x,), {})))
    print(f"===== {lib_name}: microseconds per call (wall / process CPU)")
    for name, fn in rows:
        wall, cpu = per_call(fn)
        print(f"  {name:32s} {wall:8.1f} {cpu:8.1f}")
        jax.block_until_ready(fn())
    print(f"  {'execute_sharded, two threads':32s} "
          f"{two_threads(lambda: executable.execute_sharded(buffers)):8.1f}")
    print(f"  {'jnp.sin, two threads':32s} {two_threads(lambda: jnp.sin(x)):8.1f}")
    jax.block_until_ready(jnp.sin(x))


def profile(lib_name: str) -> None:
    jax = importlib.import_module(lib_name)
    layers(jax, lib_name)
    x = jax.device_put(np.ones((8, 128), np.float32))
    add = jax.jit(lambda v: v + 1)
    for name, call in (("cached jit", lambda: add(x)), ("eager sin", lambda: jax.numpy.sin(x))):
        for _ in range(200):
            call()
        jax.block_until_ready(call())
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(2000):
            call()
        jax.block_until_ready(call())
        prof.disable()
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(12)
        print(f"===== {lib_name}: {name}, 2000 calls\n" + "\n".join(
            line for line in text.getvalue().splitlines()[4:] if line.strip()))


def side_by_side(rounds: int = 7) -> None:
    """plax and JAX in one process, alternating round by round: the same figures with
    what differs between two processes (threads, allocator, the runtime's state) taken
    out. Median microseconds per call (wall clock) over `rounds` rounds."""
    import jax
    import plax
    calls = {}
    for lib in (plax, jax):
        x = lib.device_put(np.ones((8, 128), np.float32))
        executable = lib.jit(lib.numpy.sin).lower(x).compile().runtime_executable()
        buffers = [x._impl] if hasattr(x, "_impl") else [x]
        add = lib.jit(lambda v: v + 1)
        calls[lib.__name__] = {
            "execute_sharded(sin) alone": (lambda e=executable, b=buffers: e.execute_sharded(b)),
            "cached jit call v + 1": (lambda f=add, v=x: f(v)),
            "jnp.sin": (lambda s=lib.numpy.sin, v=x: s(v))}
    print("===== one process, alternating: median us per call (plax, JAX, plax/JAX)")
    for name in calls["plax"]:
        times: dict[str, list] = {"plax": [], "jax": []}
        for _ in range(rounds):
            for lib_name in times:
                times[lib_name].append(per_call(calls[lib_name][name], rounds=1)[0])
        p, j = (float(np.median(times[k])) for k in ("plax", "jax"))
        print(f"  {name:32s} {p:8.1f} {j:8.1f} {p / j:6.2f}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        side_by_side() if sys.argv[1] == "both" else profile(sys.argv[1])
    else:
        for lib in ("plax", "jax", "both"):
            subprocess.run([sys.executable, __file__, lib], check=False)

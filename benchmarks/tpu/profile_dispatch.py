"""Where the time of a cached jit call and of an eager op goes, plax and JAX on the
same chip (each in a process of its own): the Python profile of 2,000 calls, the
functions that take the most time in themselves. Run by run_on_chip.sh (part
`profile`)."""
from __future__ import annotations

import cProfile
import importlib
import io
import pstats
import subprocess
import sys

import numpy as np


def runtime_floor(jax, x) -> float:
    """Microseconds per call of the compiled executable of `sin` itself
    (`execute_sharded` on the argument's buffer, no Python layer above it): what no
    dispatch path can go below."""
    import time
    executable = jax.jit(jax.numpy.sin).lower(x).compile().runtime_executable()
    buffers = [x._impl] if hasattr(x, "_impl") else [x]
    for _ in range(200):
        executable.execute_sharded(buffers)
    start = time.perf_counter()
    for _ in range(2000):
        executable.execute_sharded(buffers)
    return (time.perf_counter() - start) / 2000 * 1e6


def profile(lib_name: str) -> None:
    jax = importlib.import_module(lib_name)
    jnp = jax.numpy
    x = jax.device_put(np.ones((8, 128), np.float32))
    print(f"===== {lib_name}: execute_sharded alone: {runtime_floor(jax, x):.1f} us per call")
    add = jax.jit(lambda v: v + 1)
    for name, call in (("cached jit", lambda: add(x)), ("eager sin", lambda: jnp.sin(x))):
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


if __name__ == "__main__":
    if len(sys.argv) > 1:
        profile(sys.argv[1])
    else:
        for lib in ("plax", "jax"):
            subprocess.run([sys.executable, __file__, lib], check=False)

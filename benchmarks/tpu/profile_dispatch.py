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


def profile(lib_name: str) -> None:
    jax = importlib.import_module(lib_name)
    jnp = jax.numpy
    x = jax.device_put(np.ones((8, 128), np.float32))
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

"""eigh past 256 x 256 on a TPU chip, plax against JAX (each in a process of its own):
plax keeps XLA's Jacobi eigensolver at every size, JAX switches to a QDWH divide and
conquer. Prints compile seconds and milliseconds per call (median of rounds) for
float32 symmetric matrices of sizes 256, 512 and 1024, and the largest eigenvalue
error against NumPy in float64, relative to the spectrum's scale.
"""
from __future__ import annotations

import importlib
import json
import subprocess
import sys
import time

import numpy as np

SIZES = (256, 512, 1024)


def measure(lib_name: str) -> dict:
    jax = importlib.import_module(lib_name)
    out = {}
    for n in SIZES:
        a = np.random.default_rng(n).standard_normal((n, n)).astype(np.float32)
        sym = (a + a.T) / 2
        x = jax.device_put(sym)
        f = jax.jit(jax.lax.linalg.eigh)
        start = time.perf_counter()
        compiled = f.lower(x).compile()
        compile_s = time.perf_counter() - start
        jax.block_until_ready(compiled(x))
        times = []
        for _ in range(5):
            start = time.perf_counter()
            jax.block_until_ready(compiled(x))
            times.append(time.perf_counter() - start)
        w = np.asarray(compiled(x)[1], np.float64)
        exact = np.linalg.eigvalsh(sym.astype(np.float64))
        out[n] = {"compile_s": compile_s, "ms": 1e3 * float(np.median(times)),
                  "rel_err": float(np.abs(w - exact).max() / np.abs(exact).max())}
    return out


if __name__ == "__main__":
    if len(sys.argv) > 1:
        print(json.dumps(measure(sys.argv[1])))
        sys.exit()
    results = {}
    for lib in ("plax", "jax"):
        proc = subprocess.run([sys.executable, __file__, lib], capture_output=True, text=True)
        if proc.returncode:
            print(f"{lib} failed:\n{proc.stderr[-2000:]}")
            continue
        results[lib] = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"{'n':>6}{'lib':>6}{'compile s':>11}{'ms/call':>10}{'rel. error':>12}")
    for n in map(str, SIZES):
        for lib, r in results.items():
            print(f"{n:>6}{lib:>6}{r[n]['compile_s']:>11.1f}{r[n]['ms']:>10.2f}"
                  f"{r[n]['rel_err']:>12.1e}")

"""Eight threads calling one jitted function with the same 37 new shapes at once.

Each thread calls `jit(tanh(x) * 2 + x.sum())` on float32 vectors of lengths 1..37
in the same order, started together; the backend compiles are counted from the
`/jax/core/compile/backend_compile_duration` event. One compile per shape is the
target (callers of a shape being compiled wait for it); before in-flight
de-duplication plax compiled about once per thread and shape. Also printed: the
storm's wall time. Each library runs in its own subprocess.

    python3 benchmarks/bench_compile_storm.py
"""
from __future__ import annotations

import threading
import time

import numpy as np

import comparison

THREADS, SHAPES = 8, 37


def measure(lib_name: str, quick: bool) -> dict[str, float]:
    lib = __import__(lib_name)
    jnp = __import__(f"{lib_name}.numpy", fromlist=["numpy"])
    compiles = []
    lib.monitoring.register_event_duration_secs_listener(
        lambda event, secs, **kw: compiles.append(secs)
        if event == "/jax/core/compile/backend_compile_duration" else None)
    f = lib.jit(lambda x: jnp.tanh(x) * 2.0 + x.sum())
    start_together = threading.Barrier(THREADS)
    wrong = []

    def work():
        start_together.wait()
        for n in range(1, SHAPES + 1):
            if not np.allclose(np.asarray(f(np.ones(n, np.float32))), np.tanh(1.0) * 2 + n,
                               rtol=1e-5):
                wrong.append(n)

    threads = [threading.Thread(target=work) for _ in range(THREADS)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"backend_compiles": float(len(compiles)),
            "storm_ms": (time.perf_counter() - start) * 1e3,
            "check_wrong_results": float(len(wrong))}


FIGURES = [("backend_compiles", f"backend compiles ({SHAPES} shapes)"),
           ("storm_ms", f"{THREADS} threads x {SHAPES} shapes (ms)")]


if __name__ == "__main__":
    comparison.run(measure, FIGURES, __file__, __doc__)

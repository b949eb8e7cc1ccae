"""PGLE's costs and JAX's `jit_add_chain`, plax against JAX.

PGLE (`jax_enable_pgle`): a plain call of a jitted 64x64 matmul-and-tanh program
(PGLE off), one of its profiled runs (each under a profiler session, waiting for the
result), and the call that recompiles it with the profile; all in microseconds or
milliseconds per call, medians of the runs. `jit_add_chain` as JAX's benchmark has it:
each iteration defines a new outer jit calling one inner jit 100 times and runs it
(ms per iteration; plax compiles the identical module once), and the CPU time of one
backend compile of that module after clearing the caches. The two libraries' modules
for it differ only in locations (plax wrote `jax.arg_info` too before), their options in
`use_spmd_partitioning`/`use_shardy_partitioner` (plax leaves them off on one device),
`profile_version` and `memory_fitting_level`; compiled by one client in one process,
each module with each options takes the same CPU time (49 +- 1 ms), so a wall-clock
difference between the two processes comes from the machine's load, not from plax:

    python3 benchmarks/bench_pgle.py [--quick] [--rounds 3] [--cpu-time]
"""
from __future__ import annotations

import time

import comparison



def measure(lib_name: str, quick: bool) -> dict[str, float]:
    import numpy as np
    lib = __import__(lib_name)
    lax = __import__(f"{lib_name}.lax", fromlist=["lax"])
    jnp = __import__(f"{lib_name}.numpy", fromlist=["numpy"])
    results: dict[str, float] = {}
    runs = 5 if quick else 20
    x = lib.device_put(np.linspace(-1, 1, 64 * 64, dtype=np.float32).reshape(64, 64))

    def program(scale):
        return lib.jit(lambda v: jnp.tanh(v @ v) * scale + 1.0)

    if comparison.wanted("plain_call_us", "profiled_run_us", "pgle_recompile_ms"):
        plain = program(0.5)
        plain(x).block_until_ready()
        results["plain_call_us"] = comparison.best_seconds(
            lambda: plain(x).block_until_ready(), 200 if quick else 1000, 5) * 1e6
        lib.config.update("jax_enable_pgle", True)
        lib.config.update("jax_pgle_profiling_runs", runs)
        try:
            profiled = program(1.5)
            profiled(x).block_until_ready()  # compile + the first profiled run
            times = []
            for _ in range(runs - 1):
                start = time.perf_counter()
                profiled(x).block_until_ready()
                times.append(time.perf_counter() - start)
            results["profiled_run_us"] = comparison.median(times) * 1e6
            start = time.perf_counter()
            out = profiled(x).block_until_ready()  # the recompile, then a plain run
            results["pgle_recompile_ms"] = (time.perf_counter() - start) * 1e3
            results["check_pgle_sum"] = float(np.asarray(out).sum())
        finally:
            lib.config.update("jax_enable_pgle", False)

    if comparison.wanted("add_chain_ms", "chain_compile_cpu_ms"):
        inner = lib.jit(lambda a, b: lax.add(a, b))
        y = lib.device_put(np.full((2, 2), 1e-3, np.float32))

        def define():
            @lib.jit
            def f(v):
                for _ in range(100):
                    v = inner(v, v)
                return v
            return f

        define()(y).block_until_ready()
        iterations = 5 if quick else 20
        results["add_chain_ms"] = comparison.best_seconds(
            lambda: define()(y).block_until_ready(), iterations, 3) * 1e3
        cpu = []
        for _ in range(3 if quick else 7):
            lowered = define().lower(y)
            lib.clear_caches()
            start = time.process_time()
            lowered.compile()
            cpu.append(time.process_time() - start)
        results["chain_compile_cpu_ms"] = comparison.median(cpu) * 1e3
    return results


FIGURES = [("plain_call_us", "plain call, 64x64 program (us)"),
           ("profiled_run_us", "PGLE profiled run (us)"),
           ("pgle_recompile_ms", "call that recompiles with the profile (ms)"),
           ("add_chain_ms", "jit_add_chain, per iteration (ms)"),
           ("chain_compile_cpu_ms", "its module's backend compile, CPU (ms)")]


if __name__ == "__main__":
    comparison.run(measure, FIGURES, __file__, __doc__, rounds=1)

"""One process of tests/test_pgle.py's runs: PGLE in a fresh process.

`python pgle_worker.py cache DIR MODE`: a jitted function called 4 times with the
persistent cache in DIR and PGLE on (MODE `pgle`, 2 profiling runs), off (`off`) or
off expecting PGLE's entries (`expect`). `python pgle_worker.py distributed
ADDRESS NUM_PROCESSES PROCESS_ID MODE`: one process of a distributed run calling a
function over every process's devices 4 times, with PGLE on (MODE `pgle`) or, in
process 0 only, off (MODE `one_sided`: process 1 waits for a profile that never
comes, with a 2 s timeout). Each prints what it observed as one JSON line
(`RESULT {...}`); nothing is asserted here.
"""
import hashlib
import json
import sys

import numpy as np

import plax
import plax.numpy as jnp
from plax_runtime import pgle

X = np.linspace(-1.0, 1.0, 4 * 8, dtype=np.float32).reshape(4, 8)


def observe() -> dict:
    """Listens to compiles and PGLE's events from now on, and notes the hash of each
    profile this process aggregated from its own runs."""
    seen = {"compiles": [], "profiling_runs": 0, "recompiles": [], "own_profiles": []}
    aggregate = pgle.ProfileRunner.aggregate

    def noting(runner):
        profile = aggregate(runner)
        seen["own_profiles"].append(hashlib.sha256(profile).hexdigest())
        return profile
    pgle.ProfileRunner.aggregate = noting

    def on_duration(event, secs, **kw):
        if event == "/jax/core/compile/backend_compile_duration":
            seen["compiles"].append(kw.get("fun_name"))
        elif event == pgle.PROFILING_RUN_EVENT:
            seen["profiling_runs"] += 1
        elif event == pgle.RECOMPILE_EVENT:
            seen["recompiles"].append(kw["profile_sha256"])
    plax.monitoring.register_event_duration_secs_listener(on_duration)
    return seen


def step(x):
    return jnp.tanh(x @ x.T) @ x + 1.0


def cache_run(directory: str, mode: str) -> dict:
    """`mode`: `pgle` (on), `off`, or `expect` (off, with
    jax_compilation_cache_expect_pgle)."""
    from plax_runtime import persistent_cache
    plax.config.update("jax_compilation_cache_dir", directory)
    plax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    plax.config.update("jax_enable_pgle", mode == "pgle")
    plax.config.update("jax_compilation_cache_expect_pgle", mode == "expect")
    plax.config.update("jax_pgle_profiling_runs", 2)
    x = plax.device_put(X)
    seen = observe()
    f = plax.jit(step)
    outs = [np.asarray(f(x)).tolist() for _ in range(4)]
    # (the AOT stage finds the CompiledJaxpr the calls ran)
    profiled = f.lower(x).compile()._compiled.executable.fdo_profile is not None
    return {**seen, "outs": outs, "stats": persistent_cache.stats(), "profiled": profiled}


def distributed_run(address: str, num_processes: int, process_id: int, mode: str) -> dict:
    from plax.sharding import Mesh, NamedSharding, PartitionSpec as P
    from plax_runtime.distributed import global_state
    plax.distributed.initialize(address, num_processes, process_id, initialization_timeout=30)
    on = mode == "pgle" or process_id != 0
    plax.config.update("jax_enable_pgle", on)
    plax.config.update("jax_pgle_profiling_runs", 2)
    plax.config.update("jax_share_binary_between_hosts_timeout_ms", 2000)
    mesh = Mesh(np.array(plax.devices()), ("x",))
    x = plax.make_array_from_callback(X.shape, NamedSharding(mesh, P("x")), lambda i: X[i])
    seen = observe()
    f = plax.jit(step, out_shardings=NamedSharding(mesh, P()))
    calls = 4 if mode == "pgle" else 2 + (process_id != 0)
    outs = []
    try:
        for _ in range(calls):
            outs.append(np.asarray(f(x).addressable_data(0)).tolist())
    except RuntimeError as err:
        seen["error"] = str(err)
    client = global_state.client
    if mode == "one_sided":  # process 0 stays until process 1 has failed
        if process_id == 0:
            client.blocking_key_value_get("pgle_test/done", 60_000)
        else:
            client.key_value_set("pgle_test/done", "1")
    plax.distributed.shutdown()
    return {**seen, "outs": outs}


if __name__ == "__main__":
    kind, *rest = sys.argv[1:]
    if kind == "cache":
        result = cache_run(rest[0], rest[1])
    else:
        result = distributed_run(rest[0], int(rest[1]), int(rest[2]), rest[3])
    print("RESULT " + json.dumps(result), flush=True)

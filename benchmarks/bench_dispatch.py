"""Dispatch costs of plax against JAX: cached jit calls, eager ops, batched device_put.

Figures (issue 14's list): a cached `jit` call with an Array, a NumPy and a
pytree-of-10-Arrays argument; eager ops per second of `x = x * 1.0001 + 0.1` on
float32[16] and of `lax.add(x, x)`; an eager `x + y`, `x * 2`, `-x`, `jnp.add(x, y)`,
`jnp.add.reduce(x)`, `jnp.sum(x, axis=0)` and `jnp.argmax(x)` on float32[8];
`device_put` of 1000 NumPy float32[64] arrays onto an 8-device mesh (replicated and
`P('x')`); moving 1000 arrays from one
4-device mesh to another in one `device_put`; JAX's `jit_add_chain` (an outer jit
calling one inner jit 100 times, traced) and `make_jaxpr` of a
3000-equation function. Each library runs in its own
subprocess, rounds alternate, medians and the min–max of the ratios are printed:

    python3 benchmarks/bench_dispatch.py [--quick] [--rounds 5] [--cpu-time]
                                         [--only put_1000,move,make_jaxpr]
"""
from __future__ import annotations

import comparison
from comparison import best_seconds, wanted


def measure(lib_name: str, quick: bool) -> dict[str, float]:
    """Run the workloads with `plax` or `jax` (imported here, in this process only)."""
    import numpy as np
    lib = __import__(lib_name)
    lax = __import__(f"{lib_name}.lax", fromlist=["lax"])
    sharding = __import__(f"{lib_name}.sharding", fromlist=["sharding"])

    scale = 0.2 if quick else 1.0
    n = int(10000 * scale)
    results = {}

    if wanted("jit_array_us", "jit_numpy_us", "jit_pytree10_us"):
        f = lib.jit(lambda x: x + 1)
        x = lib.device_put(np.ones(3, np.float32))
        f(x).block_until_ready()
        results["jit_array_us"] = best_seconds(lambda: f(x), n, 5) * 1e6
        host = np.ones(3, np.float32)
        f(host).block_until_ready()
        results["jit_numpy_us"] = best_seconds(lambda: f(host), n, 5) * 1e6
        g = lib.jit(lambda xs: sum(xs[1:], xs[0]))
        xs = [lib.device_put(np.full(3, i, np.float32)) for i in range(10)]
        g(xs).block_until_ready()
        results["jit_pytree10_us"] = best_seconds(lambda: g(xs), n, 5) * 1e6
        results["check_pytree10"] = float(np.asarray(g(xs))[0])

    if wanted("eager_step_ops_per_s", "eager_add_ops_per_s"):
        state = {"y": lib.device_put(np.ones(16, np.float32))}

        def step():
            state["y"] = state["y"] * 1.0001 + 0.1
        step()
        results["eager_step_ops_per_s"] = 2 / best_seconds(step, n // 2, 5)
        state["y"].block_until_ready()
        y = state["y"]
        lax.add(y, y).block_until_ready()
        results["eager_add_ops_per_s"] = 1 / best_seconds(lambda: lax.add(y, y), n, 5)

    ufunc_cases = {"eager_x_plus_y_us": lambda jnp, x: x + x,
                   "eager_x_times_2_us": lambda jnp, x: x * 2,
                   "eager_neg_x_us": lambda jnp, x: -x,
                   "eager_jnp_add_us": lambda jnp, x: jnp.add(x, x),
                   "eager_add_reduce_us": lambda jnp, x: jnp.add.reduce(x),
                   "eager_sum_axis_us": lambda jnp, x: jnp.sum(x, axis=0),
                   "eager_argmax_us": lambda jnp, x: jnp.argmax(x)}
    if wanted(*ufunc_cases):
        # The operators, jnp's ufunc objects and reductions: jit(inline=True) functions
        # (or private ones, _reduce_sum and _argmax) in both.
        jnp = __import__(f"{lib_name}.numpy", fromlist=["numpy"])
        x = lib.device_put(np.arange(8, dtype=np.float32))
        for key, case in ufunc_cases.items():
            case(jnp, x).block_until_ready()
            results[key] = best_seconds(lambda case=case: case(jnp, x), n, 5) * 1e6

    if wanted("jit_add_chain_ms"):
        # JAX's `jit_add_chain`: tracing an outer function (a new one each round) that
        # calls one inner jitted add 100 times; the inner calls hit the tracing cache.
        inner = lib.jit(lambda a, b: lax.add(a, b))
        zero = np.array(0.0, np.float32)

        def add_chain():
            def outer(v):
                for _ in range(100):
                    v = inner(v, v)
                return v
            return lib.make_jaxpr(outer)(zero)
        add_chain()
        results["jit_add_chain_ms"] = best_seconds(add_chain, 1, 3 if quick else 7) * 1e3

    if wanted("make_jaxpr_3000_ms"):
        # make_jaxpr of a 3000-equation elementwise function (a new function each time).
        def trace_3000():
            def chain(v):
                for _ in range(1000):
                    v = lax.sin(v) * 1.001 + 0.5
                return v
            return lib.make_jaxpr(chain)(np.ones(4, np.float32))
        results["make_jaxpr_3000_ms"] = best_seconds(trace_3000, 1, 2 if quick else 5) * 1e3

    devices = lib.devices()
    if len(devices) >= 8 and wanted("put_1000_replicated_ms", "put_1000_split_ms",
                                    "move_1000_ms"):
        P = sharding.PartitionSpec
        mesh8 = sharding.Mesh(np.array(devices[:8]), ("x",))
        values = [np.full(64, i, np.float32) for i in range(1000)]
        reps = 2 if quick else 5
        for name, spec in (("replicated", P()), ("split", P("x"))):
            target = sharding.NamedSharding(mesh8, spec)
            def put(target=target):
                return lib.block_until_ready(lib.device_put(values, target))
            put()
            results[f"put_1000_{name}_ms"] = best_seconds(put, 1, reps) * 1e3
        mesh_a = sharding.Mesh(np.array(devices[:4]), ("x",))
        mesh_b = sharding.Mesh(np.array(devices[4:8]), ("x",))
        source = lib.device_put(values, sharding.NamedSharding(mesh_a, P("x")))
        target = sharding.NamedSharding(mesh_b, P("x"))
        move = lambda: lib.block_until_ready(lib.device_put(source, target))  # noqa: E731
        moved = move()
        results["check_moved"] = float(np.asarray(moved[999])[0])
        results["move_1000_ms"] = best_seconds(move, 1, reps) * 1e3
    return results


FIGURES = [("jit_array_us", "jit call, Array arg (us)"),
           ("jit_numpy_us", "jit call, NumPy arg (us)"),
           ("jit_pytree10_us", "jit call, 10-Array pytree (us)"),
           ("eager_step_ops_per_s", "eager x*1.0001+0.1 ops/s"),
           ("eager_add_ops_per_s", "eager lax.add ops/s"),
           ("eager_x_plus_y_us", "eager x + y (us)"),
           ("eager_x_times_2_us", "eager x * 2 (us)"),
           ("eager_neg_x_us", "eager -x (us)"),
           ("eager_jnp_add_us", "eager jnp.add(x, y) (us)"),
           ("eager_add_reduce_us", "eager jnp.add.reduce(x) (us)"),
           ("eager_sum_axis_us", "eager jnp.sum(x, axis=0) (us)"),
           ("eager_argmax_us", "eager jnp.argmax(x) (us)"),
           ("put_1000_replicated_ms", "device_put 1000, replicated (ms)"),
           ("put_1000_split_ms", "device_put 1000, P('x') (ms)"),
           ("move_1000_ms", "move 1000, mesh to mesh (ms)"),
           ("jit_add_chain_ms", "jit_add_chain, tracing (ms)"),
           ("make_jaxpr_3000_ms", "make_jaxpr, 3000 equations (ms)")]


if __name__ == "__main__":
    comparison.run(measure, FIGURES, __file__, __doc__, rounds=3)

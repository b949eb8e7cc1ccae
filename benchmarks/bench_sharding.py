"""Sharding on 8 CPU devices, plax against JAX: a sharded MLP training step, a
device_put of one large array to a sharded layout, and the trace/lowering/compile
counts of a constraint on an AbstractMesh called on two meshes of one shape.

The step is `jit(value_and_grad)` plus SGD in one program over a 4 x 2 mesh
(`data`, `model`): the batch split over `data`, the hidden layer over `model`.
Counts come from the monitoring events both libraries record under JAX's names
(expected 1 trace, 1 lowering, 2 backend compiles). Each library runs in its own
subprocess; ratios plax / JAX are printed (below 1 means plax is faster).

    python3 benchmarks/bench_sharding.py [--quick]
"""
from __future__ import annotations

import collections

import comparison
from comparison import best_seconds

BATCH, SIZES, LR = 512, [64, 512, 512, 16], 0.01
BIG = (4096, 2048)  # 32 MiB of float32

EVENTS = {"/jax/core/compile/jaxpr_trace_duration": "traces",
          "/jax/core/compile/jaxpr_to_mlir_module_duration": "lowerings",
          "/jax/core/compile/backend_compile_duration": "compiles"}


def measure(lib_name: str, quick: bool) -> dict[str, float]:
    lib = __import__(lib_name)
    jnp = __import__(f"{lib_name}.numpy", fromlist=["numpy"])
    sharding = __import__(f"{lib_name}.sharding", fromlist=["sharding"])
    monitoring = __import__(f"{lib_name}.monitoring", fromlist=["monitoring"])
    lax = __import__(f"{lib_name}.lax", fromlist=["lax"])
    import numpy as np
    NamedSharding, P, Mesh = sharding.NamedSharding, sharding.PartitionSpec, sharding.Mesh
    results = {}

    devices = lib.devices()
    mesh = Mesh(np.array(devices).reshape(4, 2), ("data", "model"))
    rng = np.random.default_rng(0)
    params = [(rng.standard_normal((m, k), np.float32) / np.sqrt(m), np.zeros(k, np.float32))
              for m, k in zip(SIZES[:-1], SIZES[1:])]
    specs = [(P(None, "model"), P("model")), (P("model", None), P()), (P(), P())]
    shardings = [tuple(NamedSharding(mesh, s) for s in layer) for layer in specs]
    batch = NamedSharding(mesh, P("data", None))
    params = lib.device_put(params, shardings)
    x = lib.device_put(rng.standard_normal((BATCH, SIZES[0]), np.float32), batch)
    y = lib.device_put(rng.standard_normal((BATCH, SIZES[-1]), np.float32), batch)

    def loss(params, x, y):
        return jnp.mean((comparison.tanh_mlp(jnp, params, x) - y) ** 2)

    seconds, params, _ = comparison.sgd_step_seconds(lib, loss, params, (x, y), LR,
                                                     20 if quick else 100)
    results["step_us"] = seconds * 1e6
    results["check_layout_kept"] = float(params[0][0].sharding == shardings[0][0])

    big = rng.standard_normal(BIG, np.float32)
    target = NamedSharding(mesh, P("data", "model"))
    lib.block_until_ready(lib.device_put(big, target))
    results["device_put_us"] = best_seconds(
        lambda: lib.block_until_ready(lib.device_put(big, target)), 5 if quick else 20, 5) * 1e6
    results["check_put_sum"] = float(np.asarray(lib.device_put(big, target)).sum())

    counts = collections.Counter()

    def listener(event, duration, **kwargs):
        if event in EVENTS:
            counts[EVENTS[event]] += 1

    monitoring.register_event_duration_secs_listener(listener)
    abstract = sharding.AbstractMesh((2,), ("x",))
    constrained = lib.jit(lambda v: lax.with_sharding_constraint(
        v * 2, NamedSharding(abstract, P("x"))))
    for devs in (devices[:2], devices[2:4]):
        arr = lib.device_put(np.ones((8, 8), np.float32), NamedSharding(Mesh(devs, ("x",)), P()))
        lib.block_until_ready(constrained(arr))
    monitoring.unregister_event_duration_listener(listener)
    results.update({k: float(counts[k]) for k in ("traces", "lowerings", "compiles")})
    return results


FIGURES = [("step_us", f"MLP train step, 8 devices, batch {BATCH} (us)"),
           ("device_put_us", "device_put 32 MiB to P('data','model') (us)"),
           ("traces", "AbstractMesh scenario: traces"),
           ("lowerings", "AbstractMesh scenario: lowerings"),
           ("compiles", "AbstractMesh scenario: backend compiles")]

if __name__ == "__main__":
    comparison.run(measure, FIGURES, __file__, __doc__)

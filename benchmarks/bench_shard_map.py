"""shard_map on 8 CPU devices, plax against JAX: the dispatch latency of a jitted
shard_map of one psum, and a data-parallel training step whose loss is a shard_map.

The psum figure is `jit(shard_map(lambda b: psum(b, 'i')))` on a small (8, 128)
array, called again and again on its own output's input (the steady state of a
cached call: signature check, execution of an SPMD program with one all-reduce).
The training step is `jit` of `value_and_grad` of a shard_map over the batch (each
device's MLP loss, psum'd) plus SGD on replicated parameters: the gradient flows
back through shard_map's transpose. The eager figure is a shard_map of a few
elementwise operations and a psum called outside jit, on 4 of the devices: its body
runs one operation at a time on every device, as JAX's does (JAX 0.10.2's eager
shard_map on all 8 CPU devices can stall in XLA's collective rendezvous on a
machine with fewer cores, so the mesh is of 4). Each library runs in its own subprocess; ratios
plax / JAX are printed (below 1 means plax is faster).

    python3 benchmarks/bench_shard_map.py [--quick]
"""
from __future__ import annotations

import comparison
from comparison import best_seconds

BATCH, SIZES, LR = 1024, [32, 256, 256, 8], 0.01


def measure(lib_name: str, quick: bool) -> dict[str, float]:
    lib = __import__(lib_name)
    jnp = __import__(f"{lib_name}.numpy", fromlist=["numpy"])
    lax = __import__(f"{lib_name}.lax", fromlist=["lax"])
    sharding = __import__(f"{lib_name}.sharding", fromlist=["sharding"])
    import numpy as np
    Mesh, P, NamedSharding = sharding.Mesh, sharding.PartitionSpec, sharding.NamedSharding
    mesh = Mesh(np.array(lib.devices()), ("i",))
    results = {}

    total = lib.jit(lib.shard_map(lambda b: lax.psum(b, "i"), mesh=mesh, in_specs=P("i"),
                                  out_specs=P()))
    x = lib.device_put(np.arange(8 * 128, dtype=np.float32).reshape(8, 128),
                       NamedSharding(mesh, P("i")))
    lib.block_until_ready(total(x))
    results["psum_us"] = best_seconds(lambda: lib.block_until_ready(total(x)),
                                      200 if quick else 1000, 5) * 1e6
    results["check_psum"] = float(np.asarray(total(x)).sum())

    quarter = Mesh(np.array(lib.devices()[:4]), ("i",))
    eager = lib.shard_map(lambda b: jnp.sin(b) * 2.0 + lax.psum(b, "i"), mesh=quarter,
                          in_specs=P("i"), out_specs=P("i"))
    xq = lib.device_put(np.arange(4 * 128, dtype=np.float32), NamedSharding(quarter, P("i")))
    lib.block_until_ready(eager(xq))
    results["eager_us"] = best_seconds(lambda: lib.block_until_ready(eager(xq)),
                                       2 if quick else 5, 3) * 1e6
    results["check_eager"] = float(np.asarray(eager(xq)).sum())

    rng = np.random.default_rng(0)
    params = [(rng.standard_normal((m, k), np.float32) / np.sqrt(m), np.zeros(k, np.float32))
              for m, k in zip(SIZES[:-1], SIZES[1:])]
    replicated, split = NamedSharding(mesh, P()), NamedSharding(mesh, P("i"))
    params = lib.device_put(params, replicated)
    xs = lib.device_put(rng.standard_normal((BATCH, SIZES[0]), np.float32), split)
    ys = lib.device_put(rng.standard_normal((BATCH, SIZES[-1]), np.float32), split)

    def local_loss(params, x, y):
        return lax.psum(jnp.sum((comparison.tanh_mlp(jnp, params, x) - y) ** 2), "i") / BATCH

    loss = lib.shard_map(local_loss, mesh=mesh, in_specs=(P(), P("i"), P("i")),
                         out_specs=P())

    first = params
    seconds, _, step = comparison.sgd_step_seconds(lib, loss, params, (xs, ys), LR,
                                                   20 if quick else 100)
    results["step_us"] = seconds * 1e6
    results["check_loss"] = float(step(first, xs, ys)[0])
    return results


FIGURES = [("psum_us", "jit(shard_map(psum)), 8 devices, f32[8,128] (us)"),
           ("step_us", f"data-parallel step under shard_map, batch {BATCH} (us)"),
           ("eager_us", "eager shard_map (outside jit) of 4 ops, 4 devices (us)")]

if __name__ == "__main__":
    comparison.run(measure, FIGURES, __file__, __doc__)

"""One process of the plax-vs-JAX multi-process comparison in tests/test_distributed.py.

Run as `python distributed_vs_jax_worker.py ADDRESS PROCESS_ID LIBRARY` (2 processes,
2 CPU devices each; LIBRARY is `plax` or `jax`). It makes the same calls with either
library and prints what it got as one JSON line (`RESULT {...}`), so the test can
compare the two: JAX's behaviour is the specification.
"""
import json
import sys

import numpy as np

# Local arrays per PartitionSpec over the ("x", "y") = (process, local device) mesh:
# split across processes, within one, both, or not at all.
LOCAL_DATA = {"rows": (("x",), (2, 6)), "rows_within": (("y",), (4, 6)),
              "cols": ((None, "x"), (4, 3)), "both_axes": ((("x", "y"),), (2, 6)),
              "mixed": (("y", "x"), (4, 3)), "whole": (("x",), (4, 6))}


def shards(arr):
    return [[[list(s.indices(n)[:2]) for s, n in zip(sh.index, arr.shape)],
             np.asarray(sh.data).tolist()] for sh in arr.addressable_shards]


def main(address, process_id, library):
    if library == "jax":
        import jax
        from jax.experimental import multihost_utils
    else:
        import plax as jax
        from plax.experimental import multihost_utils
    jax.distributed.initialize(address, 2, process_id)
    seen = {"devices": [[d.id, d.process_index] for d in jax.devices()],
            "local_devices": [d.id for d in jax.local_devices()],
            "process_count": jax.process_count()}
    mesh = jax.sharding.Mesh(np.array(jax.devices()).reshape(2, 2), ("x", "y"))
    for name, (spec, shape) in LOCAL_DATA.items():
        sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(*spec))
        data = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) + 100 * process_id
        arr = jax.make_array_from_process_local_data(sharding, data)
        seen[name] = [list(arr.shape), shards(arr)]
        seen[name + "_sum"] = float(jax.jit(lambda v: v.sum())(arr))
        spec = jax.sharding.PartitionSpec(*spec)
        for kind, local in (("host", data), ("array", jax.device_put(
                data, jax.sharding.NamedSharding(mesh.local_mesh, spec)))):
            glob = multihost_utils.host_local_array_to_global_array(local, mesh, spec)
            back = multihost_utils.global_array_to_host_local_array(glob, mesh, spec)
            seen[f"{name}_{kind}_to_global"] = [list(glob.shape), shards(glob)]
            seen[f"{name}_{kind}_round_trip"] = [list(back.shape), np.asarray(back).tolist(),
                                                 back.is_fully_addressable]
    gather = multihost_utils.process_allgather
    seen["gather"] = gather(np.full((2,), process_id)).tolist()
    seen["gather_tiled"] = gather(np.full((1, 2), process_id), tiled=True).tolist()
    seen["gather_scalar_tiled"] = gather(np.float32(process_id), tiled=True).tolist()
    seen["broadcast"] = multihost_utils.broadcast_one_to_all(np.arange(3) + process_id).tolist()
    pmapped = jax.pmap(lambda v, w: (jax.lax.psum(v, "i"), v * w, jax.lax.axis_index("i")),
                       axis_name="i", in_axes=(0, None), out_axes=(None, 0, 0))
    seen["pmap"] = [np.asarray(out).tolist() for out in pmapped(
        np.arange(6, dtype=np.float32).reshape(2, 3) + 10 * process_id, np.float32(3))]
    multihost_utils.assert_equal({"a": np.arange(3)})
    try:
        multihost_utils.assert_equal(np.float32(process_id), "differs:")
        seen["assert_equal"] = "passed"
    except AssertionError:
        seen["assert_equal"] = "AssertionError"
    jax.distributed.shutdown()
    print("RESULT", json.dumps(seen), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])

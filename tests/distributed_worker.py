"""One process of the multi-process runs of tests/test_distributed.py.

Run as `python distributed_worker.py ADDRESS NUM_PROCESSES PROCESS_ID` with 2 CPU
devices per process. It joins the run, builds global arrays in every way plax offers,
computes on them across processes, and prints what it observed as one JSON line
(`RESULT {...}`) for the test to check against NumPy. Nothing is asserted here, so a
failure is reported by the test with the numbers.
"""
import json
import sys

import numpy as np

import plax
from plax.experimental import multihost_utils
from plax.sharding import Mesh, NamedSharding, PartitionSpec as P
from plax_transforms.fastpath import fastpath_stats

GLOBAL = np.arange(4 * 6, dtype=np.float32).reshape(4, 6)  # rows split across processes


def shard_summary(x):
    """(index as [start, stop] pairs, data) of each addressable shard, in device order."""
    return [[[list(s.indices(n)[:2]) for s, n in zip(sh.index, x.shape)],
             np.asarray(sh.data).tolist()] for sh in x.addressable_shards]


def main(address, num_processes, process_id):
    plax.distributed.initialize(address, num_processes, process_id,
                                initialization_timeout=30)
    seen = {"is_initialized": plax.distributed.is_initialized(),
            "process_index": plax.process_index(), "process_count": plax.process_count(),
            "device_count": plax.device_count(),
            "local_device_count": plax.local_device_count(),
            "devices": [[d.id, d.process_index] for d in plax.devices()],
            "local_devices": [d.id for d in plax.local_devices()]}
    try:
        plax.distributed.initialize(address, num_processes, process_id)
    except RuntimeError as err:
        seen["second_initialize"] = str(err)

    mesh = Mesh(np.array(plax.devices()).reshape(num_processes, -1), ("x", "y"))
    rows = NamedSharding(mesh, P("x", None))
    tiles = NamedSharding(mesh, P("x", "y"))
    per_process = GLOBAL.shape[0] // num_processes
    mine = GLOBAL[process_id * per_process:(process_id + 1) * per_process]
    built = {
        "process_local_data": plax.make_array_from_process_local_data(rows, mine),
        "callback": plax.make_array_from_callback(GLOBAL.shape, tiles, lambda i: GLOBAL[i]),
        "single_device_arrays": plax.make_array_from_single_device_arrays(
            GLOBAL.shape, tiles,
            [plax.device_put(GLOBAL[i], d)
             for d, i in tiles.addressable_devices_indices_map(GLOBAL.shape).items()]),
        "device_put": plax.device_put(GLOBAL, tiles),
    }
    built["resharded"] = plax.device_put(built["callback"], rows)  # tiles -> rows
    try:
        plax.device_put(built["callback"], plax.local_devices()[0])
    except ValueError as err:
        seen["device_put_elsewhere"] = str(err)
    seen["built"] = {name: {"shape": list(x.shape), "shards": shard_summary(x),
                            "addressable": len(x.addressable_shards),
                            "global": len(x.global_shards),
                            "fully_addressable": x.is_fully_addressable}
                     for name, x in built.items()}

    total = plax.jit(lambda x: (x * x).sum())
    gram = plax.jit(lambda x: x @ x.T, out_shardings=NamedSharding(mesh, P()))
    cols = plax.jit(lambda x: x.sum(axis=0))
    x = built["process_local_data"]
    seen["sum_of_squares"] = [float(total(v)) for v in built.values()]
    seen["gram"] = np.asarray(gram(x)).tolist()
    column_sums = cols(built["callback"])
    seen["column_sums"] = multihost_utils.process_allgather(column_sums).tolist()
    seen["column_sums_fully_addressable"] = column_sums.is_fully_addressable
    psum_all = plax.jit(plax.shard_map(
        lambda block: plax.lax.psum(block.sum(), ("x", "y")), mesh=mesh,
        in_specs=P("x", "y"), out_specs=P()))
    seen["shard_map_psum"] = float(psum_all(built["callback"]))
    mine_per_device = np.full((2, 3), process_id + 1.0, np.float32)  # pmap: local slices
    seen["pmap"] = [np.asarray(out).tolist() for out in plax.pmap(
        lambda v, w: (plax.lax.psum(v, "i"), v * w), axis_name="i", in_axes=(0, None),
        out_axes=(None, 0))(mine_per_device, np.float32(2))]
    for f in (total, gram):
        f(x)
    seen["fastpath"] = {"total": fastpath_stats(total), "gram": fastpath_stats(gram)}

    seen["allgather_stacked"] = multihost_utils.process_allgather(
        np.full((2,), process_id, np.int32)).tolist()
    seen["allgather_tiled"] = multihost_utils.process_allgather(
        np.full((1, 2), process_id, np.int32), tiled=True).tolist()
    seen["allgather_global"] = multihost_utils.process_allgather(x).tolist()
    seen["broadcast"] = {k: v.tolist() for k, v in multihost_utils.broadcast_one_to_all(
        {"f": np.float32(10 + process_id), "b": np.array([process_id == 0, True])}).items()}
    seen["broadcast_from_last"] = multihost_utils.broadcast_one_to_all(
        np.int32(process_id), is_source=process_id == num_processes - 1).tolist()
    glob = multihost_utils.host_local_array_to_global_array(mine, mesh, P("x"))
    back = multihost_utils.global_array_to_host_local_array(glob, mesh, P("x"))
    seen["host_local_round_trip"] = [multihost_utils.process_allgather(glob).tolist(),
                                     np.asarray(back).tolist()]
    try:
        multihost_utils.assert_equal(process_id)
    except AssertionError as err:
        seen["assert_equal_mismatch"] = str(err)
    multihost_utils.sync_global_devices("checked")
    try:
        multihost_utils.sync_global_devices(f"name of process {process_id}")
    except AssertionError as err:
        seen["sync_mismatch"] = str(err)
    plax.distributed.shutdown()
    seen["after_shutdown"] = plax.distributed.is_initialized()
    print("RESULT", json.dumps(seen), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))

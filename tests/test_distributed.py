"""`plax.distributed`: real multi-process runs on XLA's distributed runtime (CPU, gloo).

Two (and four) processes on 127.0.0.1, each with 2 CPU devices, join one run
(tests/distributed_worker.py) and report what they saw; this test checks it against
NumPy: the global device picture, global arrays built every way, computations whose
data crosses processes, addressable vs global shard counts, the fast path, and
`plax.experimental.multihost_utils`. Every child runs under a deadline and is killed
when it passes, so a stuck run fails instead of hanging.
"""
import importlib.util
import json
import os
import pathlib
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Collection

import numpy as np
import pytest

import plax

WORKER = pathlib.Path(__file__).with_name("distributed_worker.py")
GLOBAL = np.arange(4 * 6, dtype=np.float32).reshape(4, 6)  # the worker's global array
DEADLINE_S = 120


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def child_env(devices: int = 2) -> dict:
    env = dict(os.environ, PLAX_PLATFORMS="cpu",
               XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}")
    env.pop("JAX_COORDINATOR_ADDRESS", None)
    return env


def run_processes(commands: list[list[str]], *, must_succeed: bool = True,
                  leave_running: Collection[int] = ()) -> list[tuple[int, str] | None]:
    """Runs the commands at once: each one's exit status and output, or a failure naming
    the process that outlived the deadline (then every one still running is killed)
    or, with `must_succeed`, that failed. Those in `leave_running` (stopped processes)
    are not waited for (None) and are killed at the end."""
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, env=child_env()) for cmd in commands]
    deadline = time.monotonic() + DEADLINE_S
    results = []
    try:
        for i, proc in enumerate(procs):
            if i in leave_running:
                results.append(None)
                continue
            try:
                out, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pytest.fail(f"process {i} did not finish within {DEADLINE_S} s")
            if must_succeed:
                assert proc.returncode == 0, f"process {i} failed:\n{out[-4000:]}"
            results.append((proc.returncode, out))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return results


@pytest.fixture(scope="module", params=[2, 4], ids=lambda n: f"{n}_processes")
def run(request):
    """What each process of a run of 2 or 4 processes observed, by process id."""
    count = request.param
    address = f"127.0.0.1:{free_port()}"
    outputs = run_processes([[sys.executable, str(WORKER), address, str(count), str(pid)]
                             for pid in range(count)])
    results = []
    for _, out in outputs:
        lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
        assert lines, out[-4000:]
        results.append(json.loads(lines[-1][len("RESULT "):]))
    return results


def test_each_process_sees_the_global_devices_and_its_own(run):
    count = len(run)
    for pid, seen in enumerate(run):
        assert seen["is_initialized"] and not seen["after_shutdown"]
        assert (seen["process_index"], seen["process_count"]) == (pid, count)
        assert (seen["device_count"], seen["local_device_count"]) == (2 * count, 2)
        assert [p for _, p in seen["devices"]] == [p for p in range(count) for _ in "ab"]
        own = [d for d, p in seen["devices"] if p == pid]
        assert seen["local_devices"] == own
        assert "must be called before" in seen["second_initialize"]
        assert seen["devices"] == run[0]["devices"]


def test_global_arrays_hold_this_process_part(run):
    """Built from process-local data, a callback, single-device arrays, device_put of
    host data and of a global Array to another layout: each process holds its own rows,
    2 of the 2 * count global shards."""
    count = len(run)
    rows_each = GLOBAL.shape[0] // count
    for pid, seen in enumerate(run):
        assert "can change its layout but not its devices" in seen["device_put_elsewhere"]
        for name, built in seen["built"].items():
            assert built["shape"] == [4, 6], name
            assert (built["addressable"], built["global"]) == (2, 2 * count), name
            assert not built["fully_addressable"], name
            for index, data in built["shards"]:
                rows, cols = (slice(*pair) for pair in index)
                assert rows == slice(rows_each * pid, rows_each * (pid + 1)), (name, index)
                np.testing.assert_array_equal(data, GLOBAL[rows, cols], err_msg=name)


def test_computations_across_processes_match_numpy(run):
    for seen in run:
        assert seen["sum_of_squares"] == [float((GLOBAL ** 2).sum())] * 5
        np.testing.assert_array_equal(seen["gram"], GLOBAL @ GLOBAL.T)
        np.testing.assert_array_equal(seen["column_sums"], GLOBAL.sum(axis=0))
        assert seen["shard_map_psum"] == float(GLOBAL.sum())
        assert not seen["column_sums_fully_addressable"]
    for pid, seen in enumerate(run):  # pmap: each process's 2 slices, a psum over all
        psum = 2 * sum(p + 1.0 for p in range(len(run)))
        assert seen["pmap"] == [[psum] * 3, [[2 * (pid + 1.0)] * 3] * 2]


def test_the_fast_path_takes_repeated_calls(run):
    """Global (2 * count) and addressable (2) shard counts differ; calls with a known signature
    are fast-path hits all the same."""
    for seen in run:
        assert seen["fastpath"]["gram"] == {"hits": 1, "slow_path": {"first call": 1}}
        assert seen["fastpath"]["total"] == {"hits": 4, "slow_path": {
            "first call": 1,
            "an argument sharding, device or commitment not seen before": 1}}


def test_multihost_utils_share_values(run):
    count = len(run)
    for pid, seen in enumerate(run):
        assert seen["allgather_stacked"] == [[p, p] for p in range(count)]
        assert seen["allgather_tiled"] == [[p, p] for p in range(count)]
        np.testing.assert_array_equal(seen["allgather_global"], GLOBAL)
        assert seen["broadcast"] == {"f": 10.0, "b": [True, True]}
        assert seen["broadcast_from_last"] == count - 1
        rows_each = GLOBAL.shape[0] // count
        assert seen["host_local_round_trip"] == [
            GLOBAL.tolist(), GLOBAL[rows_each * pid:rows_each * (pid + 1)].tolist()]
        assert "leaf 0 differs between processes" in seen["assert_equal_mismatch"]
        assert seen["sync_mismatch"].startswith(
            f"sync_global_devices name mismatch ('name of process {pid}')")


def test_multihost_utils_in_one_process(devs):
    from plax.experimental import multihost_utils
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    np.testing.assert_array_equal(multihost_utils.process_allgather(x), x[None])
    np.testing.assert_array_equal(multihost_utils.process_allgather(x, tiled=True), x)
    assert multihost_utils.broadcast_one_to_all({"a": x})["a"].tolist() == x.tolist()
    multihost_utils.sync_global_devices("alone")
    with pytest.raises(ValueError, match="exactly one source"):
        multihost_utils.broadcast_one_to_all(x, is_source=False)
    assert multihost_utils.process_allgather(np.float32(1), tiled=True).tolist() == [1.0]
    with pytest.raises(TypeError, match="str name"):
        multihost_utils.sync_global_devices(3)
    multihost_utils.assert_equal({"x": x})


def test_repeated_gathers_compile_once(devs):
    """A collective per call is the point of these helpers; a compile per call is not."""
    from plax.experimental import multihost_utils
    multihost_utils.process_allgather(np.float32(0))
    compiles = []

    def listener(event, duration, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            compiles.append(event)

    plax.monitoring.register_event_duration_secs_listener(listener)
    try:
        for i in range(3):
            assert multihost_utils.process_allgather(np.float32(i)).tolist() == [i]
    finally:
        plax.monitoring.unregister_event_duration_listener(listener)
    assert compiles == []


def test_host_local_and_global_arrays_in_one_process(mesh):
    """With one process the local mesh is the whole mesh: both conversions keep the
    values and the layout (a real multi-process check is the comparison with JAX)."""
    from plax.experimental import multihost_utils as mu
    from plax.sharding import NamedSharding, PartitionSpec as P
    x = np.arange(32.0, dtype=np.float32).reshape(8, 4)
    pieces = {"host": x, "array": plax.device_put(x, NamedSharding(mesh, P(None, "y")))}
    glob = mu.host_local_array_to_global_array(pieces, mesh, P("x", "y"))
    for value in glob.values():
        assert value.sharding.spec == P("x", "y") and value.shape == (8, 4)
        np.testing.assert_array_equal(np.asarray(value), x)
    local = mu.global_array_to_host_local_array(glob, mesh, {"host": P("x", "y"),
                                                             "array": P("x", "y")})
    assert local["host"] is glob["host"]  # fully addressable already: unchanged
    with pytest.raises(ValueError, match="`None` is not a valid input to the pspecs"):
        mu.host_local_array_to_global_array(x, mesh, None)


def test_initialize_after_a_backend_started_is_an_error(devs):
    with pytest.raises(RuntimeError, match="must be called before any plax call"):
        plax.distributed.initialize("127.0.0.1:1234", 1, 0)
    assert not plax.distributed.is_initialized()
    plax.distributed.shutdown()  # nothing to shut down: a no-op


BAD_INPUTS = """
import json, socket, plax
dist = plax.distributed
busy = socket.socket()
busy.bind(("", 0))
busy.listen()
cases = {
    "no address": lambda: dist.initialize(None, 2, 0),
    "no port": lambda: dist.initialize("127.0.0.1", 2, 0),
    "port out of range": lambda: dist.initialize("127.0.0.1:99999", 2, 0),
    "address not a str": lambda: dist.initialize(("127.0.0.1", 1234), 2, 0),
    "process_id too large": lambda: dist.initialize("127.0.0.1:1234", 2, 2),
    "negative process_id": lambda: dist.initialize("127.0.0.1:1234", 2, -1),
    "float num_processes": lambda: dist.initialize("127.0.0.1:1234", 2.0, 0),
    "no num_processes": lambda: dist.initialize("127.0.0.1:1234", None, 0),
    "no process_id": lambda: dist.initialize("127.0.0.1:1234", 2, None),
    "cluster detection": lambda: dist.initialize("127.0.0.1:1234", 2, 0,
                                                 cluster_detection_method="slurm"),
    "bad timeout": lambda: dist.initialize("127.0.0.1:1234", 2, 0, initialization_timeout=0),
    "bad collective timeout": lambda: dist.initialize("127.0.0.1:1234", 2, 0,
                                                      collective_timeout=-1),
    "bad local_device_ids": lambda: dist.initialize("127.0.0.1:1234", 2, 0,
                                                    local_device_ids=["a"]),
    "bad partition_index": lambda: dist.initialize("127.0.0.1:1234", 2, 0,
                                                   partition_index="0"),
    "nobody serves": lambda: dist.initialize("127.0.0.1:PORT", 2, 1,
                                             initialization_timeout=1),
    "unknown host": lambda: dist.initialize("no-such-host.invalid:1234", 2, 1),
    "port in use": lambda: dist.initialize(f"127.0.0.1:{busy.getsockname()[1]}", 2, 0),
}
seen = {}
for name, call in cases.items():
    try:
        call()
        seen[name] = "no error"
    except Exception as err:
        seen[name] = [type(err).__name__, str(err)]
seen["initialized after failures"] = dist.is_initialized()
plax.config.update("jax_cpu_collectives_implementation", "gloo")  # before the backend
dist.initialize("127.0.0.1:PORT", 1, 0, initialization_timeout=10)
try:
    dist.initialize("127.0.0.1:PORT", 1, 0)
except RuntimeError as err:
    seen["double initialize"] = str(err)
seen["one process"] = [plax.process_count(), plax.device_count(), plax.local_device_count(),
                       float(plax.jit(lambda x: x.sum())(plax.numpy.arange(4.0)))]
dist.shutdown()
seen["after shutdown"] = dist.is_initialized()
print("RESULT", json.dumps(seen))
"""


def test_bad_input_is_explained():
    """In a fresh process (no backend yet), each bad argument raises JAX's exception
    class with a message naming it; then a 1-process run starts, refuses a second
    initialize, computes, and shuts down."""
    script = BAD_INPUTS.replace("PORT", str(free_port()))
    ((_, out),) = run_processes([[sys.executable, "-c", textwrap.dedent(script)]])
    seen = json.loads(out.split("RESULT ", 1)[1])
    expected = {
        "no address": ("ValueError", "coordinator_address should be defined"),
        "no port": ("ValueError", "'host:port'"),
        "port out of range": ("ValueError", "1..65535, got '127.0.0.1:99999'"),
        "address not a str": ("TypeError", "got tuple"),
        "process_id too large": ("ValueError", "process_id=2, num_processes=2"),
        "negative process_id": ("ValueError", "process_id=-1"),
        "float num_processes": ("TypeError", "num_processes=2.0 of type float"),
        "no num_processes": ("ValueError", "num_processes"),
        "no process_id": ("ValueError", "process_id"),
        "cluster detection": ("ValueError", "cluster_detection_method='slurm'"),
        "bad timeout": ("ValueError", "initialization_timeout"),
        "bad collective timeout": ("ValueError", "collective_timeout must be a positive "
                                   "number of seconds or None, got -1"),
        "bad local_device_ids": ("TypeError", "local_device_ids"),
        "bad partition_index": ("TypeError", "partition_index must be an int, got '0'"),
    }
    for name, (kind, words) in expected.items():
        assert seen[name][0] == kind and words in seen[name][1], (name, seen[name])
    assert seen["nobody serves"][0] == "DistributedError", seen["nobody serves"]
    assert "no coordinator answered at 127.0.0.1:" in seen["nobody serves"][1]
    assert seen["port in use"][0] == "RuntimeError", seen["port in use"]
    assert "cannot serve the coordinator on 127.0.0.1:" in seen["port in use"][1]
    assert seen["unknown host"][0] == "ValueError", seen["unknown host"]
    assert "'no-such-host.invalid' is unknown" in seen["unknown host"][1]
    assert not seen["initialized after failures"]
    assert "only be called once" in seen["double initialize"]
    assert seen["one process"] == [1, 2, 2, 6.0]
    assert seen["after shutdown"] is False


def test_plugin_clients_join_the_run(monkeypatch):
    """PJRT plugins (CUDA, TPU) get the process id and count, the visible devices and
    the distributed client, as JAX passes them; outside a run, their options alone."""
    from plax_runtime import distributed
    assert distributed.plugin_client_arguments("cuda", {"a": 1}) == ({"a": 1}, None)
    client = object()
    monkeypatch.setattr(distributed, "global_state", distributed.State(
        process_id=1, num_processes=2, client=client, local_device_ids=[3]))
    assert distributed.plugin_client_arguments("cuda", {"a": 1}) == (
        {"node_id": 1, "num_nodes": 2, "visible_devices": [3], "a": 1}, client)
    assert distributed.plugin_client_arguments("tpu", {}) == (
        {"node_id": 1, "num_nodes": 2}, client)
    distributed.global_state.partition_index = 4
    assert distributed.plugin_client_arguments("tpu", {})[0]["partition_index"] == 4


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="JAX is not installed")
def test_same_as_jax_in_two_processes():
    """The same 2-process program with JAX and with plax: device lists, global arrays
    from process-local data (split across, within and over both kinds of axes), the
    host-local/global conversions and the rest of multihost_utils give equal results."""
    worker = str(WORKER.with_name("distributed_vs_jax_worker.py"))
    seen = {}
    for library in ("jax", "plax"):
        address = f"127.0.0.1:{free_port()}"
        outputs = run_processes([[sys.executable, worker, address, str(pid), library]
                                 for pid in range(2)])
        seen[library] = [json.loads(out.split("RESULT ", 1)[1]) for _, out in outputs]
    for pid in range(2):
        jax_seen, plax_seen = seen["jax"][pid], seen["plax"][pid]
        assert plax_seen.keys() == jax_seen.keys()
        for key in jax_seen:
            assert plax_seen[key] == jax_seen[key], (pid, key)

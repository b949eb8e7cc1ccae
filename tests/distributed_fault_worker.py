"""One process of a faulty multi-process run (tests/test_distributed_faults.py and
the fuzzer's fault mode, tests/differential/fuzz_faults.py).

Run as `python distributed_fault_worker.py ADDRESS NUM_PROCESSES PROCESS_ID FAULT VICTIM
OPERATION [DELAY [INIT_TIMEOUT]]` with short timeouts (a heartbeat timeout of 2 s, a
collective timeout of 3 s). Every process joins the run and does one multi-process
operation together (`READY`); then the others do OPERATION (`computation`: reading the
result of a jitted sum over every process's devices; `sync`:
`multihost_utils.sync_global_devices`; `allgather`: `process_allgather`) while the
victim process, after DELAY seconds of Python, has the fault:

- `kill`: it dies (SIGKILL);
- `stop`: it stops itself (SIGSTOP);
- `skip`: it skips the operation and keeps running Python instead;
- `count`: it passes NUM_PROCESSES + 1 to `initialize` (a fault at the start);
- `none`: no fault (it does the operation too, and the run ends normally).

A process that gets `plax.errors.DistributedError` prints `RAISED {"after": seconds
since the fault was due (the operation's start, or initialize's), "message": ...}` and
exits with status 3; its `finally` prints `FINALLY`. Nothing is asserted here: the
callers read the lines.
"""
import json
import os
import signal
import sys
import time

import numpy as np

import plax
from plax.errors import DistributedError
from plax.experimental import multihost_utils
from plax.sharding import Mesh, NamedSharding, PartitionSpec as P

HEARTBEAT_S, COLLECTIVE_S = 2, 3.0


def main(address, num_processes, process_id, fault, victim, operation, delay=0.0,
         init_timeout=30):
    victim_here = process_id == victim
    start = time.monotonic()
    try:
        plax.distributed.initialize(address, num_processes + (fault == "count" and
                                                              victim_here),
                                    process_id, initialization_timeout=init_timeout,
                                    heartbeat_timeout_seconds=HEARTBEAT_S,
                                    shutdown_timeout_seconds=20,
                                    collective_timeout=COLLECTIVE_S)
        sharding = NamedSharding(Mesh(np.array(plax.devices()), ("x",)), P("x"))
        n = len(plax.devices())
        x = plax.make_array_from_callback((n,), sharding,
                                          lambda i: np.ones(n, np.float32)[i])
        total = plax.jit(lambda v: v.sum())
        print("READY", float(total(x)), flush=True)
        multihost_utils.sync_global_devices("ready")
        start = time.monotonic()
        if victim_here and fault != "none":
            time.sleep(delay)
            if fault == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if fault == "stop":
                os.kill(os.getpid(), signal.SIGSTOP)
            print("SKIPPING", flush=True)
            while time.monotonic() - start < 60:  # busy elsewhere, in Python
                time.sleep(0.05)
        if operation == "computation":
            print("RESULT", float(total(x * 2)), flush=True)
        elif operation == "allgather":
            print("RESULT", multihost_utils.process_allgather(np.float32(process_id)),
                  flush=True)
        else:
            multihost_utils.sync_global_devices("step")
            print("RESULT synced", flush=True)
    except DistributedError as err:
        print("RAISED", json.dumps({"after": time.monotonic() - start,
                                    "message": str(err)}), flush=True)
        sys.exit(3)
    finally:
        print("FINALLY", flush=True)


if __name__ == "__main__":
    address, count, pid, fault, victim, operation, *timing = sys.argv[1:]
    main(address, int(count), int(pid), fault, int(victim), operation,
         *(kind(text) for kind, text in zip((float, int), timing)))

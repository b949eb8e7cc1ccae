"""Faults of a multi-process run end every surviving process with
`plax.errors.DistributedError`, within a bound (JAX aborts them, or waits forever).

2-3 processes on 127.0.0.1 (tests/distributed_fault_worker.py, heartbeat timeout 2 s,
collective timeout 3 s) do one operation together, then one of them dies (SIGKILL),
stops (SIGSTOP) or skips the next operation. Each survivor must raise inside its bound,
run its `finally`, and exit with the worker's status for the exception (3), never with
the runtime's abort; each run is killed at a deadline (test_distributed.run_processes),
so a hang fails the test. The
measured times to the exception are in the `RAISED` lines (pytest -s shows them).
"""
import contextlib
import json
import pathlib
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time

import pytest

from plax.errors import DistributedError
from test_distributed import child_env, free_port, run_processes

WORKER = pathlib.Path(__file__).with_name("distributed_fault_worker.py")
HEARTBEAT_S, COLLECTIVE_S = 2, 3.0  # as the worker passes them
SLACK_S = 3.0  # the watcher's period, the polling, a loaded CI machine


def raised(pid: int, result: tuple[int, str], runtime_abort_logged: bool = False) -> dict:
    """The `RAISED` report of a process that ended with DistributedError (having logged
    the runtime's fatal error first, when it was intercepted)."""
    code, out = result
    if not runtime_abort_logged:
        assert "Terminating process" not in out and "Check failure" not in out, out[-3000:]
    lines = [line for line in out.splitlines() if "RAISED {" in line]  # stderr may
    assert code == 3 and lines and "FINALLY" in out, (pid, code, out[-3000:])  # interleave
    report = json.loads(lines[-1][lines[-1].index("RAISED {") + len("RAISED "):])
    print(f"process {pid}: DistributedError after {report['after']:.2f} s")
    return report


def fault_run(count: int, fault: str, victim: int, operation: str):
    address = f"127.0.0.1:{free_port()}"
    return run_processes([[sys.executable, str(WORKER), address, str(count), str(pid),
                           fault, str(victim), operation] for pid in range(count)],
                         must_succeed=False, leave_running={victim} if fault == "stop" else ())


@pytest.mark.parametrize("count,fault,victim,operation", [
    (3, "kill", 2, "computation"),
    (2, "stop", 1, "sync"),
], ids=["kill_-9_of_3", "sigstop_of_2"])
def test_a_dead_or_stopped_peer_is_an_exception_in_every_other(count, fault, victim,
                                                               operation):
    """Within the heartbeat timeout (plus the watcher's slack), whether the survivor
    waits in a computation or in multihost_utils; the message names the process."""
    results = fault_run(count, fault, victim, operation)
    for pid in range(count):
        if pid == victim:
            continue
        report = raised(pid, results[pid])
        assert report["after"] < HEARTBEAT_S + SLACK_S, report
        assert f"process {victim} sent no heartbeat" in report["message"], report
        assert "died or was stopped" in report["message"], report
    if fault == "kill":
        assert results[victim][0] == -9, results[victim]


@pytest.mark.parametrize("count,fault,operation", [
    (3, "kill", "computation"),
    (3, "kill", "sync"),
    (2, "stop", "sync"),
], ids=["kill_-9_of_3_in_a_computation", "kill_-9_of_3_in_sync", "sigstop_of_2"])
def test_losing_the_coordinator_is_an_exception_in_every_other(count, fault, operation):
    """Process 0 serves the runtime's coordination service: when it dies, the runtime's
    client aborts the others at once (JAX's behaviour); plax intercepts that abort
    (plax_runtime.distributed_guard) and the survivors raise within the heartbeat
    timeout, run their `finally` and exit with their own status."""
    results = fault_run(count, fault, 0, operation)
    for pid in range(1, count):
        report = raised(pid, results[pid], runtime_abort_logged=True)
        assert report["after"] < HEARTBEAT_S + SLACK_S, report
        message = report["message"]
        # whoever finds it first says so: the guard (the runtime's abort), the watcher
        # (its own call failed, or process 0's status stopped), the waiting thread (no
        # answer for half the heartbeat timeout, or its collective's connection closed)
        found = ["the coordinator (process 0 at 127.0.0.1:", "process 0 sent no heartbeat",
                 "the coordinator (process 0) did not answer for",
                 "the coordinator (process 0) stopped answering"]
        if fault == "kill":
            found.append("lost its connection to another process")
        assert any(words in message for words in found), message


@pytest.mark.parametrize("operation", ["computation", "sync"])
def test_a_peer_that_skips_a_collective_is_named_after_the_timeout(operation):
    """The stuck-peer case JAX hangs on (jax-ml/jax#38503): the processes that wait
    raise after the collective timeout naming the one that did not arrive; that one,
    busy in Python, gets the exception too."""
    results = fault_run(3, "skip", 1, operation)
    name = "sync_global_devices('step')" if operation == "sync" else "a computation over"
    for pid in (0, 2):
        report = raised(pid, results[pid])
        message = report["message"]
        assert report["after"] < COLLECTIVE_S + SLACK_S, report
        if not re.search(r"run failed: process \d failed:", message):  # its own timeout
            assert COLLECTIVE_S <= report["after"], report  # (the other waiter's, relayed,
            # may come first: that one may have started waiting a little earlier)
        assert name in message and "timed out" in message, message
        assert ("processes that did not arrive: process 1 (alive, in no multi-process "
                "operation)") in message, message
        assert "process 0 (" not in message and "process 2 (" not in message, message
    report = raised(1, results[1])
    assert report["after"] < COLLECTIVE_S + SLACK_S, report
    assert "failed:" in report["message"] and "timed out" in report["message"], report


JOIN = """
import os, sys, time, plax
ready = os.path.join(sys.argv[4], sys.argv[3])  # plax imported: all start together
open(ready, "w").close()
deadline = time.monotonic() + 100
while len(os.listdir(sys.argv[4])) < int(sys.argv[5]) and time.monotonic() < deadline:
    time.sleep(0.01)
start = time.monotonic()
try:
    plax.distributed.initialize(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]),
                                initialization_timeout=4)
    print("JOINED", plax.process_count(), flush=True)
except plax.errors.DistributedError as err:
    print("RAISED", time.monotonic() - start, time.time(), err, flush=True)
    sys.exit(3)
"""


def join(*counts: int) -> list[tuple[int, float, str]]:
    """Processes 0, 1, ... started with these num_processes, each calling `initialize`
    once all have imported plax: (status, seconds to the exception, message) of each;
    the seconds of the others are counted from process 0's start (on a loaded machine
    they may still start a little before or after it)."""
    address = f"127.0.0.1:{free_port()}"
    with tempfile.TemporaryDirectory() as ready:
        results = run_processes([[sys.executable, "-c", JOIN, address, str(n), str(pid),
                                  ready, str(len(counts))]
                                 for pid, n in enumerate(counts)], must_succeed=False)
    out = []
    for pid in range(len(counts)):
        code, text = results[pid]
        assert "Terminating process" not in text, text[-3000:]
        line = next((ln for ln in text.splitlines() if ln.startswith("RAISED ")), "")
        out.append((code, *map(float, line.split()[1:3]), line) if line
                   else (code, -1.0, 0.0, text[-3000:]))
    started = out[0][2] - out[0][1]  # process 0's start, by the clock
    return [(code, at - started if pid and at else after, line)
            for pid, (code, after, at, line) in enumerate(out)]


def test_processes_that_disagree_on_num_processes_are_refused():
    """JAX accepts the run silently; plax refuses it in both processes at once."""
    for code, after, line in join(2, 3):
        assert code == 3 and after < 4, line
        assert "disagree on num_processes: process 0 passed 2, process 1 passed 3" in line


def test_a_missing_process_is_named_at_the_initialization_timeout():
    """num_processes=3 with 2 processes started: both raise naming process 2 when the
    initialization timeout (4 s) passes (JAX aborts them then)."""
    for code, after, line in join(3, 3):
        assert code == 3 and 4 <= after < 4 + SLACK_S, line
        assert "processes [2] of 3 did not join the run within initialization_timeout=4 s" \
            in line, line


def checking_in(server, num_processes: int, timeout: float, pids_and_counts):
    """Process 0's gather and the others' check-ins, each on a thread (no runtime):
    what each returned or raised (process 0's, then the check-ins' in order), and
    whether the service opened."""
    from plax_runtime import distributed_lobby
    address = "127.0.0.1:%d" % server.getsockname()[1]
    opened, outcomes = [], {}

    def attempt(index, call, *args):
        try:
            call(*args)
            outcomes[index] = "ok"
        except DistributedError as err:
            outcomes[index] = str(err).split("\n", 1)[0]

    threads = [threading.Thread(target=attempt, args=(
        0, distributed_lobby.gather, server, num_processes, timeout,
        lambda: opened.append(True)))]
    threads += [threading.Thread(target=attempt, args=(
        i, distributed_lobby.check_in, address, pid, count, timeout))
        for i, (pid, count) in enumerate(pids_and_counts, 1)]
    with socket.create_connection(("127.0.0.1", server.getsockname()[1])):
        pass  # a port probe that says nothing is let go
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout + 10)
    return [outcomes.get(i) for i in range(len(threads))], bool(opened)


def lobby():
    from plax_runtime import distributed_lobby
    return distributed_lobby.listen(f"127.0.0.1:{free_port()}")


def test_the_lobby_opens_the_run_when_every_process_agrees():
    outcomes, opened = checking_in(lobby(), 3, 5.0, [(1, 3), (2, 3)])
    assert outcomes == ["ok", "ok", "ok"] and opened


def test_the_lobby_refuses_a_disagreeing_count_in_every_process():
    outcomes, opened = checking_in(lobby(), 2, 5.0, [(1, 3)])
    words = "disagree on num_processes: process 0 passed 2, process 1 passed 3"
    assert all(words in outcome for outcome in outcomes), outcomes
    assert not opened


def test_the_lobby_names_the_missing_process_at_the_timeout():
    start = time.monotonic()
    outcomes, opened = checking_in(lobby(), 3, 1.0, [(1, 3)])
    assert time.monotonic() - start < 5
    assert all("processes [2] of 3 did not join the run within initialization_timeout=1 s"
               in outcome for outcome in outcomes), outcomes
    assert not opened


def test_the_lobby_refuses_a_process_id_taken_twice():
    outcomes, _ = checking_in(lobby(), 3, 2.0, [(1, 3), (1, 3)])
    assert sum("process_id 1 is not free" in outcome for outcome in outcomes) >= 2, outcomes


def test_the_coordinator_listens_on_loopback_unless_told_otherwise(caplog):
    from plax_runtime.distributed import _default_bind_address
    assert _default_bind_address("127.0.0.1:1234", 1234, 0) == "127.0.0.1:1234"
    assert _default_bind_address("localhost:1234", 1234, 0) == "127.0.0.1:1234"
    assert _default_bind_address("[::1]:1234", 1234, 0) == "[::1]:1234"
    assert not caplog.records
    assert _default_bind_address("192.0.2.7:1234", 1234, 0) == "127.0.0.1:1234"
    assert "processes on other machines cannot reach it" in caplog.text
    assert "jax_coordinator_listen_on_all_interfaces" in caplog.text


def test_the_options_are_read_from_the_environment():
    """As launchers set them: every interface, and no collective timeout (JAX's wait)."""
    env = dict(child_env(), JAX_COORDINATOR_LISTEN_ON_ALL_INTERFACES="1",
               JAX_DISTRIBUTED_COLLECTIVE_TIMEOUT="none")
    seen = subprocess.run(
        [sys.executable, "-c", "from plax_runtime.distributed import _default_bind_address;"
         "from plax.extend import config;"
         "print(_default_bind_address('192.0.2.7:1234', 1234, 0),"
         "config.distributed_collective_timeout.value)"],
        env=env, capture_output=True, text=True, timeout=120)
    assert seen.stdout.split() == ["[::]:1234", "None"], seen.stderr[-2000:]


def NOTHING():
    """A computation's `block_until_ready` that has no error to raise."""


class FakeStore:
    """The key-value store of the runtime's client, in memory: several Watches in one
    process stand for the processes of a run (no runtime, so fast)."""

    def __init__(self):
        self.values, self.lock = {}, threading.Lock()

    def key_value_set(self, key, value, allow_overwrite=False):
        with self.lock:
            self.values[key] = value

    def key_value_dir_get(self, prefix):
        with self.lock:
            return [(k, v) for k, v in self.values.items() if k.startswith(prefix)]


@pytest.fixture
def watches():
    """Two processes' Watches over one store (heartbeat timeout 0.6 s, collective
    timeout 0.4 s); process 0's is first, and only it raises in the main thread.
    Stopped at the end."""
    from plax_runtime.distributed_watch import Watch
    store = FakeStore()
    made = [Watch(store, pid, 2, heartbeat_timeout=0.6, collective_timeout=0.4,
                  shutdown_timeout=1.0, interrupt_main=pid == 0) for pid in range(2)]
    yield made
    for watch in made:
        watch._stop.set()
        watch._thread.join()


def test_a_wait_past_the_timeout_names_the_process_elsewhere(watches):
    start = time.monotonic()
    with pytest.raises(DistributedError, match=r"sync_global_devices\('x'\) timed out: "
                       r"process 0 waited 0\.\d s \(collective timeout 0\.4 s\); processes "
                       r"that did not arrive: process 1 \(alive, in no multi-process "
                       r"operation\)"):
        with watches[0].operation("sync_global_devices('x')"):
            watches[0].wait(lambda: False, NOTHING, "unused")
    assert time.monotonic() - start < 3


def test_a_wait_where_everyone_arrived_is_slow_not_stuck(watches):
    """Both wait for a computation's result (other results of it, maybe): past the
    timeout plax keeps waiting rather than blame anyone."""
    ready_at = time.monotonic() + 1.2  # three collective timeouts

    def ready():
        return time.monotonic() > ready_at

    other = threading.Thread(target=watches[1].wait, args=(ready, NOTHING, "result b"))
    other.start()
    watches[0].wait(ready, NOTHING, "result a")
    other.join()
    assert watches[0].fault is None and watches[1].fault is None


def test_a_peer_in_another_operation_is_named_with_it(watches):
    done, waiting = threading.Event(), threading.Event()

    def gather():
        with watches[1].operation("process_allgather"):
            waiting.set()
            with contextlib.suppress(DistributedError):  # its own timeout, or told
                watches[1].wait(done.is_set, NOTHING, "unused")

    other = threading.Thread(target=gather)
    other.start()
    waiting.wait()
    try:
        # whichever timed out first names the other, in its operation
        with pytest.raises(DistributedError, match=r"\(waiting in (process_allgather|"
                                                   r"sync_global_devices\('y'\)) #1 for"):
            with watches[0].operation("sync_global_devices('y')"):
                watches[0].wait(lambda: False, NOTHING, "unused")
    finally:
        done.set()
        other.join()


def test_a_silent_peer_is_an_asynchronous_error_in_running_python(watches):
    """Process 1 stops publishing; process 0's main thread, running plain Python,
    gets the error within the heartbeat timeout and later waits raise it again."""
    watches[1]._stop.set()
    start = time.monotonic()
    with pytest.raises(DistributedError, match="process 1 sent no heartbeat for"):
        while time.monotonic() - start < 10:
            sum(range(1000))
    assert time.monotonic() - start < 0.6 + 1.5
    with pytest.raises(DistributedError, match="died or was stopped"):
        watches[0].wait(lambda: False, NOTHING, "unused")


def test_a_collective_that_lost_its_peer_is_named_when_the_peer_is(watches):
    """gloo notices a killed peer's closed connection first (a JaxRuntimeError once
    the result is ready); plax raises DistributedError, naming the process once the
    watcher finds it silent."""
    from plax.errors import JaxRuntimeError

    def gloo_failed():
        raise JaxRuntimeError("UNKNOWN: Gloo AllGather failed: [pair.cc:547] Connection "
                              "closed by peer [127.0.0.1]:5031")

    watches[1]._stop.set()
    with pytest.raises(DistributedError, match=r"process_allgather lost its connection to "
                       r"another process \(UNKNOWN: Gloo AllGather failed.*\): process 1 "
                       r"sent no heartbeat"):
        with watches[0].operation("process_allgather"):
            watches[0].wait(lambda: True, gloo_failed, "unused")


def test_other_errors_of_a_computation_are_left_alone(watches):
    from plax.errors import JaxRuntimeError

    def out_of_memory():
        raise JaxRuntimeError("RESOURCE_EXHAUSTED: Out of memory")

    with pytest.raises(JaxRuntimeError, match="RESOURCE_EXHAUSTED"):
        watches[0].wait(lambda: True, out_of_memory, "unused")


GUARDED_ABORT = """
import os, socket, sys, threading
from plax_runtime.distributed_guard import Guard
where, thread, silent = sys.argv[1], sys.argv[2], float(sys.argv[3])
told = threading.Event()
guard = Guard(where, lambda message: (print("LOST", message, flush=True), told.set()),
              lambda: silent, stale_after=1.0)
if thread == "main":
    os.abort()
threading.Thread(target=os.abort, daemon=True).start()
told.wait(20)
print("SURVIVED", flush=True)
"""


@pytest.mark.parametrize("where,thread,silent,survives", [
    ("closed", "other", 0.0, True),     # process 0 died: its port refuses connections
    ("open", "other", 5.0, True),       # process 0 stopped: no answer for 5 s > 1 s
    ("open", "other", 0.0, False),      # process 0 answers: an abort of another cause
    ("closed", "main", 0.0, False),     # the main thread's own abort
], ids=["coordinator_died", "coordinator_silent", "coordinator_alive", "main_thread"])
def test_the_guard_intercepts_only_the_abort_for_a_lost_coordinator(where, thread, silent,
                                                                     survives):
    """The SIGABRT handler of plax_runtime.distributed_guard (without a runtime: the
    abort is os.abort() in a thread): it parks the aborting thread and tells the run
    when process 0 is lost, and lets every other abort end the process."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        if where == "open":
            server.listen(8)
        address = "127.0.0.1:%d" % server.getsockname()[1]
        done = subprocess.run([sys.executable, "-c", GUARDED_ABORT, address, thread,
                               str(silent)], env=child_env(), capture_output=True,
                              text=True, timeout=60)
    if survives:
        assert done.returncode == 0 and "SURVIVED" in done.stdout, done
        assert "the runtime's abort of this process was intercepted" in done.stdout
        assert ("it died" if where == "closed" else "it was stopped") in done.stdout
    else:
        assert done.returncode == -6 and "LOST" not in done.stdout, done

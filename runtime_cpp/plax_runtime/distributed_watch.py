"""Bounded waits in a `plax.distributed` run: a peer that died, stopped, or never
arrives at a multi-process operation becomes `plax.errors.DistributedError` in every
other process (JAX aborts them after the heartbeat timeout, or waits forever for a peer
that is alive but elsewhere: jax-ml/jax#38503).

Why it is built this way (what jaxlib 0.10.2 allows):
- The runtime's own reaction to a dead peer is a fatal log (SIGABRT). Its client takes a
  `missed_heartbeat_callback`, but jaxlib calls it with an `absl::Status` that nanobind
  cannot convert, so any Python callback ends the process (std::bad_cast, terminate).
  So the service is made `recoverable` (it then keeps a dead task's failure to itself)
  and liveness is watched here instead.
- The service's own liveness query (`get_live_nodes`) is itself a collective (it waits
  for every live task to ask), so each process publishes a status under a key of the
  key-value store every `period` seconds, and reads everyone's: a status that stops
  changing for the heartbeat timeout is a dead or stopped process.
- A thread blocked inside XLA cannot be interrupted, so a wait for a multi-process
  computation polls `is_ready()` from Python instead of blocking in C++; the main
  thread, when it is elsewhere (running Python), gets the error as an asynchronous
  exception.
- Losing process 0 makes the runtime's client abort the others; `distributed_guard`
  intercepts that abort and reports it here (`lose_coordinator`), after which the
  client is never called again.
- Statuses are published by a Python thread, so a process whose main thread holds the
  GIL in C code for longer than the heartbeat timeout looks dead to the others.
"""
from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator

from plax.errors import DistributedError, JaxRuntimeError

logger = logging.getLogger(__name__)

STATUS_DIR = "plax/status/"
# how a collective's failure reads when its transport to another process closed (gloo)
_LOST_PEER = ("Connection closed by peer", "Connection reset by peer", "Gloo")


class Watch:
    """This process's view of the run: it publishes its status, watches the others',
    and bounds the waits of multi-process operations."""

    def __init__(self, client, process_id: int, num_processes: int, *,
                 heartbeat_timeout: float, collective_timeout: float | None,
                 shutdown_timeout: float, interrupt_main: bool = True):
        self.client = client
        self.process_id = process_id
        self.num_processes = num_processes
        self.heartbeat_timeout = heartbeat_timeout
        self.collective_timeout = collective_timeout
        self.shutdown_timeout = shutdown_timeout
        self.interrupt_main = interrupt_main  # raise the watcher's findings there
        self.period = min(max(heartbeat_timeout / 10, 0.1), 5.0)
        self.fault: str | None = None
        self.coordinator_lost = False  # then the client must not be called again
        self._lock = threading.Lock()
        self._beat = 0
        self._state = "running"
        self._operation: tuple[str, int] | None = None  # the named operation under way
        self._operation_depth = 0
        self._operations_started = 0
        self._waiting: tuple[str, int | None, float] | None = None  # name, seq, since
        self._main_waits = 0
        self._async_pending = False
        start = time.monotonic()
        self._last_answer = start  # when the coordinator last answered
        self._changed = {pid: (-1, start) for pid in range(num_processes)
                         if pid != process_id}  # peer -> (beat, when it last changed)
        self._stop = threading.Event()
        self._publish()
        self._thread = threading.Thread(target=self._run, name="plax-distributed-watch",
                                        daemon=True)
        self._thread.start()

    # --- status ---------------------------------------------------------------------

    def _status(self) -> str:
        with self._lock:
            self._beat += 1
            waiting = self._waiting
            status = {"beat": self._beat, "state": self._state, "error": self.fault}
            if waiting is not None:
                status.update(op=waiting[0], seq=waiting[1],
                              since=round(time.monotonic() - waiting[2], 3))
        return json.dumps(status)

    def _publish(self) -> None:
        self.client.key_value_set(f"{STATUS_DIR}{self.process_id}", self._status(),
                                  allow_overwrite=True)

    def _read_peers(self) -> dict[int, dict]:
        peers = {}
        for key, value in self.client.key_value_dir_get(STATUS_DIR):
            pid = int(key.rsplit("/", 1)[1])
            if pid != self.process_id:
                peers[pid] = json.loads(value)
        now = time.monotonic()
        with self._lock:
            self._last_answer = now
            for pid, status in peers.items():
                if self._changed.get(pid, (None,))[0] != status["beat"]:
                    self._changed[pid] = (status["beat"], now)
        return peers

    def silent_for(self) -> float:
        """Seconds since the coordinator last answered this process."""
        return time.monotonic() - self._last_answer

    def _run(self) -> None:
        while not self._stop.wait(self.period) and not self.coordinator_lost:
            try:
                self._publish()
                peers = self._read_peers()
            except Exception as err:  # noqa: BLE001 - the coordinator is gone
                if not self._stop.is_set() and not self.coordinator_lost:
                    self.lose_coordinator(f"the coordinator (process 0) stopped answering: "
                                          f"{err}")
                return
            self._check_peers(peers)

    def _check_peers(self, peers: dict[int, dict]) -> None:
        now = time.monotonic()
        for pid in sorted(self._changed):
            status = peers.get(pid, {})
            if status.get("state") == "failed" and self._state == "running":
                first_line = (status.get("error") or "").split("\n", 1)[0]
                self.fail(f"process {pid} failed: {first_line}")
                return
            silent = now - self._changed[pid][1]
            if status.get("state") != "closing" and silent > self.heartbeat_timeout:
                self.fail(f"process {pid} sent no heartbeat for {silent:.1f} s (heartbeat "
                           f"timeout {self.heartbeat_timeout:g} s): it died or was stopped")
                return

    # --- failing --------------------------------------------------------------------

    def fail(self, message: str, *, asynchronous: bool = False) -> None:
        """Records the run's failure (the watcher's next status tells the others).
        Found by the watcher (a peer died or failed) or `asynchronous`ly (elsewhere), it
        is also raised in the main thread, unless a watched wait there will; a wait that
        times out raises it in its own thread."""
        with self._lock:
            if self.fault is not None:
                return
            deliver = (self.interrupt_main and self._state == "running"
                       and self._main_waits == 0
                       and (asynchronous or threading.current_thread() is self._thread))
            self.fault = message
            if self._state == "running":
                self._state = "failed"
            if deliver:
                self._async_pending = True
                _raise_in_thread(threading.main_thread().ident, _error_class(message))
        logger.error("plax.distributed: %s", message)  # the watcher tells the others

    def lose_coordinator(self, message: str) -> None:
        """The runtime's client lost process 0 (`distributed_guard`): the run has
        failed, and the client is never called again (it would block forever)."""
        self.coordinator_lost = True
        self._stop.set()
        self.fail(message, asynchronous=threading.current_thread() is not
                  threading.main_thread())

    def raise_if_failed(self) -> None:
        with self._lock:
            message = self.fault
            if message is not None and self._async_pending and \
                    threading.current_thread() is threading.main_thread():
                _raise_in_thread(threading.main_thread().ident, None)  # raised here instead
                self._async_pending = False
        if message is not None:
            raise DistributedError(f"plax.distributed run failed: {message}")

    # --- bounded waits --------------------------------------------------------------

    @contextlib.contextmanager
    def operation(self, name: str) -> Iterator[None]:
        """Names the waits inside (the outermost name wins) and numbers the operation,
        so a timeout can tell which processes are at the same one."""
        with self._lock:
            self._operation_depth += 1
            if self._operation_depth == 1:
                self._operations_started += 1
                self._operation = (name, self._operations_started)
        try:
            yield
        finally:
            with self._lock:
                self._operation_depth -= 1
                if self._operation_depth == 0:
                    self._operation = None

    def wait(self, ready: Callable[[], bool], block: Callable[[], object],
             what: str) -> None:
        """Returns once `ready()` (then `block()` raises the computation's error, if
        any); raises DistributedError if the run fails meanwhile, if the wait passes
        the collective timeout while some process is not waiting in the same
        operation, or if the computation lost its connection to another process."""
        with self._waiting_in(what) as (name, seq, start):
            if not ready():
                self.raise_if_failed()
                self._poll(ready, name, seq, start)
            try:
                block()
            except JaxRuntimeError as err:
                self.raise_if_lost_peer(name, err)
                raise

    def raise_if_lost_peer(self, what: str, err: Exception) -> None:
        """Raises DistributedError for a computation's error that says it lost its
        connection to another process (naming it, within the heartbeat timeout); returns
        for any other error."""
        if any(sign in str(err) for sign in _LOST_PEER):
            with self._lock:
                name = self._operation[0] if self._operation else what
            self._name_lost_peer(name, err)

    @contextlib.contextmanager
    def _waiting_in(self, what: str) -> Iterator[tuple[str, int | None, float]]:
        """Marks this thread as waiting (in the status; for the main thread, also so
        that the watcher leaves the raising to the wait)."""
        main = threading.current_thread() is threading.main_thread()
        start = time.monotonic()
        with self._lock:
            name, seq = self._operation or (what, None)
            self._waiting = (name, seq, start)
            self._main_waits += main
        try:
            yield name, seq, start
        finally:
            with self._lock:
                self._waiting = None
                self._main_waits -= main

    def _name_lost_peer(self, name: str, err: Exception) -> None:
        """Raises DistributedError for a collective whose connection to another process
        closed: that process died, which the watcher tells within the heartbeat
        timeout; the error names it if it does."""
        deadline = time.monotonic() + self.heartbeat_timeout + 2 * self.period
        while self.fault is None and time.monotonic() < deadline:
            time.sleep(self.period / 4)
        first = str(err).split("\n", 1)[0]
        raise DistributedError(f"plax.distributed run failed: {name} lost its connection "
                               f"to another process ({first})"
                               + (f": {self.fault}" if self.fault else "")) from err

    def _poll(self, ready, name: str, seq: int | None, start: float) -> None:
        timeout = self.collective_timeout
        deadline = None if timeout is None else start + timeout
        delay = 1e-4
        while not ready():
            time.sleep(delay)
            delay = min(2 * delay, 0.002)  # late by 2 ms at most
            if ready():
                return
            self.raise_if_failed()
            now = time.monotonic()
            silent = now - self._last_answer
            if self.process_id != 0 and silent > self.heartbeat_timeout / 2 + self.period:
                # half the timeout: the runtime aborts this process at the full one
                self.lose_coordinator(f"the coordinator (process 0) did not answer for "
                                      f"{silent:.1f} s: it died or was stopped")
                self.raise_if_failed()
            if deadline is not None and now >= deadline:
                absent = self._absent(name, seq)
                self.raise_if_failed()  # a peer that gave up first is the news
                if absent:
                    self.fail(f"{name} timed out: process {self.process_id} waited "
                               f"{now - start:.1f} s (collective timeout {timeout:g} s); "
                               f"processes that did not arrive: {'; '.join(absent)}")
                    self.raise_if_failed()
                deadline = now + timeout  # everyone is there: slow, not stuck

    def _absent(self, name: str, seq: int | None) -> list[str]:
        """The processes not waiting in operation (`name`, `seq`), each described (with
        `seq` None, a computation's result: any process waiting for one is there)."""
        answer: list[dict[int, dict]] = []
        patience = self.heartbeat_timeout / 2 + self.period
        try:  # bounded: a stopped coordinator never answers
            if not bounded(lambda: answer.append(self._read_peers()), patience):
                if self.process_id == 0:  # its own service, in this process: slow
                    return [f"unknown (this process's own service did not answer in "
                            f"{patience:.1f} s)"]
                self.lose_coordinator(f"the coordinator (process 0) did not answer for "
                                      f"{patience:.1f} s: it died or was stopped")
                return []
        except Exception as err:  # noqa: BLE001
            return [f"unknown (the coordinator did not answer: {err})"]
        peers = answer[0]
        self._check_peers(peers)
        now = time.monotonic()
        absent = []
        for pid in sorted(self._changed):
            status = peers.get(pid)
            silent = now - self._changed[pid][1]
            if status is None:
                absent.append(f"process {pid} (never reported)")
            elif status.get("state") == "closing":
                absent.append(f"process {pid} (left the run)")
            elif silent > 2 * self.period + 1:
                absent.append(f"process {pid} (no heartbeat for {silent:.1f} s)")
            elif status.get("op") is None:
                absent.append(f"process {pid} (alive, in no multi-process operation)")
            elif status["seq"] != seq or (seq is not None and status["op"] != name):
                # (a wait for a computation's result matches any such wait: processes
                # may read different results of the same computation)
                where = status["op"] + (f" #{status['seq']}" if status["seq"] else "")
                absent.append(f"process {pid} (waiting in {where} for {status['since']:.1f}"
                              " s)")
        return absent

    # --- the end --------------------------------------------------------------------

    def close(self) -> None:
        """Says this process is leaving; process 0 (whose service the others need
        until they have disconnected) first waits for the others to leave or die,
        for at most the shutdown timeout."""
        with self._lock:
            if self._state == "running":
                self._state = "closing"
        if self.coordinator_lost:
            self._stop.set()  # the watcher's thread may be blocked in the client for good
            return
        try:
            # bounded: the coordinator may be lost meanwhile (then the call never returns)
            if not bounded(self._publish, self.heartbeat_timeout + self.period):
                self.lose_coordinator("the coordinator (process 0) did not answer while "
                                      "this process was leaving the run")
            elif self.process_id == 0:
                self._wait_for_peers_to_leave()
        except Exception as err:  # noqa: BLE001 - leaving anyway
            logger.warning("plax.distributed: closing: %s", err)
            if self.process_id != 0:  # its service refused the call: process 0 is gone
                self.lose_coordinator(f"the coordinator (process 0) refused a call while "
                                      f"this process was leaving the run: {err}")
        finally:
            self._stop.set()
            self._thread.join(timeout=self.period + 1)

    def _wait_for_peers_to_leave(self) -> None:
        deadline = time.monotonic() + self.shutdown_timeout
        while time.monotonic() < deadline:
            peers = self._read_peers()
            now = time.monotonic()
            if all(peers.get(pid, {}).get("state") == "closing"
                   or now - changed > self.heartbeat_timeout
                   for pid, (_, changed) in self._changed.items()):
                # those closing disconnect next; the service's liveness query returns
                # once no process it still counts as alive is left but this one
                self.client.get_live_nodes(list(range(self.num_processes)))
                return
            time.sleep(0.05)
        logger.warning("plax.distributed: process 0 stops the coordinator with processes "
                       "still running (shutdown timeout %g s)", self.shutdown_timeout)


def bounded(call: Callable[[], object], timeout: float) -> bool:
    """Runs `call` on a thread for at most `timeout` seconds: whether it returned (its
    exception is raised here); a call still running is left to itself."""
    outcome: list[BaseException | None] = []

    def run():
        try:
            call()
            outcome.append(None)
        except BaseException as err:  # noqa: BLE001 - raised in the caller
            outcome.append(err)

    thread = threading.Thread(target=run, name="plax-distributed-call", daemon=True)
    thread.start()
    thread.join(timeout)
    if not outcome:
        return False
    if outcome[0] is not None:
        raise outcome[0]
    return True


def _error_class(message: str) -> type[DistributedError]:
    """A DistributedError subclass whose argument-less construction carries `message`
    (an asynchronous exception is raised from its class)."""
    def __init__(self, *args):
        DistributedError.__init__(self, f"plax.distributed run failed: {message}")
    return type("DistributedError", (DistributedError,),
                {"__init__": __init__, "__module__": "plax.errors"})


def _raise_in_thread(thread_id: int | None, error: type[BaseException] | None) -> None:
    """Schedules `error` in the thread (None cancels a scheduled one); it is raised at
    the thread's next Python instruction."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), ctypes.py_object(error) if error else None)


_watch: Watch | None = None


def current() -> Watch | None:
    return _watch


def start(watch: Watch | None) -> None:
    global _watch
    _watch = watch


def wait(ready: Callable[[], bool], block: Callable[[], object], what: str) -> None:
    """Waits for `ready()` under this run's watch, or by `block()` outside a run."""
    if _watch is None:
        block()
    else:
        _watch.wait(ready, block, what)


def raise_if_lost_peer(what: str, err: Exception) -> None:
    """In a run, DistributedError for an error of a computation (`what`) that lost its
    connection to another process; nothing otherwise (the caller raises `err`)."""
    if _watch is not None:
        _watch.raise_if_lost_peer(what, err)


@contextlib.contextmanager
def operation(name: str) -> Iterator[None]:
    """Names a multi-process operation (see `Watch.operation`); nothing outside a run."""
    if _watch is None:
        yield
    else:
        with _watch.operation(name):
            yield

"""The check-in before a `plax.distributed` run starts: every process tells process 0
its id and `num_processes` over a plain TCP connection to the coordinator's port, and
the runtime's service opens there only once all have come and agree.

Why: jaxlib's client ends the process (a fatal log) when joining fails: a process
missing at the initialization timeout, a `process_id` beyond the service's count, a
coordinator that is not there. Checked here first, each is a
`plax.errors.DistributedError` in every process instead, naming the processes, and
processes that disagree on `num_processes` (which the runtime never compares) are
refused too.
"""
from __future__ import annotations

import json
import socket
import time

from plax.errors import DistributedError

_LINE_LIMIT = 4096
_VERDICT_SLACK_S = 5.0  # process 0's start of the service, after its deadline at most


def _split(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


def listen(bind_address: str) -> socket.socket:
    """The lobby's listening socket on the coordinator's address; RuntimeError when the
    address cannot be served (in use, not this machine's)."""
    host, port = _split(bind_address)
    try:
        family, kind, proto, _, where = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        server = socket.socket(family, kind, proto)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(where)
        server.listen(64)
    except OSError as err:
        raise RuntimeError(f"process 0 cannot serve the coordinator on {bind_address} "
                           f"({err.strerror or err}); is the port in use? Choose another "
                           "coordinator_address port or coordinator_bind_address") from None
    return server


def gather(server: socket.socket, num_processes: int, timeout: float,
           start_service) -> None:
    """Process 0: waits for processes 1..num_processes-1 to check in, then closes the
    lobby, calls `start_service()` and tells them to connect. Raises DistributedError
    (telling those waiting why) when one disagrees or some do not come in `timeout`."""
    deadline = time.monotonic() + timeout
    waiting: dict[int, socket.socket] = {}
    try:
        while len(waiting) < num_processes - 1:
            left = deadline - time.monotonic()
            if left <= 0:
                missing = sorted(set(range(1, num_processes)) - set(waiting))
                raise DistributedError(
                    f"processes {missing} of {num_processes} did not join the run within "
                    f"initialization_timeout={timeout:g} s; check that all were started "
                    "with the same coordinator_address")
            server.settimeout(left)
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            _admit(conn, num_processes, waiting, deadline)
        server.close()
        start_service()
    except DistributedError as err:
        server.close()
        for conn in waiting.values():
            _reply(conn, {"error": str(err).split("\n", 1)[0]})
        raise
    for conn in waiting.values():
        _reply(conn, {"ok": True})


def _admit(conn: socket.socket, num_processes: int, waiting: dict[int, socket.socket],
           deadline: float) -> None:
    """Reads one process's check-in; keeps its connection if it agrees."""
    conn.settimeout(max(0.1, min(5.0, deadline - time.monotonic())))
    try:
        message = json.loads(conn.makefile("rb").readline(_LINE_LIMIT) or b"null")
    except (OSError, ValueError):
        message = None
    if not isinstance(message, dict):  # a port probe, or not a plax process
        conn.close()
        return
    pid, theirs = message.get("process_id"), message.get("num_processes")
    if theirs != num_processes:
        error = (f"the processes disagree on num_processes: process 0 passed "
                 f"{num_processes}, process {pid} passed {theirs}")
    elif not isinstance(pid, int) or not 0 < pid < num_processes or pid in waiting:
        error = f"process_id {pid!r} is not free in a run of {num_processes} processes"
    else:
        waiting[pid] = conn
        # the verdict comes at process 0's deadline, which a process that started
        # after it must wait for rather than its own
        _send(conn, {"wait": max(0.0, deadline - time.monotonic())})
        return
    _reply(conn, {"error": error})
    raise DistributedError(error)


def _send(conn: socket.socket, message: dict) -> None:
    try:
        conn.sendall(json.dumps(message).encode() + b"\n")
    except OSError:
        pass  # it left; it learns from its own timeout


def _reply(conn: socket.socket, message: dict) -> None:
    try:
        _send(conn, message)
    finally:
        conn.close()


def _read(lines) -> object:
    line = lines.readline(_LINE_LIMIT)
    return json.loads(line) if line else None


def check_in(address: str, process_id: int, num_processes: int, timeout: float) -> None:
    """Processes 1..: checks in with process 0 and returns once the run's service is
    open; raises DistributedError with process 0's reason, or when it cannot be
    reached within `timeout`."""
    host, port = _split(address)
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=1.0) as conn:
                conn.sendall(json.dumps({"process_id": process_id,
                                         "num_processes": num_processes}).encode() + b"\n")
                conn.settimeout(max(0.1, deadline - time.monotonic()) + 1.0)
                lines = conn.makefile("rb")
                reply = _read(lines)
                if isinstance(reply, dict) and "wait" in reply:  # admitted: process 0
                    conn.settimeout(float(reply["wait"]) + _VERDICT_SLACK_S)  # decides
                    reply = _read(lines)
        except socket.gaierror as err:
            raise ValueError(f"coordinator_address {address!r}: the host {host!r} is "
                             f"unknown ({err.strerror})") from None
        except (OSError, ValueError) as err:
            reply, last = None, err
        else:
            last = "the connection closed without an answer"
        if isinstance(reply, dict) and reply.get("ok"):
            return
        if isinstance(reply, dict) and "error" in reply:
            raise DistributedError(f"process {process_id} cannot join the run: "
                                   f"{reply['error']}")
        if time.monotonic() >= deadline:
            raise DistributedError(
                f"no coordinator answered at {address} within {timeout:g} s ({last}); "
                "process 0 serves it: check that it runs and that every process passes "
                "the same coordinator_address (process 0 listens on loopback only unless "
                "given coordinator_bind_address or jax_coordinator_listen_on_all_interfaces)")
        time.sleep(0.1)

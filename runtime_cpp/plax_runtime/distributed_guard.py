"""Losing process 0 of a `plax.distributed` run as `plax.errors.DistributedError` in the
others, not as the runtime's abort.

What jaxlib 0.10.2 allows, and why this is built as it is:
- Process 0 hosts the coordination service. When its connection closes (process 0 died)
  or its heartbeats stop answering (it was stopped), the runtime's client in every other
  process calls its `missed_heartbeat_callback` from one of the client's own threads;
  the default one logs a fatal error, which aborts the process (SIGABRT). A Python
  callback cannot replace it: jaxlib calls it with an `absl::Status` that nanobind
  cannot convert, so the call throws std::bad_cast there and the process terminates.
  Neither `shutdown_on_destruction` nor `use_compression` changes this, and the service's
  `recoverable` flag covers the loss of other tasks only, not of the service.
- So the abort itself is intercepted: a SIGABRT handler (installed for the run, the
  previous one restored by `close`) looks at where the abort comes from. An abort in a
  thread other than the main one while the coordinator cannot be reached (its port
  refuses connections) or has not answered this process's watcher for half the heartbeat
  timeout is the client's reaction to losing process 0: the handler tells the watch (the
  main thread gets DistributedError, its `finally` blocks run) and parks the aborting
  thread for good instead of returning to the abort. Any other abort goes on as before.
- The parked thread holds the client's internal lock, so after the loss nothing may call
  the client again: the watch stops using it, `shutdown` skips it, and the client and
  the backends that share it are never destroyed (their destructors would wait for that
  lock); Python's teardown runs as usual (files flushed), then the process ends with
  the program's exit status without running the C++ destructors (`end_quietly`).
"""
from __future__ import annotations

import ctypes
import signal
import socket
import threading
import time
from collections.abc import Callable

_HANDLER = ctypes.CFUNCTYPE(None, ctypes.c_int)
_libc = ctypes.CDLL(None, use_errno=True)
_libc.signal.restype = ctypes.c_void_p
_libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
_SIG_ERR = ctypes.c_void_p(-1).value


class Guard:
    """While open, turns the runtime's abort for a lost coordinator into a call of
    `on_loss(message)` (which must not call the runtime's client)."""

    def __init__(self, coordinator_address: str, on_loss: Callable[[str], None],
                 silent_for: Callable[[], float], stale_after: float):
        host, _, port = coordinator_address.rpartition(":")
        self._where = (host.strip("[]"), int(port))
        self.coordinator_address = coordinator_address
        self._on_loss = on_loss
        self._silent_for = silent_for  # seconds since the coordinator last answered
        self._stale_after = stale_after
        self._main = threading.main_thread().native_id
        self._callback = _HANDLER(self._on_abort)  # kept alive while installed
        self.lost = False
        previous = _libc.signal(signal.SIGABRT,
                                ctypes.cast(self._callback, ctypes.c_void_p).value)
        if previous == _SIG_ERR:
            raise OSError(ctypes.get_errno(), "cannot install the SIGABRT handler")
        self._previous: int | None = previous or 0  # None once closed

    def close(self) -> None:
        """Puts the previous SIGABRT handler back (not after a loss: a parked thread's
        handler frame stays, and so does the callback it runs)."""
        if self._previous is not None and not self.lost:
            _libc.signal(signal.SIGABRT, self._previous)
            self._previous = None

    def coordinator_gone(self) -> str | None:
        """Why the coordinator counts as lost, or None while it answers."""
        try:
            with socket.create_connection(self._where, timeout=1.0):
                pass
        except OSError as err:
            return f"its port does not answer ({err.strerror or err}): it died"
        silent = self._silent_for()
        if silent >= self._stale_after:
            return f"it has not answered for {silent:.1f} s: it was stopped or hangs"
        return None

    def _on_abort(self, signum: int) -> None:
        try:
            why = (None if threading.get_native_id() == self._main
                   else self.coordinator_gone())
        except BaseException:  # noqa: BLE001 - never stand in the way of the abort
            why = None
        if why is None:
            self.close()
            return  # the abort goes on
        self.lost = True
        try:
            self._on_loss(f"the coordinator (process 0 at {self.coordinator_address}) "
                          f"was lost: {why}; the runtime's abort of this process was "
                          "intercepted")
        finally:
            while True:  # the aborting thread never returns to the abort
                time.sleep(3600)


def end_quietly() -> None:
    """After a loss, as the run shuts down: an abort from now on (a thread that the
    interpreter's teardown ends inside the runtime's C++ frames) freezes its thread in
    C (`pause`) rather than run Python, and the process's exit skips the C++
    destructors (an `on_exit` handler calls `_exit` with the program's exit status;
    Python has flushed its files by then)."""
    address = ctypes.cast(_libc.pause, ctypes.c_void_p).value
    _libc.signal(signal.SIGABRT, address)
    _libc.on_exit.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    _libc.on_exit(ctypes.cast(_libc._exit, ctypes.c_void_p).value, None)  # _exit(status)


_leaked: list[object] = []


def keep_forever(*objects: object) -> None:
    """Takes a reference to each object that nothing gives back, so that they outlive
    the interpreter's teardown (their destructors would wait for the parked thread)."""
    for obj in objects:
        if obj is not None:
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))
            _leaked.append(obj)

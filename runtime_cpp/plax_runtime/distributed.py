"""`plax.distributed`: joining several processes into one program (XLA's distributed runtime).

Process 0 runs the coordination service; every process connects a client to it. The
backends made afterwards see the global picture: the CPU client gets the client, its
process id and the process count (and gloo TCP collectives, so that computations
spanning processes communicate), so `plax.devices()` lists every process's devices and
`plax.local_devices()` this one's. Hence `initialize` must come before anything that
starts a backend.

Beyond JAX, a run's faults are exceptions: `distributed_watch` bounds every wait for
other processes, and a dead or stopped peer is `plax.errors.DistributedError` in the
others rather than an abort; the processes check that they agree on `num_processes`;
and the coordinator listens on loopback unless told otherwise.
"""
from __future__ import annotations

import atexit
import dataclasses
import ipaddress
import logging
import os
import socket
import time
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from jaxlib import _jax

from plax.errors import DistributedError
from plax.extend import config
from plax_runtime import backends, distributed_guard, distributed_lobby, distributed_watch

__all__ = ["initialize", "shutdown", "is_initialized"]

logger = logging.getLogger(__name__)

@dataclasses.dataclass
class State:
    """This process's place in the run: its id, the process count, the runtime objects."""
    process_id: int = 0
    num_processes: int = 1
    coordinator_address: str | None = None
    service: _jax.DistributedRuntimeService | None = None
    client: _jax.DistributedRuntimeClient | None = None
    local_device_ids: list[int] | None = None  # accelerator plugins' visible devices
    partition_index: int | None = None  # accelerator plugins' partition of this process
    guard: distributed_guard.Guard | None = None  # processes 1..: losing process 0
    shutdown_timeout: int = 300

    def connect(self, coordinator_address: str, num_processes: int, process_id: int,
                local_device_ids: list[int] | None, partition_index: int | None, *,
                bind_address: str, initialization_timeout: int,
                heartbeat_timeout_seconds: int, shutdown_timeout_seconds: int,
                collective_timeout: float | None) -> None:
        if self.client is not None:
            raise RuntimeError("distributed.initialize should only be called once.")
        try:
            if process_id == 0:
                self._serve(coordinator_address, bind_address, num_processes,
                            initialization_timeout, heartbeat_timeout_seconds,
                            shutdown_timeout_seconds)
            else:
                distributed_lobby.check_in(coordinator_address, process_id, num_processes,
                                           initialization_timeout)
            logger.info("Connecting to the distributed runtime service on %s",
                        coordinator_address)
            client = _jax.get_distributed_runtime_client(
                coordinator_address, process_id, init_timeout=initialization_timeout,
                heartbeat_timeout=heartbeat_timeout_seconds,
                shutdown_timeout=shutdown_timeout_seconds, use_compression=True)
            client.connect()
        except Exception:
            self._stop_service()
            raise
        self.client = client
        self.coordinator_address = coordinator_address
        self.process_id = process_id
        self.num_processes = num_processes
        self.local_device_ids = local_device_ids
        self.partition_index = partition_index
        self.shutdown_timeout = shutdown_timeout_seconds
        watch = distributed_watch.Watch(
            client, process_id, num_processes, heartbeat_timeout=heartbeat_timeout_seconds,
            collective_timeout=collective_timeout, shutdown_timeout=shutdown_timeout_seconds)
        distributed_watch.start(watch)
        if process_id != 0:
            # half the heartbeat timeout: the runtime gives up on process 0 at the full one
            self.guard = distributed_guard.Guard(
                coordinator_address, watch.lose_coordinator, watch.silent_for,
                stale_after=heartbeat_timeout_seconds / 2)

    def _serve(self, coordinator_address: str, bind_address: str, num_processes: int,
               initialization_timeout: int, heartbeat_timeout: int,
               shutdown_timeout: int) -> None:
        """Process 0: holds the coordinator's port for the check-in of the others
        (distributed_lobby), then opens the runtime's service there."""
        lobby = distributed_lobby.listen(bind_address)
        try:
            _wait_for_coordinator(coordinator_address, initialization_timeout)
        except Exception:
            lobby.close()
            raise

        def start_service():
            logger.info("Starting the distributed runtime service on %s", bind_address)
            # recoverable: a dead task's failure is not sent to the others (which the
            # runtime would abort); distributed_watch reports it as an exception
            self.service = _jax.get_distributed_runtime_service(
                bind_address, num_processes, heartbeat_timeout=heartbeat_timeout,
                shutdown_timeout=shutdown_timeout, recoverable=True)
        distributed_lobby.gather(lobby, num_processes, initialization_timeout, start_service)

    def shutdown(self) -> None:
        watch = distributed_watch.current()
        if watch is not None:
            watch.close()
            distributed_watch.start(None)
        lost = watch is not None and watch.coordinator_lost
        if self.client is not None and not lost:
            try:
                # bounded: process 0 may be lost meanwhile (the call would never return)
                lost = not distributed_watch.bounded(self.client.shutdown,
                                                     self.shutdown_timeout + 5)
            except Exception as err:  # noqa: BLE001 - a failed run ends all the same
                # the runtime's client was not shut down: it may still abort the process
                lost = self.guard is not None
                if not lost and (watch is None or watch.fault is None):
                    raise
                logger.warning("plax.distributed: shutdown after a failure: %s", err)
        if lost:
            # the client's RPC thread is parked (distributed_guard) or its service gone:
            # the client, and the backends that share it, are never destroyed (their
            # destructors would wait for it), nor is the guard that parked it
            logger.warning("plax.distributed: the coordinator was lost; the runtime's "
                           "client is left as it is")
            distributed_guard.keep_forever(self.client, self.guard, *backends.made_clients())
            distributed_guard.end_quietly()
        elif self.guard is not None:
            self.guard.close()
        self.client = self.guard = None
        self._stop_service()
        self.process_id, self.num_processes = 0, 1
        self.coordinator_address = self.local_device_ids = self.partition_index = None

    def _stop_service(self) -> None:
        if self.service is not None:
            self.service.shutdown()
            self.service = None


global_state = State()


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None,
               local_device_ids: int | Sequence[int] | None = None,
               cluster_detection_method: str | None = None,
               initialization_timeout: int = 300, heartbeat_timeout_seconds: int = 100,
               shutdown_timeout_seconds: int = 300,
               coordinator_bind_address: str | None = None,
               slice_index: int | None = None,
               partition_index: int | None = None,
               collective_timeout: float | None | Any = config.unset) -> None:
    """Joins this process to a multi-process run, so that `plax.devices()` lists the
    devices of every process and computations can span them.

    Call it in every process, with the same `coordinator_address` and
    `num_processes` and a distinct `process_id`, before anything that starts a
    backend (a computation, `plax.devices()`, `device_put`...). Process 0 serves the
    coordination service at `coordinator_address`. Afterwards `plax.process_index()`
    and `plax.process_count()` describe the run, `plax.local_devices()` this
    process's devices. Unlike JAX, cluster schedulers (Slurm, MPI, TPU pods) are not
    detected: give the three values explicitly (or through the environment).

    Faults raise `plax.errors.DistributedError` (JAX aborts or hangs): a wait for the
    other processes (a multi-process computation's result, `multihost_utils`) longer
    than `collective_timeout` seconds (default: the `jax_distributed_collective_timeout`
    option, 300; None waits forever) while some process is elsewhere; a process that
    sends no heartbeat for `heartbeat_timeout_seconds` (dead or stopped), in every
    other process, even outside plax calls; and processes that disagree on
    `num_processes`. Losing process 0 (killed or stopped) is that exception too, in
    every other process within the heartbeat timeout: the runtime's client would abort
    them, and plax intercepts the abort (`plax_runtime.distributed_guard`); such a
    process cannot use the run any more and should exit.

    Args:
        coordinator_address: `host:port` of process 0's service; default the
            `JAX_COORDINATOR_ADDRESS` environment variable.
        num_processes: the number of processes in the run.
        process_id: this process's index, in `[0, num_processes)`.
        local_device_ids: the local devices this process uses (an int or ints); default
            `JAX_LOCAL_DEVICE_IDS`, else all.
        cluster_detection_method: only None or "deactivate" (no auto-detection).
        initialization_timeout: seconds to wait for every process to join.
        heartbeat_timeout_seconds: silence after which a process counts as dead.
        shutdown_timeout_seconds: seconds `shutdown` waits for the others.
        coordinator_bind_address: where process 0's service listens (default
            `JAX_COORDINATOR_BIND_ADDRESS`, else loopback on the coordinator's port, or
            every interface with the `jax_coordinator_listen_on_all_interfaces` option;
            multi-host runs need one of the two).
        slice_index: the old name of `partition_index`.
        partition_index: passed to accelerator plugins (`JAX_PARTITION_INDEX`).
        collective_timeout: seconds a cross-process wait may take (None: forever);
            default the `jax_distributed_collective_timeout` option (300).

    Raises:
        RuntimeError: a backend is already running in this process.
        ValueError: missing or invalid process numbers, addresses or timeouts, or an
            unsupported `cluster_detection_method`.
        TypeError: process numbers that are not ints.

    Examples:
        In each of two processes (process_id 0 and 1), before any other plax call:

        >>> plax.distributed.initialize("10.0.0.1:1234", num_processes=2,
        ...                             process_id=0)  # doctest: +SKIP
        >>> plax.process_count()  # doctest: +SKIP
        2

        Once a backend has started it is too late:

        >>> _ = plax.devices()
        >>> plax.distributed.initialize("localhost:1234", num_processes=2, process_id=0)
        Traceback (most recent call last):
        RuntimeError: plax.distributed.initialize() must be called before any plax call ...
    """
    if backends.backends_are_initialized():
        raise RuntimeError("plax.distributed.initialize() must be called before any plax "
                           "call that starts a backend: any computation, but also "
                           "plax.devices, plax.device_put and others.")
    coordinator_address = coordinator_address or os.environ.get("JAX_COORDINATOR_ADDRESS")
    local_device_ids = _local_device_ids(local_device_ids)
    if cluster_detection_method not in (None, "deactivate"):
        raise ValueError(f"cluster_detection_method={cluster_detection_method!r} is not "
                         "supported by plax: pass coordinator_address, num_processes and "
                         "process_id (or use 'deactivate')")
    _check_process_numbers(num_processes, process_id)
    port = _check_address(coordinator_address, "coordinator_address")
    bind_address = coordinator_bind_address or os.environ.get("JAX_COORDINATOR_BIND_ADDRESS")
    if bind_address is None:
        bind_address = _default_bind_address(coordinator_address, port, process_id)
    _check_address(bind_address, "coordinator_bind_address")
    if collective_timeout is config.unset:
        collective_timeout = config.distributed_collective_timeout.value
    if collective_timeout is not None and (isinstance(collective_timeout, bool) or not
                                           isinstance(collective_timeout, (int, float))
                                           or not collective_timeout > 0):
        raise ValueError("collective_timeout must be a positive number of seconds or None, "
                         f"got {collective_timeout!r}")
    for name, value in (("initialization_timeout", initialization_timeout),
                        ("heartbeat_timeout_seconds", heartbeat_timeout_seconds),
                        ("shutdown_timeout_seconds", shutdown_timeout_seconds)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
    partition_index = _partition_index(partition_index, slice_index)
    global_state.connect(coordinator_address, num_processes, process_id, local_device_ids,
                         partition_index,
                         bind_address=bind_address,
                         initialization_timeout=initialization_timeout,
                         heartbeat_timeout_seconds=heartbeat_timeout_seconds,
                         shutdown_timeout_seconds=shutdown_timeout_seconds,
                         collective_timeout=collective_timeout)
    atexit.register(_shutdown_at_exit)


def _shutdown_at_exit() -> None:
    """Leaves the run in order before the interpreter tears the runtime down (process 0
    last, its service after its client): left to destructors, a failed run's exit
    could end in the runtime's abort."""
    if global_state.client is not None:
        global_state.shutdown()


def is_initialized() -> bool:
    """Whether `initialize` has joined this process to a multi-process run (and
    `shutdown` has not ended it).

    Returns:
        A bool.

    Examples:
        >>> plax.distributed.is_initialized()
        False
    """
    return global_state.client is not None


def shutdown() -> None:
    """Leaves the multi-process run: disconnects this process from the coordination
    service (and, in process 0, stops the service). Does nothing if `initialize` was
    not called. Backends already started keep their devices. plax also calls it at
    interpreter exit, in an order that avoids the runtime's abort.

    Examples:
        >>> plax.distributed.shutdown()  # not initialized: nothing to do
        >>> plax.distributed.is_initialized()
        False
    """
    global_state.shutdown()


def _check_process_numbers(num_processes, process_id) -> None:
    if num_processes is None:
        raise ValueError("Number of processes must be defined (num_processes).")
    if process_id is None:
        raise ValueError("The process id of the current process must be defined (process_id).")
    for name, value, what in (("num_processes", num_processes, "a positive"),
                              ("process_id", process_id, "a nonnegative")):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be {what} int. Got {name}={value!r} of type "
                            f"{type(value).__name__}.")
    if not 0 <= process_id < num_processes:
        raise ValueError("process_id and num_processes must be nonnegative, with process_id "
                         f"< num_processes. Got process_id={process_id}, "
                         f"num_processes={num_processes}.")


def _check_address(address, name: str) -> int:
    """The port of a `host:port` address (`[v6]:port` too); a ValueError otherwise."""
    if address is None:
        raise ValueError(f"{name} should be defined (or set JAX_COORDINATOR_ADDRESS).")
    if not isinstance(address, str):
        raise TypeError(f"{name} must be a 'host:port' string, got {type(address).__name__}")
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{name} must look like 'host:port' with a port in 1..65535, "
                         f"got {address!r}")
    return int(port)


def _default_bind_address(coordinator_address: str, port: int, process_id) -> str:
    """Loopback on the coordinator's port, or every interface when the option says so.
    Process 0 warns when the other processes are told to reach it elsewhere."""
    if config.coordinator_listen_on_all_interfaces.value:
        return f"[::]:{port}"
    host, _ = _split_address(coordinator_address)
    if process_id == 0 and not _is_loopback(host):
        logger.warning(
            "plax.distributed: the coordinator listens on loopback only (127.0.0.1:%d), "
            "but coordinator_address names %r; processes on other machines cannot reach "
            "it. Pass coordinator_bind_address (e.g. '[::]:%d') or set "
            "jax_coordinator_listen_on_all_interfaces.", port, host, port)
    return f"[::1]:{port}" if host == "::1" else f"127.0.0.1:{port}"


def _is_loopback(host: str) -> bool:
    try:
        return all(ipaddress.ip_address(info[4][0]).is_loopback
                   for info in socket.getaddrinfo(host, None))
    except (OSError, ValueError):
        return False


def _split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


def _wait_for_coordinator(address: str, timeout: float) -> None:
    """Returns once something accepts connections at `address`, or raises
    DistributedError after `timeout` seconds: process 0 checks that its own client will
    reach the coordinator (the runtime's client would end the process otherwise)."""
    host, port = _split_address(address)
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=1.0):
                return
        except socket.gaierror as err:
            raise ValueError(f"coordinator_address {address!r}: the host {host!r} is "
                             f"unknown ({err.strerror})") from None
        except OSError as err:
            if time.monotonic() >= deadline:
                raise DistributedError(
                    f"no coordinator answered at {address} within {timeout} s ({err}); "
                    "process 0 serves it: check that it runs and that every process "
                    "passes the same coordinator_address (process 0 listens on loopback "
                    "only unless given coordinator_bind_address or "
                    "jax_coordinator_listen_on_all_interfaces)") from None
        time.sleep(0.1)


def _local_device_ids(ids) -> list[int] | None:
    if ids is None and (text := os.environ.get("JAX_LOCAL_DEVICE_IDS")):
        ids = [int(part) for part in text.split(",")]
    if ids is None:
        return None
    ids = [ids] if isinstance(ids, int) else list(ids)
    if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids):
        raise TypeError(f"local_device_ids must be nonnegative ints, got {ids!r}")
    return ids


def _partition_index(partition_index, slice_index) -> int | None:
    if slice_index is not None:
        warnings.warn("`slice_index` has been deprecated. Please use `partition_index` "
                      "instead.", DeprecationWarning, stacklevel=3)
        partition_index = slice_index if partition_index is None else partition_index
    if partition_index is None and (text := os.environ.get("JAX_PARTITION_INDEX")):
        partition_index = int(text)
    if partition_index is not None and (isinstance(partition_index, bool)
                                        or not isinstance(partition_index, int)):
        raise TypeError(f"partition_index must be an int, got {partition_index!r}")
    return partition_index


def plugin_client_arguments(platform: str, options: Mapping[str, Any]
                            ) -> tuple[dict[str, Any], _jax.DistributedRuntimeClient | None]:
    """A PJRT plugin's client options and distributed client for this process: outside
    a run, `options` and None; in one, its process id and count (and, for GPUs, the
    `local_device_ids` as visible devices; the partition index if given) are added,
    as JAX passes them."""
    state = global_state
    if state.client is None:
        return dict(options), None
    added: dict[str, Any] = {"node_id": state.process_id, "num_nodes": state.num_processes}
    if platform in ("cuda", "rocm") and state.local_device_ids is not None:
        added["visible_devices"] = list(state.local_device_ids)
    if state.partition_index is not None:
        added["partition_index"] = state.partition_index
    return {**added, **options}, state.client


def cpu_client_options() -> dict:
    """The arguments that make a CPU client part of the run (none outside one)."""
    state = global_state
    if state.client is None:
        return {}
    if config.cpu_collectives_implementation.value == "mpi":
        collectives = _jax.make_mpi_collectives()
        collectives.Init()
        atexit.register(collectives.Finalize)
    else:
        collectives = _jax.make_gloo_tcp_collectives(distributed_client=state.client)
    return {"distributed_client": state.client, "node_id": state.process_id,
            "num_nodes": state.num_processes, "collectives": collectives}

"""Profile-guided latency estimation (PGLE): the profiles of a module's first runs,
aggregated into one feedback-directed-optimization (FDO) profile for its recompile.

A `ProfileRunner` belongs to one compiled module. Each of its first `runs` executions
runs inside a jaxlib `ProfilerSession`; the session's XSpace becomes a
`ProfiledInstructionsProto` (the measured latency of each HLO instruction) through
jaxlib's `get_fdo_profile`, or, where that finds nothing (a CPU's trace; a TPU's
with libtpu 0.0.42), here from the trace's planes, which time each instruction.
`aggregate` takes, per instruction, the `jax_pgle_aggregation_percentile` of the
runs (jaxlib's `aggregate_profiled_instructions`).

In a run of several processes every process must compile a module spanning them with
the same profile: `agree` has the lowest process index among the module's devices
publish its profile in the distributed runtime's key-value store and the others take
it (waiting at most `jax_share_binary_between_hosts_timeout_ms`).

`remember`/`known` keep the profiles this process compiled with, per module, so a
module compiled again (a function redefined, a cache entry evicted) goes straight to
its profiled executable.
"""
from __future__ import annotations

import collections
import hashlib
import logging
import struct
import threading
import time
import warnings
from collections.abc import Callable, Hashable, Sequence

from jaxlib import _jax, _profile_data, _profiler, xla_client as xc

from plax import monitoring
from plax.extend import config

logger = logging.getLogger(__name__)

PROFILING_RUN_EVENT = "/plax/pgle/profiling_run_duration"
RECOMPILE_EVENT = "/plax/pgle/recompile_duration"

_KNOWN_MAX_ENTRIES = 4096


def enabled() -> bool:
    """Whether modules compiled now are profiled (`jax_enable_pgle` with at least one
    profiling run)."""
    return bool(config.enable_pgle.value) and config.pgle_profiling_runs.value > 0


def percentile() -> int:
    value = config.pgle_aggregation_percentile.value
    if not 0 <= value <= 100:
        raise ValueError(f"jax_pgle_aggregation_percentile must be in [0, 100], got {value}")
    return value


# --- the ProfiledInstructionsProto wire format -----------------------------------------
# message ProfiledInstructionsProto { repeated InstructionCost costs = 1; ... }
# message InstructionCost { string name = 1; double cost_us = 2; }

def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def encode_costs(costs: dict[str, float]) -> bytes:
    """A serialized `ProfiledInstructionsProto` of instruction latencies (microseconds)."""
    out = bytearray()
    for name in sorted(costs):
        raw = name.encode()
        cost = b"\x0a" + _varint(len(raw)) + raw + b"\x11" + struct.pack("<d", costs[name])
        out += b"\x0a" + _varint(len(cost)) + cost
    return bytes(out)


def _read_varint(data: bytes, i: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        byte = data[i]
        i += 1
        n |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return n, i


def proto_fields(data: bytes):
    """(field number, wire type, value) of a serialized protocol buffer message, in
    order (a ValueError if it is not one)."""
    i = 0
    while i < len(data):
        tag, i = _read_varint(data, i)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, i = _read_varint(data, i)
        elif wire == 1:
            value, i = data[i:i + 8], i + 8
        elif wire == 2:
            size, i = _read_varint(data, i)
            value, i = data[i:i + size], i + size
        elif wire == 5:
            value, i = data[i:i + 4], i + 4
        else:
            raise ValueError(f"not a protocol buffer (wire type {wire})")
        if i > len(data):
            raise ValueError("a truncated protocol buffer")
        yield number, wire, value


def decode_costs(profile: bytes) -> dict[str, float]:
    """The instruction latencies (microseconds) of a serialized
    `ProfiledInstructionsProto` (its latencies between instructions are left out)."""
    costs = {}
    for number, wire, value in proto_fields(profile):
        if number == 1 and wire == 2:
            fields = {n: v for n, _, v in proto_fields(value)}
            costs[fields.get(1, b"").decode()] = struct.unpack("<d", fields.get(2, bytes(8)))[0]
    return costs


def _host_latencies(plane, module_name: str, times: dict) -> None:
    """A CPU's instructions: the host plane's thunk events name their op and module."""
    for line in plane.lines:
        for event in line.events:
            stats = dict(event.stats)
            op = stats.get("hlo_op")
            if op is not None and stats.get("hlo_module") == module_name:
                times[str(op)].append(event.duration_ns / 1e3)


def _device_latencies(plane, module_name: str, times: dict) -> None:
    """A TPU's instructions: its plane's "XLA Ops" line holds one event per executed
    instruction, named by the instruction's HLO text (`%fusion.3 = ...`), and its "XLA
    Modules" line the runs of each module (`jit_step(<fingerprint>)`); an op counts
    when it starts inside a run of `module_name`."""
    lines = {line.name: list(line.events) for line in plane.lines}
    runs = [(e.start_ns, e.end_ns) for e in lines.get("XLA Modules", ())
            if e.name.partition("(")[0] == module_name]
    for event in lines.get("XLA Ops", ()):
        if any(start <= event.start_ns < end for start, end in runs):
            times[event.name.partition(" = ")[0].lstrip("%")].append(event.duration_ns / 1e3)


def _planes_profile(xspace: bytes, module_name: str) -> bytes:
    """The profile of `module_name` read from the planes of `xspace` themselves: each
    instruction's mean latency over its executions. jaxlib's `get_fdo_profile` finds
    none in a CPU's trace, nor in a TPU's with libtpu 0.0.42 (so JAX's own PGLE gets
    no profile there either), though both planes time every instruction."""
    times: dict[str, list[float]] = collections.defaultdict(list)
    for plane in _profile_data.ProfileData.from_serialized_xspace(xspace).planes:
        if plane.name.startswith("/host:"):
            _host_latencies(plane, module_name, times)
        elif plane.name.startswith("/device:"):
            _device_latencies(plane, module_name, times)
    return encode_costs({op: sum(v) / len(v) for op, v in times.items()})


def profile_of(xspace: bytes, module_name: str) -> bytes:
    """The FDO profile of one profiled run: jaxlib's, else read from the planes."""
    return _profiler.get_fdo_profile(xspace) or _planes_profile(xspace, module_name)


# --- one module's profiling runs -----------------------------------------------------

class ProfileRunner:
    """Runs a module's first `runs` executions under a profiler session and keeps
    their profiles. Executions while another session is active (the user's
    `plax.profiler` trace, another thread's profiling run) run unprofiled and do
    not count."""

    def __init__(self, runs: int, percentile: int, module_name: str, fun_name: str):
        self.runs = runs
        self.percentile = percentile
        self.module_name = module_name
        self.fun_name = fun_name
        self.profiles: list[bytes] = []
        self._lock = threading.Lock()

    @property
    def done(self) -> bool:
        return len(self.profiles) >= self.runs

    def run(self, execute: Callable[[], list], block: Callable[[list], None]) -> list:
        """`execute()`'s outputs; profiled (waiting for them with `block`) while
        profiles are still wanted."""
        if self.done or not self._lock.acquire(blocking=False):
            return execute()
        try:
            if self.done:
                return execute()
            session = _start_session()
            if session is None:
                return execute()
            start = time.monotonic()
            try:
                outs = execute()
                block(outs)
            finally:
                xspace = session.stop()
            profile = profile_of(xspace, self.module_name)
            self.profiles.append(profile)
            monitoring.record_event_duration_secs(PROFILING_RUN_EVENT,
                                                  time.monotonic() - start,
                                                  fun_name=self.fun_name)
            if not profile:
                warnings.warn(f"PGLE: the profiled run {len(self.profiles)} of "
                              f"{self.fun_name} recorded no instruction latencies (is "
                              "another tool holding the device profiler?)", RuntimeWarning,
                              stacklevel=2)
            return outs
        finally:
            self._lock.release()

    def aggregate(self) -> bytes:
        """One profile of the runs: per instruction, the percentile of its latencies."""
        return _profiler.aggregate_profiled_instructions(self.profiles, self.percentile)


def _start_session() -> _profiler.ProfilerSession | None:
    """A profiler session collecting what PGLE needs, or None when one cannot start
    (another session is active)."""
    from plax_runtime import profiler  # the user's trace, if any, runs there
    if profiler.tracing():
        return None
    options = _profiler.ProfileOptions()
    options.enable_hlo_proto = True
    options.python_tracer_level = 0  # the latencies are XLA's; tracing Python only costs
    options.raise_error_on_start_failure = True
    try:
        return _profiler.ProfilerSession(options)
    except Exception as err:  # noqa: BLE001 - jaxlib reports a busy profiler variously
        logger.debug("PGLE: no profiler session (%s); this run is not profiled", err)
        return None


# --- profiles applied in this process --------------------------------------------------

_known: collections.OrderedDict[Hashable, bytes] = collections.OrderedDict()
_agreements: collections.Counter[str] = collections.Counter()  # per module digest
_known_lock = threading.Lock()


def remember(module: Hashable, profile: bytes) -> None:
    """Notes that `module` (a compile's identity, its profile aside) was compiled with
    `profile` (the oldest of more than 4096 are forgotten)."""
    with _known_lock:
        _known[module] = profile
        _known.move_to_end(module)
        while len(_known) > _KNOWN_MAX_ENTRIES:
            _known.popitem(last=False)


def known(module: Hashable) -> bytes | None:
    """The profile `module` was compiled with in this process, if any."""
    with _known_lock:
        return _known.get(module)


def forget_all() -> None:
    with _known_lock:
        _known.clear()


# --- agreeing on a profile across processes -------------------------------------------

def agree(profile: bytes, module_digest: str, devices: Sequence[xc.Device],
          fun_name: str) -> bytes:
    """The profile every process compiles the module with: `profile` unless the
    module's devices span processes of a distributed run; then the one the lowest of
    those processes publishes. A RuntimeError if it does not come in time."""
    processes = sorted({d.process_index for d in devices})
    if len(processes) < 2:
        return profile
    from plax_runtime.distributed import global_state
    client = global_state.client
    if client is None:
        return profile
    # Each agreement on a module (again after clear_caches) has its own key.
    count = _agreements[module_digest] + 1
    key = f"plax/pgle/{module_digest}/{count}"
    if global_state.process_id == processes[0]:
        client.key_value_set_bytes(key, profile, allow_overwrite=True)
        logger.debug("PGLE: published the profile of %s (%d bytes)", fun_name, len(profile))
        _agreements[module_digest] = count
        return profile
    timeout = config.share_binary_between_hosts_timeout_ms.value
    try:
        profile = client.blocking_key_value_get_bytes(key, timeout)
        _agreements[module_digest] = count
        return profile
    except _jax.JaxRuntimeError as err:
        raise RuntimeError(
            f"PGLE: process {global_state.process_id} did not receive the profile of "
            f"{fun_name} from process {processes[0]} within {timeout} ms "
            "(jax_share_binary_between_hosts_timeout_ms); every process running it must "
            "enable PGLE with the same jax_pgle_profiling_runs, and process "
            f"{processes[0]} must reach its recompile. ({err})") from None


def record_recompile(fun_name: str, seconds: float, profile: bytes | None) -> None:
    """Records a PGLE recompile as `/plax/pgle/recompile_duration`, with the SHA-256 of
    the profile it compiled with (`profile_sha256`: the same in every process of a
    distributed run)."""
    monitoring.record_event_duration_secs(
        RECOMPILE_EVENT, seconds, fun_name=fun_name,
        profile_sha256=hashlib.sha256(profile or b"").hexdigest())


__all__ = ["PROFILING_RUN_EVENT", "RECOMPILE_EVENT", "ProfileRunner", "agree", "decode_costs",
           "enabled", "encode_costs", "known", "percentile", "profile_of", "proto_fields",
           "record_recompile", "remember"]

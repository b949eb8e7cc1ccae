"""`plax.profiler`: traces of what the host and the devices did, for TensorBoard and
Perfetto, and snapshots of device memory, on jaxlib's profiler.

`start_trace(log_dir)` / `stop_trace()` (or `with trace(log_dir):`) run one
profiler session at a time and write it where TensorBoard's profile plugin looks:
`log_dir/plugins/profile/<run>/<host>.xplane.pb` (with `<host>.trace.json.gz`).
`TraceAnnotation` and `StepTraceAnnotation` mark spans of Python on the timeline;
`annotate_function` marks every call of a function. `ProfileData` reads a saved
`.xplane.pb` back (planes, lines, events). `start_server(port)` lets TensorBoard or
`xprof` take traces on demand. `device_memory_profile()` is a pprof snapshot of the
live device buffers and executables.
"""
from __future__ import annotations

import functools
import gzip
import http.server
import json
import logging
import os
import pathlib
import threading
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

from jaxlib import _profile_data, _profiler, version as jaxlib_version

import plax
from plax_runtime import backends

__all__ = ["ProfileData", "ProfileEvent", "ProfileOptions", "ProfilePlane",
           "StepTraceAnnotation", "TraceAnnotation", "annotate_function",
           "device_memory_profile", "register_subprocess", "save_device_memory_profile",
           "start_server", "start_trace", "stop_server", "stop_trace", "trace"]

logger = logging.getLogger(__name__)

ProfileData = _profile_data.ProfileData
ProfileEvent = _profile_data.ProfileEvent
ProfilePlane = _profile_data.ProfilePlane
register_subprocess = _profiler.register_subprocess

PERFETTO_PORT = 9001  # where ui.perfetto.dev fetches a trace from the local machine


class ProfileOptions(_profiler.ProfileOptions):
    """What the profiler collects: `host_tracer_level`, `python_tracer_level`,
    `enable_hlo_proto`, `duration_ms`, `advanced_configuration`...

    Unlike JAX's, Python function calls are not traced unless asked for
    (`python_tracer_level = 1`): jaxlib 0.10.2's Python tracer sets a profile
    function on every thread of the process, and in long-running processes with
    many threads (a test worker) it was seen to stall the program for good."""

    def __init__(self):
        super().__init__()
        self.python_tracer_level = 0


class _Session:
    """The one trace in progress, if any."""

    def __init__(self):
        self.lock = threading.Lock()
        self.session: _profiler.ProfilerSession | None = None
        self.log_dir = ""
        self.perfetto_trace = False
        self.perfetto_link = False
        self.runs_before: set[str] = set()


_session = _Session()
_server: _profiler.ProfilerServer | None = None
_server_lock = threading.Lock()


def start_trace(log_dir: os.PathLike | str, create_perfetto_link: bool = False,
                create_perfetto_trace: bool = False,
                profiler_options: ProfileOptions | None = None) -> None:
    """Starts tracing host and device activity; `stop_trace` writes it to `log_dir`.

    Only one trace runs at a time: starting a second is a RuntimeError.
    `create_perfetto_trace` also writes `perfetto_trace.json.gz` beside the trace
    (for https://ui.perfetto.dev); `create_perfetto_link` implies it and, at
    `stop_trace`, prints a link and waits until Perfetto has fetched the trace.
    """
    if not isinstance(log_dir, (str, os.PathLike)):
        raise TypeError(f"start_trace: log_dir must be a str or os.PathLike, got "
                        f"{type(log_dir).__name__}")
    if profiler_options is not None and not isinstance(profiler_options,
                                                       _profiler.ProfileOptions):
        raise TypeError(f"start_trace: profiler_options must be a ProfileOptions, got "
                        f"{type(profiler_options).__name__}")
    with _session.lock:
        if _session.session is not None:
            raise RuntimeError("Profile has already been started. Only one profile may be "
                               "run at a time.")
        # Backends start first, so that their tracers (a TPU's, a GPU's) join the session.
        clients = backends.clients()
        _profiler.clear_metadata()
        _profiler.set_metadata("plax_version", plax.__version__)
        _profiler.set_metadata("jaxlib_version", jaxlib_version.__version__)
        for client in clients.values():
            _profiler.set_metadata(f"{client.platform}_version", client.platform_version)
        _session.log_dir = os.fspath(log_dir)
        _session.runs_before = _runs(_session.log_dir)
        _session.session = _profiler.ProfilerSession(profiler_options or ProfileOptions())
        _session.perfetto_link = bool(create_perfetto_link)
        _session.perfetto_trace = bool(create_perfetto_trace or create_perfetto_link)


def tracing() -> bool:
    """Whether a trace `start_trace` began is running."""
    return _session.session is not None


def stop_trace() -> None:
    """Stops the trace `start_trace` began and writes it to its `log_dir`;
    a RuntimeError if no trace is running."""
    with _session.lock:
        session = _session.session
        if session is None:
            raise RuntimeError("No profile started")
        _session.session = None
        try:
            session.stop_and_export(_session.log_dir)
            if _session.perfetto_trace:
                perfetto = _write_perfetto_trace(_session.log_dir, _session.runs_before)
                if _session.perfetto_link:
                    _serve_to_perfetto(perfetto)
        finally:
            _profiler.clear_metadata()


@contextmanager
def trace(log_dir: os.PathLike | str, create_perfetto_link: bool = False,
          create_perfetto_trace: bool = False,
          profiler_options: ProfileOptions | None = None):
    """`with trace(log_dir):` traces the block (see `start_trace`)."""
    start_trace(log_dir, create_perfetto_link, create_perfetto_trace, profiler_options)
    try:
        yield
    finally:
        stop_trace()


class TraceAnnotation(_profiler.TraceMe):
    """`with TraceAnnotation(name, **metadata):` shows the block as an event named
    `name` on the host timeline of a trace (it costs nearly nothing when none runs)."""


class StepTraceAnnotation(TraceAnnotation):
    """`with StepTraceAnnotation("train", step_num=i):` marks one step of a loop, so
    the profiler can break its analysis down by step."""

    def __init__(self, name: str, **kwargs: Any):
        super().__init__(name, _r=1, **kwargs)


def annotate_function(func: Callable, name: str | None = None, **decorator_kwargs: Any
                      ) -> Callable:
    """Wraps `func` so that each call is a `TraceAnnotation` named `name` (default:
    the function's qualified name)."""
    if not callable(func):
        raise TypeError(f"annotate_function expects a callable, got {type(func).__name__}")
    label = name or getattr(func, "__qualname__", None) or func.__name__

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with TraceAnnotation(label, **decorator_kwargs):
            return func(*args, **kwargs)
    return wrapper


def start_server(port: int, requires_backend: bool = True) -> _profiler.ProfilerServer:
    """Serves traces on demand on `port` (TensorBoard's "capture profile", `xprof`).
    One server at a time: a second is a ValueError."""
    global _server
    if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port < 65536:
        raise ValueError(f"start_server: port must be an int in [0, 65535], got {port!r}")
    with _server_lock:
        if _server is not None:
            raise ValueError("Only one profiler server can be active at a time.")
        if requires_backend:
            backends.clients()
        _server = _profiler.start_server(port)
        return _server


def stop_server() -> None:
    """Stops the server `start_server` started; a ValueError if none runs."""
    global _server
    with _server_lock:
        if _server is None:
            raise ValueError("No active profiler server.")
        _server = None  # the server stops when jaxlib's object is freed


def device_memory_profile(backend: str | None = None) -> bytes:
    """A snapshot of the device memory in use (live arrays and executables, with the
    Python stacks that allocated them), as a gzipped pprof protocol buffer."""
    return gzip.compress(backends.get_backend(backend).heap_profile())


def save_device_memory_profile(filename: os.PathLike | str, backend: str | None = None
                               ) -> None:
    """Writes `device_memory_profile(backend)` to `filename` (for `pprof`)."""
    profile = device_memory_profile(backend)
    with open(filename, "wb") as f:
        f.write(profile)


def _profile_root(log_dir: str) -> pathlib.Path:
    return pathlib.Path(log_dir) / "plugins" / "profile"


def _runs(log_dir: str) -> set[str]:
    root = _profile_root(log_dir)
    return {p.name for p in root.iterdir()} if root.is_dir() else set()


def _write_perfetto_trace(log_dir: str, runs_before: set[str]) -> pathlib.Path:
    """Writes `perfetto_trace.json.gz` in the run folder this trace created: its
    `trace.json.gz` without the `metadata` field, which Perfetto does not accept."""
    root = _profile_root(log_dir)
    new = [root / name for name in _runs(log_dir) - runs_before]
    run = max(new or root.iterdir(), key=os.path.getmtime)
    traces = sorted(run.glob("*.trace.json.gz"))
    if len(traces) != 1:
        raise ValueError(f"expected one *.trace.json.gz in {run}, found {len(traces)}")
    with gzip.open(traces[0], "rb") as f:
        events = json.load(f)
    events.pop("metadata", None)
    perfetto = run / "perfetto_trace.json.gz"
    with gzip.open(perfetto, "wb") as f:
        f.write(json.dumps(events).encode())
    return perfetto


def _serve_to_perfetto(path: pathlib.Path) -> None:
    """Prints a ui.perfetto.dev link to `path` and serves the file on the local port
    Perfetto fetches from, until it has fetched it."""
    wanted = "/" + path.name

    class Handler(http.server.SimpleHTTPRequestHandler):
        def end_headers(self):
            self.send_header("Access-Control-Allow-Origin", "*")
            super().end_headers()

        def do_GET(self):
            self.server.fetched = self.path == wanted
            super().do_GET()

        def log_message(self, format, *args):
            logger.debug(format, *args)

    handler = functools.partial(Handler, directory=str(path.parent))
    with http.server.HTTPServer(("127.0.0.1", PERFETTO_PORT), handler) as server:
        server.fetched = False
        port = server.server_address[1]
        print(f"Open URL in browser: https://ui.perfetto.dev/#!/?url=http://127.0.0.1:{port}"
              f"{wanted}", flush=True)
        while not server.fetched:
            server.handle_request()

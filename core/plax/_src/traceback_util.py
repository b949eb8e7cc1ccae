"""Traceback filtering: an error raised deep inside plax is shown from the user's code.

A public entry point (a jitted call, `grad(f)(x)`, `jnp.add`...) is wrapped with
`api_boundary`. When an exception leaves the outermost boundary, the frames of plax's
own packages (and of the `excluded_paths` other libraries add) are taken out of its
traceback (or marked hidden, for IPython), as `jax_traceback_filtering` says:

* `off`: the traceback is left as raised;
* `tracebackhide`: plax's frames get `__tracebackhide__ = True` (IPython, pytest hide them);
* `quiet_remove_frames`: plax's frames are removed and a note says how to get them back;
* `remove_frames`: plax's frames are removed, and the exception's `__cause__` is an
  `UnfilteredStackTrace` carrying the whole traceback;
* `auto` (the default): `tracebackhide` under IPython, else `quiet_remove_frames`.

Only the outermost boundary filters (`grad(jit(f))` filters once), and the exception
itself, its class and message are never changed.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import sys
import traceback
import types
from typing import Callable, TypeVar

from plax._src.config import config

MODES = ("off", "tracebackhide", "remove_frames", "quiet_remove_frames", "auto")

traceback_filtering = config.define_enum_state(
    "jax_traceback_filtering", list(MODES), "auto",
    "How tracebacks of errors raised inside plax are shown: 'off' keeps every frame; "
    "'tracebackhide' marks plax's frames hidden (IPython and pytest hide them); "
    "'remove_frames' removes them and chains the unfiltered traceback as the cause; "
    "'quiet_remove_frames' removes them and adds a note; 'auto' is 'tracebackhide' under "
    "IPython, else 'quiet_remove_frames'.")

# Top-level packages of plax's distributions: their frames are plax's, not the user's.
_PACKAGES = ("plax", "plax_stdlib", "plax_runtime", "plax_transforms", "plax_sharding",
             "plax_pallas", "plax_cuda12", "plax_tpu")

SIMPLIFIED_NOTE = ("For simplicity, plax has removed its internal frames from the traceback "
                   "of this exception. Set JAX_TRACEBACK_FILTERING=off (or "
                   "plax.config.update('jax_traceback_filtering', 'off')) to include them.")

_UNFILTERED_HEADER = ("The stack trace below includes plax's internal frames.\n"
                      "The preceding is the original exception that occurred, unmodified.\n"
                      "\n--------------------")


class UnfilteredStackTrace(Exception):
    """The `__cause__` that `remove_frames` chains: the original exception's message
    with its whole, unfiltered traceback."""


class SimplifiedTraceback(Exception):
    """Says that plax removed its internal frames from a traceback."""

    def __str__(self):
        return SIMPLIFIED_NOTE


UnfilteredStackTrace.__module__ = SimplifiedTraceback.__module__ = "plax.errors"


@functools.cache
def library_dirs() -> tuple[str, ...]:
    """The source directories of the plax packages, each ending in a separator (as
    given and with links resolved)."""
    dirs = []
    for name in _PACKAGES:
        spec = importlib.util.find_spec(name)
        for location in (spec.submodule_search_locations or ()) if spec else ():
            dirs.append(os.path.join(location, ""))
            dirs.append(os.path.join(os.path.realpath(location), ""))
    return tuple(dict.fromkeys(dirs))


def is_plax_file(filename: str) -> bool:
    """Whether `filename` is a source file of one of plax's packages."""
    return filename.startswith(library_dirs())


excluded_paths: list[str] = []
"""Where other libraries' sources are (path prefixes), whose frames tracebacks leave
out as plax's: a library appends its own (the `jax` alias's `register_exclusion` and
`_exclude_paths`, where flax and equinox add theirs)."""


def is_kept_frame(frame: types.FrameType) -> bool:
    """Whether tracebacks keep `frame`: it is neither plax's nor under `excluded_paths`."""
    return not frame.f_code.co_filename.startswith(library_dirs() + tuple(excluded_paths))


def filter_traceback(tb: types.TracebackType | None) -> types.TracebackType | None:
    """`tb` without plax's frames (a new chain; the frames are shared)."""
    out = None
    for frame, lineno in reversed(list(traceback.walk_tb(tb))):
        if is_kept_frame(frame):
            out = types.TracebackType(out, frame, frame.f_lasti, lineno)
    return out


def _callers(tb: types.TracebackType) -> types.TracebackType:
    """`tb` extended with the frames that called the boundary, up to the first run of
    module-level frames (so an interactive session's own frames stay out)."""
    out = tb
    reached_module = False
    for frame, lineno in traceback.walk_stack(tb.tb_frame.f_back):
        module_level = frame.f_code.co_name == "<module>"
        if reached_module and not module_level:
            break
        out = types.TracebackType(out, frame, frame.f_lasti, lineno)
        reached_module = reached_module or module_level
    return out


def mode() -> str:
    """The filtering mode in effect, with `auto` resolved."""
    value = traceback_filtering.value
    if value == "auto":
        ipython = sys.modules.get("IPython")
        in_ipython = ipython is not None and getattr(ipython, "get_ipython", lambda: None)()
        return "tracebackhide" if in_ipython else "quiet_remove_frames"
    return value


def _under_boundary(tb: types.TracebackType) -> bool:
    """Whether a boundary frame encloses `tb`'s first frame (so an outer one filters)."""
    frame = tb.tb_frame.f_back
    while frame is not None:
        if frame.f_code is _BOUNDARY_CODE:
            return True
        frame = frame.f_back
    return False


def _filter(e: BaseException) -> None:
    """Applies the mode in effect to `e`, which is leaving the outermost boundary."""
    how, tb = mode(), e.__traceback__
    if how == "off" or tb is None:
        return
    if how == "tracebackhide":
        for frame, _ in traceback.walk_tb(tb):
            if not is_kept_frame(frame):
                frame.f_locals["__tracebackhide__"] = True
        return
    e.with_traceback(filter_traceback(tb))
    if how == "quiet_remove_frames":
        note = "--------------------\n" + SIMPLIFIED_NOTE
        if note not in getattr(e, "__notes__", ()):
            e.add_note(note)
        return
    message = "".join(traceback.format_exception_only(type(e), e)).strip()
    unfiltered = UnfilteredStackTrace(f"{message}\n\n{_UNFILTERED_HEADER}")
    unfiltered.with_traceback(_callers(tb))
    unfiltered.__cause__, unfiltered.__context__ = e.__cause__, e.__context__
    unfiltered.__suppress_context__ = e.__suppress_context__
    e.__cause__, e.__context__ = unfiltered, None


F = TypeVar("F", bound=Callable)


def api_boundary(fun: F) -> F:
    """Wraps a public entry point so that errors raised below it are shown without
    plax's frames (see the module docstring). Boundaries nest: only the outermost one
    filters."""
    @functools.wraps(fun)
    def boundary(*args, **kwargs):
        __tracebackhide__ = True  # noqa: F841  (IPython and pytest read it)
        try:
            return fun(*args, **kwargs)
        except Exception as e:
            tb = e.__traceback__
            if tb is not None and not _under_boundary(tb):
                _filter(e)
            del tb
            raise
    return boundary  # type: ignore[return-value]


_BOUNDARY_CODE = api_boundary(lambda: None).__code__


def api_boundaries(namespace: dict, names=None) -> None:
    """Wraps, in place, the plain functions of a module's `namespace` (its public ones,
    or those in `names`) with `api_boundary`. A function is also replaced where it was
    defined, so that pickling it by reference (`module.qualname`) finds the wrapper."""
    for name in names if names is not None else list(namespace):
        value = namespace[name]
        if not name.startswith("_") and isinstance(value, types.FunctionType):
            wrapped = namespace[name] = api_boundary(value)
            home = sys.modules.get(value.__module__)
            if home is not None and getattr(home, value.__qualname__, None) is value:
                setattr(home, value.__qualname__, wrapped)

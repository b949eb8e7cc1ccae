"""`jax._src.traceback_util`: files whose frames a library hides from the tracebacks
it formats (equinox registers each of its modules and asks `include_frame`)."""
from __future__ import annotations

import os

PLAX_MODULE = None
_exclusions: list[str] = []


def register_exclusion(path: str) -> None:
    _exclusions.append(os.path.realpath(path))


def include_frame(frame) -> bool:
    """Whether `frame` (a frame object) is outside every registered file or folder."""
    filename = os.path.realpath(frame.f_code.co_filename)
    return not any(filename == p or filename.startswith(p + os.sep) for p in _exclusions)


def api_boundary(fun):
    """JAX marks where its API begins for traceback filtering; plax filters nothing."""
    return fun

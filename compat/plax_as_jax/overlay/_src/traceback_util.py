"""`jax._src.traceback_util`: the paths whose frames tracebacks leave out, which
libraries extend with their own (`register_exclusion`; flax adds and removes its
paths in `_exclude_paths` directly, equinox asks `include_frame`), and JAX's
`api_boundary` (flax wraps its transforms in it), all plax's own: plax's filtering
leaves out plax's frames and those under `_exclude_paths` (prefixes, as JAX's)."""
from __future__ import annotations

from plax.extend.traceback_util import (  # noqa: F401
    UnfilteredStackTrace,
    api_boundary,
    excluded_paths as _exclude_paths,
    is_kept_frame as include_frame,
)

PLAX_MODULE = None


def register_exclusion(path: str) -> None:
    """Leaves the frames of files under `path` out of tracebacks, as plax's own."""
    _exclude_paths.append(path)

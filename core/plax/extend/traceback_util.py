"""Traceback filtering for packages built on plax: wrap a public entry point with
`api_boundary` (or a module's functions with `api_boundaries(globals())`) and errors
raised below it are shown from the caller's code, without plax's frames, as the option
`jax_traceback_filtering` says. A library hides its own frames the same way by adding
its source paths (prefixes) to `excluded_paths`; `is_kept_frame` says whether a frame
is shown."""
from plax._src.traceback_util import (  # noqa: F401
    SimplifiedTraceback, UnfilteredStackTrace, api_boundaries, api_boundary, excluded_paths,
    filter_traceback, is_kept_frame, is_plax_file)

__all__ = ["SimplifiedTraceback", "UnfilteredStackTrace", "api_boundaries", "api_boundary",
           "excluded_paths", "filter_traceback", "is_kept_frame", "is_plax_file"]

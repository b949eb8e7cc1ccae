"""Traceback filtering for packages built on plax: wrap a public entry point with
`api_boundary` (or a module's functions with `api_boundaries(globals())`) and errors
raised below it are shown from the caller's code, without plax's frames, as the option
`jax_traceback_filtering` says."""
from plax._src.traceback_util import (  # noqa: F401
    SimplifiedTraceback,
    UnfilteredStackTrace,
    api_boundaries,
    api_boundary,
    filter_traceback,
    is_plax_file,
)

__all__ = ["SimplifiedTraceback", "UnfilteredStackTrace", "api_boundaries", "api_boundary",
           "filter_traceback", "is_plax_file"]

"""What tells cached calls apart: per-argument signatures and the config they ran under.

`arg_signature` describes each argument as (shape, dtype, weak_type) — in C++ when
plax-runtime's extension is built. `trace_context` is the tuple of values of every
config state that changes what tracing produces (x64, default device, matmul
precision...). It is read from jaxlib's C++ registry of thread-local states, which
holds plax's states and — only if JAX was imported into the same process — JAX's
too; those extra entries make keys a little more specific, never wrong.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from jaxlib import weakref_lru_cache as _weakref_lru_cache
from jaxlib._jax import config as _jaxlib_config

from plax.extend import config
from plax.extend.core import get_aval, register_cache

try:  # the C++ signature of a call's arguments (plax-runtime's extension)
    from plax_runtime._fastpath import arg_signature as _cpp_arg_signature
except ImportError:  # a source checkout without the built extension
    _cpp_arg_signature = None

trace_context = _jaxlib_config.trace_context
trace_context_names = _jaxlib_config.trace_context_names


def cached_on_jaxpr(make: Callable, maxsize: int = 1024) -> Callable:
    """`make(closed, *args)` memoized weakly on the ClosedJaxpr `closed` (its identity),
    by the other (hashable) arguments and by the trace context; `plax.clear_caches`
    empties it. A transformation of a traced call made again with the same arguments
    (vmap of a jit, an eager `grad(jit(f))` each step) returns the same Jaxpr, so its
    lowering and executable are reused and nothing inside is traced again."""
    cache = _weakref_lru_cache.weakref_lru_cache(trace_context, make, maxsize)
    register_cache(cache.cache_clear)
    return cache


def arg_signature(args: Sequence[Any]) -> tuple:
    """One hashable (shape, dtype, weak_type) description per argument."""
    if _cpp_arg_signature is not None:
        return _cpp_arg_signature(args, config.enable_x64.value)
    return tuple(get_aval(x) for x in args)

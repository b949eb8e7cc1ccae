"""Explaining tracing-cache misses (`jax_explain_cache_misses`).

A miss is compared with the closest earlier call of the same function, and the
differences are logged at WARNING level in the user's terms: which argument
changed shape, dtype or weak type, which static argument changed value, whether
the pytree structure or a config option changed.
"""
from __future__ import annotations

import logging
from typing import Any, NamedTuple, Sequence

from plax.extend.core import TracingDebugInfo
from plax_transforms.signature import trace_context_names

logger = logging.getLogger("plax_transforms.jit")


class TraceKey(NamedTuple):
    """What the tracing cache distinguishes calls of one function by."""
    context: tuple  # values of the trace-affecting config states
    in_tree: Any
    in_avals: tuple
    static_args: tuple  # ((position, value), ...)
    static_kwargs: tuple  # ((name, value), ...)


def _differences(old: TraceKey, new: TraceKey, dbg: TracingDebugInfo) -> list[str]:
    reasons = []
    if old.context != new.context:
        names = trace_context_names()
        for name, a, b in zip(names, old.context, new.context):
            if a != b:
                reasons.append(f"config option {name} changed from {a!r} to {b!r}")
    if old.in_tree != new.in_tree:
        reasons.append(f"the pytree structure of the arguments changed from {old.in_tree} "
                       f"to {new.in_tree}")
    elif old.in_avals != new.in_avals:
        for i, (a, b) in enumerate(zip(old.in_avals, new.in_avals)):
            if a != b:
                name = dbg.safe_arg_name(i) or f"argument {i}"
                what = ("weak type" if (a.shape, a.dtype) == (b.shape, b.dtype)
                        else "type")
                reasons.append(f"{what} of {name} changed from {_describe(a)} to "
                               f"{_describe(b)}")
    for kind, old_statics, new_statics in (("static argument", old.static_args,
                                            new.static_args),
                                           ("static keyword argument", old.static_kwargs,
                                            new.static_kwargs)):
        old_map, new_map = dict(old_statics), dict(new_statics)
        for k in sorted(set(old_map) | set(new_map), key=str):
            if k not in old_map or k not in new_map:
                reasons.append(f"{kind} {k!r} was {'added' if k in new_map else 'removed'}")
            elif not _same(old_map[k], new_map[k]):
                reasons.append(f"{kind} {k!r} changed from {old_map[k]!r} to {new_map[k]!r}")
    return reasons


def _same(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:  # an __eq__ that does not return a bool: treat as changed
        return False


def _describe(aval) -> str:
    return aval.str_short() + (" (weakly typed)" if getattr(aval, "weak_type", False) else "")


def explain_trace_miss(dbg: TracingDebugInfo, new: TraceKey,
                       previous: Sequence[TraceKey]) -> None:
    """Log why `new` missed the tracing cache, given the keys cached for the function."""
    if not previous:
        reasons = ["never seen this function with any arguments before"]
    else:
        candidates = [_differences(old, new, dbg) for old in previous]
        reasons = min(candidates, key=len) or [
            "an identical call was evicted from the cache (or a traced value was closed over)"]
    logger.warning("TRACING CACHE MISS at %s for jit because:\n  %s",
                   dbg.func_src_info, "\n  ".join(reasons))

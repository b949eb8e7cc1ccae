"""Explaining cache misses (`jax_explain_cache_misses`).

A tracing miss is compared with the closest earlier call of the same function, and
the differences are logged at WARNING level in the user's terms: which argument
changed shape, dtype or weak type, which static argument changed value, whether
the pytree structure or a config option changed. A trace lowered again says which
argument's sharding, which option or how many devices changed; a lowering
compiled again, which devices it now runs on.
"""
from __future__ import annotations

import logging
from typing import Any, NamedTuple, Sequence

from plax.extend import config
from plax.extend.core import TracingDebugInfo
from plax.extend.traceback_util import excluded_paths, is_plax_file
from plax_transforms.signature import trace_context_names

logger = logging.getLogger("plax_transforms.jit")


class TraceKey(NamedTuple):
    """What the tracing cache distinguishes calls of one function by."""
    context: tuple  # values of the trace-affecting config states
    in_tree: Any
    in_avals: tuple
    static_args: tuple  # ((position, value), ...)
    static_kwargs: tuple  # ((name, value), ...)
    manual_axis_types: tuple  # of the avals (in a shard_map body), which their == ignores


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
    elif (old.in_avals, old.manual_axis_types) != (new.in_avals, new.manual_axis_types):
        for i, (a, b) in enumerate(zip(old.in_avals, new.in_avals)):
            if a != b or old.manual_axis_types[i] != new.manual_axis_types[i]:
                name = dbg.safe_arg_name(i) or f"argument {i}"
                what = ("weak type" if (a.shape, a.dtype) == (b.shape, b.dtype)
                        and _is_weak(a) != _is_weak(b) else "type")
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


def _is_weak(aval) -> bool:
    return getattr(aval, "weak_type", False)


def _describe(aval) -> str:
    return aval.str_short() + (" (weakly typed)" if _is_weak(aval) else "")


def explain_trace_miss(dbg: TracingDebugInfo, new: TraceKey,
                       previous: Sequence[TraceKey]) -> None:
    """Log why `new` missed the tracing cache, given the keys cached for the function: a
    function of the user's, as JAX does (not one of plax's own jits, as the
    `jnp.multiply` that `x * 2` traces, nor one of a library hiding its frames)."""
    location = dbg.func_src_info.partition(" at ")[2]  # "file:line", or "" if unknown
    if location and (is_plax_file(location) or location.startswith(tuple(excluded_paths))):
        return
    if not previous:
        reasons = ["never seen this function with any arguments before"]
    else:
        candidates = [_differences(old, new, dbg) for old in previous]
        reasons = min(candidates, key=len) or [
            "an identical call was evicted from the cache (or a traced value was closed over)"]
    logger.warning("TRACING CACHE MISS at %s for jit because:\n  %s",
                   dbg.func_src_info, "\n  ".join(reasons))


# --- lowering and compilation misses (plax goes beyond JAX here) ---------------------------

def _describe_layout(layout) -> str:
    """A lowering-key layout (see `executing.abstract_layout`) in words."""
    if layout is None:
        return "unspecified (the partitioner chooses)"
    if isinstance(layout, str):
        return f"memory kind {layout}"
    kind, sdy = layout
    dims = ", ".join("None" if not d.axes else
                     repr(d.axes[0]) if len(d.axes) == 1 else repr(d.axes)
                     for d in sdy.dims)
    mesh = ("one device" if sdy.mesh_shape is None else
            "mesh " + ", ".join(f"{n}={s}" for n, s in sdy.mesh_shape))
    return f"({dims}) over {mesh}" + ("" if kind == "device" else f" in {kind} memory")


def _lowering_differences(old: tuple, new: tuple, dbg) -> list[str]:
    _, _, old_donated, old_keep, old_platform, old_ctx, old_n, (old_in, old_out) = old
    _, _, new_donated, new_keep, new_platform, new_ctx, new_n, (new_in, new_out) = new
    reasons = []
    if old_platform != new_platform:
        reasons.append(f"the platform changed from {old_platform} to {new_platform}")
    if old_n != new_n:
        reasons.append(f"the computation now spans {new_n} devices (before {old_n})")
    if old_ctx != new_ctx:
        names = config.jit_key_context_names()
        reasons += [f"config option {n} changed from {a!r} to {b!r}"
                    for n, a, b in zip(names, old_ctx, new_ctx) if a != b]
    if old_donated != new_donated or old_keep != new_keep:
        reasons.append("donate_argnums/donate_argnames or keep_unused changed")
    for i, (a, b) in enumerate(zip(old_in, new_in)):
        if a != b:
            name = (dbg.safe_arg_name(i) if dbg is not None else "") or f"argument {i}"
            reasons.append(f"the sharding of {name} changed from {_describe_layout(a)} to "
                           f"{_describe_layout(b)}")
    for i, (a, b) in enumerate(zip(old_out, new_out)):
        if a != b:
            reasons.append(f"out_shardings of output {i} changed from {_describe_layout(a)} "
                           f"to {_describe_layout(b)}")
    return reasons


def explain_lowering_miss(name: str, closed, key: tuple, cached_keys: Sequence[tuple]) -> None:
    """Log why a Jaxpr already lowered once is lowered again (a sharding, the device
    count, a config option...). A first lowering of a new trace is not a miss to
    explain: the tracing miss said why."""
    previous = [k for k in cached_keys if k[0] == key[0] and k[1] == name and k != key]
    if not previous:
        return
    dbg = closed.jaxpr.debug_info
    candidates = [_lowering_differences(old, key, dbg) for old in previous]
    reasons = min(candidates, key=len) or ["an identical lowering was evicted from the cache"]
    logger.warning("LOWERING CACHE MISS for jit(%s) because:\n  %s", name,
                   "\n  ".join(reasons))


def explain_compile_miss(name: str, lowering_id: int, devices, cached_keys) -> None:
    """Log why a lowered computation is compiled again: it runs on other devices."""
    before = [k[1] for k in cached_keys if k[0] == lowering_id and k[1] != devices]
    if before:
        logger.warning("COMPILATION CACHE MISS for jit(%s) because:\n  the arguments are now "
                       "on devices %s (compiled before for %s)", name,
                       [d.id for d in devices], " and ".join(str([d.id for d in b])
                                                             for b in before))


def explain_pgle_recompile(name: str, runs: int, percentile: int, profile: bytes) -> None:
    """Log that a computation is compiled again for PGLE, with its runs' profile."""
    logger.warning("COMPILATION CACHE MISS for jit(%s) because:\n  PGLE: recompiling with "
                   "the profile of its first %d runs (%d bytes, percentile %d of the runs' "
                   "latencies)", name, runs, len(profile), percentile)

"""The C++ fast path of cached `jit` calls: what it consults, and why a call missed it.

`plax_runtime._fastpath.JitCache` does a cached call in one C++ call (flatten,
signature, lookup, execute, wrap, unflatten). Every call it hands to the Python
path is counted per reason — `fastpath_stats(f)` reads the counts — and, under
`plax.config.update("plax_log_fastpath_misses", True)`, each reason is logged once
per function at WARNING level, but for a call inside a transformation (traced, as every
jit met there is: the `jnp.add` of each traced `x + 1` too). Nothing turns the fast
path off: the next call with a known key is a hit again.

Arrays' `+ - * /` and their unary operators (`-x`, `+x`, `abs(x)`, `~x`) become
`_fastpath.Operator`s here: outside every transformation an Array (meeting an Array
or a Python scalar) goes straight from the operator to its jitted NumPy function's
fast path, with no Python frame in between.
"""
from __future__ import annotations

import functools
import logging
from typing import Any

from plax.extend import config, tree_util
from plax.extend.core import EVAL_TRACE, current_trace
from plax.extend.sharding import concrete_mesh
from plax_runtime import _fastpath
from plax_runtime.array import Array
from plax_stdlib.operators import JITTED_OPERATORS, JITTED_UNARY_OPERATORS
from plax_transforms.signature import trace_context

logger = logging.getLogger(__name__)

log_fastpath_misses = config.config.define_bool_state(
    "jax_log_fastpath_misses", False,
    "Log, once per jitted function and reason, why a call took the Python slow path "
    "instead of the C++ fast path (at WARNING level).")

JitCache = _fastpath.JitCache
Executor = _fastpath.Executor


def miss_reason(key: tuple, entries: dict) -> str:
    """Why `key` (in_tree, statics, signature, trace context, mesh) is not among the
    keys of `entries`: the first part in which it differs from the closest one."""
    if not entries:
        return "first call"
    in_tree, statics, signature, context, mesh = key
    same_tree = [k for k in entries if k[0] == in_tree and k[1] == statics]
    if not same_tree:
        return "new pytree structure or static arguments"
    same_avals = [k for k in same_tree if _avals(k[2]) == _avals(signature)]
    if not same_avals:
        return "new argument shapes, dtypes or weak types"
    same_places = [k for k in same_avals if k[2] == signature]
    if not same_places:
        return "an argument sharding, device or commitment not seen before"
    if all(k[4] != mesh for k in same_places):  # (its abstract mesh is config too)
        return "another mesh in context"
    return "a config state changed"


def _avals(signature: tuple) -> tuple:
    return tuple(s[:3] for s in signature)


def _log_miss(name: str, reason: str) -> None:
    if reason != "called inside a transformation":
        logger.warning("jit(%s): a call took the slow path: %s", name, reason)


def fastpath_stats(jitted: Any) -> dict[str, Any]:
    """`{"hits": n, "slow_path": {reason: n}}` of a jitted function's calls."""
    return jitted._fast_stats()


_fastpath.configure(
    registry_flatten=tree_util.registry.flatten, disable_jit=config.disable_jit,
    enable_x64=config.enable_x64, log_misses=log_fastpath_misses,
    current_trace=current_trace, eval_trace=EVAL_TRACE, trace_context=trace_context,
    concrete_mesh=concrete_mesh, miss_reason=miss_reason, log_miss=_log_miss)


def _jitted_operator(name: str):
    """The jitted NumPy function behind an operator, asked on its first call: plax.numpy
    is imported then, not with this module, since its import makes `plax.jit` functions
    (and `plax.jit` is this module's package)."""
    from plax_stdlib.numpy import array_methods
    return array_methods.jitted(name)


def _install_fast_operators() -> None:
    operators = [(f"__{dunder}__", name, False) for dunder, name in JITTED_UNARY_OPERATORS.items()]
    for dunder, name in JITTED_OPERATORS.items():
        operators += [(f"__{dunder}__", name, False), (f"__r{dunder}__", name, True)]
    for attr, name, reflected in operators:
        generic = getattr(Array, attr)
        if not isinstance(generic, _fastpath.Operator):
            resolve = functools.partial(_jitted_operator, name)
            setattr(Array, attr, _fastpath.Operator(resolve, generic, reflected))


_install_fast_operators()

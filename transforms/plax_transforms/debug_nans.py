"""`jax_debug_nans` / `jax_debug_infs`: raise FloatingPointError where a NaN (or an
infinity) first appears.

An eager primitive's outputs are checked right away, naming the primitive and the
user's line that applied it. A jitted computation's outputs are checked after it
runs; when one is special, its Jaxpr is re-run one equation at a time (entering
nested `jit`s) to name the first primitive that produced the value and the line
of the user's code that applied it, as JAX does.

Both options are in the trace context, so the checking callers are cached apart
from the plain ones: while the options are off, calls pay nothing.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
from jaxlib import _jax

from plax.extend import config
from plax.extend.core import EVAL_TRACE, ClosedJaxpr, Literal, set_current_trace, user_frame

_JIT_ID = "plax.jit"  # nested jits are replayed equation by equation too


def enabled() -> bool:
    return config.debug_nans.value or config.debug_infs.value


def _special(outs: Sequence[Any]) -> str | None:
    """'nan' or 'inf' if an inexact output holds one that the options look for."""
    nans, infs = config.debug_nans.value, config.debug_infs.value
    for out in outs:
        dtype = getattr(out, "dtype", None)
        if dtype is None or not (np.issubdtype(dtype, np.inexact)
                                 or dtype.name == "bfloat16"):
            continue
        value = np.asarray(out)
        if nans and np.isnan(value).any():
            return "nan"
        if infs and np.isinf(value).any():
            return "inf"
    return None


def _error(kind: str, what: str, where: str) -> FloatingPointError:
    name = "invalid value (nan)" if kind == "nan" else "divide by zero or overflow (inf)"
    return FloatingPointError(f"{name} encountered in {what}{' at ' + where if where else ''}"
                              f" (jax_debug_{kind}s is on)")


def checked_primitive(call: Callable, primitive) -> Callable:
    """An eager primitive's caller that checks the outputs it returns."""
    def run(args):
        outs = call(args)
        kind = _special(outs)
        if kind is not None:
            raise _error(kind, primitive.name, user_frame(_jax.Traceback.get_traceback()))
        return outs
    return run


def checked_jit(call: Callable, closed: ClosedJaxpr, name: str) -> Callable:
    """A jitted computation's caller that checks its outputs and, on a special value,
    finds the equation that produced it."""
    def run(flat_args):
        outs = call(flat_args)
        kind = _special(outs)
        if kind is not None:
            _replay(closed, list(flat_args), f"jit({name})")
            raise _error(kind, f"jit({name})", "") from None  # not reproduced op by op
        return outs
    return run


def _replay(closed: ClosedJaxpr, args: list, where: str) -> None:
    """Evaluate `closed` equation by equation; raise at the first special output."""
    jaxpr = closed.jaxpr
    env: dict[int, Any] = {}

    def read(atom):
        return atom.val if isinstance(atom, Literal) else env[id(atom)]

    for var, value in zip(jaxpr.constvars, closed.consts):
        env[id(var)] = value
    # The inputs a computation was called with may skip pruned arguments; they line up
    # with the Jaxpr's inputs, which is what jit passes.
    for var, value in zip(jaxpr.invars, args):
        env[id(var)] = value
    for eqn in jaxpr.eqns:
        ins = [read(a) for a in eqn.invars]
        if eqn.primitive.id == _JIT_ID:
            inner = eqn.params["jaxpr"]
            _replay(inner, ins, f"jit({eqn.params['name']})")
        with config.debug_nans(False), config.debug_infs(False), \
                set_current_trace(EVAL_TRACE):
            outs = eqn.primitive.bind(*ins, **eqn.params)
        outs = outs if eqn.primitive.multiple_results else [outs]
        kind = _special(outs)
        if kind is not None:
            raise _error(kind, f"{eqn.primitive.name} (in {where})", user_frame(eqn.source_info))
        for var, value in zip(eqn.outvars, outs):
            env[id(var)] = value

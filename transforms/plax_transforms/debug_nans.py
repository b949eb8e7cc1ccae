"""`jax_debug_nans` / `jax_debug_infs`: raise FloatingPointError where a NaN (or an
infinity) first appears, as JAX does.

An eager primitive's outputs are checked right away. A jitted computation's outputs
are checked after it runs; when one is special, it says so and runs its de-optimized
version (the Python function on the same arguments, or its Jaxpr one equation at a
time), whose eager primitives and nested jits are checked in turn: the first one to
make the value raises, and the traceback goes through the user's line that applied it.

Both options are in the trace context, so the checking callers are cached apart
from the plain ones: while the options are off, calls pay nothing.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from plax.extend import config
from plax.extend.core import EVAL_TRACE, ClosedJaxpr, eval_jaxpr, set_current_trace

# What JAX prints before it runs a jitted function de-optimized (it says nan for an inf too)
_DEOPTIMIZING = ("Invalid nan value encountered in the output of a jax.jit function. "
                "Calling the de-optimized version.")


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


def checked_primitive(call: Callable, primitive) -> Callable:
    """An eager primitive's caller that checks the outputs it returns."""
    def run(args):
        outs = call(args)
        kind = _special(outs)
        if kind is not None:
            raise FloatingPointError(f"invalid value ({kind}) encountered in {primitive.name}")
        return outs
    return run


def checked_jit(call: Callable, closed: ClosedJaxpr, name: str,
                deoptimized: Callable[[], Any] | None = None) -> Callable:
    """A jitted computation's caller that checks its outputs and, on a special value,
    runs it de-optimized: `deoptimized()` (the function on this call's arguments) or
    else `closed` one equation at a time, on the same checks."""
    def run(flat_args):
        outs = call(flat_args)
        kind = _special(outs)
        if kind is not None:
            print(_DEOPTIMIZING)
            try:
                if deoptimized is not None:
                    deoptimized()
                else:
                    with set_current_trace(EVAL_TRACE):
                        eval_jaxpr(closed.jaxpr, closed.consts, *flat_args)
            except (FloatingPointError, ZeroDivisionError) as e:
                raise e from None
            raise FloatingPointError(
                f"invalid value ({kind}) encountered in jit({name}), but not when it ran "
                "de-optimized (without jit): the compiled program made it (XLA's rewrites "
                "can), or it is a constant among the inputs or outputs; running the "
                "function without jit may avoid it") from None
        return outs
    return run

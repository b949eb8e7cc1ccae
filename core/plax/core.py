"""`plax.core`: the kernel names JAX 0.10.2 keeps public in `jax.core` (the rest of
the kernel's API is `plax.extend.core`)."""
from __future__ import annotations

from typing import Any

import plax
from plax.extend.core import (AbstractValue, EVAL_TRACE, Literal, ShapedArray, Trace, Tracer,
                              Var, eval_jaxpr, max_dim, min_dim, set_current_trace)

Atom = Var | Literal  # what an equation takes: a variable or a literal
ParamDict = dict[str, Any]
Value = Any


def eval_context():
    """A context in which operations run eagerly, outside every trace."""
    return set_current_trace(EVAL_TRACE)


def ensure_compile_time_eval():
    """`plax.ensure_compile_time_eval`."""
    return plax.ensure_compile_time_eval()


__all__ = ["AbstractValue", "Atom", "ParamDict", "ShapedArray", "Trace", "Tracer", "Value",
           "ensure_compile_time_eval", "eval_context", "eval_jaxpr", "max_dim", "min_dim"]

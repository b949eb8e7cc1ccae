"""`ensure_compile_time_eval`: compute on concrete values right away, even while
tracing.

Inside the context, a primitive none of whose operands is a tracer runs eagerly
(so `jnp.sin(2.0)` inside `jit` is an Array, usable in Python control flow); one
applied to a tracer goes to the trace that was current on entry, as without it.
"""
from __future__ import annotations

import contextlib

from plax.extend.core import EVAL_TRACE, Trace, Tracer, current_trace, set_current_trace


class CompileTimeEvalTrace(Trace):
    """Evaluates primitives on concrete values; hands the others to `parent`."""

    def __init__(self, parent: Trace):
        super().__init__()
        self.parent = parent

    def describe(self):
        return f"ensure_compile_time_eval inside {self.parent.describe()}"

    def process_primitive(self, primitive, args, params):
        target = self.parent if any(isinstance(a, Tracer) for a in args) else EVAL_TRACE
        with set_current_trace(target):
            return primitive.bind(*args, **params)


@contextlib.contextmanager
def ensure_compile_time_eval():
    """A context in which operations on concrete values are evaluated eagerly."""
    parent = current_trace()
    if parent is EVAL_TRACE or isinstance(parent, CompileTimeEvalTrace):
        yield
        return
    trace = CompileTimeEvalTrace(parent)
    try:
        with set_current_trace(trace):
            yield
    finally:
        trace.invalidate()

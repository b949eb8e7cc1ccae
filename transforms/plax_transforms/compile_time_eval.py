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
    """A context in which operations on concrete values run eagerly, even while a
    function is being traced.

    Inside `jit`, computations on constants (not on the function's arguments)
    then give concrete arrays that Python can use, e.g. to build a static
    shape or choose a branch; operations on traced values are staged as usual.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> @plax.jit
        ... def f(x):
        ...     with plax.ensure_compile_time_eval():
        ...         n = int(jnp.sum(jnp.arange(4)))  # a Python int, at trace time
        ...     return x * n
        >>> f(1.0)
        Array(6., dtype=float32, weak_type=True)
    """
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

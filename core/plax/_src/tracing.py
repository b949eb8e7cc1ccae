"""Traces and tracers: how applying a primitive reaches the active transformation.

There is always one *current trace* per thread. `Primitive.bind` hands the
primitive and its arguments to it. A transformation runs user code with its own
trace made current; its `process_primitive` interprets the primitive (staging it,
differentiating it, batching it...) and, to compute, binds primitives again with
its parent trace made current. Outside every transformation the current trace is
the `EvalTrace`, which executes primitives eagerly.

A trace is invalidated when its transformation finishes, so a tracer that leaked
out (stored in a global, returned through a side channel) raises when used.
"""
from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from plax._src import array_methods, dtypes, plugins
from plax._src.abstract import AbstractValue, ShapedArray
from plax._src.errors import (
    ConcretizationTypeError, TracerArrayConversionError, TracerBoolConversionError,
    TracerIntegerConversionError, UnexpectedTracerError)

if TYPE_CHECKING:
    from plax._src.primitive import Primitive


class Trace:
    """An interpreter for primitives; subclasses define `process_primitive`."""

    def __init__(self):
        self._valid = True

    def process_primitive(self, primitive: Primitive, args: Sequence[Any], params: dict):
        raise NotImplementedError

    def is_valid(self) -> bool:
        return self._valid

    def invalidate(self) -> None:
        self._valid = False

    def describe(self) -> str:
        """Says, for error messages, which transformation this trace belongs to."""
        return type(self).__name__

    def concretization_error(self, tracer: "Tracer", what: str) -> Exception:
        cls = TracerBoolConversionError if what == "bool" else (
            TracerIntegerConversionError if what in ("int", "index") else ConcretizationTypeError)
        return cls(
            f"Attempted {what} conversion of a traced array with shape "
            f"{tracer.aval.str_short()} while tracing {self.describe()}. The value is not "
            "known in Python at trace time. Use plax.lax.cond/select/where instead of "
            "Python control flow, or mark the argument static.")

    def __repr__(self):
        return self.describe()


class EvalTrace(Trace):
    """The trace outside every transformation: primitives run eagerly."""

    def process_primitive(self, primitive, args, params):
        for arg in args:
            if isinstance(arg, Tracer):
                raise escaped_tracer_error(arg, primitive)
        impl = primitive.get_rule("impl")
        if impl is not None:
            return impl(*args, **params)
        return _eager_dispatch()(primitive, args, params)

    def describe(self):
        return "eager evaluation"


_eager = None


def _eager_dispatch():
    """The default impl of every primitive: compile and run its one equation
    (provided by plax-transforms through the `plax.interpreters` entry points)."""
    global _eager
    if _eager is None:
        _eager = plugins.resolve("plax.interpreters", "eager_dispatch")
    return _eager


def escaped_tracer_error(tracer: "Tracer", primitive: Primitive | None = None) -> Exception:
    """The UnexpectedTracerError for a tracer used outside its transformation,
    naming where it was made, so a leak is reported rather than mis-traced."""
    where = f" as an input to '{primitive.name}'" if primitive is not None else ""
    state = ("whose transformation has already finished" if not tracer._trace.is_valid()
             else "outside the transformation that created it")
    return UnexpectedTracerError(
        f"Encountered an unexpected tracer {tracer!r}{where}: it belongs to "
        f"{tracer._trace.describe()} {state}. This usually means a traced value was "
        "stored outside the function (a global, an attribute, a closure) and used "
        "later. Return it from the transformed function instead.")


class _State(threading.local):
    def __init__(self):
        self.trace: Trace = EVAL_TRACE


EVAL_TRACE = EvalTrace()
"""The trace under every other: applying a primitive here evaluates it."""
_state = _State()


def current_trace() -> Trace:
    """The innermost trace of this thread: `Primitive.bind` hands applications to it."""
    return _state.trace


@contextlib.contextmanager
def set_current_trace(trace: Trace):
    """Make `trace` current for the block (per thread)."""
    prev, _state.trace = _state.trace, trace
    try:
        yield trace
    finally:
        _state.trace = prev


class Tracer:
    """A value seen by a transformation in place of an array."""
    __slots__ = ("_trace",)

    def __init__(self, trace: Trace):
        self._trace = trace

    @property
    def aval(self) -> AbstractValue:
        raise NotImplementedError

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)
    weak_type = property(lambda self: self.aval.weak_type)

    def to_concrete_value(self):
        """The concrete value behind this tracer, or None when tracing abstractly."""
        return None

    def _concrete(self, what: str):
        value = self.to_concrete_value()
        if value is None:
            raise self._trace.concretization_error(self, what)
        return value

    def __bool__(self):
        return bool(self._concrete("bool"))

    def __int__(self):
        return int(self._concrete("int"))

    def __index__(self):
        return int(self._concrete("index"))

    def __float__(self):
        return float(self._concrete("float"))

    def __complex__(self):
        return complex(self._concrete("complex"))

    def __array__(self, dtype=None, copy=None):
        raise TracerArrayConversionError(
            f"The numpy.ndarray conversion method __array__() was called on a traced "
            f"array with shape {self.aval.str_short()} while tracing {self._trace.describe()}. "
            "Use plax.numpy functions instead of numpy ones on traced values.")

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object (a 0-d traced array)")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __hash__(self):
        raise TypeError(f"unhashable type: traced array {self.aval.str_short()}")

    def __repr__(self):
        return f"Traced<{self.aval.str_short()}>with<{self._trace.describe()}>"


array_methods.install(Tracer)


# --- abstract values of Python and NumPy values ----------------------------------

_PY_SCALAR_KINDS = {bool: "bool", int: "int", float: "float", complex: "complex"}


def get_aval(x) -> AbstractValue:
    """The abstract value of an array-like: a tracer, plax Array, NumPy value or scalar."""
    if isinstance(x, Tracer):
        return x.aval
    aval = getattr(x, "aval", None)
    if isinstance(aval, AbstractValue):
        return aval
    if type(x) in _PY_SCALAR_KINDS:
        dtype = dtypes.canonicalize_dtype(dtypes.dtype(x))
        if type(x) is int:
            _check_int_fits(x, dtype)
        return ShapedArray((), dtype, weak_type=type(x) is not bool)
    if isinstance(x, (np.ndarray, np.generic)):
        return ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype))
    shape, dtype = getattr(x, "shape", None), getattr(x, "dtype", None)
    if shape is not None and dtype is not None:  # ShapeDtypeStruct-likes
        return ShapedArray(shape, dtypes.canonicalize_dtype(dtype),
                           getattr(x, "weak_type", False))
    raise TypeError(f"Value {x!r} of type {type(x).__name__} is not a valid plax type "
                    "(expected an array, a NumPy value or a Python scalar)")


def _check_int_fits(x: int, dtype: np.dtype) -> None:
    info = np.iinfo(dtype)
    if not info.min <= x <= info.max:
        raise OverflowError(f"Python int {x} is too large to convert to {dtype.name}")


def is_python_scalar(x) -> bool:
    """Whether `x` is a Python bool, int, float or complex (weakly typed in arithmetic)."""
    return type(x) in _PY_SCALAR_KINDS

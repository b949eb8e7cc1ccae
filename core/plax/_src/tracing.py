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
import gc
import threading
import weakref
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
from jaxlib import _jax

from plax._src import array_methods, config, dtypes, plugins
from plax._src.abstract import AbstractValue, ShapedArray, SymbolicDimension
from plax._src.sharding import Sharding
from plax._src.traceback_util import is_plax_file
from plax._src.errors import (
    ConcretizationTypeError, TracerArrayConversionError, TracerBoolConversionError,
    TracerIntegerConversionError, UnexpectedTracerError)

if TYPE_CHECKING:
    from plax._src.primitive import Primitive


class Trace:
    """An interpreter for primitives; subclasses define `process_primitive`."""

    # With `jax_check_tracer_leaks`: (weak reference, creation traceback) per tracer.
    _tracers: list | None = None

    def __init__(self):
        self._valid = True
        if config.check_tracer_leaks.value:
            self._tracers = []

    def process_primitive(self, primitive: Primitive, args: Sequence[Any], params: dict):
        raise NotImplementedError

    def is_valid(self) -> bool:
        return self._valid

    # What identifies this transformation (JAX's deprecated `trace.main`, which
    # libraries compare with `is`): the trace itself.
    main = property(lambda self: self)

    def invalidate(self) -> None:
        self._valid = False

    @contextlib.contextmanager
    def suspended(self):
        """While the block runs, this trace's tracers count as escaped: code that
        computes on an enclosing trace (a custom rule run on concrete values) must not
        meet them."""
        was, self._valid = self._valid, False
        try:
            yield
        finally:
            self._valid = was

    def describe(self) -> str:
        """Says, for error messages, which transformation this trace belongs to."""
        return type(self).__name__

    def concretization_error(self, tracer: "Tracer", what: str) -> Exception:
        """A tracing error of JAX's class for using `tracer`'s (abstract) value where
        Python needs a concrete one: `what` is the conversion (`bool`, `int`, `index`,
        `item`...) or a member only concrete arrays have (`committed`, `devices()`).
        It says which value was abstract, where, why, and what to do instead."""
        shape, context = tracer.aval.str_short(), f"while tracing {self.describe()}"
        if what == "bool":
            cls, head = TracerBoolConversionError, (
                f"Attempted boolean conversion of a traced array with shape {shape} {context}: "
                "its value is abstract (not concrete), so Python cannot branch on it.")
            fix = ("Use plax.lax.cond, plax.lax.select or plax.numpy.where for value-dependent "
                   "control flow, or mark the argument static (static_argnums).")
        elif what == "index":
            cls, head = TracerIntegerConversionError, (
                f"The __index__() method was called on a traced array with shape {shape} "
                f"{context}: its value is abstract (not concrete), so it cannot index a Python "
                "sequence, bound a range or size a shape.")
            fix = ("Index arrays with plax.numpy instead of Python sequences, use "
                   "plax.lax.fori_loop/scan for loops, or mark the argument static.")
        elif what in CONCRETE_ONLY:
            cls, head = ConcretizationTypeError, (
                f"Abstract tracer value encountered where a concrete value is expected: "
                f"`x.{what}` needs a concrete array, not a traced array with shape {shape} "
                f"{context}.")
            fix = "Use it outside the transformed function, on an array it returns."
        else:
            cls, head = ConcretizationTypeError, (
                f"Abstract tracer value encountered where a concrete value is expected: the "
                f"`{what}` conversion of a traced array with shape {shape} {context}.")
            fix = (f"Keep the value an array (use x.astype(...) rather than {what}(x)), or "
                   "mark the argument static so that its value is concrete.")
        origin = self.value_origin(tracer)
        return cls(f"{head}{' ' + origin if origin else ''}\n{fix}")

    def value_origin(self, tracer: "Tracer") -> str:
        """Why `tracer` is abstract, in the user's terms (the arguments it depends on)."""
        return ""


class EvalTrace(Trace):
    """The trace outside every transformation: primitives run eagerly."""

    def process_primitive(self, primitive, args, params):
        for arg in args:
            if isinstance(arg, (Tracer, SymbolicDimension)):  # one check on the eager path
                if isinstance(arg, Tracer):
                    raise escaped_tracer_error(arg, primitive)
                arg.as_value()  # raises: a symbolic size has no value outside export
        impl = primitive.get_rule("impl")
        if impl is not None:
            return impl(*args, **params)
        return _eager_dispatch(primitive, args, params)

    def describe(self):
        return "eager evaluation"


_eager_dispatch = plugins.seam("eager_dispatch")
"""The default impl of every primitive: compile and run its one equation (provided by
plax-transforms through the `plax.interpreters` entry points)."""


def check_no_leaks(trace: Trace) -> None:
    """With `jax_check_tracer_leaks`, after `trace`'s transformation has finished (and
    dropped its own references): an UnexpectedTracerError if any of its tracers is still
    referenced, naming where each was created."""
    if not trace._tracers:
        return
    gc.collect()
    leaked = [(t, tb) for ref, tb in trace._tracers if (t := ref()) is not None]
    trace._tracers = None
    if not leaked:
        return
    lines = "\n".join(f"  {t!r} created at {user_frame(tb) or '<unknown>'}" for t, tb in leaked[:5])
    more = f"\n  ... and {len(leaked) - 5} more" if len(leaked) > 5 else ""
    raise UnexpectedTracerError(
        f"Leaked {len(leaked)} tracer(s) of {trace.describe()}: they are still referenced "
        f"after the transformation finished (jax_check_tracer_leaks is on):\n{lines}{more}\n"
        "A value computed inside the transformed function was stored outside it (a "
        "global, an attribute, a list, a closure). Return it instead.")


def user_frame(traceback) -> str:
    """`file:line:column (function)` of the innermost frame of `traceback` outside plax,
    as JAX shows a source (no column where it is 0); "" when there is none."""
    codes, lastis = traceback.raw_frames() if traceback is not None else ((), ())
    for code, lasti in zip(codes, lastis):  # innermost first
        if not is_plax_file(code.co_filename):
            line, column, _, _ = _jax.Traceback.code_addr2location(code, lasti)
            return f"{code.co_filename}:{line}{f':{column}' * bool(column)} ({code.co_qualname})"
    return ""


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


class set_current_trace:
    """Make `trace` current for the block (per thread). A class, not a generator:
    transformations enter one for each primitive they apply."""

    def __init__(self, trace: Trace):
        self.trace = trace

    def __enter__(self):
        self.prev, _state.trace = _state.trace, self.trace
        return self.trace

    def __exit__(self, *exc_info):
        _state.trace = self.prev


def _scalar_conversion(convert: type, what: str, kinds: str):
    """`int(x)`, `float(x)`... of a tracer: NumPy's check comes first (it holds whatever
    the values are), then the value must be concrete."""
    def method(self):
        if self.aval.shape:
            raise TypeError(f"Only scalar arrays can be converted to Python {kinds}; got a "
                            f"traced array of shape {self.aval.shape}")
        return convert(self._concrete(what))
    return method


class Tracer:
    """A value seen by a transformation in place of an array."""
    __slots__ = ("_trace", "__weakref__")

    def __init__(self, trace: Trace):
        self._trace = trace
        if trace._tracers is not None:
            trace._tracers.append((weakref.ref(self), _jax.Traceback.get_traceback()))

    @property
    def aval(self) -> AbstractValue:
        raise NotImplementedError

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)
    weak_type = property(lambda self: self.aval.weak_type)
    itemsize = property(lambda self: self.aval.dtype.itemsize)
    nbytes = property(lambda self: self.aval.size * self.aval.dtype.itemsize)

    def to_concrete_value(self):
        """The concrete value behind this tracer, or None when tracing abstractly."""
        return None

    def _concrete(self, what: str):
        value = self.to_concrete_value()
        if value is None:
            raise self._trace.concretization_error(self, what)
        return value

    def __bool__(self):
        if self.aval.size != 1:
            what = ("an empty array" if self.aval.size == 0
                    else "an array with more than one element")
            raise ValueError(f"The truth value of {what} is ambiguous. Use a.any() or a.all()")
        return bool(np.asarray(self._concrete("bool")).reshape(()))

    __int__ = _scalar_conversion(int, "int", "ints")
    __index__ = _scalar_conversion(int, "index", "ints")
    __float__ = _scalar_conversion(float, "float", "floats")
    __complex__ = _scalar_conversion(complex, "complex", "complex numbers")

    def item(self, *args):
        return np.asarray(self._concrete("item")).item(*args)

    def __array__(self, dtype=None, copy=None):
        origin = self._trace.value_origin(self)
        raise TracerArrayConversionError(
            f"The numpy.ndarray conversion method __array__() was called on a traced array "
            f"with shape {self.aval.str_short()} while tracing {self._trace.describe()}: its "
            f"value is abstract, so NumPy cannot compute with it.{' ' + origin if origin else ''}"
            "\nUse plax.numpy functions instead of numpy ones on traced values.")

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object (a 0-d traced array)")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return iter(self._unstack())  # each row by index_in_dim, as JAX's

    def __reversed__(self):
        return iter(self[::-1])

    def __hash__(self):
        raise TypeError(f"unhashable type: traced array {self.aval.str_short()}")

    def __repr__(self):  # a staged value's, as JAX's (transformations' tracers say more)
        return f"JitTracer({self.aval})"


array_methods.install(Tracer)

# The members of jax.Array that need its data on devices. A tracer's raise JAX's errors:
# ConcretizationTypeError, or AttributeError for those that code probes with hasattr.
CONCRETE_ONLY = ("committed addressable_shards global_shards is_fully_addressable "
                 "is_fully_replicated traceback devices() is_deleted() delete() tolist() "
                 "tobytes() __dlpack__() on_device_size_in_bytes() addressable_data() "
                 "unsafe_buffer_pointer()").split()
_NOT_ON_TRACERS = ("sharding", "device", "block_until_ready", "copy_to_host_async")


def _concrete_only(what: str):
    def fail(self, *args, **kwargs):
        raise self._trace.concretization_error(self, what)
    return fail if what.endswith("()") else property(fail)


def _not_on_tracers(name: str):
    def fail(self):
        raise AttributeError(
            f"The '{name}' attribute is not available on a traced array with shape "
            f"{self.aval.str_short()}, only on concrete arrays (plax.typeof(x) is a traced "
            "array's type, with its sharding).")
    return property(fail)


for _what in CONCRETE_ONLY:
    setattr(Tracer, _what.removesuffix("()"), _concrete_only(_what))
for _name in _NOT_ON_TRACERS:
    setattr(Tracer, _name, _not_on_tracers(_name))


# --- abstract values of Python and NumPy values ----------------------------------

_PY_SCALAR_KINDS = {bool: "bool", int: "int", float: "float", complex: "complex"}
# (Python scalar type or NumPy scalar dtype, x64 mode) -> the aval of such scalars
_SCALAR_AVALS: dict[tuple[Any, bool], ShapedArray] = {}


def get_aval(x) -> AbstractValue:
    """The abstract value of an array-like: a tracer, plax Array, NumPy value or scalar."""
    if isinstance(x, Tracer):
        return x.aval
    aval = getattr(x, "aval", None)
    if isinstance(aval, AbstractValue):
        return aval
    if type(x) in _PY_SCALAR_KINDS or isinstance(x, np.generic):
        key = (type(x), config.enable_x64.value)
        if (aval := _SCALAR_AVALS.get(key)) is None:  # immutable: one per type and x64 mode
            dtype = x.dtype if isinstance(x, np.generic) else dtypes.dtype(x)
            # Python numbers are weakly typed; bools and NumPy scalars are not
            aval = _SCALAR_AVALS[key] = ShapedArray((), dtypes.canonicalize_dtype(dtype),
                                                    weak_type=type(x) in (int, float, complex))
        if type(x) is int:
            _check_int_fits(x, aval.dtype)
        return aval
    if isinstance(x, np.ndarray):
        reject_masked(x)
        return ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype))
    if isinstance(x, SymbolicDimension):  # export: a size used as a number, as an int is
        return get_aval(1)
    shape, dtype = getattr(x, "shape", None), getattr(x, "dtype", None)
    if shape is not None and dtype is not None:  # ShapeDtypeStruct-likes
        # A sharding over explicit mesh axes is part of the type, as for an Array.
        sharding = getattr(x, "sharding", None)
        typed = sharding._type_sharding(len(shape)) if isinstance(sharding, Sharding) else None
        mat = getattr(x, "manual_axis_type", None)  # an aval's varying manual axes, kept
        return ShapedArray(shape, dtypes.canonicalize_dtype(dtype, allow_extended=True),
                           getattr(x, "weak_type", False), sharding=typed,
                           **({"manual_axis_type": mat} if mat is not None else {}))
    raise TypeError(f"Value {x!r} of type {type(x).__name__} is not a valid plax type "
                    "(expected an array, a NumPy value or a Python scalar)")


def reject_masked(x) -> None:
    """ValueError for a NumPy masked array, as JAX's: as an array it would lose its mask
    (an argument, an operand, or a constant closed over by a traced function)."""
    if isinstance(x, np.ma.MaskedArray):
        raise ValueError("NumPy masked arrays are not supported as plax values; use "
                         "x.filled() to make a standard NumPy array")


def _check_int_fits(x: int, dtype: np.dtype) -> None:
    info = np.iinfo(dtype)
    if not info.min <= x <= info.max:
        raise OverflowError(f"Python int {x} is too large to convert to {dtype.name}")


def is_python_scalar(x) -> bool:
    """Whether `x` is a Python bool, int, float or complex (weakly typed in arithmetic)."""
    return type(x) in _PY_SCALAR_KINDS

"""`plax.ref`: mutable array references (JAX 0.10's `jax.ref`).

A `Ref` is a mutable cell holding an array. `ref[idx]` reads, `ref[idx] = v`,
`ref[idx] += v` write; `get`/`set`/`swap`/`addupdate` are the same as functions.

How a reference is represented depends on where it is used:

* a `Ref` used by the trace it was made in — eagerly, or inside the `grad`/`vmap`/
  `jvp` that called `new_ref` — is a plain Python cell: reads and writes are
  ordinary array operations on its current value (so differentiating or batching a
  function that writes to a reference it created just works);
* inside a staged function (`jit`, a `scan`/`while`/`cond` body, `make_jaxpr`) a
  reference is a value of type `AbstractRef`, and reads and writes are the `ref.*`
  primitives below, with a state effect so they are never pruned. `jit` removes
  them right after tracing (`ref_discharge`): the Jaxpr it compiles takes each
  reference's value as an input and returns its final value, which the call writes
  back. Nothing downstream of `jit` (lowering, autodiff of the jit) sees a reference.

A reference used under a transformation it was not made in (a concrete `Ref`
written with a differentiated or batched value) raises JAX's errors, as does a
reference returned from `jit` or passed to it twice.
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

import plax
from plax.extend.core import (
    BATCHING,
    EVAL_TRACE,
    Effect,
    JVP,
    AbstractValue,
    Primitive,
    StagingTrace,
    Tracer,
    current_trace,
    get_aval,
    stage_flat,
)
from plax_stdlib import numpy as jnp
from plax_stdlib.lax.conversion import convert_element_type
from plax_stdlib.numpy.slice_index import Slice
from plax_transforms.partial_eval import PartialEvalTrace


# Reading, writing or creating a reference: kept by dead-code elimination, and the
# mark by which `jit` knows a Jaxpr uses references at any depth. (Unordered: no
# reference operation is ever lowered; the discharged form orders them by data.)
REF_EFFECT = Effect("RefEffect")


class AbstractRef(AbstractValue):
    """The type of a mutable reference to an array of type `inner_aval`."""
    __slots__ = ("inner_aval",)

    def __init__(self, inner_aval):
        self.inner_aval = inner_aval

    shape = property(lambda self: self.inner_aval.shape)
    dtype = property(lambda self: self.inner_aval.dtype)
    ndim = property(lambda self: len(self.inner_aval.shape))
    size = property(lambda self: self.inner_aval.size)

    def str_short(self) -> str:
        return f"Ref{{{self.inner_aval.str_short()}}}"

    def _getitem(self, ref, index):
        return get(ref, index)

    def _setitem(self, ref, index, value):
        set(ref, index, value)  # noqa: A001 - JAX's name

    def __eq__(self, other):
        return type(other) is AbstractRef and self.inner_aval == other.inner_aval

    def __hash__(self):
        return hash((AbstractRef, self.inner_aval))

    def __repr__(self):
        return self.str_short()


class Ref:
    """A mutable reference to an array (see the module docstring)."""
    __slots__ = ("_value", "_home", "__weakref__")

    def __init__(self, value, home):
        self._value = value
        self._home = home  # the trace whose values it holds

    @property
    def aval(self) -> AbstractRef:
        return AbstractRef(get_aval(self._value))

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __getitem__(self, index):
        return get(self, index)

    def __setitem__(self, index, value):
        set(self, index, value)  # noqa: A001

    def __repr__(self):
        value = self._value
        if isinstance(value, Tracer):
            return f"Ref(traced {get_aval(value).str_short()})"
        return f"Ref({np.asarray(value)!r})".replace("array(", "", 1).replace("))", ")")


def get_aval_str(x) -> str:
    return get_aval(x).str_short()


def is_ref(x) -> bool:
    """Whether `x` is a reference: a `Ref`, or a traced value of type `AbstractRef`."""
    return isinstance(x, Ref) or (isinstance(x, Tracer) and isinstance(x.aval, AbstractRef))


# --- indices: static parts in the parameters, array parts as operands ----------------

_DYNAMIC = "dynamic"


def split_index(index) -> tuple[tuple, list]:
    """`ref[index]`'s index as (hashable spec, dynamic operands): ints, slices with
    static bounds and `...` stay in the spec; arrays and traced ints are operands."""
    if index is None:
        index = ()
    if not isinstance(index, tuple):
        index = (index,)
    spec, dynamic = [], []
    for entry in index:
        if entry is Ellipsis:
            spec.append(entry)
        elif isinstance(entry, slice):
            bounds = (entry.start, entry.stop, entry.step)
            if not all(b is None or isinstance(b, (int, np.integer)) for b in bounds):
                raise TypeError(f"reference indexing: slice bounds must be static ints, got "
                                f"{entry!r}; use lax.dynamic_slice on the value read")
            spec.append(("slice", *(None if b is None else int(b) for b in bounds)))
        elif isinstance(entry, (int, np.integer)) and not isinstance(entry, bool):
            spec.append(("int", int(entry)))
        elif isinstance(entry, Slice):  # plax.ds: a traced start is an operand
            start = None if entry.is_dynamic_start else int(entry.start)
            spec.append(("dslice", start, entry.size, entry.stride))
            if start is None:
                dynamic.append(entry.start)
        elif entry is None or isinstance(entry, (bool, np.bool_)):
            raise TypeError(f"reference indexing does not support {entry!r} in an index")
        else:
            spec.append(_DYNAMIC)
            dynamic.append(entry)
    return tuple(spec), dynamic


def join_index(spec: tuple, dynamic) -> tuple:
    operands = iter(dynamic)

    def entry(s):
        if s is _DYNAMIC:
            return next(operands)
        if not isinstance(s, tuple):
            return s
        if s[0] == "slice":
            return slice(*s[1:])
        if s[0] == "dslice":
            return Slice(next(operands) if s[1] is None else s[1], s[2], s[3])
        return s[1]
    return tuple(entry(s) for s in spec)


def _whole(spec: tuple) -> bool:
    return spec in ((), (Ellipsis,))


def read_value(value, spec: tuple, dynamic):
    return value if _whole(spec) else value[join_index(spec, dynamic)]


def written_value(value, spec: tuple, dynamic, update, accumulate: bool = False):
    """`value` with `update` written (or added, if `accumulate`) at the index."""
    if _whole(spec):
        return value + update if accumulate else update
    at = value.at[join_index(spec, dynamic)]
    return at.add(update) if accumulate else at.set(update)


@functools.lru_cache(maxsize=4096)
def _indexed_aval(inner, spec: tuple, dynamic_avals: tuple):
    closed = stage_flat(lambda value, *dynamic: [read_value(value, spec, dynamic)],
                        [inner, *dynamic_avals])
    return inner.update(shape=closed.out_avals[0].shape, weak_type=False)


def indexed_aval(inner, spec: tuple, dynamic_avals):
    """The aval of `ref[index]` for a reference to `inner` (NumPy indexing rules)."""
    return inner if _whole(spec) else _indexed_aval(inner, spec, tuple(dynamic_avals))


def _describe_spec(spec: tuple) -> str:
    return "()" if not spec else repr(spec)


# --- the primitives ---------------------------------------------------------------------

new_ref_p = Primitive("ref.new")
get_p = Primitive("ref.get")
swap_p = Primitive("ref.swap")
addupdate_p = Primitive("ref.addupdate", multiple_results=True)
freeze_p = Primitive("ref.freeze")
REF_PRIMITIVES = frozenset({new_ref_p, get_p, swap_p, addupdate_p, freeze_p})

for _p in REF_PRIMITIVES:
    _p.define_rule("effects", lambda **_: (REF_EFFECT,))


def _check_ref_aval(aval, what: str) -> AbstractRef:
    if not isinstance(aval, AbstractRef):
        raise TypeError(f"{what} expects a mutable array reference (plax.new_ref), got a "
                        f"value of type {aval.str_short()}")
    return aval


new_ref_p.def_abstract_eval(lambda aval: AbstractRef(aval))
new_ref_p.def_impl(lambda value: Ref(jnp.array(value), EVAL_TRACE))


@get_p.def_abstract_eval
def _get_abstract_eval(ref_aval, *dynamic_avals, spec):
    ref_aval = _check_ref_aval(ref_aval, "ref.get")
    return indexed_aval(ref_aval.inner_aval, spec, dynamic_avals)


get_p.def_impl(lambda ref, *dynamic, spec: read_value(ref._value, spec, dynamic))


def _check_update(op: str, ref_aval, value_aval, spec, dynamic_avals) -> None:
    ref_aval = _check_ref_aval(ref_aval, f"ref.{op}")
    expected = indexed_aval(ref_aval.inner_aval, spec, dynamic_avals)
    if value_aval.shape != expected.shape:
        raise ValueError(f"Invalid shape for `{op}`. Ref shape: {ref_aval.shape}. Expected "
                         f"shape: {expected.shape}. Value shape: {value_aval.shape}. Index: "
                         f"{_describe_spec(spec)}.")
    if np.dtype(value_aval.dtype) != np.dtype(ref_aval.dtype):
        raise ValueError(f"Invalid dtype for `{op}`. Ref dtype: {np.dtype(ref_aval.dtype)}. "
                         f"Value dtype: {np.dtype(value_aval.dtype)}.")


@swap_p.def_abstract_eval
def _swap_abstract_eval(ref_aval, value_aval, *dynamic_avals, spec):
    _check_update("swap", ref_aval, value_aval, spec, dynamic_avals)
    return indexed_aval(ref_aval.inner_aval, spec, dynamic_avals)


@swap_p.def_impl
def _swap_impl(ref, value, *dynamic, spec):
    old = read_value(ref._value, spec, dynamic)
    ref._value = written_value(ref._value, spec, dynamic, value)
    return old


@addupdate_p.def_abstract_eval
def _addupdate_abstract_eval(ref_aval, value_aval, *dynamic_avals, spec):
    _check_update("addupdate", ref_aval, value_aval, spec, dynamic_avals)
    return []


@addupdate_p.def_impl
def _addupdate_impl(ref, value, *dynamic, spec):
    ref._value = written_value(ref._value, spec, dynamic, value, accumulate=True)
    return []


freeze_p.def_abstract_eval(lambda ref_aval: _check_ref_aval(ref_aval, "freeze").inner_aval)
freeze_p.def_impl(lambda ref: ref._value)


def _differentiated_write(primals, tangents, **_):
    raise TypeError(
        f"performing a set/swap operation with a differentiated value on a "
        f"non-differentiated array reference of type {get_aval(primals[0]).str_short()}. "
        "Move the array reference to be an argument of the differentiated function, or "
        "create it inside that function?")


def _batched_write(axis_data, args, dims, **_):
    raise TypeError(
        f"performing a set/swap operation with vmapped value on an unbatched array "
        f"reference of type {get_aval(args[0]).str_short()}. Create the array reference "
        "inside the vmapped function?")


for _p in (swap_p, addupdate_p):
    _p.define_rule(JVP, _differentiated_write)
    _p.define_rule(BATCHING, _batched_write)


def _batched_read(axis_data, args, dims, *, spec):
    if dims[0] is not None:
        raise TypeError("vmap over a mutable array reference is not supported; create the "
                        "reference inside the vmapped function")
    whole = get_p.bind(args[0], spec=())
    out = plax.vmap(lambda *dynamic: read_value(whole, spec, dynamic), in_axes=tuple(dims[1:]),
               axis_size=axis_data.size)(*args[1:])
    return out, 0


get_p.define_rule(BATCHING, _batched_read)


# --- the Python API ---------------------------------------------------------------------

def _staged(trace) -> bool:
    return isinstance(trace, StagingTrace) and not isinstance(trace, PartialEvalTrace)


def new_ref(init_val: Any, *, memory_space: Any = None, kind: str | None = None) -> Ref:
    """A new mutable reference holding (a copy of) `init_val`."""
    if memory_space is not None:
        raise NotImplementedError("new_ref: memory_space is not supported (plax keeps "
                                  "references in device memory)")
    if isinstance(init_val, Ref) or is_ref(init_val):
        raise TypeError("new_ref: the initial value must be an array, not a reference")
    trace = current_trace()
    if trace is EVAL_TRACE or _staged(trace):
        return new_ref_p.bind(init_val)
    return Ref(jnp.asarray(init_val), trace)  # a cell of this transformation's values


def empty_ref(ty, memory_space: Any = None) -> Ref:
    """A new reference of `ty`'s shape and dtype (plax fills it with zeros)."""
    shape, dtype = getattr(ty, "shape", None), getattr(ty, "dtype", None)
    if shape is None or dtype is None:
        raise TypeError(f"empty_ref: expected a type with shape and dtype (e.g. a "
                        f"ShapeDtypeStruct), got {ty!r}")
    return new_ref(jnp.zeros(shape, dtype), memory_space=memory_space)


def _check_is_ref(ref, what: str) -> None:
    if not is_ref(ref):
        raise TypeError(f"{what} expects a mutable array reference (plax.new_ref), got "
                        f"{type(ref).__name__}")


def _local(ref) -> bool:
    """Whether `ref` is a cell used by the trace that made it."""
    return isinstance(ref, Ref) and ref._home is current_trace() and not _staged(ref._home)


def get(ref, idx=None):
    """`ref[idx]` (the whole value for `idx=None` or `...`)."""
    _check_is_ref(ref, "ref.get")
    spec, dynamic = split_index(idx)
    if _local(ref):
        return read_value(ref._value, spec, dynamic)
    return get_p.bind(ref, *dynamic, spec=spec)


def _update_operand(op: str, ref, idx, value):
    spec, dynamic = split_index(idx)
    value_aval = get_aval(value)
    ref_dtype = np.dtype(get_aval(ref).dtype)
    if getattr(value_aval, "weak_type", False) and np.dtype(value_aval.dtype) != ref_dtype:
        value = convert_element_type(value, ref_dtype)
    elif not isinstance(value, Tracer) and not hasattr(value, "aval"):
        value = jnp.asarray(value)
    _check_update(op, get_aval(ref), get_aval(value), spec,
                  [get_aval(d) for d in dynamic])
    return spec, dynamic, value


def swap(ref, idx, value, _function_name: str = "ref_swap"):
    """Write `value` at `ref[idx]`; → the value it replaces."""
    _check_is_ref(ref, "ref.swap")
    spec, dynamic, value = _update_operand("swap", ref, idx, value)
    if _local(ref):
        old = read_value(ref._value, spec, dynamic)
        ref._value = written_value(ref._value, spec, dynamic, value)
        return old
    return swap_p.bind(ref, value, *dynamic, spec=spec)


def set(ref, idx, value) -> None:  # noqa: A001 - JAX's name
    """`ref[idx] = value`."""
    swap(ref, idx, value, "ref_set")


def addupdate(ref, idx, x) -> None:
    """`ref[idx] += x`, as one accumulation."""
    _check_is_ref(ref, "ref.addupdate")
    spec, dynamic, x = _update_operand("addupdate", ref, idx, x)
    if _local(ref):
        ref._value = written_value(ref._value, spec, dynamic, x, accumulate=True)
        return
    addupdate_p.bind(ref, x, *dynamic, spec=spec)


def freeze(ref) -> Any:
    """The reference's current value, as an array (the reference is not used again)."""
    _check_is_ref(ref, "freeze")
    if _local(ref):
        return ref._value
    return freeze_p.bind(ref)


def free_ref(ref) -> None:
    """Declare that `ref` is not used again (plax releases its buffer with the `Ref`)."""
    _check_is_ref(ref, "free_ref")


__all__ = ["AbstractRef", "Ref", "addupdate", "empty_ref", "free_ref", "freeze", "get",
           "new_ref", "set", "swap"]

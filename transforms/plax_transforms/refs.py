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
  reference's value as an input and returns its final value (its buffer donated to
  it, as JAX lowers references), which the call writes back. Nothing downstream of
  `jit` (lowering, autodiff of the jit) sees a reference; `jit(f).trace` shows the
  Jaxpr as traced, references and all;
* a reference passed to `vmap` with an axis (`in_axes`) is batched: one reference
  per example, its batch dimension where the axis was. Reads are per example;
  writes read the whole reference, update each example and write it back.

A reference used under a transformation it was not made in (a concrete `Ref`
written with a differentiated value, or an unbatched one written with a batched
value) raises JAX's errors, as does a reference returned from `jit` or passed to it
twice.
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

import plax
from plax.extend.batching import move_to
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
from plax_stdlib import lax
from plax_stdlib.lax.conversion import convert_element_type
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

    def to_tangent_aval(self):
        """A reference's tangents are arrays of its contents' tangent type: what
        differentiating through its reads and writes sees."""
        return self.inner_aval.to_tangent_aval()

    def _getitem(self, ref, index):
        return get(ref, index)

    def _setitem(self, ref, index, value):
        set(ref, index, value)  # noqa: A001 - JAX's name

    def _at(self, ref):
        return _ViewMaker(ref)

    def __eq__(self, other):
        return type(other) is AbstractRef and self.inner_aval == other.inner_aval

    def __hash__(self):
        return hash((AbstractRef, self.inner_aval))

    def __repr__(self):  # JAX spells the dtype out here, not in Jaxprs
        inner = self.inner_aval
        return f"Ref{{{inner.str_short(np.dtype(inner.dtype).name)}}}"


class _RefType(type):
    """`isinstance(x, Ref)` is also true of a tracer of a reference (a `Ref` argument
    inside `jit`, say), as with JAX's `Ref`."""

    def __instancecheck__(cls, instance) -> bool:
        return super().__instancecheck__(instance) or (
            isinstance(instance, Tracer) and isinstance(instance.aval, AbstractRef))


class Ref(metaclass=_RefType):
    """A mutable reference to an array, made by `plax.new_ref` (or
    `plax.empty_ref`).

    Read it with indexing (`ref[...]` for the whole value, `ref[i]`,
    `ref[1:3]`) and write it with indexed assignment (`ref[...] = v`,
    `ref[i] += 1`), also inside `jit`: a jitted function that writes to a
    reference it is passed updates it for the caller (the reference's buffer is
    donated to the call and replaced by its final value). `ref.shape`,
    `ref.dtype` and `ref.ndim` describe the value; `plax.freeze` turns it into
    an array.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> ref = plax.new_ref(jnp.zeros((2, 2)))
        >>> ref[0, 1] = 3.0
        >>> ref[...] += 1.0
        >>> ref.shape, ref[...]
        ((2, 2), Array([[1., 4.],
               [1., 1.]], dtype=float32))
    """
    __slots__ = ("_value", "_home", "_exclusive", "__weakref__")

    def __init__(self, value, home, exclusive: bool = False):
        self._value = value
        self._home = home  # the trace whose values it holds
        self._exclusive = exclusive

    def _read(self, spec: tuple, dynamic):
        if _whole(spec):
            self._exclusive = False
        return read_value(self._value, spec, dynamic)

    def _write(self, spec: tuple, dynamic, update, accumulate: bool = False) -> None:
        self._value = written_value(self._value, spec, dynamic, update, accumulate)
        self._exclusive = accumulate or not _whole(spec)  # else the user's array itself

    def _store(self, value, exclusive: bool) -> None:
        self._value, self._exclusive = value, exclusive

    def _consume(self):
        """The value for a call that donates its buffer (a copy unless held alone)."""
        if not self._exclusive:
            self._value, self._exclusive = plax.numpy.array(self._value, copy=True), True
        return self._value

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

    at = property(lambda self: _ViewMaker(self))

    def __repr__(self):
        value = self._value
        if isinstance(value, Tracer):
            return f"Ref(traced {get_aval(value).str_short()})"
        return "Ref" + repr(plax.numpy.asarray(value))[len("Array"):]  # JAX's: its Array's repr

    def unsafe_buffer_pointer(self) -> int:
        """The address of the reference's device buffer (it stays while jitted calls
        write the reference in place)."""
        return self._value.unsafe_buffer_pointer()


class _ViewMaker:
    __slots__ = ("ref",)

    def __init__(self, ref):
        self.ref = ref

    def __getitem__(self, index) -> "RefView":
        return RefView(self.ref, index)


class RefView:
    """`ref.at[index]`: the part of a reference that `index` picks, itself usable as a
    reference (read, written, viewed again), each access going to `ref`."""
    __slots__ = ("ref", "index")

    def __init__(self, ref, index):
        spec, dynamic = ref_index(ref, index)
        self.ref, self.index = ref, join_index(spec, dynamic)

    @property
    def aval(self) -> AbstractRef:
        spec, dynamic = split_index(self.index)
        inner = self.ref.aval.inner_aval
        return AbstractRef(indexed_aval(inner, spec, [get_aval(d) for d in dynamic]))

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)
    at = property(lambda self: _ViewMaker(self))

    def __getitem__(self, index):
        value = get(self.ref, self.index)
        spec, _ = split_index(index)
        return value if _whole(spec) else value[index]

    def __setitem__(self, index, value):
        spec, _ = split_index(index)
        if not _whole(spec):
            value = get(self.ref, self.index).at[index].set(value)
        set(self.ref, self.index, value)

    def __repr__(self):
        return f"RefView({self.aval.str_short()}, index={self.index!r})"


def get_aval_str(x) -> str:
    """`x`'s type as JAX's messages write a reference's, its dtype spelled out
    (`Ref{float32[]}`; Jaxprs print `Ref{f32[]}`)."""
    return repr(get_aval(x))


def is_ref(x) -> bool:
    """Whether `x` is a reference: a `Ref`, or a traced value of type `AbstractRef`."""
    return isinstance(x, Ref)


def is_ref_object(x) -> bool:
    """Whether `x` is a `Ref` object itself, not a tracer of a reference (which
    `isinstance(x, Ref)` also accepts)."""
    return type.__instancecheck__(Ref, x)


# --- indices: static parts in the parameters, array parts as operands ----------------

_DYNAMIC = "dynamic"


class IndexSpec(tuple):
    """An index's static spec (a tuple, equal to and hashed as one) that prints as JAX
    prints reference indices: `[...]`, `[1:3]`, `[0,:]`; `*` stands for an operand."""
    __slots__ = ()

    def __str__(self):
        if _whole(self):
            return "[...]"
        return "[" + ",".join(_entry_text(e) for e in self) + "]"

    __repr__ = __str__


def _entry_text(entry) -> str:
    if entry is Ellipsis:
        return "..."
    if entry is _DYNAMIC:
        return "*"
    kind, *rest = entry
    if kind == "int":
        return str(rest[0])
    if kind == "dslice":
        start, size, stride = rest
        return f"ds({'*' if start is None else start},{'*' if size is None else size}" + (
            f",{stride})" if stride != 1 else ")")
    start, stop, step = ("" if b is None else str(b) for b in rest)
    return f"{start}:{stop}" + (f":{step}" if step else "")


WHOLE = IndexSpec()


def split_index(index) -> tuple[tuple, list]:
    """`ref[index]`'s index as (hashable spec, dynamic operands): ints, slices with
    static bounds and `...` stay in the spec; arrays and traced ints are operands (a
    `plax.ds`'s traced start, then its traced size: None in the spec)."""
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
        elif isinstance(entry, _slice_class()):  # plax.ds: traced start, size are operands
            start = None if entry.is_dynamic_start else int(entry.start)
            size = None if entry.is_dynamic_size else entry.size
            spec.append(("dslice", start, size, entry.stride))
            dynamic += [x for x, s in ((entry.start, start), (entry.size, size)) if s is None]
        elif entry is None or isinstance(entry, (bool, np.bool_)):
            raise TypeError(f"reference indexing does not support {entry!r} in an index")
        else:
            spec.append(_DYNAMIC)
            dynamic.append(entry)
    return IndexSpec(spec), dynamic


def ref_index(ref, index) -> tuple[tuple, list]:
    """`split_index` for `ref`, with JAX's error for a static int past the end of its
    dimension (negative ones count from the end, as in NumPy)."""
    spec, dynamic = split_index(index)
    shape = tuple(ref.shape)
    if Ellipsis in spec:
        at = spec.index(Ellipsis)
        dims = [*range(at), *range(len(shape) - (len(spec) - at - 1), len(shape))]
        entries = spec[:at] + spec[at + 1:]
    else:
        dims, entries = list(range(len(spec))), spec
    for dim, entry in zip(dims, entries):
        if not isinstance(entry, tuple) or not 0 <= dim < len(shape):
            continue
        if entry[0] == "int" and entry[1] >= shape[dim]:
            raise ValueError(f"Out of bound indexer: idx={entry[1]}, dim={shape[dim]}.")
        if entry[0] == "dslice" and None not in entry[1:3] and entry[2] > 0 and (
                entry[1] < 0 or entry[1] + (entry[2] - 1) * entry[3] >= shape[dim]):
            raise ValueError(f"Out of bound slice: start={entry[1]}, size={entry[2]}, "
                             f"stride={entry[3]}, dim={shape[dim]}.")
    return spec, dynamic


def _slice_class() -> type:
    """`plax.ds`'s class, imported on first use, as plax.numpy (this module is part of
    `plax.jit`, which plax.numpy's own import calls)."""
    from plax_stdlib.numpy.slice_index import Slice
    return Slice


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
            start = next(operands) if s[1] is None else s[1]
            return _slice_class()(start, next(operands) if s[2] is None else s[2], s[3])
        return s[1]
    return tuple(entry(s) for s in spec)


def _whole(spec: tuple) -> bool:
    return spec in ((), (Ellipsis,))


def read_value(value, spec: tuple, dynamic):
    return value if _whole(spec) else value[join_index(spec, dynamic)]


def written_value(value, spec: tuple, dynamic, update, accumulate: bool = False):
    """`value` with `update` written (or added, if `accumulate`) at the index: a
    `dynamic_update_slice` for ints and unit-step slices (clamped into bounds, as JAX
    writes references), a scatter for other indices."""
    if _whole(spec):
        return value + update if accumulate else update
    window = _window(get_aval(value).shape, spec, dynamic)
    if window is None:
        at = value.at[join_index(spec, dynamic)]
        return at.add(update) if accumulate else at.set(update)
    starts, sizes = window
    block = plax.numpy.reshape(update, sizes)
    if accumulate:
        block = lax.dynamic_slice(value, starts, sizes) + block
    return lax.dynamic_update_slice(value, block, starts)


def _window(shape: tuple, spec: tuple, dynamic) -> tuple[list, tuple] | None:
    """(start indices, block sizes) of a basic index: ints (static or scalar integer
    operands; negative ones count from the end), unit-step slices and `plax.ds`
    slices. None for any other index."""
    entries = list(spec)
    if Ellipsis in entries:
        at = entries.index(Ellipsis)
        entries[at:at + 1] = [("slice", None, None, None)] * (len(shape) - len(entries) + 1)
    entries += [("slice", None, None, None)] * (len(shape) - len(entries))
    operands = iter(dynamic)
    starts, sizes = [], []
    for n, entry in zip(shape, entries):
        if entry is _DYNAMIC:
            i = next(operands)
            aval = get_aval(i)
            if aval.shape or not np.issubdtype(aval.dtype, np.integer):
                return None
            starts.append(plax.numpy.where(i < 0, i + n, i))
            sizes.append(1)
        elif entry[0] == "int":
            starts.append(entry[1] + n if entry[1] < 0 else entry[1])
            sizes.append(1)
        elif entry[0] == "dslice":  # plax.ds(start, size, stride): kept, not squeezed
            start = next(operands) if entry[1] is None else entry[1]
            if entry[3] != 1 or entry[2] is None:
                return None
            starts.append(start)
            sizes.append(entry[2])
        else:
            if entry[3] not in (None, 1):
                return None
            start, stop, _ = slice(*entry[1:]).indices(n)
            starts.append(start)
            sizes.append(max(stop - start, 0))
    return starts, tuple(sizes)


@functools.lru_cache(maxsize=4096)
def _indexed_aval(inner, spec: tuple, dynamic_avals: tuple):
    closed = stage_flat(lambda value, *dynamic: [read_value(value, spec, dynamic)],
                        [inner, *dynamic_avals])
    return inner.update(shape=closed.out_avals[0].shape, weak_type=False)


def indexed_aval(inner, spec: tuple, dynamic_avals):
    """The aval of `ref[index]` for a reference to `inner` (NumPy indexing rules)."""
    return inner if _whole(spec) else _indexed_aval(inner, spec, tuple(dynamic_avals))


# --- the primitives ---------------------------------------------------------------------

new_ref_p = Primitive("ref.new_ref")  # prints `new_ref`, as in JAX
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
new_ref_p.def_impl(lambda value: Ref(plax.numpy.array(value, copy=True), EVAL_TRACE,
                                     exclusive=True))


@get_p.def_abstract_eval
def _get_abstract_eval(ref_aval, *dynamic_avals, spec):
    ref_aval = _check_ref_aval(ref_aval, "ref.get")
    return indexed_aval(ref_aval.inner_aval, spec, dynamic_avals)


get_p.def_impl(lambda ref, *dynamic, spec: ref._read(spec, dynamic))


def _check_update(op: str, ref_aval, value_aval, spec, dynamic_avals) -> None:
    ref_aval = _check_ref_aval(ref_aval, f"ref.{op}")
    expected = indexed_aval(ref_aval.inner_aval, spec, dynamic_avals)
    if value_aval.shape != expected.shape:
        raise ValueError(f"Invalid shape for `{op}`. Ref shape: {ref_aval.shape}. Expected "
                         f"shape: {expected.shape}. Value shape: {value_aval.shape}. Index: "
                         f"{IndexSpec(spec)}.")
    if np.dtype(value_aval.dtype) != np.dtype(ref_aval.dtype):
        raise ValueError(f"Invalid dtype for `{op}`. Ref dtype: {np.dtype(ref_aval.dtype)}. "
                         f"Value dtype: {np.dtype(value_aval.dtype)}.")


@swap_p.def_abstract_eval
def _swap_abstract_eval(ref_aval, value_aval, *dynamic_avals, spec):
    _check_update("swap", ref_aval, value_aval, spec, dynamic_avals)
    return indexed_aval(ref_aval.inner_aval, spec, dynamic_avals)


@swap_p.def_impl
def _swap_impl(ref, value, *dynamic, spec):
    old = ref._read(spec, dynamic)
    ref._write(spec, dynamic, value)
    return old


@addupdate_p.def_abstract_eval
def _addupdate_abstract_eval(ref_aval, value_aval, *dynamic_avals, spec):
    _check_update("addupdate", ref_aval, value_aval, spec, dynamic_avals)
    return []


@addupdate_p.def_impl
def _addupdate_impl(ref, value, *dynamic, spec):
    ref._write(spec, dynamic, value, accumulate=True)
    return []


freeze_p.def_abstract_eval(lambda ref_aval: _check_ref_aval(ref_aval, "freeze").inner_aval)
freeze_p.def_impl(lambda ref: ref._read((), ()))


def _differentiated_write(primals, tangents, **_):
    # JAX's bare Exception and words, as for the unbatched write below
    raise Exception(
        f"performing a set/swap operation with a differentiated value on a "
        f"non-differentiated array reference of type {get_aval_str(primals[0])}. "
        "Move the array reference to be an argument of the differentiated function?")


def _unbatched_ref_error(op: str, ref) -> Exception:
    # JAX raises a bare Exception here; plax keeps its class and words.
    what = "an addupdate operation" if op == "addupdate" else "a set/swap operation"
    return Exception(
        f"performing {what} with vmapped value on an unbatched array reference of type "
        f"{get_aval_str(ref)}. Move the array reference to be an argument to the "
        "vmapped function?")


def _read_batched(axis_data, ref, ref_dim, spec, dynamic, dynamic_dims):
    """`ref[index]` per example, the whole reference read once (its batch dimension at
    `ref_dim`, or unbatched): → (value batched at 0, the whole value read)."""
    whole = get_p.bind(ref, spec=WHOLE)
    out = plax.vmap(lambda value, *dyn: read_value(value, spec, dyn),
                    in_axes=(ref_dim, *dynamic_dims), axis_size=axis_data.size)(whole, *dynamic)
    return out, whole


def _batched_get(axis_data, args, dims, *, spec):
    return _read_batched(axis_data, args[0], dims[0], spec, args[1:], dims[1:])[0], 0


def _batched_update(op: str):
    """The batching rule of `swap`/`addupdate`: a batched reference is read whole, the
    update applied per example, and the whole value written back (its batch dimension
    where it was); writing anything batched into an unbatched reference is JAX's error."""
    accumulate = op == "addupdate"

    def rule(axis_data, args, dims, *, spec):
        ref, value, dynamic = args[0], args[1], args[2:]
        ref_dim = dims[0]
        if ref_dim is None:
            raise _unbatched_ref_error(op, ref)
        if not accumulate and _whole(spec):  # the value replaces the whole reference
            new = move_to(value, dims[1], ref_dim, axis_data.size)
            return swap_p.bind(ref, new, spec=WHOLE), ref_dim
        old, whole = _read_batched(axis_data, ref, ref_dim, spec, dynamic, dims[2:])
        new = plax.vmap(
            lambda w, v, *dyn: written_value(w, spec, dyn, v, accumulate=accumulate),
            in_axes=(ref_dim, dims[1], *dims[2:]), out_axes=ref_dim,
            axis_size=axis_data.size)(whole, value, *dynamic)
        swap_p.bind(ref, new, spec=WHOLE)
        return ([], []) if accumulate else (old, 0)
    return rule


for _p in (swap_p, addupdate_p):
    _p.define_rule(JVP, _differentiated_write)
get_p.define_rule(BATCHING, _batched_get)
swap_p.define_rule(BATCHING, _batched_update("swap"))
addupdate_p.define_rule(BATCHING, _batched_update("addupdate"))


# --- the Python API ---------------------------------------------------------------------

def _staged(trace) -> bool:
    return isinstance(trace, StagingTrace) and not isinstance(trace, PartialEvalTrace)


def new_ref(init_val: Any, *, memory_space: Any = None, kind: str | None = None) -> Ref:
    """Makes a mutable reference holding (a copy of) an array.

    A `Ref` can be read (`ref[...]`, `ref[i]`) and written in place
    (`ref[...] = v`, `ref[i] += 1`), also inside `jit`, where a function that
    writes to a reference passed to it updates it for the caller. Useful for
    accumulators and state that would otherwise be threaded through returns.

    Args:
        init_val: the initial value, an array.
        memory_space: where the reference's buffer lives (default: device
            memory).
        kind: the kind of reference (JAX's `kind=`; accepted for compatibility).

    Returns:
        A `Ref`.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> counts = plax.new_ref(jnp.zeros(3))
        >>> @plax.jit
        ... def add_one(ref, i):
        ...     ref[i] += 1.0
        >>> add_one(counts, 1)
        >>> add_one(counts, 1)
        >>> counts[...]
        Array([0., 2., 0.], dtype=float32)
    """
    if memory_space is not None:
        raise NotImplementedError("new_ref: memory_space is not supported (plax keeps "
                                  "references in device memory)")
    if is_ref(init_val):
        raise TypeError("new_ref: the initial value must be an array, not a reference")
    trace = current_trace()
    if trace is EVAL_TRACE or _staged(trace):
        return new_ref_p.bind(init_val)
    return Ref(plax.numpy.asarray(init_val), trace)  # a cell of this transformation's values


def empty_ref(ty, memory_space: Any = None) -> Ref:
    """Makes a mutable reference of a given shape and dtype without choosing its
    contents (plax fills it with zeros); for buffers written before they are
    read.

    Args:
        ty: anything with `shape` and `dtype` (a `ShapeDtypeStruct`, an array).
        memory_space: where the buffer lives (default: device memory).

    Returns:
        A `Ref`.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> ref = plax.empty_ref(plax.ShapeDtypeStruct((2,), jnp.float32))
        >>> ref[...] = jnp.array([1.0, 2.0])
        >>> ref[...]
        Array([1., 2.], dtype=float32)
    """
    shape, dtype = getattr(ty, "shape", None), getattr(ty, "dtype", None)
    if shape is None or dtype is None:
        raise TypeError(f"empty_ref: expected a type with shape and dtype (e.g. a "
                        f"ShapeDtypeStruct), got {ty!r}")
    return new_ref(plax.numpy.zeros(shape, dtype), memory_space=memory_space)


def _check_is_ref(ref, what: str) -> None:
    if not is_ref(ref):
        raise TypeError(f"{what} expects a mutable array reference (plax.new_ref), got "
                        f"{type(ref).__name__}")


def _local(ref) -> bool:
    """Whether `ref` is a cell used by the trace that made it."""
    return is_ref_object(ref) and ref._home is current_trace() and not _staged(ref._home)


def get(ref, idx=None):
    """`ref[idx]` (the whole value for `idx=None` or `...`)."""
    if isinstance(ref, RefView):
        return ref[idx]
    _check_is_ref(ref, "ref.get")
    spec, dynamic = ref_index(ref, idx)
    if _local(ref):
        return ref._read(spec, dynamic)
    return get_p.bind(ref, *dynamic, spec=spec)


def _update_operand(op: str, ref, idx, value):
    spec, dynamic = ref_index(ref, idx)
    value_aval = get_aval(value)
    ref_dtype = np.dtype(get_aval(ref).dtype)
    if getattr(value_aval, "weak_type", False) and np.dtype(value_aval.dtype) != ref_dtype:
        value = convert_element_type(value, ref_dtype)
    elif not isinstance(value, Tracer) and not hasattr(value, "aval"):
        value = plax.numpy.asarray(value)
    _check_update(op, get_aval(ref), get_aval(value), spec,
                  [get_aval(d) for d in dynamic])
    return spec, dynamic, value


def swap(ref, idx, value, _function_name: str = "ref_swap"):
    """Write `value` at `ref[idx]`; → the value it replaces."""
    if isinstance(ref, RefView):
        old = ref[idx]
        ref[idx] = value
        return old
    _check_is_ref(ref, "ref.swap")
    spec, dynamic, value = _update_operand("swap", ref, idx, value)
    if _local(ref):
        old = ref._read(spec, dynamic)
        ref._write(spec, dynamic, value)
        return old
    return swap_p.bind(ref, value, *dynamic, spec=spec)


def set(ref, idx, value) -> None:  # noqa: A001 - JAX's name
    """`ref[idx] = value`."""
    swap(ref, idx, value, "ref_set")


def addupdate(ref, idx, x) -> None:
    """`ref[idx] += x`, as one accumulation."""
    if isinstance(ref, RefView):
        ref[idx] = ref[idx] + x
        return
    _check_is_ref(ref, "ref.addupdate")
    spec, dynamic, x = _update_operand("addupdate", ref, idx, x)
    if _local(ref):
        ref._write(spec, dynamic, x, accumulate=True)
        return
    addupdate_p.bind(ref, x, *dynamic, spec=spec)


def freeze(ref) -> Any:
    """Turns a reference into an ordinary array holding its current value; the
    reference must not be used afterwards.

    Args:
        ref: a `Ref`.

    Returns:
        The value, an array.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> ref = plax.new_ref(jnp.ones(2))
        >>> ref[0] = 5.0
        >>> plax.freeze(ref)
        Array([5., 1.], dtype=float32)
    """
    _check_is_ref(ref, "freeze")
    if _local(ref):
        return ref._read((), ())
    return freeze_p.bind(ref)


def free_ref(ref) -> None:
    """Declares that a reference is not used again, so its buffer can be released.

    Args:
        ref: a `Ref`.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> ref = plax.new_ref(jnp.ones(2))
        >>> plax.free_ref(ref)
    """
    _check_is_ref(ref, "free_ref")


__all__ = ["AbstractRef", "Ref", "addupdate", "empty_ref", "free_ref", "freeze", "get",
           "new_ref", "set", "swap"]

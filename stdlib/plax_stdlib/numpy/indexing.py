"""`x[index]`, `take` and `take_along_axis`, with NumPy's indexing semantics.

Basic indexing (ints, slices, None, `...`) becomes, as JAX's, one `slice` (static
indices) or one `dynamic_slice` (traced scalar indices, or static integers out of
bounds, with steps of ±1), then at most one `rev` (negative steps), one `squeeze`
(the integer-indexed dimensions) and one `expand_dims` (the `None`s).
Advanced indexing (integer arrays, concrete boolean masks) first applies the basic
part with the advanced dimensions kept whole, then one `gather` picks the
elements: the index arrays broadcast together, and their shape replaces the
dimensions they index where those are adjacent in the index,
or leads the result otherwise (NumPy's rule). Out-of-bounds indices, static
integers included, are clamped, as in JAX (reading `q[t + 1]` past the end of a
length-`t` array gives its last element); negative ones count from the end first.
With `mode="fill"` (what `x.at[...]` updates use, so they drop such elements) an
out-of-bounds index reads the fill value instead.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import operator

import numpy as np

from plax.errors import NonConcreteBooleanIndexError
from plax.extend import dtypes
from plax.extend.core import ShapedArray, SymbolicDimension, Tracer, decided, max_dim, min_dim
from plax_stdlib import jax_jits, lax
from plax_stdlib.lax import gathers
from plax_stdlib.lax.conversion import constant_like
from plax_stdlib.lax.dimensions import size_scalar
from plax_stdlib.numpy import util
from plax_stdlib.numpy.slice_index import Slice


def _is_plax_value(x) -> bool:
    return isinstance(x, Tracer) or isinstance(getattr(x, "aval", None), ShapedArray)


def classify(entry, position: int) -> str:
    """'none', 'ellipsis', 'slice', 'int' (static), 'dynamic' (a traced scalar),
    'array' (integer array) or 'mask' (boolean array or scalar)."""
    if entry is None:
        return "none"
    if entry is Ellipsis:
        return "ellipsis"
    if isinstance(entry, slice):
        return "slice"
    if isinstance(entry, Slice):
        if entry.is_dynamic_size:
            raise TypeError(f"a Slice of traced size cannot index an array (its size is the "
                            f"result's shape); got one at position {position}")
        return "dslice"
    if isinstance(entry, (bool, np.bool_)):
        return "mask"
    if isinstance(entry, (int, np.integer)):
        return "int"
    if isinstance(entry, (np.ndarray, list, tuple)) or _is_plax_value(entry):
        category = util.dtype_category(_index_dtype(entry, position))
        if category == "b":
            return "mask"
        if category not in "iu":
            raise TypeError(f"Indexer must have integer or boolean type, got indexer with "
                            f"type {np.dtype(_index_dtype(entry, position)).name} at "
                            f"position {position}")
        if np.ndim(entry) if not _is_plax_value(entry) else entry.ndim:
            return "array"
        return "int" if isinstance(entry, np.ndarray) else "dynamic"
    if isinstance(entry, (float, complex, np.floating, np.complexfloating)):
        raise TypeError(f"Indexer must have integer or boolean type, got indexer with type "
                        f"{np.asarray(entry).dtype.name} at position {position}")
    if isinstance(entry, str):
        raise TypeError(f"plax does not support string indexing; got {entry!r} at position "
                        f"{position}")
    raise TypeError(f"Indexer must be an int, slice, None, Ellipsis or integer array, got "
                    f"{entry!r} of type {type(entry).__name__} at position {position}")


def _index_dtype(entry, position: int) -> np.dtype:
    if not isinstance(entry, (list, tuple)):
        return entry.dtype
    array = np.asarray(entry)
    if array.size == 0:
        return np.dtype(np.intp)  # NumPy indexes with an empty list as with integers
    if array.dtype == object:
        raise TypeError(f"Indexer must be an int, slice, None, Ellipsis or integer array, "
                        f"got {entry!r} at position {position}")
    return array.dtype


@dataclasses.dataclass
class _Plan:
    """What basic indexing does to each dimension of the operand."""
    starts: list
    limits: list
    strides: list
    reversed_dims: list
    dynamic: dict  # dim → traced start index
    out_shape: list
    ints: dict = dataclasses.field(default_factory=dict)  # dim → static int, as given
    squeezed: list = dataclasses.field(default_factory=list)  # integer-indexed dims
    new_axes: list = dataclasses.field(default_factory=list)  # where the Nones are in the output
    # a strided slice of a symbolic dim → (start, step, count), gathered (`_take_strided`)
    strided: dict = dataclasses.field(default_factory=dict)
    out_of_bounds: bool = False  # a static int index was clamped
    undecided_index: bool = False  # a static int index may lie outside a symbolic axis


def _slice_bound(value, what: str):
    """A slice's start/stop/step as a Python int or None: concrete scalars convert
    (TypeError for non-integers, as in Python); traced ones are an IndexError."""
    if value is None or isinstance(value, (int, np.integer, SymbolicDimension)):
        return value
    if isinstance(value, Tracer) and value.to_concrete_value() is None:
        raise IndexError(f"Array slice indices must have static start/stop/step to be used "
                         f"with plax.numpy indexing, got the traced {what}={value!r}. Try "
                         "lax.dynamic_slice instead.")
    return operator.index(value)


def _plan(shape: tuple[int, ...], index: tuple) -> _Plan:
    kinds = [classify(e, i) for i, e in enumerate(index)]
    if kinds.count("ellipsis") > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    n_regular = sum(k in ("int", "dynamic", "slice") for k in kinds)
    if n_regular > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, "
                         f"but {n_regular} were indexed")
    if "ellipsis" in kinds:
        at = kinds.index("ellipsis")
        fill = len(shape) - n_regular
        index = index[:at] + (slice(None),) * fill + index[at + 1:]
        kinds = kinds[:at] + ["slice"] * fill + kinds[at + 1:]
        n_regular = len(shape)
    index = index + (slice(None),) * (len(shape) - n_regular)
    kinds = kinds + ["slice"] * (len(shape) - n_regular)

    plan = _Plan(starts=[0] * len(shape), limits=list(shape), strides=[1] * len(shape),
                 reversed_dims=[], dynamic={}, out_shape=[])
    dim = 0
    for entry, kind in zip(index, kinds):
        if kind == "none":
            plan.new_axes.append(len(plan.out_shape))
            plan.out_shape.append(1)
            continue
        if kind in ("int", "dynamic"):
            plan.squeezed.append(dim)
        size = shape[dim]
        if (kind == "int" and isinstance(size, SymbolicDimension)
                and not decided(functools.partial(_inside, operator.index(entry), size), False)):
            plan.dynamic[dim] = operator.index(entry)  # clamped when it runs
            plan.undecided_index = True
        elif kind == "int":
            plan.ints[dim] = operator.index(entry)
            i, clamped = _clamped_index(plan.ints[dim], size, dim)
            plan.out_of_bounds |= clamped
            plan.starts[dim], plan.limits[dim] = i, i + 1
        elif kind == "dynamic":
            plan.dynamic[dim] = entry
        else:
            start, stop, step = (_slice_bound(entry.start, "start"),
                                 _slice_bound(entry.stop, "stop"),
                                 _slice_bound(entry.step, "step"))
            if step == 0:
                raise ValueError("slice step cannot be zero")
            if (start, stop, step) in ((None, None, None), (None, None, 1)):
                start, stop, step = 0, size, 1  # the whole axis (which may be symbolic)
            elif all(isinstance(v, (int, type(None))) for v in (size, start, stop)):
                start, stop, step = slice(start, stop, step).indices(size)
            else:
                start, stop, step = _symbolic_indices(start, stop, step, size)
            low, high = (start, stop) if step > 0 else (stop, start)
            count = (max_dim(low, high) - low + abs(step) - 1) // abs(step)
            plan.out_shape.append(count)
            if abs(step) > 1 and isinstance(size, SymbolicDimension):
                plan.strided[dim] = (start, step, count)  # the elements read, in order
            else:
                if step < 0:  # as JAX: the elements read, in increasing order, reversed
                    plan.reversed_dims.append(dim)
                    first = start
                    start = min_dim(size, stop + 1 + (abs(start - stop - 1) % -step
                                                      if step < -1 else 0))
                    stop, step = first + 1, -step
                limit = max_dim(start, stop)  # a stop before the start reads nothing
                plan.starts[dim], plan.limits[dim], plan.strides[dim] = start, limit, step
        dim += 1
    return plan


def _symbolic_indices(start, stop, step, size) -> tuple:
    """`slice(start, stop, step).indices(size)` for static bounds on an axis of
    symbolic `size` (shape-polymorphic export): where the size's constraints do not
    decide a clamp, the bound keeps a symbolic `max`/`min` (`x[-2:]` starts at
    `max(0, b - 2)`)."""
    step = 1 if step is None else step
    low, high = (0, size) if step > 0 else (-1, size - 1)

    def bound(value, default):
        if value is None:
            return default
        return min_dim(high, max_dim(low, value + size if value < 0 else value))
    return bound(start, low if step > 0 else high), bound(stop, high if step > 0 else low), step


def _inside(i: int, size) -> bool:
    return -size <= i < size


def _clamped_index(i: int, size: int, dim: int) -> tuple[int, bool]:
    """A static index counted from the end if negative, then clamped into the axis (as
    JAX does); and whether it had to be clamped. An empty axis has nothing to read."""
    if size == 0:
        raise IndexError(f"index {i} is out of bounds for axis {dim} with size 0")
    wrapped = i + size if i < 0 else i
    inside = min(max(wrapped, 0), size - 1)
    return inside, inside != wrapped


def check_index(shape: tuple[int, ...], index) -> None:
    """The errors `x[index]` raises for what the index is (types, static bounds of
    empty axes, zero steps, abstract masks), without reading: for updates of an empty
    `x`, where an integer array reads nothing (as in JAX)."""
    index = index if isinstance(index, tuple) else (index,)
    basic = []
    for position, entry in enumerate(index):
        kind = classify(entry, position)
        if kind == "mask":
            basic += [slice(None)] * np.ndim(_concrete_mask(entry, position))
        else:
            basic.append(slice(None) if kind == "array" else entry)
    _plan(shape, tuple(basic))


def reject_list(index) -> None:
    """TypeError for a list as the whole index, as in JAX, for reads and updates alike:
    NumPy once read `x[[0, 1]]` as `x[0, 1]`, so the list's meaning is ambiguous."""
    if isinstance(index, list):
        raise TypeError("Using a non-tuple sequence for multidimensional indexing is not "
                        "allowed; use `arr[array(seq)]` instead of `arr[seq]` (or "
                        "`arr[tuple(seq)]` to index several dimensions)")


def getitem(x, index, mode=None, fill_value=None):
    """`x[index]` with NumPy's semantics; `mode` and `fill_value` say what
    out-of-bounds array indices do (see `gather`: "clip" by default)."""
    x = util.ensure_arraylike("getitem", x)
    reject_list(index)
    index = index if isinstance(index, tuple) else (index,)
    kinds = [classify(e, i) for i, e in enumerate(index)]
    if "dslice" in kinds:
        x, index = _apply_dslices(x, index, kinds, mode, fill_value)
        kinds = [classify(e, i) for i, e in enumerate(index)]
    if mode == "fill":  # a traced scalar out of bounds is filled (dynamic_slice clamps)
        kinds = ["array" if k == "dynamic" else k for k in kinds]
    if "array" in kinds or "mask" in kinds:
        return util.as_array(_advanced(x, index, kinds, mode, fill_value))
    return util.as_array(_basic(x, index, mode, fill_value))


def _basic(x, index: tuple, mode=None, fill_value=None):
    shape = util.shape_of(x)
    plan = _plan(shape, index)
    if plan.undecided_index and mode == "fill":
        raise NotImplementedError(
            f"mode='fill' with a static index {index} that may lie outside an axis of "
            f"symbolic size (shape {shape}): give the index as an array")
    if plan.out_of_bounds and mode == "fill":  # every element read lies outside
        fill = gathers.fill_value_for(util.dtype_of(x), fill_value)
        return lax.broadcast_in_dim(fill, tuple(plan.out_shape), ())
    if _as_one_dynamic_slice(plan, mode):
        out = _one_dynamic_slice(x, plan)
    else:
        out = _slices(x, plan)
    if plan.reversed_dims:
        out = lax.rev(out, tuple(plan.reversed_dims))
    if plan.squeezed:
        out = lax.squeeze(out, tuple(plan.squeezed))
    if plan.new_axes:
        out = lax.expand_dims(out, tuple(plan.new_axes))
    return out


def _slices(x, plan: _Plan):
    """The plan's static slice, strided gathers and `dynamic_slice` of its traced
    indices (from the static slice), in that order."""
    shape = util.shape_of(x)
    out = x
    if (plan.starts != [0] * len(shape) or plan.limits != list(shape)
            or plan.strides != [1] * len(shape)):
        strides = None if plan.strides == [1] * len(shape) else plan.strides
        out = lax.slice(out, plan.starts, plan.limits, strides)
    for dim, (start, step, count) in plan.strided.items():
        out = _take_strided(out, dim, start, step, count)
    if plan.dynamic:
        sliced = util.shape_of(out)
        starts = [util.convert(plan.dynamic[d], dtypes.default_int_dtype())
                  if d in plan.dynamic else 0 for d in range(len(shape))]
        sizes = [1 if d in plan.dynamic else sliced[d] for d in range(len(shape))]
        out = lax.dynamic_slice(out, starts, sizes)
    return out


def _as_one_dynamic_slice(plan: _Plan, mode) -> bool:
    """Whether JAX reads `x[index]` as one `dynamic_slice`: with traced scalar indices,
    or static integers outside the axes (which JAX's static slicing refuses unless
    `mode="clip"`), and unit steps (±1) on axes of static size."""
    return ((bool(plan.dynamic) or (plan.out_of_bounds and mode is None))
            and not plan.strided and set(plan.strides) <= {1} and not plan.undecided_index)


def _one_dynamic_slice(x, plan: _Plan):
    """JAX's reading: one `dynamic_slice` of every axis, from the static integers as
    given (wrapped and clamped as it runs), the traced indices and the slices' starts;
    when more than one, converted to int32."""
    ndim = len(util.shape_of(x))
    index_dtype = dtypes.default_int_dtype()
    starts = [plan.dynamic[d] if d in plan.dynamic else np.asarray(plan.ints[d], index_dtype)
              if d in plan.ints else plan.starts[d] for d in range(ndim)]
    sizes = [1 if d in plan.dynamic else plan.limits[d] - plan.starts[d] for d in range(ndim)]
    if ndim > 1:
        starts = [lax.convert_element_type(s, index_dtype) for s in starts]
    return lax.dynamic_slice(x, starts, sizes)


def _take_strided(x, dim: int, start, step: int, count):
    """The `count` elements `start`, `start + step`, ... of `x` along `dim`, a strided
    slice of a symbolic axis: a gather, whose size keeps the slice's form
    (`floordiv(b + 1, 2)`, as in JAX; `lax.slice` would give `floordiv(b - 1, 2) + 1`)."""
    shape = util.shape_of(x)
    dtype = dtypes.default_int_dtype()
    picks = lax.mul(lax.iota(dtype, count), np.asarray(step, dtype)[()])
    if start != 0:
        picks = lax.add(picks, util.convert(lax.dimension_as_value(start), dtype))
    dnums = lax.GatherDimensionNumbers(
        offset_dims=tuple(d for d in range(len(shape)) if d != dim),
        collapsed_slice_dims=(dim,), start_index_map=(dim,))
    sizes = [1 if d == dim else n for d, n in enumerate(shape)]
    return lax.gather(x, lax.reshape(picks, (count, 1)), dnums, sizes, unique_indices=True,
                      indices_are_sorted=True, mode="promise_in_bounds")


# --- plax.ds slices ---------------------------------------------------------------------------

def _apply_dslices(x, index: tuple, kinds: list, mode, fill_value):
    """`x` with each `Slice` of `index` applied to the dimension it indexes, and the
    index with `:` in its place (what is left is ordinary NumPy indexing).

    As in JAX: a unit-stride Slice reads a window, shifted back into bounds (a
    negative start counts from the end), or, with mode="fill", wholly filled if it
    sticks out; a strided one reads `start + stride * arange(size)`, each element
    clamped (or filled) on its own."""
    shape = util.shape_of(x)
    used = sum(_consumed(e, k) for e, k in zip(index, kinds) if k != "ellipsis")
    if used > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, "
                         f"but {used} were indexed")
    rest, dim = [], 0
    for position, (entry, kind) in enumerate(zip(index, kinds)):
        if kind == "ellipsis":
            dim += len(shape) - used
        elif kind != "dslice":
            dim += _consumed(entry, kind)
        else:
            x = _dslice_in_dim(x, entry, dim, position, mode, fill_value)
            entry = slice(None)
            dim += 1
        rest.append(entry)
    return x, tuple(rest)


def _dslice_start(s: Slice, position: int):
    if not s.is_dynamic_start:
        return int(s.start)
    start = util.operand(s.start)
    if util.shape_of(start) != () or util.dtype_category(util.dtype_of(start)) not in "iu":
        aval = ShapedArray(util.shape_of(start), util.dtype_of(start))
        raise TypeError(f"the start of a plax.ds slice must be an integer scalar, got "
                        f"{aval.str_short()} at position {position}")
    return start


def _dslice_in_dim(x, s: Slice, dim: int, position: int, mode, fill_value):
    size = util.shape_of(x)[dim]
    start = _dslice_start(s, position)
    if s.stride == 1 and mode != "fill":
        if s.size > size:
            raise TypeError(f"plax.ds slice of size {s.size} at position {position} is "
                            f"longer than axis {dim} of size {size}")
        return lax.dynamic_slice_in_dim(x, start, s.size, dim)
    dtype = dtypes.default_int_dtype()
    offsets = np.arange(s.size, dtype=dtype) * s.stride
    if isinstance(start, int):
        picks = np.asarray(start + offsets, dtype)
        if s.stride == 1 and (start < 0 or start + s.size > size):  # the whole window falls out
            picks = np.full_like(picks, size)
    else:
        start = util.convert(start, dtype)
        picks = lax.add(lax.broadcast_in_dim(start, (s.size,), ()), offsets)
        if s.stride == 1:
            outside = lax.bitwise_or(lax.lt(start, np.zeros((), dtype)[()]),
                                     lax.gt(lax.add(start, np.asarray(s.size, dtype)[()]),
                                            np.asarray(size, dtype)[()]))
            picks = lax.select(lax.broadcast_in_dim(outside, (s.size,), ()),
                               lax.full((s.size,), size, dtype), picks)
    return gather_indexed(x, [(dim, picks)], dim, mode, fill_value, wrap_negative=False)


# --- advanced indexing -----------------------------------------------------------------------

_CONSUMES = {"none": 0, "ellipsis": 0, "slice": 1, "int": 1, "dynamic": 1, "array": 1,
             "dslice": 1}


def _consumed(entry, kind: str) -> int:
    return np.ndim(entry) if kind == "mask" else _CONSUMES[kind]


def _concrete_mask(entry, position: int) -> np.ndarray:
    if isinstance(entry, Tracer) and entry.to_concrete_value() is None:
        origin = entry._trace.value_origin(entry)
        raise NonConcreteBooleanIndexError(
            f"Array boolean indices must be concrete; got the abstract {entry.aval.str_short()} "
            f"at position {position} while tracing {entry._trace.describe()}: the result's "
            f"shape would depend on its values.{' ' + origin if origin else ''}\nUse "
            "plax.numpy.where (or x.at[mask].set) for a fixed-shape result instead.")
    return np.asarray(util.concrete_or_error(entry, "boolean index"), bool)


def _advanced(x, index: tuple, kinds: list, mode, fill_value):
    """The basic entries applied with advanced dims kept whole, then one gather."""
    shape = util.shape_of(x)
    used = sum(_consumed(e, k) for e, k in zip(index, kinds))
    if kinds.count("ellipsis") > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if used > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, "
                         f"but {used} were indexed")
    if "ellipsis" in kinds:
        at = kinds.index("ellipsis")
        fill = (slice(None),) * (len(shape) - used)
        index, kinds = (index[:at] + fill + index[at + 1:],
                        kinds[:at] + ["slice"] * len(fill) + kinds[at + 1:])
    basic, picks, dim = [], [], 0  # picks: (result dim of the basic part, index, size)
    for position, (entry, kind) in enumerate(zip(index, kinds)):
        if kind in ("none", "slice"):
            basic.append(entry)
            dim += kind == "slice"
            continue
        if kind == "mask":
            mask = _concrete_mask(entry, position)
            if mask.ndim == 0:  # a new axis of size 1 (True) or 0 (False)
                picks.append((len(basic), np.arange(int(mask)), 1))
                basic.append(None)
                continue
            want = shape[dim:dim + mask.ndim]
            if mask.shape != want:
                raise IndexError(f"boolean index did not match indexed array along axes "
                                 f"{tuple(range(dim, dim + mask.ndim))}; the array's size "
                                 f"there is {want} but the boolean index has shape "
                                 f"{mask.shape}")
            for k, nz in enumerate(np.nonzero(mask)):
                picks.append((len(basic), nz, shape[dim + k]))
                basic.append(slice(None))
            dim += mask.ndim
            continue
        if kind == "int" and shape[dim] == 0:
            raise IndexError(f"index {entry} is out of bounds for axis {dim} with size 0")
        picks.append((len(basic), entry, shape[dim]))  # the gather clamps (or fills)
        basic.append(slice(None))
        dim += 1
    y = _basic(x, tuple(basic))
    dims = [d for d, _, _ in picks]
    adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
    return gather_indexed(y, [(d, i) for d, i, _ in picks], dims[0] if adjacent else 0,
                          mode, fill_value)


def _wrapped(index, size: int, wrap_negative: bool):
    """An index as an integer array, negative entries counted from the end: on the
    host (int64) or traced (in its own dtype, a weak scalar staying weak, as JAX's)."""
    if isinstance(index, (list, tuple)):
        index = np.asarray(index, np.int64) if len(index) == 0 else np.asarray(index)
    if not _is_plax_value(index):
        index = np.asarray(index).astype(np.int64)
        if not (wrap_negative and (index < 0).any()):
            return index
        if not isinstance(size, SymbolicDimension):
            return np.where(index < 0, index + size, index)
    if wrap_negative and util.dtype_category(util.dtype_of(index)) == "i":
        size = (size_scalar(size, util.dtype_of(index)) if isinstance(size, SymbolicDimension)
                else constant_like(index, size))
        index = lax.select(lax.lt(index, constant_like(index, 0)), lax.add(index, size), index)
    return index


def index_arrays(indices_and_sizes, dtype, wrap_negative: bool) -> list:
    """Indices (each with the size of its axis) as integer arrays of `dtype`, negative
    entries counted from the end: all wrapped first, then all converted (JAX's order)."""
    wrapped = [_wrapped(index, size, wrap_negative) for index, size in indices_and_sizes]
    return [util.convert(index, dtype) for index in wrapped]


def index_array(index, size: int, dtype, wrap_negative: bool):
    """An index as an integer array of `dtype`, negative entries counted from the end."""
    return index_arrays([(index, size)], dtype, wrap_negative)[0]


def gather_indexed(y, picks, position: int, mode=None, fill_value=None,
                   wrap_negative: bool = True):
    """Elements of `y` at the index arrays `picks` [(dimension of y, index)], which
    broadcast together; their broadcast shape replaces the picked dimensions at
    `position` among the others. `mode` as in `lax.gather` (None: JAX's
    "promise_in_bounds", which XLA's gather clamps)."""
    yshape = util.shape_of(y)
    dtype = dtypes.default_int_dtype()
    arrays = index_arrays([(i, yshape[d]) for d, i in picks], dtype, wrap_negative)
    try:
        bshape = util.broadcast_shapes(*(util.shape_of(a) for a in arrays))
    except ValueError:  # JAX's class (NumPy's is an IndexError)
        raise ValueError("shape mismatch: indexing arrays could not be broadcast together "
                         "with shapes " + " ".join(str(util.shape_of(a)) for a in arrays)
                         ) from None
    if all(not _is_plax_value(a) for a in arrays):
        indices = np.stack([np.broadcast_to(a, bshape) for a in arrays], axis=-1)
    elif len(arrays) == 1:  # (its shape is bshape)
        indices = lax.expand_dims(arrays[0], (len(bshape),))
    else:  # each broadcast, then given the index vectors' axis (JAX's)
        indices = lax.concatenate([
            lax.broadcast_in_dim(util.broadcast_to_shape(a, bshape), bshape + (1,),
                                 tuple(range(len(bshape)))) for a in arrays], len(bshape))
    dims = [d for d, _ in picks]
    rest = len(yshape) - len(dims)
    others = [n for d, n in enumerate(yshape) if d not in dims]
    out_shape = (*others[:position], *bshape, *others[position:])
    if math.prod(out_shape) == 0:  # nothing to read (possibly from an empty axis)
        return lax.full(out_shape, 0, util.dtype_of(y))
    offset_dims = tuple(range(position)) + tuple(range(position + len(bshape),
                                                        rest + len(bshape)))
    dnums = lax.GatherDimensionNumbers(offset_dims=offset_dims,
                                       collapsed_slice_dims=tuple(sorted(dims)),
                                       start_index_map=tuple(dims))
    sizes = [1 if d in dims else n for d, n in enumerate(yshape)]
    return lax.gather(y, indices, dnums, sizes,
                      mode="promise_in_bounds" if mode is None else mode,
                      fill_value=fill_value)


# --- take ------------------------------------------------------------------------------------

_TAKE_MODES = ("fill", "clip", "wrap", "promise_in_bounds")


def _take_mode(name: str, mode):
    mode = "fill" if mode is None else mode
    if mode == "raise":  # NumPy's mode, which a compiled gather cannot do (JAX's class)
        raise NotImplementedError(f"{name}: mode 'raise' is not supported (indices are not "
                                  f"checked at run time); use one of {_TAKE_MODES}")
    if mode not in _TAKE_MODES:
        raise ValueError(f"{name}: invalid mode {mode!r}; expected one of {_TAKE_MODES}")
    return mode


def _int_indices(name: str, indices):
    indices = util.operand(indices)
    if util.dtype_category(util.dtype_of(indices)) not in "iu":
        raise TypeError(f"{name}: indices must be integers, got dtype "
                        f"{util.dtype_of(indices)}")
    return indices


def _wrap_mod(indices, size: int):
    """Indices taken modulo `size` (NumPy's mode="wrap")."""
    if not _is_plax_value(indices):
        return np.mod(indices, max(size, 1))
    dtype = util.dtype_of(indices)
    r = lax.rem(indices, np.asarray(max(size, 1), dtype)[()])
    if util.dtype_category(dtype) == "u":
        return r
    return lax.select(lax.lt(r, np.zeros((), dtype)[()]), lax.add(r, np.asarray(size, dtype)[()]),
                      r)


def take(a, indices, axis: int | None = None, out=None, mode: str | None = None,
         unique_indices: bool = False, indices_are_sorted: bool = False, fill_value=None):
    """The elements of `a` at `indices` along `axis` (of the flattened array if `axis` is
    None): `a[..., indices, ...]` with `indices` at position `axis`.

    Follows `numpy.take`, but out-of-range indices cannot raise (the index values are
    not known when a program is compiled), so `mode` says what they give:
    "fill" (the default) returns `fill_value`, "clip" clamps them into range, "wrap"
    takes them modulo the axis size. Negative indices count from the end, except in
    "clip" mode. `unique_indices` and `indices_are_sorted` are promises that let the
    compiler emit faster code.

    Args:
        a: an array.
        indices: an integer array (any shape).
        axis: the axis to take along; None takes from the flattened array.
        out: unsupported; must be None.
        mode: "fill" (default), "clip" or "wrap" ("raise" is not supported).
        unique_indices: promise that the indices do not repeat.
        indices_are_sorted: promise that the indices are sorted.
        fill_value: the value out-of-range indices give in "fill" mode (default NaN
            for inexact dtypes, the largest negative value for signed integers, the
            largest value for unsigned, True for bool).

    Returns:
        An array: `a`'s shape with `axis` replaced by `indices.shape`.

    Raises:
        IndexError: a non-empty take from an empty axis.
        NotImplementedError: an `out` argument.

    Examples:
        >>> x = jnp.array([10.0, 20.0, 30.0])
        >>> jnp.take(x, jnp.array([0, -1, 5]))
        Array([10., 30., nan], dtype=float32)
        >>> jnp.take(x, jnp.array([0, 5]), mode="clip"), jnp.take(x, jnp.array([4]), mode="wrap")
        (Array([10., 30.], dtype=float32), Array([20.], dtype=float32))
    """
    if out is not None:
        raise NotImplementedError("The 'out' argument to plax.numpy.take is not supported.")
    util.check_arraylike("take", a, indices)
    a, indices = util.operand(a), _int_indices("take", indices)
    return _take(a, indices, axis=None if axis is None else operator.index(axis),
                 mode=_take_mode("take", mode), unique_indices=bool(unique_indices),
                 indices_are_sorted=bool(indices_are_sorted), fill_value=fill_value)


@util.compiled(static_argnames=("axis", "mode", "unique_indices", "indices_are_sorted",
                                "fill_value"))
def _take(a, indices, axis, mode, unique_indices, indices_are_sorted, fill_value):
    """`take` as one jitted call (JAX's `_take`): negative indices wrapped with `where`
    (except in "clip" mode), then one gather of size-1 slices along `axis`."""
    from plax_stdlib.numpy.ufuncs import remainder, where
    if axis is None:
        a, axis = lax.reshape(a, (math.prod(util.shape_of(a)),)), 0
    axis = util.canonicalize_axis(axis, len(util.shape_of(a)))
    size = util.shape_of(a)[axis]
    if util.dtype_of(indices).itemsize < 4:  # narrow indices could not hold the size
        indices = util.convert(indices, dtypes.default_int_dtype())
    dtype = util.dtype_of(indices)
    if mode == "wrap":
        indices = remainder(indices, size_scalar(max_dim(size, 1), dtype))
        mode = "promise_in_bounds"
    elif mode != "clip" and util.dtype_category(dtype) == "i":
        indices = where(lax.lt(indices, np.zeros((), dtype)[()]),
                        lax.add(indices, size_scalar(size, dtype)), indices)
    ishape = util.shape_of(indices)
    out_shape = (*util.shape_of(a)[:axis], *ishape, *util.shape_of(a)[axis + 1:])
    if size == 0 and math.prod(ishape):
        raise IndexError("Cannot do a non-empty take() from an empty axis.")
    if math.prod(out_shape) == 0:  # nothing to read
        return lax.full(out_shape, 0, util.dtype_of(a))
    ndim = len(util.shape_of(a))
    offset_dims = tuple(range(axis)) + tuple(range(axis + len(ishape), ndim + len(ishape) - 1))
    dnums = lax.GatherDimensionNumbers(offset_dims=offset_dims, collapsed_slice_dims=(axis,),
                                       start_index_map=(axis,))
    sizes = tuple(1 if d == axis else n for d, n in enumerate(util.shape_of(a)))
    return lax.gather(a, lax.expand_dims(indices, (len(ishape),)), dnums, sizes, mode=mode,
                      unique_indices=unique_indices, indices_are_sorted=indices_are_sorted,
                      fill_value=fill_value)


def take_along_axis(arr, indices, axis: int | None = -1, mode: str | None = None,
                    fill_value=None, *, wrap_negative_indices: bool = True):
    """The elements of `arr` at `indices` along `axis`, matched one to one along the
    other axes (which broadcast): the companion of `argsort`, `argmax(...,
    keepdims=True)` and similar.

    Follows `numpy.take_along_axis`, with JAX's `mode` and `fill_value` for
    out-of-range indices (see `take`; "fill" by default). Negative indices count from
    the end in every mode, unless `wrap_negative_indices=False` makes them out of
    range.

    Args:
        arr: an array.
        indices: an integer array of `arr`'s rank (1-D when `axis` is None).
        axis: the axis to take along; None takes from the flattened array.
        mode: "fill" (default), "clip" or "wrap".
        fill_value: the value out-of-range indices give in "fill" mode.
        wrap_negative_indices: count negative indices from the end.

    Returns:
        An array of the broadcast shape of `arr` and `indices`.

    Raises:
        ValueError: ranks that differ, or non-1-D indices with `axis=None`.

    Examples:
        >>> x = jnp.array([[3, 1, 2], [9, 7, 8]])
        >>> jnp.take_along_axis(x, jnp.argsort(x, axis=1), axis=1)
        Array([[1, 2, 3],
               [7, 8, 9]], dtype=int32)
        >>> jnp.take_along_axis(x, jnp.argmax(x, axis=1, keepdims=True), axis=1)
        Array([[3],
               [9]], dtype=int32)
    """
    util.check_arraylike("take_along_axis", arr, indices)
    arr, indices = util.operand(arr), _int_indices("take_along_axis", indices)
    if axis is None:
        if len(util.shape_of(indices)) != 1:
            raise ValueError(f"take_along_axis: when axis=None, indices must be 1-D, got "
                             f"shape {util.shape_of(indices)}")
        arr, axis = lax.reshape(arr, (math.prod(util.shape_of(arr)),)), 0
    ashape, ishape = util.shape_of(arr), util.shape_of(indices)
    if len(ashape) != len(ishape):
        raise ValueError(f"take_along_axis: indices and arr must have the same number of "
                         f"dimensions; got indices of shape {ishape} and arr of shape "
                         f"{ashape}")
    axis = util.canonicalize_axis(axis, len(ashape))
    mode = _take_mode("take_along_axis", mode)
    size = ashape[axis]
    if mode == "wrap":
        indices, mode = _wrap_mod(indices, size), "clip"
    common = util.broadcast_shapes(*(s[:axis] + (1,) + s[axis + 1:] for s in (ashape, ishape)))
    with_axis = lambda n: common[:axis] + (n,) + common[axis + 1:]  # noqa: E731
    if size == 0:  # an empty axis has nothing to read: zeros, whatever the mode (JAX's)
        return util.as_array(lax.full(with_axis(ishape[axis]), 0, util.dtype_of(arr)))
    arr = util.broadcast_to_shape(arr, with_axis(size))
    index = index_array(indices, size, dtypes.default_int_dtype(), wrap_negative_indices)
    index = util.broadcast_to_shape(index, with_axis(ishape[axis]))
    batch = tuple(d for d in range(len(ashape)) if d != axis)
    dnums = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(axis,),
                                       start_index_map=(axis,), operand_batching_dims=batch,
                                       start_indices_batching_dims=batch)
    if math.prod(util.shape_of(index)) == 0:  # nothing to read
        return util.as_array(lax.full(util.shape_of(index), 0, util.dtype_of(arr)))
    index = lax.reshape(index, util.shape_of(index) + (1,))
    return util.as_array(lax.gather(arr, index, dnums, (1,) * len(ashape), mode=mode,
                                    fill_value=fill_value))


jax_jits.apply(globals())  # JAX's jitted functions become jit functions

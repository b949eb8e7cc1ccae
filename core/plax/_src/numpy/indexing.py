"""`x[index]` (basic indexing) and `take`.

Basic indexing (ints, slices, None, `...`) becomes at most one `rev` (negative
steps), one `slice`, one `dynamic_slice` (traced scalar indices) and one
`reshape`. Integer-array and boolean ("advanced") indexing needs a gather
primitive, which plax does not have yet, so it raises NotImplementedError.
"""
from __future__ import annotations

import dataclasses
import math
import operator

import numpy as np

from plax import lax
from plax._src import dtypes
from plax._src.abstract import ShapedArray
from plax._src.numpy import util
from plax._src.tracing import Tracer

_ADVANCED = ("Advanced indexing (integer or boolean arrays as indices) is not yet "
             "supported in plax: it needs lax.gather. Use basic indexing (ints, slices, "
             "None, ...), plax.numpy.take with static indices, or lax.dynamic_slice.")


def _is_plax_value(x) -> bool:
    return isinstance(x, Tracer) or isinstance(getattr(x, "aval", None), ShapedArray)


def _classify(entry, position: int) -> str:
    """'none', 'ellipsis', 'slice', 'int' (static) or 'dynamic' (a traced scalar)."""
    if entry is None:
        return "none"
    if entry is Ellipsis:
        return "ellipsis"
    if isinstance(entry, slice):
        return "slice"
    if isinstance(entry, (bool, np.bool_)):
        raise NotImplementedError(_ADVANCED)
    if isinstance(entry, (int, np.integer)):
        return "int"
    if isinstance(entry, (list, tuple)):
        raise NotImplementedError(_ADVANCED)
    if isinstance(entry, np.ndarray) or _is_plax_value(entry):
        dtype = entry.dtype
        if util.dtype_category(dtype) not in "iu" or entry.ndim != 0:
            if util.dtype_category(dtype) in "biu":
                raise NotImplementedError(_ADVANCED)
            raise TypeError(f"Indexer must have integer or boolean type, got indexer with "
                            f"type {np.dtype(dtype).name} at position {position}")
        return "int" if isinstance(entry, np.ndarray) else "dynamic"
    raise TypeError(f"Indexer must be an int, slice, None, Ellipsis or integer array, got "
                    f"{entry!r} of type {type(entry).__name__} at position {position}")


@dataclasses.dataclass
class _Plan:
    """What basic indexing does to each dimension of the operand."""
    starts: list
    limits: list
    strides: list
    reversed_dims: list
    dynamic: dict  # dim → traced start index
    out_shape: list


def _slice_bound(value, what: str):
    if value is None or isinstance(value, (int, np.integer)):
        return value
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return operator.index(value)
    raise IndexError(f"Array slice indices must have static start/stop/step to be used with "
                     f"plax.numpy indexing, got {what}={value!r}. Try lax.dynamic_slice "
                     "instead.")


def _plan(shape: tuple[int, ...], index: tuple) -> _Plan:
    kinds = [_classify(e, i) for i, e in enumerate(index)]
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
            plan.out_shape.append(1)
            continue
        size = shape[dim]
        if kind == "int":
            i = operator.index(entry)
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for axis {dim} with size {size}")
            i %= size
            plan.starts[dim], plan.limits[dim] = i, i + 1
        elif kind == "dynamic":
            plan.dynamic[dim] = entry
        else:
            start, stop, step = (_slice_bound(entry.start, "start"),
                                 _slice_bound(entry.stop, "stop"),
                                 _slice_bound(entry.step, "step"))
            if step == 0:
                raise ValueError("slice step cannot be zero")
            start, stop, step = slice(start, stop, step).indices(size)
            count = len(range(start, stop, step))
            if step < 0:
                plan.reversed_dims.append(dim)
                start, step = size - 1 - start, -step
            if count == 0:
                start = 0
            plan.starts[dim] = start
            plan.limits[dim] = start + (count - 1) * step + 1 if count else start
            plan.strides[dim] = step
            plan.out_shape.append(count)
        dim += 1
    return plan


def getitem(x, index):
    """`x[index]` for basic indices: ints, slices, None, `...`, traced integer scalars."""
    x = util.ensure_arraylike("getitem", x)
    index = index if isinstance(index, tuple) else (index,)
    shape = util.shape_of(x)
    plan = _plan(shape, index)
    out = x
    if plan.reversed_dims:
        out = lax.rev(out, tuple(plan.reversed_dims))
    if (plan.starts != [0] * len(shape) or plan.limits != list(shape)
            or plan.strides != [1] * len(shape)):
        strides = None if plan.strides == [1] * len(shape) else plan.strides
        out = lax.slice(out, plan.starts, plan.limits, strides)
    if plan.dynamic:
        sliced = util.shape_of(out)
        starts = [util.convert(plan.dynamic[d], dtypes.default_int_dtype())
                  if d in plan.dynamic else 0 for d in range(len(shape))]
        sizes = [1 if d in plan.dynamic else sliced[d] for d in range(len(shape))]
        out = lax.dynamic_slice(out, starts, sizes)
    if tuple(plan.out_shape) != util.shape_of(out):
        out = lax.reshape(out, tuple(plan.out_shape))
    return util.as_array(out)


# --- take ------------------------------------------------------------------------------------

_TAKE_MODES = ("fill", "clip", "wrap", "promise_in_bounds")


def _fill_for(dtype, fill_value):
    """NaN for inexact dtypes; the extreme value (min signed, max unsigned, True) else."""
    if fill_value is not None:
        return fill_value
    category = util.dtype_category(dtype)
    if category in "fc":
        return np.nan
    if category == "b":
        return True
    return dtypes.iinfo(dtype).min if category == "i" else dtypes.iinfo(dtype).max


def take(a, indices, axis: int | None = None, out=None, mode: str | None = None,
         unique_indices: bool = False, indices_are_sorted: bool = False, fill_value=None):
    """Elements of `a` at `indices` along `axis` (of the flattened array if None).

    Out-of-range indices follow `mode`: "fill" (the default: NaN, or the extreme
    integer), "clip" or "wrap". Indices must be static, or one traced scalar.
    """
    if out is not None:
        raise NotImplementedError("The 'out' argument to plax.numpy.take is not supported.")
    util.check_arraylike("take", a, indices)
    a = util.operand(a)
    if axis is None:
        a, axis = lax.reshape(a, (math.prod(util.shape_of(a)),)), 0
    shape = util.shape_of(a)
    axis = util.canonicalize_axis(axis, len(shape))
    mode = "fill" if mode is None else mode
    if mode not in _TAKE_MODES:
        raise ValueError(f"take: invalid mode {mode!r}; expected one of {_TAKE_MODES}")
    dtype = util.dtype_of(a)
    if util.dtype_category(util.dtype_of(util.operand(indices))) not in "iu":
        raise TypeError(f"take: indices must be integers, got dtype "
                        f"{util.dtype_of(util.operand(indices))}")
    fill = util.convert(util.ensure_arraylike("take", _fill_for(dtype, fill_value)), dtype)
    if isinstance(indices, Tracer) and indices.to_concrete_value() is None:
        if util.shape_of(indices):
            raise NotImplementedError(_ADVANCED)
        return _take_traced_scalar(a, indices, axis, mode, fill)
    return _take_static(a, np.asarray(util.concrete_or_error(indices, "take")), axis, mode,
                        fill)


def _take_traced_scalar(a, index, axis, mode, fill):
    size = util.shape_of(a)[axis]
    index = util.convert(index, dtypes.default_int_dtype())
    if mode == "wrap":
        index = lax.rem(index, size)
        index = util.select_n(lax.lt(index, 0), index, lax.add(index, size))
    elif mode == "clip":
        index = lax.clamp(0, index, size - 1)
    out = lax.dynamic_index_in_dim(a, index, axis, keepdims=False)
    if mode == "fill":
        in_bounds = lax.bitwise_and(lax.ge(index, -size), lax.lt(index, size))
        out = util.select_n(in_bounds, lax.broadcast_in_dim(fill, util.shape_of(out), ()), out)
    return out


def _take_static(a, indices: np.ndarray, axis: int, mode: str, fill):
    shape = util.shape_of(a)
    size = shape[axis]
    flat = indices.astype(np.int64).ravel()
    if mode == "wrap" and size:
        flat = flat % size
    elif mode == "clip":
        flat = np.clip(flat, 0, size - 1)
    else:
        flat = np.where(flat < 0, flat + size, flat)
    valid = (flat >= 0) & (flat < size)
    if not valid.all() and mode != "fill":
        raise IndexError(f"take: index out of bounds for axis {axis} with size {size}")
    pieces, run_start, run_len = [], None, 0
    piece_shape = list(shape)

    def close_run():
        if run_len:
            pieces.append(lax.slice_in_dim(a, run_start, run_start + run_len, axis=axis))

    for i, ok in zip(flat.tolist(), valid.tolist()):
        if ok and run_len and i == run_start + run_len:
            run_len += 1
            continue
        close_run()
        run_start, run_len = (i, 1) if ok else (None, 0)
        if not ok:
            piece_shape[axis] = 1
            pieces.append(lax.broadcast_in_dim(fill, tuple(piece_shape), ()))
    close_run()
    out_shape = shape[:axis] + indices.shape + shape[axis + 1:]
    if not pieces:
        return lax.broadcast_in_dim(fill, out_shape, ())
    joined = lax.concatenate(pieces, axis) if len(pieces) > 1 else pieces[0]
    return lax.reshape(joined, out_shape)

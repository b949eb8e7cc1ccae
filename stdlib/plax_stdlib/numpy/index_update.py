"""`x.at[index].set(v)` and friends: functional updates of indexed elements, as
JAX's `x.at` (arrays are immutable, so each returns a new array).

An index of static slices of step 1 and integers (scalars and arrays, static or
traced) is one scatter with dimension numbers, as JAX's: the integers, broadcast
together, and the starts of partial slices are the index vectors, the sliced
dimensions the update windows. Any other NumPy index (masks, strided slices,
`None`) is supported too: the flat position of
every element of `x` is indexed with it (one gather over an iota, which also gives
the indexed result's shape), then one scatter writes the values at those
positions of the flattened `x`. Out-of-bounds indices are dropped by default
(`mode="drop"` or "fill"), as in JAX; `mode="clip"` moves them to the nearest
element.
"""
from __future__ import annotations

import math
import warnings
from typing import Any, NamedTuple

import numpy as np

from plax.extend import config, dtypes
from plax.extend.core import decided
from plax.extend.sharding import ShardingTypeError
from plax_stdlib import lax
from plax_stdlib.lax.out_sharding import laid_out
from plax_stdlib.numpy import indexing, util

_FLAT = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                    scatter_dims_to_operand_dims=(0,))
_SCATTERS = {"set": lax.scatter, "add": lax.scatter_add, "subtract": lax.scatter_sub,
             "multiply": lax.scatter_mul, "min": lax.scatter_min, "max": lax.scatter_max}
_MODES = ("drop", "fill", "clip", "promise_in_bounds")


def _scatter_method(op: str, doc: str):
    """The `x.at[index]` method that scatters values into `x` with `op` (`_SCATTERS`)."""
    def method(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
               wrap_negative_indices=True, out_sharding=None):
        index = self._index(wrap_negative_indices, mode == "clip")
        out_sharding = _update_sharding(op, self.array, index, out_sharding)
        return laid_out(f".{op}", out_sharding, lambda x, v: _update(
            op, x, index, v, unique_indices, mode, indices_are_sorted), self.array, values)
    method.__name__, method.__qualname__, method.__doc__ = op, f"_IndexUpdateRef.{op}", doc
    return method


def _combining_method(ufunc: str, doc: str):
    """The `x.at[index]` method that combines `x` by `ufunc` with the product of the
    values each element is indexed with (1 elsewhere)."""
    def method(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
               wrap_negative_indices=True, out_sharding=None):
        from plax_stdlib.numpy import ufuncs
        combine = getattr(ufuncs, ufunc)
        index = self._index(wrap_negative_indices, mode == "clip")
        out_sharding = _update_sharding(ufunc, self.array, index, out_sharding)
        return laid_out(f".{ufunc}", out_sharding, lambda x, v: combine(x, _update(
            "multiply", _filled_like(x, 1), index, v, unique_indices, mode,
            indices_are_sorted)),
            self.array, values)
    method.__name__, method.__qualname__, method.__doc__ = (ufunc, f"_IndexUpdateRef.{ufunc}",
                                                            doc)
    return method


class _IndexUpdateHelper:
    """What `x.at` returns: indexing it gives an `_IndexUpdateRef`."""
    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index):
        return _IndexUpdateRef(self.array, index)

    def __repr__(self):
        return f"_IndexUpdateHelper({self.array!r})"


class _IndexUpdateRef:
    """`x.at[index]`: the update methods of those elements."""
    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array, self.index = array, index

    def __repr__(self):
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    def _index(self, wrap_negative: bool, clip: bool):
        """The index, or with `wrap_negative_indices=False` its negative integers made
        out of bounds (where a clipping mode reads or writes element 0), as in JAX."""
        indexing.reject_list(self.index)
        if wrap_negative:
            return self.index
        return _unwrapped(self.index, util.shape_of(util.ensure_arraylike(
            "x.at[...]", self.array)), clip)

    def get(self, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode=None, fill_value=None, wrap_negative_indices: bool = True,
            out_sharding=None):
        """`x[index]`; out-of-bounds indices follow `mode` (clamped by default)."""
        mode = _check_mode(mode)
        index = self._index(wrap_negative_indices, mode in (None, "clip", "promise_in_bounds"))
        return laid_out(".get", out_sharding, lambda x: indexing.getitem(
            x, index, mode="fill" if mode == "drop" else mode, fill_value=fill_value),
            self.array)

    set = _scatter_method("set", "`x` with `x[index] = values`.")
    add = _scatter_method("add", "`x` with `x[index] += values` (repeated indices add up).")
    multiply = _scatter_method("multiply", "`x` with `x[index] *= values` (repeated indices "
                               "multiply up).")
    mul = multiply
    min = _scatter_method("min", "`x` with `x[index] = minimum(x[index], values)`.")
    max = _scatter_method("max", "`x` with `x[index] = maximum(x[index], values)`.")
    subtract = _scatter_method("subtract", "`x` with `x[index] -= values` (repeated indices "
                               "subtract each time).")
    divide = _combining_method("divide", "`x` with `x[index] /= values`: x divided by the "
                               "product of the values each element is indexed with.")
    power = _combining_method("power", "`x` with `x[index] **= values` (repeated indices "
                              "multiply their exponents).")

    def apply(self, func, *, indices_are_sorted=False, unique_indices=False, mode=None,
              wrap_negative_indices=True):
        """`x` with the elementwise `func` applied at `index`, once for each time the
        index names an element."""
        from plax_stdlib.numpy import creation
        # counted in an array typed as `x` is, so a split `x` meets the scatter's
        # sharding rule (JAX's ShardingTypeError: apply takes no out_sharding)
        hits = _update("add", creation.zeros_like(self.array, dtype=np.int32),
                       self._index(wrap_negative_indices, mode == "clip"), 1, unique_indices,
                       mode)
        rounds = lax.reduce_max(hits, tuple(range(len(util.shape_of(hits))))) \
            if util.shape_of(hits) else hits
        x = util.ensure_arraylike("x.at[...].apply", self.array)
        return lax.fori_loop(0, rounds, lambda i, y: util.select_n(lax.gt(hits, i), y, func(y)),
                             x)


def _update_sharding(op: str, x, index, out_sharding):
    """The layout of an update's result: `out_sharding` if given; else, for an `x`
    split in its type, `x`'s own where the index leaves every split dimension whole
    (`x.at[0].set(v)` on f32[4,8@y], as JAX resolves it); an update that indexes a
    split dimension is ambiguous (JAX's ShardingTypeError)."""
    typed = getattr(getattr(x, "aval", None), "typed_sharding", None)
    if out_sharding is not None or typed is None or not any(typed.spec):
        return out_sharding
    shape = util.shape_of(x)
    entries = index if isinstance(index, tuple) else (index,)
    rest = len(shape) - sum(_dims_taken(e) for e in entries)
    whole, dim = set(), 0
    for entry in entries:
        taken = rest if entry is Ellipsis else _dims_taken(entry)
        if entry is Ellipsis or (isinstance(entry, slice) and entry == slice(None)):
            whole.update(range(dim, dim + taken))
        dim += taken
    whole.update(range(dim, len(shape)))  # dimensions after the index's entries
    indexed = [d for d, axes in enumerate(typed.spec) if axes is not None and d not in whole]
    if indexed:
        raise ShardingTypeError(
            f"x.at[...].{op}: the index selects along dimension(s) {indexed} of "
            f"{x.aval.str_short()}, which are split, so the result's sharding is ambiguous: "
            "use `.at[...].set/add/mul/...(out_sharding=)` to give it")
    return typed


def _integer_kind(entry) -> str | None:
    """'b' for a boolean entry (a mask), 'i' for an integer one, else None."""
    if entry is None or entry is Ellipsis or isinstance(entry, slice):
        return None
    try:
        kind = util.dtype_category(util.dtype_of(np.asarray(entry) if isinstance(
            entry, (list, tuple)) else entry))
    except TypeError:
        return None
    return "b" if kind == "b" else "i" if kind in ("i", "u") else None


def _dims_taken(entry) -> int:
    """How many dimensions of the indexed array an index entry consumes."""
    if entry is None or entry is Ellipsis:
        return 0
    return len(np.shape(entry)) if _integer_kind(entry) == "b" else 1


def _unwrapped(index, shape: tuple, clip: bool):
    """`index` with each negative entry of its integer (array) entries replaced by one
    out of bounds of its dimension, or by 0 where the mode clips."""
    entries = index if isinstance(index, tuple) else (index,)
    rest = len(shape) - sum(_dims_taken(e) for e in entries)
    out, dim = [], 0
    for entry in entries:
        if entry is Ellipsis:
            dim += rest
        elif _integer_kind(entry) == "i":
            entry = util.ensure_arraylike("x.at[...]", np.asarray(entry) if isinstance(
                entry, (list, tuple)) else entry)
            entry = lax.select(lax.lt(entry, lax.full_like(entry, 0)),
                               lax.full_like(entry, 0 if clip else shape[dim]), entry)
        dim += _dims_taken(entry)
        out.append(entry)
    return tuple(out)


def _filled_like(x, value, dtype=None):
    x = util.ensure_arraylike("x.at[...]", x)
    return lax.full(util.shape_of(x), value, util.dtype_of(x) if dtype is None else dtype)


def _check_mode(mode) -> str | None:
    if mode is not None and mode not in _MODES:
        raise ValueError(f"x.at[...]: invalid mode {mode!r}; expected one of {_MODES}")
    return mode


class _Windows(NamedTuple):
    """An index of step-1 slices and integers as a scatter's parts (`_windows`)."""
    indices: Any  # the integers broadcast together, stacked in a last dimension
    dnums: lax.ScatterDimensionNumbers
    target: tuple[int, ...]  # the indexed shape, the shape the values broadcast to
    basic: bool  # scalar integers only: one index vector, sorted and unique (JAX's flags)


def _static_step1(entry) -> bool:
    """Whether `entry` is a slice of static bounds and step 1 (an update window)."""
    return isinstance(entry, slice) and all(
        v is None or (isinstance(v, (int, np.integer)) and not isinstance(v, bool))
        for v in (entry.start, entry.stop, entry.step)) and entry.step in (None, 1)


def _windows(shape: tuple, index) -> _Windows | None:
    """`index` into an array of `shape` as a scatter's index vectors and windows, when
    it holds only slices of step 1 (static) and integers (scalars or arrays); else
    None. As in NumPy, the integers' broadcast shape takes the place of the first of
    them when they are adjacent, else goes first; negative integers count from the end.
    As JAX's: a slice that is not the whole axis is a window starting at its start (a
    component of the index vectors), and the index vectors' components come in the
    index's order, the integers together where any is an array."""
    entries = index if isinstance(index, tuple) else (index,)
    kinds = [indexing.classify(e, i) for i, e in enumerate(entries)]
    if (not all(isinstance(d, int) for d in shape) or kinds.count("ellipsis") > 1
            or any(k not in ("ellipsis", "slice", "int", "dynamic", "array") for k in kinds)
            or any(k == "slice" and not _static_step1(e) for e, k in zip(entries, kinds))):
        return None
    n_taken = len(kinds) - kinds.count("ellipsis")
    if n_taken > len(shape):
        return None  # getitem's IndexError names it
    entries = list(entries)
    if "ellipsis" in kinds:
        at = kinds.index("ellipsis")
        fill = len(shape) - n_taken
        kinds[at:at + 1] = ["slice"] * fill
        entries[at:at + 1] = [slice(None)] * fill
    kinds += ["slice"] * (len(shape) - len(kinds))
    entries += [slice(None)] * (len(shape) - len(entries))
    integer_dims = [d for d, k in enumerate(kinds) if k != "slice"]
    windows = {}  # dim -> (start, size) of each slice
    for d, (e, k) in enumerate(zip(entries, kinds)):
        if k == "slice":
            start, stop, _ = e.indices(shape[d])
            windows[d] = (start, max(stop - start, 0))
    starts = [d for d, (start, size) in windows.items() if (start, size) != (0, shape[d])]
    if not integer_dims and not starts:
        return None  # the whole array: a plain broadcast, not a scatter
    integers = [np.asarray(entries[d]) if isinstance(entries[d], list) else entries[d]
                for d in integer_dims]
    shapes = [np.shape(i) if isinstance(i, (int, np.integer)) else util.shape_of(i)
              for i in integers]
    if not all(isinstance(d, int) for s in shapes for d in s):
        return None  # a symbolic number of indices
    try:
        batch = np.broadcast_shapes(*shapes)
    except ValueError:
        return None  # getitem's IndexError names the shapes
    index_dtype = np.dtype(np.int32 if max(shape) < 2**31 else np.int64)
    components = dict(zip(integer_dims, indexing.index_arrays(
        [(i, shape[d]) for i, d in zip(integers, integer_dims)], index_dtype, wrap_negative=True)))
    components.update({d: np.asarray(windows[d][0], index_dtype)[()] for d in starts})
    adjacent = integer_dims == list(range(integer_dims[0], integer_dims[-1] + 1)) \
        if integer_dims else True
    if any(len(s) for s in shapes):  # advanced: the integers go together
        group_at = integer_dims[0] if adjacent else -1
        order = sorted(starts + [group_at], key=lambda d: d)
        order = [d for o in order for d in (integer_dims if o == group_at else [o])]
    else:
        order = sorted(components)
    window_dims = [d for d in range(len(shape)) if d not in integer_dims]
    batch_at = (sum(d < integer_dims[0] for d in window_dims) if integer_dims and adjacent
                else 0)
    target = tuple(windows[d][1] for d in window_dims[:batch_at]) + batch + tuple(
        windows[d][1] for d in window_dims[batch_at:])
    indices = lax.concatenate([lax.broadcast_in_dim(
        components[d], (*batch, 1),
        tuple(range(len(batch) - len(np.shape(components[d])), len(batch))))
        for d in order], len(batch))
    update_window_dims = tuple(range(batch_at)) + tuple(
        range(batch_at + len(batch), len(target)))
    return _Windows(indices, lax.ScatterDimensionNumbers(
        update_window_dims=update_window_dims, inserted_window_dims=tuple(integer_dims),
        scatter_dims_to_operand_dims=tuple(order)), target, batch == ())


def _update(op: str, x, index, values, unique_indices: bool, mode,
            indices_are_sorted: bool = False):
    x = util.ensure_arraylike(f"x.at[...].{op}", x)
    util.check_arraylike(f"x.at[...].{op}", values)
    shape, dtype = util.shape_of(x), util.dtype_of(x)
    _warn_unsafe_cast(op, values, dtype)
    size = math.prod(shape)
    if size == 0:  # no element to update (as in JAX), once the index is checked
        indexing.check_index(shape, index)
        return util.as_array(x)
    windows = _windows(shape, index)
    if windows is None:
        pos_dtype = np.int32 if decided(lambda: size < 2**31, True) \
            else dtypes.default_int_dtype()
        positions = lax.reshape(lax.iota(pos_dtype, size), shape)
        # Dropped elements point one past the end, where the scatter drops them.
        picked = indexing.getitem(positions, index, mode="clip" if mode == "clip" else "fill",
                                  fill_value=size)
        target = util.shape_of(picked)
    else:
        target = windows.target
    if math.prod(target) == 0:  # no element is indexed
        return util.as_array(x)
    mode = _check_mode(mode)  # after the index, as JAX checks them
    # As in JAX, the update is computed in the dtype of x and values promoted together
    # (x.at[i].add(0.5) on integers adds 0.5 per repetition, then converts back).
    values = util.operand(values)
    computed, _ = dtypes.lattice_result_type(x, values)
    weak = util.is_weak(x)
    x, values = util.convert(x, computed), util.convert(values, computed)
    vshape = util.shape_of(values)
    if not _broadcasts_to(vshape, target):
        raise ValueError(f"x.at[...].{op}: values of shape {vshape} cannot be broadcast to "
                         f"the indexed shape {target} (x has shape {shape})")
    values = util.broadcast_to_shape(values, target)
    if windows is not None:
        out = _SCATTERS[op](x, windows.indices, values, windows.dnums,
                            indices_are_sorted=bool(indices_are_sorted) or windows.basic,
                            unique_indices=bool(unique_indices) or windows.basic,
                            mode="fill" if mode in (None, "drop") else mode)
        return util.as_array(util.convert(out, dtype, weak))
    n = math.prod(target)
    out = _SCATTERS[op](lax.reshape(x, (size,)), lax.reshape(picked, (n, 1)),
                        lax.reshape(values, (n,)), _FLAT, unique_indices=unique_indices,
                        indices_are_sorted=indices_are_sorted,
                        mode="promise_in_bounds" if mode == "promise_in_bounds" else "fill")
    return util.as_array(util.convert(lax.reshape(out, shape), dtype, weak))


def _warn_unsafe_cast(op: str, values, dtype: np.dtype) -> None:
    """JAX's FutureWarning where the update converts its values to `x`'s dtype unsafely
    (floats into integers, complex into floats...), which JAX means to make an error.
    A Python int that fits an integer `x` takes its dtype; other values keep their own
    (a Python scalar's weak one)."""
    if (isinstance(values, int) and dtypes.issubdtype(dtype, np.integer)
            and np.iinfo(dtype).min <= values <= np.iinfo(dtype).max):
        return
    given = util.dtype_of(values)
    if given != dtype and dtypes.result_type(values, dtype) != dtype:
        # stacklevel 1 reports this line, as JAX's: once per process by default
        warnings.warn(
            f"scatter inputs have incompatible types: cannot safely cast value from "
            f"dtype={given} to dtype={dtype} with jax_numpy_dtype_promotion="
            f"{config.numpy_dtype_promotion.value}: x.at[...].{op} converts the values to "
            f"{dtype}, which a future release makes an error.", FutureWarning,
            stacklevel=1)


def _broadcasts_to(shape, target) -> bool:
    return len(shape) <= len(target) and all(
        s in (1, t) for s, t in zip(reversed(shape), reversed(target)))

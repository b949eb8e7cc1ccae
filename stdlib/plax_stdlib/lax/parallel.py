"""Collectives over named axes: `psum`, `pmean`, `pmax`, `pmin`, `all_gather`,
`axis_index`, `psum_scatter`, `all_to_all`, `ppermute`.

Each is one primitive, defined here once, whichever transformation binds its axis
names: `vmap(..., axis_name=...)` batches it (the rules below), `shard_map` and
`pmap` lower it to XLA collectives. The public functions look the names up in the
axis environment (`plax.extend.batching`), so an unbound name is a NameError, and
give the primitives the sizes their shapes depend on as parameters.

In a batching rule, the collective is *this* trace's when it names the trace's
axis: the batch dimension is then the axis the collective works across. Otherwise
it is applied to each batch member alike.
"""
from __future__ import annotations

import math
import operator
from typing import Hashable

import numpy as np

from plax.extend import dtypes, tree_util
from plax.extend.ad import PrimitiveRule
from plax.extend.batching import axis_size, canonicalize_axis_names, move_to, moveaxis, not_mapped
from plax.extend.constructors import (
    NUMBER,
    ORDERED,
    canonicalize_axis,
    check_dtype,
    describe,
    kind_of,
    standard_primitive,
)
from plax.extend.core import AXIS_NAMES, ShapedArray, get_aval
from plax_stdlib.lax import comparison, elementwise, reductions, shape_ops
from plax_stdlib.lax.conversion import convert_element_type
from plax_stdlib.lax.creation import iota
from plax_stdlib.lax.gathers import GatherDimensionNumbers, GatherScatterMode, gather_p


def _sizes(names: tuple) -> int:
    return math.prod(axis_size(n) for n in names)


def _single_name(fn: str, axis_name) -> Hashable:
    names = canonicalize_axis_names(axis_name)
    if len(names) != 1:
        raise NotImplementedError(f"{fn} over several axis names {names} is not supported "
                                  "yet; apply it to one name at a time")
    axis_size(names[0])
    return names[0]


def _same_aval(x: ShapedArray) -> ShapedArray:
    return ShapedArray(x.shape, x.dtype, x.weak_type)


# --- psum, pmax, pmin --------------------------------------------------------------------

class _reduction_batcher(PrimitiveRule):
    """Across this trace's axis: reduce the batch dimension (a value not mapped is
    the same for every member: `unmapped(x, size)`), then the other names."""

    def __init__(self, reduce, unmapped):
        self.reduce, self.unmapped = reduce, unmapped

    def for_primitive(self, prim):
        def rule(axis_data, args, dims, *, axes):
            (x,), (d,) = args, dims
            if axis_data.name not in axes:
                return prim.bind(x, axes=axes), d
            x = self.unmapped(x, axis_data.size) if d is not_mapped else self.reduce(x, (d,))
            rest = tuple(a for a in axes if a != axis_data.name)
            return (prim.bind(x, axes=rest) if rest else x), not_mapped
        rule.__name__ = f"{prim.name}_batching"
        return rule


def _reduction(name: str, kinds: frozenset, reduce, unmapped):
    def abstract_eval(x, *, axes):
        check_dtype(name, x, kinds)
        return _same_aval(x)
    return standard_primitive(f"lax.{name}", abstract_eval, None, dtypes=kinds,
                              batching=_reduction_batcher(reduce, unmapped),
                              **{AXIS_NAMES: lambda *, axes: axes})


def _times_size(x, n: int):
    """The sum over the axis of a value every member has alike."""
    return elementwise.mul(x, np.asarray(n, get_aval(x).dtype)[()])


psum_p = _reduction("psum", NUMBER, reductions.reduce_sum, _times_size)
pmax_p = _reduction("pmax", ORDERED, reductions.reduce_max, lambda x, n: x)
pmin_p = _reduction("pmin", ORDERED, reductions.reduce_min, lambda x, n: x)


def _tree_collective(prim, x, axis_name):
    axes = canonicalize_axis_names(axis_name)
    _sizes(axes)
    return tree_util.tree_map(lambda leaf: prim.bind(leaf, axes=axes), x)


def psum(x, axis_name, *, axis_index_groups=None):
    """The sum of `x` (a pytree) over every member of the named axis (or axes)."""
    _no_groups("psum", axis_index_groups)
    return _tree_collective(psum_p, x, axis_name)


def pmax(x, axis_name, *, axis_index_groups=None):
    """The elementwise maximum of `x` over the named axis (or axes)."""
    _no_groups("pmax", axis_index_groups)
    return _tree_collective(pmax_p, x, axis_name)


def pmin(x, axis_name, *, axis_index_groups=None):
    """The elementwise minimum of `x` over the named axis (or axes)."""
    _no_groups("pmin", axis_index_groups)
    return _tree_collective(pmin_p, x, axis_name)


def pmean(x, axis_name, *, axis_index_groups=None):
    """The mean of `x` over the named axis (or axes); integers average as floats."""
    _no_groups("pmean", axis_index_groups)
    n = _sizes(canonicalize_axis_names(axis_name))

    def mean(total):
        dtype = get_aval(total).dtype
        if kind_of(dtype) not in ("float", "complex"):
            dtype = dtypes.default_float_dtype()
            total = convert_element_type(total, dtype)
        return elementwise.div(total, np.asarray(n, dtype)[()])
    return tree_util.tree_map(mean, psum(x, axis_name))


def _no_groups(fn: str, groups) -> None:
    if groups is not None:
        raise NotImplementedError(f"{fn}: axis_index_groups is not supported")


# --- axis_index ----------------------------------------------------------------------------

def _axis_index_batching(axis_data, args, dims, *, axis_name):
    return iota(np.int32, axis_data.size), 0


axis_index_p = standard_primitive(
    "lax.axis_index", lambda *, axis_name: ShapedArray((), np.dtype(np.int32)), None,
    batching=_axis_index_batching, **{AXIS_NAMES: lambda *, axis_name: (axis_name,)})


def axis_index(axis_name):
    """This member's position along the named axis; for a tuple of names, the
    position in their product, the first name varying slowest."""
    names = canonicalize_axis_names(axis_name)
    index = None
    for name in names:
        size = axis_size(name)
        here = axis_index_p.bind(axis_name=name)
        index = here if index is None else elementwise.add(
            elementwise.mul(index, np.int32(size)), here)
    return index


# --- all_gather ----------------------------------------------------------------------------

def _all_gather_abstract_eval(x, *, axis_name, axis_size, axis, tiled):
    shape = list(x.shape)
    if tiled:
        shape[axis] *= axis_size
    else:
        shape.insert(axis, axis_size)
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)


def _all_gather_batching(axis_data, args, dims, *, axis_name, axis_size, axis, tiled):
    (x,), (d,) = args, dims
    if axis_data.name != axis_name:
        x = moveaxis(x, d, 0)
        return all_gather_p.bind(x, axis_name=axis_name, axis_size=axis_size, axis=axis + 1,
                                 tiled=tiled), 0
    # Every member receives the whole batch: the result is the same for all of them.
    x = move_to(x, d, axis, axis_data.size)
    if tiled:
        shape = list(get_aval(x).shape)
        shape[axis:axis + 2] = [shape[axis] * shape[axis + 1]]
        x = shape_ops.reshape(x, tuple(shape))
    return x, not_mapped


all_gather_p = standard_primitive(
    "lax.all_gather", _all_gather_abstract_eval, None, batching=_all_gather_batching,
    **{AXIS_NAMES: lambda *, axis_name, **_: (axis_name,)})


def all_gather(x, axis_name, *, axis_index_groups=None, axis: int = 0, tiled: bool = False):
    """`x` (a pytree) of every member of the named axis, stacked along a new axis
    `axis` (or concatenated along `axis` if `tiled`). Several names gather over
    their product, the first name varying slowest."""
    _no_groups("all_gather", axis_index_groups)
    names = canonicalize_axis_names(axis_name)
    sizes = [axis_size(n) for n in names]

    def gather_leaf(leaf):
        ndim = get_aval(leaf).ndim
        where = canonicalize_axis("all_gather", axis, ndim if tiled else ndim + 1)
        out = leaf if tiled else shape_ops.expand_dims(leaf, (where,))
        for name, size in zip(reversed(names), reversed(sizes)):
            out = all_gather_p.bind(out, axis_name=name, axis_size=size, axis=where,
                                    tiled=True)
        return out
    return tree_util.tree_map(gather_leaf, x)


# --- psum_scatter ----------------------------------------------------------------------------

def _psum_scatter_abstract_eval(x, *, axis_name, axis_size, scatter_dimension, tiled):
    check_dtype("psum_scatter", x, NUMBER)
    shape = list(x.shape)
    if not 0 <= scatter_dimension < len(shape):
        raise ValueError(f"psum_scatter: scatter_dimension {scatter_dimension} out of range "
                         f"for operand {describe(x)}")
    if tiled:
        if shape[scatter_dimension] % axis_size:
            raise ValueError(f"psum_scatter: dimension {scatter_dimension} of operand "
                             f"{describe(x)} must be divisible by the axis size {axis_size}")
        shape[scatter_dimension] //= axis_size
    else:
        if shape[scatter_dimension] != axis_size:
            raise ValueError(f"psum_scatter: dimension {scatter_dimension} of operand "
                             f"{describe(x)} must equal the axis size {axis_size} (or pass "
                             "tiled=True)")
        del shape[scatter_dimension]
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)


def _psum_scatter_batching(axis_data, args, dims, *, axis_name, axis_size, scatter_dimension,
                           tiled):
    (x,), (d,) = args, dims
    if axis_data.name != axis_name:
        return psum_scatter_p.bind(moveaxis(x, d, 0), axis_name=axis_name, axis_size=axis_size,
                                   scatter_dimension=scatter_dimension + 1, tiled=tiled), 0
    total = _times_size(x, axis_data.size) if d is not_mapped else reductions.reduce_sum(x, (d,))
    # Member j keeps chunk j of the scatter dimension: split off the chunk index and
    # make it the batch dimension.
    shape = list(get_aval(total).shape)
    n = axis_data.size
    shape[scatter_dimension:scatter_dimension + 1] = [n, shape[scatter_dimension] // n]
    chunks = moveaxis(shape_ops.reshape(total, tuple(shape)), scatter_dimension, 0)
    if not tiled:
        chunks = shape_ops.squeeze(chunks, (scatter_dimension + 1,))
    return chunks, 0


psum_scatter_p = standard_primitive(
    "lax.psum_scatter", _psum_scatter_abstract_eval, None, batching=_psum_scatter_batching,
    **{AXIS_NAMES: lambda *, axis_name, **_: (axis_name,)})


def psum_scatter(x, axis_name, *, scatter_dimension: int = 0, axis_index_groups=None,
                 tiled: bool = False):
    """The sum over the named axis, of which each member keeps its own chunk along
    `scatter_dimension` (which, unless `tiled`, has the axis's size and is removed)."""
    _no_groups("psum_scatter", axis_index_groups)
    name = _single_name("psum_scatter", axis_name)
    size = axis_size(name)

    def scatter(leaf):
        dim = canonicalize_axis("psum_scatter", scatter_dimension, get_aval(leaf).ndim)
        return psum_scatter_p.bind(leaf, axis_name=name, axis_size=size,
                                   scatter_dimension=dim, tiled=bool(tiled))
    return tree_util.tree_map(scatter, x)


# --- all_to_all ------------------------------------------------------------------------------

def _all_to_all_abstract_eval(x, *, axis_name, axis_size, split_axis, concat_axis):
    shape = list(x.shape)
    for what, a in (("split_axis", split_axis), ("concat_axis", concat_axis)):
        if not 0 <= a < len(shape):
            raise ValueError(f"all_to_all: {what} {a} out of range for operand {describe(x)}")
    if shape[split_axis] % axis_size:
        raise ValueError(f"all_to_all: split_axis {split_axis} of operand {describe(x)} must "
                         f"be divisible by the axis size {axis_size}")
    shape[split_axis] //= axis_size
    shape[concat_axis] *= axis_size
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)


def _all_to_all_batching(axis_data, args, dims, *, axis_name, axis_size, split_axis,
                         concat_axis):
    (x,), (d,) = args, dims
    if axis_data.name != axis_name:
        return all_to_all_p.bind(moveaxis(x, d, 0), axis_name=axis_name, axis_size=axis_size,
                                 split_axis=split_axis + 1, concat_axis=concat_axis + 1), 0
    # x[i] (member i) splits into chunks x[i, j]; member j receives chunk j of every
    # member, concatenated in order i along concat_axis.
    n = axis_data.size
    x = move_to(x, d, 0, n)
    shape = list(get_aval(x).shape)
    s = split_axis + 1
    shape[s:s + 1] = [n, shape[s] // n]
    x = moveaxis(shape_ops.reshape(x, tuple(shape)), s, 0)  # (j, i, ...chunk...)
    x = moveaxis(x, 1, concat_axis + 1)  # i just before concat_axis
    shape = list(get_aval(x).shape)
    c = concat_axis + 1
    shape[c:c + 2] = [shape[c] * shape[c + 1]]
    return shape_ops.reshape(x, tuple(shape)), 0


all_to_all_p = standard_primitive(
    "lax.all_to_all", _all_to_all_abstract_eval, None, batching=_all_to_all_batching,
    **{AXIS_NAMES: lambda *, axis_name, **_: (axis_name,)})


def all_to_all(x, axis_name, split_axis: int, concat_axis: int, *, axis_index_groups=None,
               tiled: bool = False):
    """Each member splits `x` along `split_axis` into one chunk per member, sends
    chunk j to member j, and concatenates what it receives along `concat_axis`.
    Unless `tiled`, `split_axis` has the axis's size and is removed, and the received
    chunks are stacked on a new axis `concat_axis`."""
    _no_groups("all_to_all", axis_index_groups)
    name = _single_name("all_to_all", axis_name)
    size = axis_size(name)

    def exchange(leaf):
        aval = get_aval(leaf)
        split = canonicalize_axis("all_to_all", split_axis, aval.ndim, "split_axis")
        concat = canonicalize_axis("all_to_all", concat_axis, aval.ndim, "concat_axis")
        if not tiled:
            if aval.shape[split] != size:
                raise ValueError(f"all_to_all: split_axis {split} of {describe(aval)} must "
                                 f"equal the axis size {size} (or pass tiled=True)")
            if split != concat:
                # The new axis is inserted at concat_axis of the result without split_axis.
                concat = concat + 1 if split < concat else concat
                split = split if split < concat else split + 1
                leaf = shape_ops.expand_dims(leaf, (concat,))
        out = all_to_all_p.bind(leaf, axis_name=name, axis_size=size, split_axis=split,
                                concat_axis=concat)
        return out if tiled or split == concat else shape_ops.squeeze(out, (split,))
    return tree_util.tree_map(exchange, x)


# --- ppermute --------------------------------------------------------------------------------

def _ppermute_batching(axis_data, args, dims, *, axis_name, perm):
    (x,), (d,) = args, dims
    if axis_data.name != axis_name:
        return ppermute_p.bind(x, axis_name=axis_name, perm=perm), d
    n = axis_data.size
    x = move_to(x, d, 0, n)
    source = np.zeros((n, 1), np.int32)
    receives = np.zeros((n,), bool)
    for src, dst in perm:
        source[dst, 0], receives[dst] = src, True
    shape = get_aval(x).shape
    rest = tuple(range(1, len(shape)))
    moved = gather_p.bind(x, source, dimension_numbers=GatherDimensionNumbers(rest, (0,), (0,)),
                          slice_sizes=(1,) + shape[1:], indices_are_sorted=False,
                          unique_indices=True, mode=GatherScatterMode.CLIP)
    mask = shape_ops.broadcast_in_dim(receives, shape, (0,))
    zeros = shape_ops.broadcast_in_dim(np.zeros((), get_aval(x).dtype)[()], shape, ())
    return comparison.select_n(mask, zeros, moved), 0


ppermute_p = standard_primitive(
    "lax.ppermute", lambda x, *, axis_name, perm: _same_aval(x), None,
    batching=_ppermute_batching, **{AXIS_NAMES: lambda *, axis_name, **_: (axis_name,)})


def ppermute(x, axis_name, perm):
    """`x` sent from member `src` to member `dst` for each pair of `perm`; members
    that receive nothing get zeros."""
    name = _single_name("ppermute", axis_name)
    size = axis_size(name)
    pairs = tuple((operator.index(s), operator.index(d)) for s, d in perm)
    for what, column in (("sources", [s for s, _ in pairs]),
                         ("destinations", [d for _, d in pairs])):
        if len(set(column)) != len(column) or any(not 0 <= i < size for i in column):
            raise ValueError(f"ppermute: {what} {column} must be distinct members of axis "
                             f"{name!r} of size {size}; got perm {pairs}")
    return tree_util.tree_map(lambda leaf: ppermute_p.bind(leaf, axis_name=name, perm=pairs), x)

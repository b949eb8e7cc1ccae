"""Asynchronous copies of a traced size: a `pl.ds(start, size)` whose `size` is traced
in a copy's source or destination view (what `pl.BoundedSlice` blocks of
`pltpu.emit_pipeline` copy). Such an index entry is `("dslice", start, None, stride)`
in a reference's spec, its size an operand (`plax_transforms.refs.split_index`).

The copied block's shape has None along a traced size. In interpret mode the copy
reads a window as long as the dimension allows (the array padded past its end, so
that the window is never moved back into bounds), and writes only its first `size`
elements of each such dimension: the sizes are the source's, paired in order with the
destination's traced sizes.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from plax.extend.core import get_aval
from plax_stdlib import lax, numpy as jnp
from plax_transforms import refs

_FULL = ("slice", None, None, None)


def _is_sized(entry) -> bool:
    return isinstance(entry, tuple) and entry[0] == "dslice" and entry[2] is None


def has_traced_size(spec: tuple) -> bool:
    return any(_is_sized(e) for e in spec)


def _per_dim(spec: tuple, ndim: int) -> list:
    """One entry per dimension (`...` expanded, missing trailing ones whole)."""
    entries = list(spec)
    if Ellipsis in entries:
        at = entries.index(Ellipsis)
        entries[at:at + 1] = [_FULL] * (ndim - len(entries) + 1)
    return entries + [_FULL] * (ndim - len(entries))


def _operand_count(entry) -> int:
    if entry == "dynamic":  # a traced integer index
        return 1
    if isinstance(entry, tuple) and entry[0] == "dslice":
        return (entry[1] is None) + (entry[2] is None)
    return 0


def _kept(entry) -> bool:
    return isinstance(entry, tuple) and entry[0] in ("slice", "dslice")


def copied_shape(inner, spec: tuple, dynamic: Sequence[Any]) -> tuple:
    """The shape of `ref[index]` for a reference to `inner`, None where a `pl.ds` has a
    traced size."""
    if not has_traced_size(spec):
        return tuple(refs.indexed_aval(inner, spec, [get_aval(d) for d in dynamic]).shape)
    static, operands, _ = _with_bounds(spec, dynamic, len(inner.shape), [1] * len(spec))
    shape = refs.indexed_aval(inner, static, [get_aval(d) for d in operands]).shape
    kept = [e for e in _per_dim(spec, len(inner.shape)) if _kept(e)]
    return tuple(None if _is_sized(e) else n for e, n in zip(kept, shape))


def _with_bounds(spec: tuple, dynamic: Sequence[Any], ndim: int, bounds: Sequence[int]):
    """(the per-dimension spec with each traced size replaced by the next of `bounds`,
    its operands, and [(dimension, block axis, traced size)] of those entries)."""
    static, operands, sized = [], [], []
    it, bound, axis = iter(dynamic), iter(bounds), 0
    for dim, entry in enumerate(_per_dim(spec, ndim)):
        own = [next(it) for _ in range(_operand_count(entry))]
        if _is_sized(entry):
            if entry[3] != 1:
                raise NotImplementedError("an async copy of a strided pl.ds of traced size")
            sized.append((dim, axis, own[-1]))
            entry, own = ("dslice", entry[1], next(bound), 1), own[:-1]
        static.append(entry)
        operands += own
        axis += _kept(entry)
    return tuple(static), operands, sized


def copy_value(src, src_spec: tuple, src_dyn, dst, dst_spec: tuple, dst_dyn):
    """`dst` after copying `src[src_index]` into `dst[dst_index]`, where sizes are
    traced (the module docstring says how)."""
    src_dims = [d for d, e in enumerate(_per_dim(src_spec, src.ndim)) if _is_sized(e)]
    dst_dims = [d for d, e in enumerate(_per_dim(dst_spec, dst.ndim)) if _is_sized(e)]
    if len(src_dims) != len(dst_dims):
        raise ValueError("async copy: the source and the destination differ in how many "
                         "dimensions have a traced size")
    bounds = [min(src.shape[a], dst.shape[b]) for a, b in zip(src_dims, dst_dims)]
    src_static, src_ops, sized = _with_bounds(src_spec, src_dyn, src.ndim, bounds)
    dst_static, dst_ops, _ = _with_bounds(dst_spec, dst_dyn, dst.ndim, bounds)
    block = refs.read_value(_padded(src, src_dims, bounds), src_static, src_ops)
    padded_dst = _padded(dst, dst_dims, bounds)
    old = refs.read_value(padded_dst, dst_static, dst_ops)
    inside = np.bool_(True)
    for _, axis, size in sized:
        position = lax.broadcasted_iota(np.int32, block.shape, axis)
        inside = inside & (position < size)
    written = refs.written_value(padded_dst, dst_static, dst_ops, jnp.where(inside, block, old))
    return lax.slice(written, [0] * dst.ndim, dst.shape)


def _padded(x, dims: Sequence[int], bounds: Sequence[int]):
    widths = [(0, 0, 0)] * x.ndim
    for d, b in zip(dims, bounds):
        widths[d] = (0, b, 0)
    return lax.pad(x, jnp.zeros((), x.dtype), widths)

"""What batching rules share, kept in the core so primitives state their rules
without importing the vmap transform.

A batching rule has the signature

    rule(axis_data, args, dims, **params) -> (out, out_dim)

`dims[i]` is the position of the batch dimension in `args[i]`, or `not_mapped`
(None) if that argument is the same for every batch member; `axis_data` says the
size and name of the mapped axis. The rule computes the batched result (binding
primitives on whatever trace encloses the vmap) and says where its batch
dimension is (a list of dims for primitives with several results). Rules move a
batch dimension where JAX's do, so that batched Jaxprs are JAX's.
"""
from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import numpy as np

from plax._src.abstract import AbstractToken
from plax._src.ad_rules import PrimitiveRule, lax_module
from plax._src.tracing import get_aval

not_mapped = None
"""The batch dimension of a value that is not batched (a rule's `dims` entry)."""


class AxisData(NamedTuple):
    """The mapped axis of one `vmap`: its size, its name (for collectives), the mesh
    axis name(s) its batch dimension is sharded over (`spmd_axis_name`), and the
    `Explicit` mesh axes (a tuple) that split the mapped dimension in the inputs'
    types, which rules that type their results (an `out_sharding`) give the batch
    dimension."""
    size: int
    name: Any = None
    spmd_name: Any = None
    explicit_mesh_axis: tuple | None = None


def _shape(x) -> tuple[int, ...]:
    return get_aval(x).shape


def moveaxis(x, src: int, dst: int):
    """`x` with dimension `src` moved to position `dst` (nothing done if equal)."""
    if src == dst:
        return x
    lax = lax_module()
    perm = [i for i in range(len(_shape(x))) if i != src]
    perm.insert(dst, src)
    return lax.transpose(x, perm)


def broadcast_dim(x, size: int, dst: int):
    """`x` with a new dimension of `size` at position `dst`; a token as it is (one
    token orders the effects of every batch member)."""
    if type(get_aval(x)) is AbstractToken:
        return x
    lax = lax_module()
    shape = list(_shape(x))
    kept = tuple(np.delete(np.arange(len(shape) + 1), dst))  # NumPy ints: JAX's Jaxpr text
    shape.insert(dst, size)
    return lax.broadcast_in_dim(x, tuple(shape), kept)


def move_to(x, dim: int | None, dst: int, size: int):
    """`x` batched at `dst`: moved there, or broadcast there if not mapped."""
    if dim is not_mapped:
        return broadcast_dim(x, size, dst)
    return moveaxis(x, dim, dst)


def bdim_at_front(x, dim: int | None, size: int):
    """`x` with its batch dimension first (broadcast to `size` if it has none): the
    layout many rules find easiest to write for."""
    return move_to(x, dim, 0, size)


def batched_axis(axis: int, dim: int) -> int:
    """Where per-example axis `axis` is in an array batched at `dim`."""
    return axis + 1 if axis >= dim else axis


class unary_batcher(PrimitiveRule):
    """The rule of a primitive of one operand applied to each of its elements
    independently: the batch dim stays where it is."""

    def for_primitive(self, prim):
        def rule(axis_data, args, dims, **params):
            return prim.bind(*args, **params), dims[0]
        rule.__name__ = f"{prim.name}_batching"
        return rule


class broadcasting_batcher(PrimitiveRule):
    """The rule of an elementwise primitive whose operands broadcast as lax's do
    (rank-0 operands, and size-1 dimensions of equal-rank operands), as JAX's.

    Operands of rank > 0 that all have one shape and one batch position are used as
    they are. Otherwise each is batched first (transposed there, or given a size-1
    dimension there if unbatched, never a copy), a batched per-example scalar gets
    size-1 trailing dimensions, and rank-0 operands stay rank 0.
    """

    def for_primitive(self, prim):
        def rule(axis_data, args, dims, **params):
            return self.apply(prim, args, dims, params)
        rule.__name__ = f"{prim.name}_batching"
        return rule

    def apply(self, prim, args, dims, params):
        shape, dim = next((_shape(x), d) for x, d in zip(args, dims) if d is not not_mapped)
        if all(_shape(x) == shape and d == dim for x, d in zip(args, dims) if _shape(x)):
            return prim.bind(*args, **params), dim
        args = [bdim_at_front(x, d, 1) if _shape(x) else x for x, d in zip(args, dims)]
        rank = max(len(_shape(x)) for x in args)
        args = [x if d is not_mapped or len(_shape(x)) == rank
                else lax_module().expand_dims(x, tuple(range(len(_shape(x)), rank)))
                for x, d in zip(args, dims)]
        return prim.bind(*args, **params), 0


class full_shape_batcher(PrimitiveRule):
    """The rule of a primitive whose operands must have one shape, except those
    listed in `scalar_ok`, which may be rank 0 (`select_n`'s predicate, `clamp`'s
    bounds). Every operand is brought to the full batched shape, batch dim first
    unless all batched operands agree on another position."""

    def __init__(self, scalar_ok: Sequence[int] = ()):
        self.scalar_ok = frozenset(scalar_ok)

    def for_primitive(self, prim):
        def rule(axis_data, args, dims, **params):
            return self.apply(prim, axis_data.size, args, dims, params)
        rule.__name__ = f"{prim.name}_batching"
        return rule

    def apply(self, prim, size, args, dims, params):
        lax = lax_module()
        ranks = [len(_shape(x)) - (d is not not_mapped) for x, d in zip(args, dims)]
        rank = max(ranks)
        full = next(i for i, r in enumerate(ranks) if r == rank)
        batched_dims = {d for d in dims if d is not not_mapped}
        out_dim = batched_dims.pop() if len(batched_dims) == 1 else 0
        shape = list(_shape(args[full]))
        if dims[full] is not_mapped:
            shape.insert(out_dim, size)
        else:
            shape.insert(out_dim, shape.pop(dims[full]))
        new_args = []
        for i, (x, d, r) in enumerate(zip(args, dims, ranks)):
            if d is not_mapped and r == 0 and i in self.scalar_ok:
                new_args.append(x)
            elif d is not_mapped:
                kept = tuple(np.delete(np.arange(len(shape)), out_dim)) if r else ()  # (JAX's)
                new_args.append(lax.broadcast_in_dim(x, tuple(shape), kept))
            elif r == 0:
                new_args.append(lax.broadcast_in_dim(x, tuple(shape), (out_dim,)))
            else:
                new_args.append(moveaxis(x, d, out_dim))
        return prim.bind(*new_args, **params), out_dim


def common_dim(args, dims, size: int) -> tuple[list, int]:
    """Operands of one shape batched at one position: that of the first batched
    operand; unbatched ones broadcast there, others moved there."""
    out_dim = next(d for d in dims if d is not not_mapped)
    return [move_to(x, d, out_dim, size) for x, d in zip(args, dims)], out_dim


class axes_batcher(PrimitiveRule):
    """The rule of a primitive whose parameter `param` names per-example axes (an int
    or a tuple of ints) of its same-shaped operands: the axes are renumbered around
    the batch dimension, which stays where it is. With `reduces`, those axes are
    removed from the result (reductions, squeeze). With `numpy_ints` the new axes are
    NumPy integers, as JAX's reductions renumber them (their Jaxprs print so)."""

    def __init__(self, param: str, reduces: bool = False, numpy_ints: bool = False):
        self.param, self.reduces, self.int_type = param, reduces, np.int64 if numpy_ints else int

    def for_primitive(self, prim):
        param, reduces, int_type = self.param, self.reduces, self.int_type

        def rule(axis_data, args, dims, **params):
            args, d = common_dim(args, dims, axis_data.size)
            axes = params[param]
            new_axes = (batched_axis(axes, d) if isinstance(axes, int)
                        else tuple(int_type(batched_axis(a, d)) for a in axes))
            out = prim.bind(*args, **dict(params, **{param: new_axes}))
            if reduces:
                d -= int(sum(a < d for a in new_axes))
            return out, ([d] * len(out) if prim.multiple_results else d)
        rule.__name__ = f"{prim.name}_batching"
        return rule

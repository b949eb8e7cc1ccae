"""The kernel language's own primitives: compiler hints, asynchronous copies, masked
stores and rotations (`pltpu.roll`; `pltpu.repeat` is a concatenation).

`multiple_of(x, values)` is `x` with the promise that it is a multiple of `values`
(`pl.multiple_of`): interpret mode and every transformation see `x` itself; a
compiled platform's lowering tells its compiler (Mosaic: `tpu.assume_multiple`, so
that a `pl.ds(pl.multiple_of(i * 8, 8), 8)` window is known to be aligned).
"""
from __future__ import annotations

import numpy as np

from plax.extend.ad import instantiate
from plax.extend.batching import bdim_at_front
from plax.extend.constructors import standard_primitive
from plax.extend.core import Primitive, get_aval, stage_flat
from plax_pallas.bounded_copy import copied_shape, copy_value, has_traced_size
from plax_stdlib import numpy as jnp
from plax_transforms import refs
from plax_transforms.ref_discharge import register_discharge_rule
from plax_transforms.refs import REF_EFFECT, AbstractRef


def _multiple_of_jvp(primals, tangents, *, values):
    (x,), (t,) = primals, tangents
    return multiple_of_p.bind(x, values=values), t


multiple_of_p = standard_primitive(
    "pallas.multiple_of", lambda aval, *, values: aval, lambda ctx, x, *, values: x,
    impl=lambda x, *, values: x, jvp=_multiple_of_jvp,
    batching=lambda axis_data, args, dims, *, values: (
        multiple_of_p.bind(args[0], values=values), dims[0]))

__all__ = ["multiple_of_p"]


# --- asynchronous copies between references ------------------------------------------------
#
# `dma_start(src, dst, sem, *indices)` starts copying `src[src_spec]` into
# `dst[dst_spec]`, signalling the semaphore `sem[sem_spec]` when done; `dma_wait(src,
# dst, sem, *indices)` waits for that copy. Each reference comes with its index's
# static spec and dynamic operands (`ref.at[...]` views, `plax_transforms.refs`), the
# operands after the three references in the order src, dst, sem; a `pl.ds` there may
# have a traced size (`bounded_copy`). Interpret mode has one memory: the copy happens at
# the start and the wait does nothing.

def _dma_abstract_eval(*avals, specs, counts):
    for aval in avals[:3]:
        if not isinstance(aval, AbstractRef):
            raise TypeError(f"async copies take references, got {aval.str_short()}")
    return []


dma_start_p = Primitive("pallas.dma_start", multiple_results=True)
dma_wait_p = Primitive("pallas.dma_wait", multiple_results=True)
for _p in (dma_start_p, dma_wait_p):
    _p.def_abstract_eval(_dma_abstract_eval)
    _p.define_rule("effects", lambda **_: (REF_EFFECT,))


def split_operands(operands, counts):
    """(src, dst, sem references, and their dynamic index operands, one list each)."""
    refs_, rest = operands[:3], list(operands[3:])
    dynamic = []
    for n in counts:
        dynamic.append(rest[:n])
        rest = rest[n:]
    return refs_, dynamic


def _discharge_start(eqn, ins):
    (src, dst, _), (src_dyn, dst_dyn, _) = split_operands(ins, eqn.params["counts"])
    src_spec, dst_spec, _ = eqn.params["specs"]
    if has_traced_size(src_spec) or has_traced_size(dst_spec):
        dst.value = copy_value(src.value, src_spec, src_dyn, dst.value, dst_spec, dst_dyn)
        return []
    value = refs.read_value(src.value, src_spec, src_dyn)
    dst.value = refs.written_value(dst.value, dst_spec, dst_dyn, value)
    return []


register_discharge_rule(dma_start_p, _discharge_start, writes=True)
register_discharge_rule(dma_wait_p, lambda eqn, ins: [], writes=False)


def _view(ref, what: str):
    """(the reference, its index's static spec, its dynamic operands) of a reference or
    a one-level `ref.at[...]` view."""
    if isinstance(ref, refs.RefView):
        if isinstance(ref.ref, refs.RefView):
            raise NotImplementedError(f"make_async_copy: the {what} is a view of a view; "
                                      "index the reference once")
        spec, dynamic = refs.split_index(ref.index)
        return ref.ref, tuple(spec), list(dynamic)
    if not refs.is_ref(ref):
        raise TypeError(f"make_async_copy: the {what} must be a reference (or a ref.at[...] "
                        f"view of one), got {type(ref).__name__}")
    return ref, (), []


class AsyncCopyDescriptor:
    """A copy from `src` to `dst` signalling `sem`: `start()` it, later `wait()` for it."""

    def __init__(self, src, dst, sem):
        views = [_view(src, "source"), _view(dst, "destination"), _view(sem, "semaphore")]
        self._refs = [v[0] for v in views]
        self._specs = tuple(refs.IndexSpec(v[1]) for v in views)
        self._dynamic = [v[2] for v in views]
        src_shape, dst_shape = (copied_shape(r.aval.inner_aval, v[1], v[2])
                                for r, v in zip(self._refs[:2], views))
        if src_shape != dst_shape:
            raise ValueError(f"make_async_copy: the source block {src_shape} and the "
                             f"destination block {dst_shape} differ in shape")

    def _bind(self, primitive):
        primitive.bind(*self._refs, *(d for ds in self._dynamic for d in ds),
                       specs=self._specs, counts=tuple(len(d) for d in self._dynamic))

    def start(self) -> None:
        self._bind(dma_start_p)

    def wait(self) -> None:
        self._bind(dma_wait_p)


def make_async_copy(src_ref, dst_ref, sem) -> AsyncCopyDescriptor:
    """An asynchronous copy of `src_ref` into `dst_ref` (references or `ref.at[...]`
    views of the same shape) that signals the DMA semaphore `sem` when done."""
    return AsyncCopyDescriptor(src_ref, dst_ref, sem)


__all__ += ["AsyncCopyDescriptor", "dma_start_p", "dma_wait_p", "make_async_copy"]


# --- masked stores ---------------------------------------------------------------------------
#
# `masked_store(ref, value, mask, *indices)` writes `value` into `ref[spec]` where the
# boolean `mask` (of `value`'s shape) is true and leaves the other elements as they
# were (Mosaic: a masked `tpu.vector_store`).

def _masked_store_abstract_eval(ref_aval, value_aval, mask_aval, *dynamic_avals, spec):
    if not isinstance(ref_aval, AbstractRef):
        raise TypeError(f"store takes a reference, got {ref_aval.str_short()}")
    expected = refs.indexed_aval(ref_aval.inner_aval, spec, dynamic_avals)
    if value_aval.shape != expected.shape or value_aval.dtype != ref_aval.dtype:
        raise ValueError(f"store: the value {value_aval.str_short()} does not fit "
                         f"{ref_aval.str_short()}{refs.IndexSpec(spec)} "
                         f"({expected.str_short()})")
    if mask_aval.shape != value_aval.shape or mask_aval.dtype != np.bool_:
        raise ValueError(f"store: the mask must be a boolean array of the value's shape "
                         f"{value_aval.shape}, got {mask_aval.str_short()}")
    return []


masked_store_p = Primitive("pallas.masked_store", multiple_results=True)
masked_store_p.def_abstract_eval(_masked_store_abstract_eval)
masked_store_p.define_rule("effects", lambda **_: (REF_EFFECT,))


def _discharge_masked_store(eqn, ins):
    cell, value, mask, dynamic = ins[0], ins[1], ins[2], ins[3:]
    spec = eqn.params["spec"]
    old = refs.read_value(cell.value, spec, dynamic)
    cell.value = refs.written_value(cell.value, spec, dynamic, jnp.where(mask, value, old))
    return []


register_discharge_rule(masked_store_p, _discharge_masked_store, writes=True)


def store(ref, val, *, mask=None) -> None:
    """`ref[...] = val` (`ref` a reference or a `ref.at[...]` view), only where the
    boolean `mask` is true if it is given."""
    target, spec, dynamic = _view(ref, "destination")
    if mask is None:
        target[refs.join_index(spec, dynamic)] = val
        return
    aval = refs.indexed_aval(target.aval.inner_aval, spec, [get_aval(d) for d in dynamic])
    val = jnp.asarray(val, aval.dtype)
    masked_store_p.bind(target, val, jnp.asarray(mask), *dynamic, spec=refs.IndexSpec(spec))


# --- rotations ---------------------------------------------------------------------------------

def _roll_value(x, shift, *, axis, stride, stride_axis):
    if stride is None:
        return jnp.roll(x, shift, axis)
    parts = [jnp.roll(part, shift + i * stride, axis)
             for i, part in enumerate(jnp.split(x, x.shape[stride_axis], stride_axis))]
    return jnp.concatenate(parts, stride_axis)


def _roll_lowering(ctx, x, shift, **params):
    closed = stage_flat(lambda a, s: [_roll_value(a, s, **params)], list(ctx.avals_in))
    return ctx.lower_subjaxpr(closed, x, shift)[0]


roll_p = standard_primitive(
    "pallas.roll", lambda x, shift, **_: x, _roll_lowering,
    impl=lambda x, shift, **params: _roll_value(x, shift, **params),
    jvp=lambda primals, tangents, **params: (
        roll_p.bind(*primals, **params),
        roll_p.bind(instantiate(tangents[0]), primals[1], **params)),
    batching=lambda axis_data, args, dims, **params: (
        _roll_batched(axis_data, args, dims, **params), 0))


def _roll_batched(axis_data, args, dims, *, axis, stride, stride_axis):
    if dims[1] is not None:
        raise NotImplementedError("vmap of pltpu.roll over its shift (one shift per example)")
    x = bdim_at_front(args[0], dims[0], axis_data.size)
    return roll_p.bind(x, args[1], axis=axis + 1, stride=stride,
                       stride_axis=None if stride_axis is None else stride_axis + 1)


def roll(x, shift, axis: int, *, stride: int | None = None, stride_axis: int | None = None):
    """`x` rotated by `shift` (non-negative) along `axis`, as `jnp.roll`; with `stride`,
    slice `i` along `stride_axis` is rotated by `shift + i * stride`."""
    x = jnp.asarray(x)
    if isinstance(shift, (int, np.integer)) and shift < 0:
        raise ValueError("shift must be non-negative.")
    if not 0 <= axis < x.ndim:
        raise ValueError("axis is out of range.")
    if (stride is None) != (stride_axis is None):
        raise ValueError("stride and stride_axis must be both specified or not.")
    if stride is not None:
        if stride < 0:
            raise ValueError("stride must be non-negative.")
        if not 0 <= stride_axis < x.ndim:
            raise ValueError("stride_axis is out of range")
        if axis == stride_axis:
            raise ValueError("expected axis and stride_axis are different.")
    return roll_p.bind(x, jnp.asarray(shift, np.int32), axis=axis, stride=stride,
                       stride_axis=stride_axis)


def repeat(x, repeats: int, axis: int):
    """`repeats` copies of `x` side by side along `axis` (`jnp.tile` along one axis)."""
    x = jnp.asarray(x)
    axis = axis % x.ndim if x.ndim else axis
    return jnp.concatenate([x] * repeats, axis) if repeats != 1 else x


__all__ += ["masked_store_p", "repeat", "roll", "roll_p", "store"]

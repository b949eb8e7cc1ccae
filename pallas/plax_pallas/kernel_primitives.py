"""The kernel language's own primitives: compiler hints and asynchronous copies.

`multiple_of(x, values)` is `x` with the promise that it is a multiple of `values`
(`pl.multiple_of`): interpret mode and every transformation see `x` itself; a
compiled platform's lowering tells its compiler (Mosaic: `tpu.assume_multiple`, so
that a `pl.ds(pl.multiple_of(i * 8, 8), 8)` window is known to be aligned).
"""
from __future__ import annotations

from plax.extend.constructors import standard_primitive
from plax.extend.core import Primitive, get_aval
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
# operands after the three references in the order src, dst, sem. Interpret mode has
# one memory: the copy happens at the start and the wait does nothing.

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
        src_shape = refs.indexed_aval(self._refs[0].aval.inner_aval, views[0][1],
                                      [get_aval(d) for d in views[0][2]]).shape
        dst_shape = refs.indexed_aval(self._refs[1].aval.inner_aval, views[1][1],
                                      [get_aval(d) for d in views[1][2]]).shape
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

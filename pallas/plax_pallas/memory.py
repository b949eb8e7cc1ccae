"""Memory spaces and scratch buffers.

Interpret mode has one memory, so a memory space (`pl.ANY`, `pltpu.VMEM`...) is a
label: given to a `BlockSpec` it is ignored; called, `space(shape, dtype)`, it
makes a `MemoryRef`, the type of a scratch buffer (`pallas_call(scratch_shapes=...)`,
`run_scoped`). A scratch buffer starts uninitialized and keeps its contents from
one grid step to the next.
"""
from __future__ import annotations

import dataclasses
import enum
from typing import Any, Callable

import numpy as np

from plax.extend import tree_util
from plax.extend.core import Primitive, ShapedArray
from plax_pallas.interpreter import uninitialized
from plax_stdlib.lax.control_flow.common import trace_function
from plax_transforms.ref_discharge import Cell, interpret, register_discharge_rule
from plax_transforms.refs import REF_EFFECT, AbstractRef


class _Space(enum.Enum):
    def __str__(self):
        return self.value

    def __call__(self, shape, dtype) -> "MemoryRef":
        return MemoryRef(tuple(shape), np.dtype(dtype), self)


class MemorySpace(_Space):
    """Pallas's platform-independent memory spaces: `ANY` (wherever the array already
    is, for kernels that copy data themselves), `DEFAULT` and `HOST`.

    Given to a `BlockSpec(memory_space=...)` it says where a compiled kernel's
    reference lives; called with a shape and dtype, `space(shape, dtype)`, it makes a
    `MemoryRef`, the type of a scratch buffer. Interpret mode has a single memory, so
    there the space is only a label. Platforms add their own (`pltpu.VMEM`, `SMEM`).

    Examples:
        >>> from plax.experimental import pallas as pl
        >>> pl.ANY((4,), jnp.float32)
        MemoryRef(shape=(4,), dtype=dtype('float32'), memory_space=<MemorySpace.ANY: 'any'>)
    """
    ANY = "any"
    DEFAULT = "default"
    HOST = "host"


ANY = MemorySpace.ANY
HOST = MemorySpace.HOST


@dataclasses.dataclass(frozen=True)
class MemoryRef:
    """The type of a scratch buffer: its shape, dtype and memory space.

    Made by calling a memory space (`pl.ANY((8,), jnp.float32)`); used in
    `pallas_call(scratch_shapes=...)` and `run_scoped`. A scratch buffer starts
    uninitialized.

    Args:
        shape: the buffer's shape.
        dtype: its dtype.
        memory_space: the memory space it lives in.

    Examples:
        >>> from plax.experimental import pallas as pl
        >>> pl.MemoryRef((2,), np.dtype("float32")).aval()
        ShapedArray(float32[2])
    """
    shape: tuple[int, ...]
    dtype: np.dtype
    memory_space: Any = None

    def aval(self) -> ShapedArray:
        return ShapedArray(self.shape, self.dtype)


def scratch_type(t):
    """A scratch type as given (`pltpu.VMEM((8,), f32)`), or the scalar type a bare
    space stands for (`pltpu.SemaphoreType.DMA`: one semaphore)."""
    return t.scalar_type() if isinstance(t, _Space) and hasattr(t, "scalar_type") else t


def scratch_aval(t, what: str) -> ShapedArray:
    if not isinstance(t, MemoryRef):
        raise TypeError(f"{what} must be a scratch buffer type, a memory space called with a "
                        f"shape and dtype (e.g. pltpu.VMEM((8,), jnp.float32)); got {t!r}")
    return t.aval()


def run_scoped(f: Callable[..., Any], *types: MemoryRef, collective_axes=(), **kw_types):
    """Calls `f` with fresh scratch references of the given types, freed when `f`
    returns (the kernel-side local buffer).

    `f` is traced once into the `run_scoped` primitive, so that a compiled kernel
    allocates the buffers in their memory space for that region only (Mosaic: a
    `tpu.region` of `memref.alloca`s and `tpu.sem_alloc`s); interpret mode runs `f`
    on fresh uninitialized values.

    Args:
        f: a function of the new references; it may return arrays (not references).
        *types: `MemoryRef`s, one per positional reference.
        collective_axes: accepted for compatibility; unused in interpret mode, refused
            by the Mosaic lowering.
        **kw_types: `MemoryRef`s for keyword references.

    Returns:
        `f`'s result.

    Raises:
        TypeError: a type is not a `MemoryRef`.
        ValueError: `f` returns a reference.

    Examples:
        >>> from plax.experimental import pallas as pl
        >>> def kernel(x_ref, o_ref):
        ...     def use(tmp_ref):
        ...         tmp_ref[...] = 2 * x_ref[...]
        ...         o_ref[...] = tmp_ref[...] + 1
        ...     pl.run_scoped(use, pl.ANY((4,), jnp.float32))
        >>> pl.pallas_call(kernel, out_shape=plax.ShapeDtypeStruct((4,), jnp.float32),
        ...                interpret=True)(jnp.arange(4.0))
        Array([1., 3., 5., 7.], dtype=float32)
    """
    types = tuple(scratch_type(t) for t in types)
    names = tuple(kw_types)
    all_types = (*types, *(scratch_type(kw_types[k]) for k in names))
    what = [f"run_scoped's types[{i}]" for i in range(len(types))] + \
        [f"run_scoped's {k}" for k in names]
    avals = [AbstractRef(scratch_aval(t, w)) for t, w in zip(all_types, what)]

    def with_refs(*refs):
        return f(*refs[:len(types)], **dict(zip(names, refs[len(types):])))

    closed, consts, out_tree = trace_function(with_refs, avals, "run_scoped")
    if any(isinstance(a, AbstractRef) for a in closed.out_avals):
        raise ValueError("run_scoped: the function returns a reference; its references "
                         "are freed when it returns, so return their values instead")
    outs = run_scoped_p.bind(*consts, jaxpr=closed, types=all_types,
                             collective_axes=tuple(collective_axes))
    return tree_util.tree_unflatten(out_tree, outs)


# --- the run_scoped primitive ------------------------------------------------------------
#
# `run_scoped(*operands, jaxpr, types, collective_axes)`: `jaxpr` takes the operands
# (what the function closed over: values and references of the kernel) and then one
# new reference per entry of `types`; its results are the primitive's.

run_scoped_p = Primitive("pallas.run_scoped", multiple_results=True)
run_scoped_p.def_abstract_eval(lambda *avals, jaxpr, **_: list(jaxpr.out_avals))
run_scoped_p.define_rule(
    "effects", lambda *, jaxpr, **_: (REF_EFFECT, *jaxpr.jaxpr.effects))


def _fresh_cells(types) -> list[Cell]:
    return [Cell(uninitialized(t.shape, t.dtype)) for t in types]


def _discharge_run_scoped(eqn, ins):
    """The function's equations interpreted with the operands' cells (so its writes to
    the kernel's references persist) and fresh cells for its own references."""
    closed = eqn.params["jaxpr"]
    return interpret(closed.jaxpr, closed.consts, [*ins, *_fresh_cells(eqn.params["types"])])


register_discharge_rule(run_scoped_p, _discharge_run_scoped, writes=True)


@run_scoped_p.def_impl
def _run_scoped_impl(*operands, jaxpr, types, collective_axes):
    return interpret(jaxpr.jaxpr, jaxpr.consts, [*operands, *_fresh_cells(types)])

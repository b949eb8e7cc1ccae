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

from plax.extend.core import ShapedArray
from plax_pallas.interpreter import uninitialized
from plax_transforms.refs import new_ref


class _Space(enum.Enum):
    def __str__(self):
        return self.value

    def __call__(self, shape, dtype) -> "MemoryRef":
        return MemoryRef(tuple(shape), np.dtype(dtype), self)


class MemorySpace(_Space):
    """`pl`'s memory spaces."""
    ANY = "any"
    DEFAULT = "default"
    HOST = "host"


ANY = MemorySpace.ANY
HOST = MemorySpace.HOST


@dataclasses.dataclass(frozen=True)
class MemoryRef:
    """The type of a scratch buffer: its shape and dtype (and memory space label)."""
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
    """`f` called with a fresh uninitialized reference of each type; → its result."""
    def fresh(t, what):
        aval = scratch_aval(t, what)
        return new_ref(uninitialized(aval.shape, aval.dtype))
    refs = [fresh(t, f"run_scoped's types[{i}]") for i, t in enumerate(types)]
    kw_refs = {k: fresh(t, f"run_scoped's {k}") for k, t in kw_types.items()}
    return f(*refs, **kw_refs)

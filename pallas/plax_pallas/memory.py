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

    Args:
        f: a function of the new references.
        *types: `MemoryRef`s, one per positional reference.
        collective_axes: accepted for compatibility; unused in interpret mode.
        **kw_types: `MemoryRef`s for keyword references.

    Returns:
        `f`'s result.

    Raises:
        TypeError: a type is not a `MemoryRef`.

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
    def fresh(t, what):
        aval = scratch_aval(t, what)
        return new_ref(uninitialized(aval.shape, aval.dtype))
    refs = [fresh(t, f"run_scoped's types[{i}]") for i, t in enumerate(types)]
    kw_refs = {k: fresh(t, f"run_scoped's {k}") for k, t in kw_types.items()}
    return f(*refs, **kw_refs)

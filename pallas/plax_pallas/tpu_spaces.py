"""TPU memory spaces, semaphore types and grid dimension semantics: the vocabulary of
`plax.experimental.pallas.tpu`, in a module of its own so that what is built on it
(`emit_pipeline`'s buffers) and that API can both import it."""
from __future__ import annotations

import enum

import numpy as np

from plax_pallas.memory import MemoryRef, _Space


class MemorySpace(_Space):
    """TPU memory spaces (labels in interpret mode)."""
    VMEM = "vmem"
    VMEM_SHARED = "vmem_shared"
    SMEM = "smem"
    CMEM = "cmem"
    SEMAPHORE = "semaphore_mem"
    HBM = "hbm"


VMEM = MemorySpace.VMEM
VMEM_SHARED = MemorySpace.VMEM_SHARED
SMEM = MemorySpace.SMEM
CMEM = MemorySpace.CMEM
HBM = MemorySpace.HBM


class SemaphoreType(_Space):
    """Semaphores for scratch buffers: `SemaphoreType.DMA((2,))` is two DMA semaphores
    (what `make_async_copy` signals), `SemaphoreType.DMA` one. Interpret mode copies at
    once and never waits on them."""
    REGULAR = "semaphore"
    DMA = "dma_semaphore"

    def __call__(self, shape=()) -> MemoryRef:
        return MemoryRef(tuple(shape), np.dtype(np.int32), self)

    def scalar_type(self) -> MemoryRef:
        return self(())


class GridDimensionSemantics(enum.Enum):
    PARALLEL = "parallel"
    CORE_PARALLEL = "core_parallel"
    SUBCORE_PARALLEL = "subcore_parallel"
    ARBITRARY = "arbitrary"


PARALLEL = GridDimensionSemantics.PARALLEL
CORE_PARALLEL = GridDimensionSemantics.CORE_PARALLEL
SUBCORE_PARALLEL = GridDimensionSemantics.SUBCORE_PARALLEL
ARBITRARY = GridDimensionSemantics.ARBITRARY

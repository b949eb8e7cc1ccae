"""`plax.experimental.pallas.tpu`: the parts of JAX's `pallas.tpu` that a kernel run
in interpret mode uses: memory spaces for scratch buffers (`VMEM((8, 128),
jnp.float32)`) and `CompilerParams`, accepted and ignored since nothing is
compiled."""
from __future__ import annotations

import dataclasses
import enum
from typing import Any

from plax_pallas.memory import _Space


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


class GridDimensionSemantics(enum.Enum):
    PARALLEL = "parallel"
    CORE_PARALLEL = "core_parallel"
    SUBCORE_PARALLEL = "subcore_parallel"
    ARBITRARY = "arbitrary"


PARALLEL = GridDimensionSemantics.PARALLEL
CORE_PARALLEL = GridDimensionSemantics.CORE_PARALLEL
SUBCORE_PARALLEL = GridDimensionSemantics.SUBCORE_PARALLEL
ARBITRARY = GridDimensionSemantics.ARBITRARY


@dataclasses.dataclass(frozen=True)
class CompilerParams:
    """Mosaic's compiler options (no effect in interpret mode)."""
    dimension_semantics: Any = None
    allow_input_fusion: Any = None
    vmem_limit_bytes: int | None = None
    collective_id: int | None = None
    has_side_effects: Any = False
    flags: Any = None
    internal_scratch_in_bytes: int | None = None
    serialization_format: int = 1
    disable_bounds_checks: bool = False
    disable_semaphore_checks: bool = False
    skip_device_barrier: bool = False
    allow_collective_id_without_custom_barrier: bool = False
    shape_invariant_numerics: bool = False
    use_tc_tiling_on_sc: bool | None = None
    needs_layout_passes: bool | None = None
    fuse_transposed_lhs_in_matmul: bool = False


__all__ = ["ARBITRARY", "CMEM", "CORE_PARALLEL", "CompilerParams", "GridDimensionSemantics",
           "HBM", "MemorySpace", "PARALLEL", "SMEM", "SUBCORE_PARALLEL", "VMEM", "VMEM_SHARED"]

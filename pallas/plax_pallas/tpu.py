"""`plax.experimental.pallas.tpu`: TPU memory spaces (`VMEM((8, 128), jnp.float32)`
for scratch buffers, `SMEM`), semaphores and copies (`SemaphoreType`,
`make_async_copy`, `sync_copy`), pipelines inside a kernel (`emit_pipeline`),
`PrefetchScalarGridSpec` and Mosaic's `CompilerParams`, which the TPU lowering
(plax-tpu) reads and interpret mode ignores."""
from __future__ import annotations

import dataclasses
from typing import Any

from plax_pallas.copies import sync_copy
from plax_pallas.kernel_primitives import (AsyncCopyDescriptor, make_async_copy, repeat, roll,
                                          store)
from plax_pallas.pipeline import emit_pipeline
from plax_pallas.specs import GridSpec, no_block_spec
from plax_pallas.tpu_spaces import (ARBITRARY, CMEM, CORE_PARALLEL, HBM, PARALLEL, SMEM,
                                    SUBCORE_PARALLEL, VMEM, VMEM_SHARED, GridDimensionSemantics,
                                    MemorySpace, SemaphoreType)


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


def freeze_compiler_params(params):
    """`params` as a hashable primitive parameter (lists as tuples, `flags` as sorted
    items); None stays None."""
    if params is None:
        return None
    if not isinstance(params, CompilerParams):
        raise TypeError(f"compiler_params must be a pltpu.CompilerParams, got {params!r}")
    semantics = params.dimension_semantics
    if semantics is not None:
        semantics = tuple(s.value if isinstance(s, GridDimensionSemantics) else s
                          for s in semantics)
    flags = params.flags
    if isinstance(flags, dict):
        flags = tuple(sorted(flags.items()))
    fusion = params.allow_input_fusion
    return dataclasses.replace(params, dimension_semantics=semantics, flags=flags,
                               allow_input_fusion=None if fusion is None else tuple(fusion))


@dataclasses.dataclass(frozen=True)
class PrefetchScalarGridSpec(GridSpec):
    """A grid spec whose first `num_scalar_prefetch` operands are scalar-prefetch
    operands: whole arrays in SMEM, passed (as references) to every index map after
    the program ids and to the kernel ahead of the blocked operands."""
    num_scalar_prefetch: int = 0

    def __init__(self, num_scalar_prefetch: int, grid=(), in_specs=no_block_spec,
                 out_specs=no_block_spec, scratch_shapes=()):
        super().__init__(grid, in_specs, out_specs, scratch_shapes)
        object.__setattr__(self, "num_scalar_prefetch", num_scalar_prefetch)


__all__ = ["ARBITRARY", "AsyncCopyDescriptor", "CMEM", "CORE_PARALLEL", "CompilerParams",
           "GridDimensionSemantics", "HBM", "MemorySpace", "PARALLEL", "PrefetchScalarGridSpec",
           "SMEM", "SUBCORE_PARALLEL", "SemaphoreType", "VMEM", "VMEM_SHARED", "emit_pipeline",
           "make_async_copy", "repeat", "roll", "store", "sync_copy"]

"""`plax.experimental.pallas`: JAX's Pallas kernels, interpreted or compiled.

`pallas_call(kernel, out_shape, grid=..., in_specs=..., out_specs=...,
interpret=True)(*args)` runs `kernel(*in_refs, *out_refs)` once per point of
`grid` (row-major), each time on references to the blocks of the arguments and
results that the `BlockSpec`s pick from the program ids. Inside the kernel,
references are read and written by indexing (`x_ref[...]`, `x_ref[i, :]`,
`x_ref[pl.ds(start, size)]`, `o_ref[...] += v`), `program_id`/`num_programs`
locate the step, `when` runs code conditionally, and `lax` control flow and
`plax.numpy` work on the values read. It runs under jit, vmap (one more grid
dimension) and jvp; reverse mode is JAX's error. Scratch buffers
(`scratch_shapes`, `run_scoped`) are typed by a memory space called with a shape
and dtype. `plax.experimental.pallas.triton` has the masked `load`/`store` and the
atomic operations, `plax.experimental.pallas.tpu` the TPU memory spaces, copies
(`make_async_copy`, `sync_copy`), pipelines inside a kernel (`emit_pipeline`, whose
blocks may be `BoundedSlice`s) and `CompilerParams`.

Interpret mode runs on every backend; `interpret=False` compiles the kernel where a
platform's package lowers Pallas (plax-tpu: Mosaic, for TPU), and elsewhere is JAX's
ValueError on CPU and a clear error otherwise. Scalar prefetch
(`pltpu.PrefetchScalarGridSpec`), memory spaces (`pl.ANY`, `pltpu.VMEM`/`SMEM`) and
`pltpu.CompilerParams` reach the compiled kernel; interpret mode has one memory. A
reference view (`x_ref.at[...]`) is read and written as its reference, and names the
blocks `pltpu.make_async_copy` copies. Not supported: dynamic grids.
"""
from plax_stdlib.numpy.slice_index import Slice, dslice
from plax_pallas.call import pallas_call
from plax_pallas.grid_context import num_programs, program_id
from plax_pallas.helpers import cdiv, debug_print, loop, multiple_of, when
from plax_pallas.memory import ANY, HOST, MemoryRef, MemorySpace, run_scoped
from plax_pallas.primitive import pallas_call_p
from plax_pallas.specs import (BlockDim, Blocked, BlockSpec, BoundedSlice, Buffered, Element,
                               GridSpec, RevisitMode, Squeezed, no_block_spec, squeezed)

ds = dslice

__all__ = ["ANY", "HOST", "BlockDim", "BlockSpec", "Blocked", "BoundedSlice", "Buffered",
           "Element", "GridSpec", "MemoryRef", "MemorySpace", "RevisitMode", "Slice", "Squeezed",
           "cdiv", "debug_print", "ds", "dslice", "loop", "multiple_of", "no_block_spec",
           "num_programs", "pallas_call", "pallas_call_p", "program_id", "run_scoped",
           "squeezed", "when"]

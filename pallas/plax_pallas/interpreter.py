"""Interpret mode: a `pallas_call` as a loop over its grid.

Every operand and result is padded (with `uninitialized` values, as JAX's
interpreter pads, so reads past the end show up as NaN) to a whole number of
blocks. The grid runs in row-major order, one step per iteration of a
`fori_loop`: each step slices every array's block at `index_map(*ids)` (in
elements: `Blocked` indices times the block size; `dynamic_slice` clamps a block
past the end back into the array), runs the kernel with its references
discharged (a pure function from the blocks to their final values) and writes
back the blocks it changed (index maps read the scalar-prefetch operands' current
values), so a result block that consecutive steps revisit
keeps what they accumulate, and a write to an input block persists. Results start
uninitialized, or as the input they alias; the padding is cut off at the end.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from plax.extend.core import ClosedJaxpr, eval_jaxpr
from plax_stdlib import lax, numpy as jnp
from plax_stdlib.lax.control_flow.common import cached_on_jaxpr
from plax_stdlib.lax.control_flow.loops import fori_loop
from plax_pallas.specs import Blocked, BlockMapping
from plax_transforms.ref_discharge import discharge


def uninitialized(shape, dtype):
    """What a result holds before the kernel writes it (NaN, the least integer, False)."""
    dtype = np.dtype(dtype)
    if np.issubdtype(dtype, np.inexact):
        fill = np.nan
    elif np.issubdtype(dtype, np.integer):
        fill = np.iinfo(dtype).min
    else:
        fill = False
    return jnp.full(shape, fill, dtype)


@cached_on_jaxpr
def _pure_kernel(kernel: ClosedJaxpr, num_ids: int) -> tuple[ClosedJaxpr, tuple[bool, ...]]:
    """The kernel with its references discharged (program ids, then each block's value →
    each block's final value), and whether it writes each block."""
    n_refs = len(kernel.in_avals) - num_ids
    pure = discharge(kernel, [False] * num_ids + [True] * n_refs)
    invars = pure.jaxpr.invars[num_ids:]
    writes = tuple(out is not var for out, var in zip(pure.jaxpr.outvars, invars))
    return pure, writes


def _padded(x, block: BlockMapping):
    low_high = [(lo, hi) for lo, hi in block.padding]
    fill = uninitialized((), x.dtype)
    if any(p != (0, 0) for p in low_high):
        x = lax.pad(x, fill, [(lo, hi, 0) for lo, hi in low_high])
    whole = [-(-n // b) * b if b else n for n, b in zip(x.shape, block.block_shape)]
    if tuple(whole) != x.shape:
        x = lax.pad(x, fill, [(0, w - n, 0) for w, n in zip(whole, x.shape)])
    return x


def _unpadded(x, block: BlockMapping):
    starts = [lo for lo, _ in block.padding]
    limits = [s + n for s, n in zip(starts, block.array_aval.shape)]
    if tuple(limits) == x.shape and not any(starts):
        return x
    return lax.slice(x, starts, limits)


def _program_ids(step, grid: tuple[int, ...]) -> list:
    """The row-major grid position of flat step number `step`."""
    ids, stride = [], math.prod(grid)
    for n in grid:
        stride //= n
        ids.append(lax.rem(lax.div(step, np.int32(stride)), np.int32(n)))
    return ids


@cached_on_jaxpr
def _pure_index_map(index_map: ClosedJaxpr, num_ids: int) -> ClosedJaxpr:
    """An index map reading scalar-prefetch references, as a function of their values."""
    n_refs = len(index_map.in_avals) - num_ids
    return discharge(index_map, [False] * num_ids + [True] * n_refs)


def _starts(block: BlockMapping, ids: Sequence[Any], prefetch: Sequence[Any]) -> list:
    index_map = block.index_map
    if prefetch:
        index_map = _pure_index_map(index_map, len(ids))
    indices = eval_jaxpr(index_map.jaxpr, index_map.consts, *ids, *prefetch)
    indices = indices[:len(block.dims)]
    return [i * np.int32(d.block_size) if isinstance(d, Blocked) else i
            for i, d in zip(indices, block.dims)]


def run_grid(args: Sequence[Any], *, kernel: ClosedJaxpr, grid: tuple[int, ...],
             blocks: tuple[BlockMapping, ...], num_inputs: int, num_scalar_prefetch: int,
             input_output_aliases: tuple[tuple[int, int], ...], debug: bool,
             name: str | None) -> list:
    """The results of the `pallas_call` (the module docstring says how)."""
    pure, writes = _pure_kernel(kernel, len(grid))
    if debug:
        print(f"\nThe kernel of pallas_call{' ' + name if name else ''} with its references "
              "discharged:")
        print(pure)
    out_blocks = blocks[num_inputs:]
    aliased = {o: i for i, o in input_output_aliases}
    if aliased and any(p != (0, 0) for b in blocks for p in b.padding):
        raise NotImplementedError("Padding with aliasing not supported.")
    outs = [args[aliased[k]] if k in aliased else
            uninitialized(b.array_aval.shape, b.array_aval.dtype)
            for k, b in enumerate(out_blocks)]
    arrays = [_padded(x, b) for x, b in zip([*args, *outs], blocks)]

    def step(flat_index, arrays):
        ids = _program_ids(lax.convert_element_type(flat_index, np.int32), grid)
        prefetch = arrays[:num_scalar_prefetch]
        starts = [_starts(b, ids, prefetch) for b in blocks]
        values = [jnp.reshape(lax.dynamic_slice(x, s, b.block_shape), b.kernel_aval.shape)
                  for x, s, b in zip(arrays, starts, blocks)]
        finals = eval_jaxpr(pure.jaxpr, pure.consts, *ids, *values)
        return [lax.dynamic_update_slice(x, jnp.reshape(v, b.block_shape), s) if w else x
                for x, v, s, b, w in zip(arrays, finals, starts, blocks, writes)]

    steps = math.prod(grid)
    if steps == 1:
        arrays = step(np.int32(0), arrays)
    elif steps > 1:
        arrays = fori_loop(0, steps, step, arrays)
    return [_unpadded(x, b) for x, b in zip(arrays[num_inputs:], out_blocks)]

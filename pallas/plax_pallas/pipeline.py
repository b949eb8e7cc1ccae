"""`pltpu.emit_pipeline(body, grid=..., in_specs=..., out_specs=...)`: a software
pipeline inside a kernel.

`emit_pipeline(...)(*refs)` runs `body` once per point of `grid` (row-major) on VMEM
blocks of `refs` (usually left in HBM with `pl.ANY`), picked by the block specs as
`pallas_call` picks its kernel's blocks, and moves the blocks itself with
asynchronous copies into two buffers per operand, so that copies overlap the body:

* an input's block for the next step is fetched into the buffer the current step does
  not read before the current step waits for its own block; consecutive steps that
  share a block fetch it once;
* an output's block is written back when the next step moves to another block (or
  at the last step), and that copy is waited for after the next block's first step
  (the last one after the loop). As with `pallas_call`'s results, an output block is
  never read from HBM: the body writes each block it visits (or accumulates into it
  over consecutive steps).

Inside `body`, `pl.program_id` and `pl.num_programs` are the pipeline's own. It is
written in the kernel language (`run_scoped` buffers and DMA semaphores,
`make_async_copy`, `fori_loop`, `when`): interpret mode runs it as any kernel (a copy
happens when it starts) and the Mosaic lowering compiles it with no rule of its own.

A spec's `pipeline_mode=pl.Buffered(1)` gives its operand one buffer instead: its
block is copied in (out) and waited for right before (after) the steps that use it,
with no overlap, in half the VMEM.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
from typing import Any, Callable

import numpy as np

from plax.extend import tree_util
from plax_pallas import grid_context
from plax_pallas.copies import sync_copy
from plax_pallas.helpers import when
from plax_pallas.kernel_primitives import make_async_copy
from plax_pallas.memory import MemoryRef, run_scoped
from plax_pallas.specs import (BlockSpec, Blocked, BoundedSlice, Buffered, Element, Squeezed,
                               block_dim, dim_size)
from plax_pallas.tpu_spaces import ARBITRARY, PARALLEL, VMEM, SemaphoreType
from plax_stdlib import numpy as jnp
from plax_stdlib.lax.control_flow.loops import fori_loop
from plax_stdlib.numpy.slice_index import Slice
from plax_transforms import refs as refs_lib


def emit_pipeline(body: Callable[..., None], *, grid, in_specs=(), out_specs=(), tiling=None,
                  core_axis: int | None = None, core_axis_name=None, dimension_semantics=None,
                  trace_scopes: bool = True, no_pipelining: bool = False):
    """Makes a function that runs `body` over `grid` inside a kernel, on VMEM blocks of
    its reference arguments, double-buffered unless a spec asks for `pl.Buffered(1)` (the
    module docstring says how).

    Args:
        body: `body(*in_blocks, *out_blocks, *scratches)`, references to VMEM blocks,
            in the structure the pipeline's arguments have.
        grid: the pipeline's grid (static positive ints).
        in_specs: a `BlockSpec` per input reference (a pytree of them, or one).
        out_specs: a `BlockSpec` per output reference.
        tiling: accepted for compatibility (Mosaic picks the tiling).
        core_axis: a grid axis of the enclosing `pallas_call` whose steps split the
            first parallel dimension of `grid` (given by `dimension_semantics`)
            among them.
        core_axis_name: not supported (named core axes).
        dimension_semantics: per dimension of `grid`, `pltpu.PARALLEL` or
            `pltpu.ARBITRARY`; read with `core_axis`.
        trace_scopes: accepted for compatibility (no trace annotations are emitted).
        no_pipelining: not supported.

    Returns:
        `pipeline(*refs, scratches=(), allocations=None, body_prologue=None)`: the
        input references, then the output ones (pytrees matching the specs).

    Raises:
        ValueError: a grid dimension that is not positive, or specs that do not match
            the references.
        NotImplementedError: a dynamic grid, `core_axis_name`, `no_pipelining`, a
            blocked dimension its block size does not divide, or more than two buffers
            (or lookahead) in a spec's `pl.Buffered`.

    Examples:
        >>> from plax.experimental import pallas as pl
        >>> from plax.experimental.pallas import tpu as pltpu
        >>> def kernel(x_hbm, o_hbm):
        ...     def add_one(x_vmem, o_vmem):
        ...         o_vmem[...] = x_vmem[...] + 1
        ...     block = pl.BlockSpec((2,), lambda i: (i,))
        ...     pltpu.emit_pipeline(add_one, grid=(3,), in_specs=[block],
        ...                         out_specs=[block])(x_hbm, o_hbm)
        >>> hbm = pl.BlockSpec(memory_space=pl.ANY)
        >>> pl.pallas_call(kernel, out_shape=plax.ShapeDtypeStruct((6,), jnp.float32),
        ...                in_specs=[hbm], out_specs=hbm, interpret=True)(jnp.arange(6.0))
        Array([1., 2., 3., 4., 5., 6.], dtype=float32)
    """
    del tiling, trace_scopes
    grid = tuple(grid)
    for g in grid:
        if not isinstance(g, (int, np.integer)) or isinstance(g, bool):
            raise NotImplementedError(f"emit_pipeline: the grid must be static ints (plax "
                                      f"has no dynamic grids), got {grid}")
        if g <= 0:
            raise ValueError(f"All elements in the grid must be strictly positive, but got "
                             f"grid={grid}")
    if core_axis_name is not None:
        raise NotImplementedError("emit_pipeline: core_axis_name (a named core axis) is not "
                                  "supported; pass core_axis, a grid axis of the kernel")
    if no_pipelining:
        raise NotImplementedError("emit_pipeline: no_pipelining=True is not supported")
    in_specs, out_specs = _spec_leaves(in_specs), _spec_leaves(out_specs)

    def pipeline(*refs, scratches=(), allocations=None, body_prologue=None) -> None:
        if allocations is not None:
            raise NotImplementedError("emit_pipeline: allocations= is not supported (the "
                                      "pipeline allocates its buffers itself)")
        leaves, tree = tree_util.tree_flatten(refs, is_leaf=_is_ref)
        specs = in_specs + out_specs
        if len(leaves) != len(specs):
            raise ValueError(f"emit_pipeline: {len(specs)} block specs ({len(in_specs)} in, "
                             f"{len(out_specs)} out) for {len(leaves)} references")
        operands = [_Operand.make(ref, spec, k >= len(in_specs))
                    for k, (ref, spec) in enumerate(zip(leaves, specs))]
        steps = _Steps(*_partition(grid, core_axis, dimension_semantics))

        def run(*scoped):
            buffers = [_Buffers(*scoped[2 * k:2 * k + 2]) for k in range(len(operands))]

            def call_body(point, slots):
                views = [b.data.at[slot] for b, slot in zip(buffers, slots)]
                with steps.at(point):
                    if body_prologue is not None:
                        body_prologue()
                    body(*tree_util.tree_unflatten(tree, views), *scratches)

            _run_steps(steps, operands, buffers, call_body)

        run_scoped(run, *(t for op in operands for t in op.scoped_types()))
    return pipeline


def _is_ref(x) -> bool:
    return refs_lib.is_ref(x) or isinstance(x, refs_lib.RefView)


def _spec_leaves(specs) -> list[BlockSpec]:
    if not isinstance(specs, (list, tuple)):
        specs = (specs,)
    leaves = tree_util.tree_leaves(specs, is_leaf=lambda s: isinstance(s, BlockSpec))
    for s in leaves:
        if not isinstance(s, BlockSpec):
            raise TypeError(f"emit_pipeline: specs must be pl.BlockSpecs, got {s!r}")
    return leaves


def _partition(grid, core_axis, semantics) -> tuple[tuple, tuple]:
    """(this core's grid, the offsets of its indices, None for none): with
    `core_axis`, the first parallel dimension of `grid` that the enclosing kernel's
    `core_axis` steps divide is split among them."""
    offsets = (None,) * len(grid)
    if core_axis is None:
        return grid, offsets
    cores, core = grid_context.num_programs(core_axis), grid_context.program_id(core_axis)
    if cores == 1:
        return grid, offsets
    semantics = tuple(semantics) if semantics is not None else (ARBITRARY,) * len(grid)
    if len(semantics) != len(grid):
        raise ValueError("dimension_semantics must be the same length as grid.")
    parallel = [d for d, s in enumerate(semantics) if s == PARALLEL]
    if not parallel:
        raise NotImplementedError(f"Cannot partition over cores without parallel grid "
                                  f"dimensions: dimension_semantics={semantics}")
    divisible = [d for d in parallel if grid[d] % cores == 0]
    if not divisible:
        raise NotImplementedError(f"emit_pipeline: no parallel dimension of grid={grid} is "
                                  f"divisible by the {cores} steps of core_axis {core_axis}")
    d, size = divisible[0], grid[divisible[0]] // cores
    return (*grid[:d], size, *grid[d + 1:]), (*offsets[:d], core * size, *offsets[d + 1:])


@dataclasses.dataclass(frozen=True)
class _Buffers:
    data: Any  # a VMEM reference: one block per buffer
    sems: Any  # a DMA semaphore per buffer


@dataclasses.dataclass(frozen=True)
class _Operand:
    """A pipelined reference: its block dimensions, index map, direction and number of
    buffers (2, or 1 for `pl.Buffered(1)`)."""
    ref: Any
    dims: tuple
    index_map: Callable
    output: bool
    buffer_count: int = 2

    @classmethod
    def make(cls, ref, spec: BlockSpec, output: bool) -> "_Operand":
        shape = tuple(ref.shape)
        dims = tuple(Blocked(n) for n in shape) if spec.block_shape is None else \
            tuple(d if isinstance(d, BoundedSlice) else block_dim(d) for d in spec.block_shape)
        if len(dims) != len(shape):
            raise ValueError(f"emit_pipeline: the block shape {spec.block_shape} and the "
                             f"reference's shape {shape} differ in rank")
        for n, d in zip(shape, dims):
            if isinstance(d, Blocked) and n % d.block_size:
                raise NotImplementedError(
                    f"emit_pipeline: the block shape {spec.block_shape} does not divide the "
                    f"reference's shape {shape} (plax's pipeline copies whole blocks)")
            if isinstance(d, Element) and d.padding != (0, 0):
                raise NotImplementedError("emit_pipeline: pl.Element with padding")
        index_map = spec.index_map or (lambda *ids: (0,) * len(dims))
        return cls(ref, dims, index_map, output, _buffer_count(spec.pipeline_mode))

    @property
    def double_buffered(self) -> bool:
        return self.buffer_count == 2

    def scoped_types(self) -> tuple[MemoryRef, MemoryRef]:
        block = tuple(dim_size(d) for d in self.dims if not isinstance(d, Squeezed))
        n = self.buffer_count
        return VMEM((n, *block), self.ref.dtype), SemaphoreType.DMA((n,))

    def block(self, point) -> tuple:
        """The index map's result at a grid point."""
        out = self.index_map(*point)
        out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        if len(out) != len(self.dims):
            raise ValueError(f"emit_pipeline: an index map returned {len(out)} indices for "
                             f"a block of rank {len(self.dims)}")
        for d, i in zip(self.dims, out):
            if isinstance(d, BoundedSlice) != isinstance(i, Slice):
                raise ValueError(f"emit_pipeline: an index map returns a pl.ds exactly for "
                                 f"the pl.BoundedSlice dimensions; got {i!r} for {d}")
        return out

    def copy(self, block: tuple, buffers: _Buffers, slot):
        """The asynchronous copy of `block` between the reference and buffer `slot`."""
        return make_async_copy(*self.ends(block, buffers, slot), buffers.sems.at[slot])

    def ends(self, block: tuple, buffers: _Buffers, slot) -> tuple:
        """(source, destination) of `block`'s copy between the reference and buffer
        `slot` (a bounded dimension copies the index map's size, into the start of the
        buffer)."""
        window, local = [], [slot]
        for d, i in zip(self.dims, block):
            if isinstance(d, BoundedSlice):
                window.append(i)
                local.append(Slice(0, i.size))
            elif isinstance(d, Squeezed):
                window.append(i)
            else:
                start = i * d.block_size if isinstance(d, Blocked) else i
                window.append(Slice(start, d.block_size))
                local.append(slice(None))
        local, remote = buffers.data.at[tuple(local)], self.ref.at[tuple(window)]
        return (local, remote) if self.output else (remote, local)

    def copy_where(self, condition, action: str, block: tuple, buffers: _Buffers, slot):
        """`action` ("start" or "wait") the copy of `block` where `condition` holds."""
        when(condition)(lambda: getattr(self.copy(block, buffers, slot), action)())


def _buffer_count(mode) -> int:
    """The buffers of a spec's `pipeline_mode` (None: two)."""
    if mode is None:
        return 2
    if not isinstance(mode, Buffered):
        raise TypeError(f"emit_pipeline: a BlockSpec's pipeline_mode is a pl.Buffered, got "
                        f"{mode!r}")
    if mode.use_lookahead:
        raise NotImplementedError("emit_pipeline: pl.Buffered(use_lookahead=True) is not "
                                  "supported")
    if mode.buffer_count < 1:
        raise ValueError(f"buffer_count must be at least 1, got {mode.buffer_count}")
    if mode.buffer_count > 2:
        raise NotImplementedError(f"emit_pipeline: at most two buffers per operand, got "
                                  f"pl.Buffered({mode.buffer_count})")
    return mode.buffer_count


class _Steps:
    """The pipeline's grid walked in row-major order (points are int32 scalars), and
    the grid that `pl.program_id` and `pl.num_programs` see at a point."""

    def __init__(self, grid: tuple[int, ...], offsets: tuple):
        self.grid, self.offsets = grid, offsets
        self.count = math.prod(grid)

    def first(self) -> tuple:
        return tuple(np.int32(0) for _ in self.grid)

    def last(self) -> tuple:
        return tuple(np.int32(n - 1) for n in self.grid)

    def shifted(self, point, delta: int) -> tuple:
        """The point `delta` (+1 or -1) steps away, wrapping around the grid's ends."""
        out, carry = [], True
        for i, n in zip(reversed(point), reversed(self.grid)):
            edge, restart = (n - 1, 0) if delta > 0 else (0, n - 1)
            at_edge = i == edge
            moved = jnp.where(at_edge, restart, i + delta)
            out.append(moved if carry is True else jnp.where(carry, moved, i))
            carry = _and(carry, at_edge)
        return tuple(reversed(out))

    @contextlib.contextmanager
    def at(self, point):
        """The pipeline's grid made current, `point` offset by this core's share."""
        ids = tuple(i if o is None else i + o for i, o in zip(point, self.offsets))
        with grid_context.grid_context(self.grid, ids):
            yield ids


def _moved(a: tuple, b: tuple):
    """Whether two blocks differ: a traced bool, or False if they are the same ints."""
    def scalars(block):
        return [x for i in block for x in ((i.start, i.size) if isinstance(i, Slice) else (i,))]
    different = [x != y for x, y in zip(scalars(a), scalars(b))
                 if not (isinstance(x, int) and isinstance(y, int) and x == y)]
    return functools.reduce(_or, different, False)


def _and(a, b):
    return False if a is False or b is False else a & b


def _or(a, b):
    return b if a is False else a if b is False else a | b


def _run_steps(steps: _Steps, operands, buffers, call_body) -> None:
    """The prologue (the first inputs' fetches), the loop over the grid, and the
    epilogue (waiting for the last outputs' copies)."""
    with steps.at(steps.first()) as point:
        for op, buf in zip(operands, buffers):
            if not op.output and op.double_buffered:
                op.copy(op.block(point), buf, 0).start()

    def step(t, carry):
        point, slots = carry
        is_first, is_last = t == 0, t == steps.count - 1
        blocks = []
        for p in (steps.shifted(point, -1), point, steps.shifted(point, 1)):
            with steps.at(p) as ids:
                blocks.append([op.block(ids) for op in operands])
        new_slots = []
        for k, (op, buf, slot) in enumerate(zip(operands, buffers, slots)):
            prev, cur, nxt = (b[k] for b in blocks)
            turned = _and(~is_first, _moved(cur, prev))  # a new block starts here
            if op.double_buffered:
                slot = jnp.where(turned, 1 - slot, slot)
            new_slots.append(slot)
            if op.output:
                continue
            if op.double_buffered:
                op.copy_where(_and(~is_last, _moved(nxt, cur)), "start", nxt, buf, 1 - slot)
            else:
                op.copy_where(_or(is_first, turned), "start", cur, buf, slot)
            op.copy_where(_or(is_first, turned), "wait", cur, buf, slot)
        call_body(point, new_slots)
        for k, (op, buf, slot) in enumerate(zip(operands, buffers, new_slots)):
            prev, cur, nxt = (b[k] for b in blocks)
            if not op.output:
                continue
            leaving = _or(is_last, _moved(nxt, cur))  # the block is done: write it back
            if op.double_buffered:
                op.copy_where(leaving, "start", cur, buf, slot)
                op.copy_where(_and(~is_first, _moved(cur, prev)), "wait", prev, buf, 1 - slot)
            else:  # before the next step reuses the buffer (a copy of its own, as JAX's)
                when(leaving)(functools.partial(sync_copy, *op.ends(cur, buf, slot)))
        return steps.shifted(point, 1), tuple(new_slots)

    _, slots = fori_loop(0, steps.count, step,
                         (steps.first(), tuple(np.int32(0) for _ in operands)))
    with steps.at(steps.last()) as point:
        for op, buf, slot in zip(operands, buffers, slots):
            if op.output and op.double_buffered:
                op.copy(op.block(point), buf, slot).wait()

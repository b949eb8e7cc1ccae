"""Block specs: which block of each array a grid step's kernel sees.

A `BlockSpec(block_shape, index_map)` says how big a block is and, from the
program ids of a step, which block: `index_map(*ids)` gives one index per
dimension, the block's position counted in blocks (`Blocked`, the default for an
int), in elements (`Element`), or a dimension of size one that the kernel's
reference drops (`Squeezed`, spelled `None`, `pl.squeezed` or `pl.Squeezed()`).
`block_mapping` checks a spec against its array and traces the index map; the
`BlockMapping` it returns is what the `pallas_call` primitive carries.
"""
from __future__ import annotations

import dataclasses
import enum
from typing import Any, Callable, Sequence

import numpy as np

from plax.extend.core import ClosedJaxpr, ShapedArray, Tracer, fun_sourceinfo, stage_flat
from plax_stdlib.lax.conversion import convert_element_type
from plax_transforms.refs import AbstractRef
from plax_pallas.grid_context import grid_context

INDEX_AVAL = ShapedArray((), np.dtype(np.int32))


@dataclasses.dataclass(frozen=True)
class Blocked:
    """A block dimension of `block_size` elements whose index counts blocks: index `i`
    means elements `i * block_size` to `(i + 1) * block_size - 1`.

    This is what a plain int in `BlockSpec.block_shape` means.

    Args:
        block_size: the number of elements per block along this dimension.

    Examples:
        >>> from plax.experimental import pallas as pl
        >>> pl.BlockSpec((pl.Blocked(4),), lambda i: (i,)).block_shape
        (Blocked(block_size=4),)
    """
    block_size: int

    def __str__(self):
        return f"Blocked({self.block_size})"


@dataclasses.dataclass(frozen=True)
class Element:
    """A block dimension of `block_size` elements whose index is an element offset: index
    `k` means elements `k` to `k + block_size - 1`, so blocks may overlap or start
    anywhere. `padding = (low, high)` pads the array on that dimension first (the
    offsets then count in the padded array).

    Args:
        block_size: the window's length.
        padding: elements of padding before and after the array.

    Examples:
        Each step reads a window of 2 elements starting at offset 3·i:

        >>> from plax.experimental import pallas as pl
        >>> def copy(x_ref, o_ref):
        ...     o_ref[...] = x_ref[...]
        >>> f = pl.pallas_call(copy, out_shape=plax.ShapeDtypeStruct((4,), jnp.float32),
        ...                    grid=(2,),
        ...                    in_specs=[pl.BlockSpec((pl.Element(2),), lambda i: (3 * i,))],
        ...                    out_specs=pl.BlockSpec((2,), lambda i: (i,)), interpret=True)
        >>> f(jnp.arange(6.0))
        Array([0., 1., 3., 4.], dtype=float32)
    """
    block_size: int
    padding: tuple[int, int] = (0, 0)

    def __str__(self):
        pad = "" if self.padding == (0, 0) else f", padding={self.padding}"
        return f"Element({self.block_size}{pad})"


@dataclasses.dataclass(frozen=True)
class Squeezed:
    """A block dimension of size one that the kernel's reference leaves out.

    In `BlockSpec.block_shape`, `None`, `pl.squeezed` and `pl.Squeezed()` all mean
    it; the index map's index for that dimension counts single elements.

    Examples:
        Each step gets one row of a (2, 3) array as a (3,) reference:

        >>> from plax.experimental import pallas as pl
        >>> def add_one(x_ref, o_ref):
        ...     o_ref[...] = x_ref[...] + 1
        >>> row = pl.BlockSpec((pl.squeezed, 3), lambda i: (i, 0))
        >>> pl.pallas_call(add_one, out_shape=plax.ShapeDtypeStruct((2, 3), jnp.float32),
        ...                grid=(2,), in_specs=[row], out_specs=row,
    ...                interpret=True)(jnp.zeros((2, 3)))
        Array([[1., 1., 1.],
               [1., 1., 1.]], dtype=float32)
    """

    def __str__(self):
        return "Squeezed()"


squeezed = Squeezed()
BlockDim = Blocked | Element | Squeezed


@dataclasses.dataclass(frozen=True)
class BoundedSlice:
    """A block dimension of at most `block_size` elements whose index map returns a
    `pl.ds(start, size)`, `start` and `size` possibly traced (`size <= block_size`):
    only in `pltpu.emit_pipeline`'s block specs, which copy `size` elements into (or
    out of) the first `size` of a `block_size` buffer.

    Args:
        block_size: the largest size the index map returns.

    Examples:
        >>> from plax.experimental import pallas as pl
        >>> pl.BlockSpec((pl.BoundedSlice(8), 128), lambda i: (pl.ds(0, 8), 0)).block_shape
        (BoundedSlice(8), 128)
    """
    block_size: int

    def __repr__(self):
        return f"BoundedSlice({self.block_size})"


class _NoBlockSpec:
    def __repr__(self):
        return "NoBlockSpec"


no_block_spec = _NoBlockSpec()  # `in_specs`/`out_specs` not given: whole arrays


class RevisitMode(enum.Enum):
    """Whether a compiled TPU kernel may come back to an output block after leaving it:
    `IMMEDIATE` (the default) only at the next step; `ANY` at any later step, the block
    being copied back in first (single buffering only). Inputs may be revisited anyway."""
    IMMEDIATE = "immediate"
    ANY = "any"


@dataclasses.dataclass(frozen=True)
class Buffered:
    """How many buffers a compiled TPU kernel moves a block through (a `BlockSpec`'s
    `pipeline_mode`): 2 (the default) fetch the next block while the kernel works on
    this one; 1 copies each block in (or out) before (after) the step that uses it,
    halving the VMEM it takes. `use_lookahead` (fetching ahead as soon as a buffer is
    free) is not supported by the TPU compiler's pipeline, as in JAX; interpret mode
    ignores the whole option.

    Examples:
        >>> from plax.experimental import pallas as pl
        >>> spec = pl.BlockSpec((8, 128), lambda i: (i, 0), pipeline_mode=pl.Buffered(1))
        >>> spec.pipeline_mode
        Buffered(buffer_count=1, use_lookahead=False, revisit=None)
    """
    buffer_count: int
    use_lookahead: bool = False
    revisit: RevisitMode | None = None


@dataclasses.dataclass
class BlockSpec:
    """Which block of an operand (or result) each grid step of a `pallas_call` sees.

    `block_shape` gives the block's size per dimension (an int, which means
    `Blocked`; `Element`; or None/`Squeezed` for a dropped size-one dimension).
    `index_map(*program_ids)` returns one index per dimension locating the step's
    block (in blocks for `Blocked` dimensions, in elements for `Element` ones); it is
    traced, must return integer scalars, and may not capture traced values.

    Args:
        block_shape: the block's shape; None means the whole array.
        index_map: the function from program ids to block indices; None means the
            block at the origin for every step.
        pipeline_mode: a `Buffered`: how many buffers a compiled TPU kernel pipelines
            the block through (None: two); interpret mode ignores it.
        memory_space: where a compiled kernel's reference lives (`pl.ANY`: left in
            place for the kernel's own copies; a platform's spaces such as
            `pltpu.SMEM`); interpret mode ignores it.

    Examples:
        >>> from plax.experimental import pallas as pl
        >>> def double(x_ref, o_ref):
        ...     o_ref[...] = 2 * x_ref[...]
        >>> rows = pl.BlockSpec((1, 3), lambda i: (i, 0))  # step i: row i
        >>> pl.pallas_call(double, out_shape=plax.ShapeDtypeStruct((2, 3), jnp.float32),
        ...                grid=(2,), in_specs=[rows], out_specs=rows,
    ...                interpret=True)(jnp.ones((2, 3)))
        Array([[2., 2., 2.],
               [2., 2., 2.]], dtype=float32)
    """
    block_shape: Sequence[Any] | None = None
    index_map: Callable[..., Any] | None = None
    pipeline_mode: Any = None
    _: dataclasses.KW_ONLY
    memory_space: Any = None


@dataclasses.dataclass(frozen=True)
class GridSpec:
    """The grid, the block specs and the scratch shapes of a `pallas_call`, bundled as
    one `grid_spec=` argument (platforms extend it, e.g. with scalar prefetch).

    Args:
        grid: the number of steps along each grid axis.
        in_specs: a `BlockSpec` per operand.
        out_specs: a `BlockSpec` per result.
        scratch_shapes: scratch buffer types.

    Examples:
        >>> from plax.experimental import pallas as pl
        >>> def double(x_ref, o_ref):
        ...     o_ref[...] = 2 * x_ref[...]
        >>> spec = pl.BlockSpec((2,), lambda i: (i,))
        >>> gs = pl.GridSpec(grid=(2,), in_specs=[spec], out_specs=spec)
        >>> pl.pallas_call(double, out_shape=plax.ShapeDtypeStruct((4,), jnp.float32),
        ...                grid_spec=gs, interpret=True)(jnp.arange(4.0))
        Array([0., 2., 4., 6.], dtype=float32)
    """
    grid: Any = ()
    in_specs: Any = no_block_spec
    out_specs: Any = no_block_spec
    scratch_shapes: Any = ()


def block_dim(d) -> BlockDim:
    if d is None:
        return squeezed
    if isinstance(d, (Blocked, Element, Squeezed)):
        return d
    if isinstance(d, (int, np.integer)) and not isinstance(d, bool):
        return Blocked(int(d))
    if isinstance(d, BoundedSlice):
        raise NotImplementedError("pl.BoundedSlice block dimensions are only supported in "
                                  "pltpu.emit_pipeline's block specs")
    raise TypeError(f"block_shape entries are ints, None, pl.Blocked, pl.Element or "
                    f"pl.Squeezed; got {d!r}")


def dim_size(d: BlockDim) -> int:
    return 1 if isinstance(d, Squeezed) else d.block_size


@dataclasses.dataclass(frozen=True)
class BlockMapping:
    """One operand's (or result's) blocks: `dims` per array dimension, `index_map`
    a Jaxpr from the grid's program ids (int32 scalars), then a reference to each
    scalar-prefetch operand, to one int32 index per dimension, `array_aval` the whole
    array's type."""
    dims: tuple
    index_map: ClosedJaxpr
    array_aval: ShapedArray
    memory_space: Any = None  # where a compiled kernel's reference lives; None: default
    scratch: bool = False  # a scratch buffer: a result the call drops
    pipeline_mode: Buffered | None = None  # the spec's, for a compiled kernel

    @property
    def block_shape(self) -> tuple[int, ...]:
        return tuple(dim_size(d) for d in self.dims)

    @property
    def kernel_aval(self) -> ShapedArray:
        """The type of the block the kernel's reference holds (squeezed dims dropped)."""
        shape = tuple(dim_size(d) for d in self.dims if not isinstance(d, Squeezed))
        return ShapedArray(shape, self.array_aval.dtype)

    @property
    def padding(self) -> tuple[tuple[int, int], ...]:
        return tuple(d.padding if isinstance(d, Element) else (0, 0) for d in self.dims)

    def __str__(self):
        return f"BlockMapping(block_shape={_dims_text(self.dims)})"

    __repr__ = __str__


def _dims_text(dims) -> str:
    return "(" + ", ".join(map(str, dims)) + ("," if len(dims) == 1 else "") + ")"


def block_mapping(spec, aval: ShapedArray, grid: tuple[int, ...], what: str,
                  prefetch: Sequence[ShapedArray] = (), scratch: bool = False,
                  memory_space: Any = None) -> BlockMapping:
    """The checked mapping of `spec` (a BlockSpec, or `no_block_spec`) for an array
    of `aval` named `what` in messages (`args[0]`, `outputs`); its index map also
    takes references to the `prefetch` operands (scalar prefetch)."""
    if spec is no_block_spec or spec is None:
        spec = BlockSpec()
    if not isinstance(spec, BlockSpec):
        raise TypeError(f"the block spec for {what} must be a pl.BlockSpec, got {spec!r}")
    shape = aval.shape
    if spec.block_shape is None:
        dims = tuple(Blocked(n) for n in shape)
    else:
        dims = tuple(block_dim(d) for d in tuple(spec.block_shape))
    if len(dims) != len(shape):
        raise ValueError(f"Block shape for {what} (= {_dims_text(dims)}) must have the same "
                         f"number of dimensions as the array shape {shape}.")
    for d in dims:
        if dim_size(d) < 0:
            raise ValueError(f"Block shape for {what} (= {_dims_text(dims)}) has a negative "
                             "block size.")
    index_map = spec.index_map
    if index_map is None:
        index_map = lambda *ids: (0,) * len(dims)  # noqa: E731
    closed = _trace_index_map(index_map, grid, dims, what, prefetch)
    return BlockMapping(dims, closed, aval.update(weak_type=False),
                        memory_space if memory_space is not None else spec.memory_space,
                        scratch, spec.pipeline_mode)


def _trace_index_map(index_map: Callable, grid, dims, what: str, prefetch) -> ClosedJaxpr:
    src = fun_sourceinfo(index_map)

    def flat(*args):
        ids = args[:len(grid)]
        with grid_context(grid, ids):
            out = index_map(*args)
        out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        if len(out) != len(dims):
            raise ValueError(f"Index map function {src} for {what} must return {len(dims)} "
                             f"values to match block_shape={_dims_text(dims)}. Currently "
                             f"returning {len(out)} values.")
        checked = []
        for k, i in enumerate(out):
            if isinstance(i, (int, np.integer)) and not isinstance(i, bool):
                checked.append(np.int32(i))
                continue
            aval = getattr(i, "aval", None)
            if aval is None or aval.shape != () or np.dtype(aval.dtype) != np.int32:
                typ = aval.str_short() if aval is not None else type(i).__name__
                raise ValueError(f"Index map function {src} for {what} must return integer "
                                 f"scalars. Output[{k}] has type {typ}.")
            checked.append(convert_element_type(i, np.int32) if aval.weak_type else i)
        return checked

    closed = stage_flat(flat, [INDEX_AVAL] * len(grid) + [AbstractRef(a) for a in prefetch])
    if any(isinstance(c, Tracer) for c in closed.consts):
        raise ValueError(f"Index map function {src} for {what} captures traced values; pass "
                         "them as inputs")
    return closed

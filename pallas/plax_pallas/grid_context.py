"""The grid of the kernel being traced: what `pl.program_id` and `pl.num_programs`
read.

`pallas_call` traces the kernel (and each index map) with the program ids as
int32 scalar inputs; `grid_context` makes them the current ones, so
`program_id(axis)` is that input (a value of the kernel's trace, which a loop
body inside the kernel closes over like any other) and `num_programs(axis)` the
grid's static size.
"""
from __future__ import annotations

import contextlib
from typing import Any, Sequence

_GRIDS: list[tuple[tuple[int, ...], Sequence[Any]]] = []


@contextlib.contextmanager
def grid_context(grid: tuple[int, ...], ids: Sequence[Any]):
    _GRIDS.append((grid, ids))
    try:
        yield
    finally:
        _GRIDS.pop()


def _current(fn: str, axis) -> tuple[tuple[int, ...], Sequence[Any], int]:
    if not _GRIDS:
        raise ValueError(f"pl.{fn}({axis}) is only meaningful inside a pallas_call kernel "
                         "or index map")
    grid, ids = _GRIDS[-1]
    if not isinstance(axis, int) or not -len(grid) <= axis < len(grid):
        raise ValueError(f"Axis {axis} is out of bounds for grid {grid}")
    return grid, ids, axis % len(grid)


def program_id(axis: int):
    """The index of the current grid step along `axis`, inside a kernel or an index map.

    Args:
        axis: the grid axis (negative counts from the end).

    Returns:
        An int32 scalar (traced).

    Raises:
        ValueError: called outside a kernel or index map, or `axis` out of range.

    Examples:
        >>> from plax.experimental import pallas as pl
        >>> def kernel(o_ref):
        ...     o_ref[...] = jnp.full((1,), 10 * pl.program_id(0), jnp.int32)
        >>> pl.pallas_call(kernel, out_shape=plax.ShapeDtypeStruct((3,), jnp.int32), grid=(3,),
        ...                out_specs=pl.BlockSpec((1,), lambda i: (i,)), interpret=True)()
        Array([ 0, 10, 20], dtype=int32)
    """
    _, ids, axis = _current("program_id", axis)
    return ids[axis]


def num_programs(axis: int) -> int:
    """The number of grid steps along `axis` (a static int), inside a kernel or an index
    map.

    Args:
        axis: the grid axis (negative counts from the end).

    Returns:
        A Python int.

    Raises:
        ValueError: called outside a kernel or index map, or `axis` out of range.

    Examples:
        >>> from plax.experimental import pallas as pl
        >>> def kernel(o_ref):
        ...     o_ref[...] = jnp.full((1,), pl.num_programs(0), jnp.int32)
        >>> pl.pallas_call(kernel, out_shape=plax.ShapeDtypeStruct((2,), jnp.int32), grid=(2,),
        ...                out_specs=pl.BlockSpec((1,), lambda i: (i,)), interpret=True)()
        Array([2, 2], dtype=int32)
    """
    grid, _, axis = _current("num_programs", axis)
    return grid[axis]

"""`plax.experimental.mesh_utils`: arrays of devices shaped for `plax.sharding.Mesh`.

`create_device_mesh` lays the devices out in the mesh's shape: on GPUs by device id
(XLA's global numbering); on one host's tray of single-core TPU chips (v5e, v6e: 4, 8
or 16 chips) along a ring through the chips' grid where a mesh axis spans the tray, so
that neighbours in the mesh are neighbours on the interconnect, else in the grid's
order (as JAX lays them out); elsewhere in the order given.
The physical-torus placement JAX computes for larger TPU slices is not implemented:
there the mesh is valid but its collectives may take longer paths.
`create_hybrid_device_mesh` puts one such mesh per granule (a slice, or a process)
into a grid of granules, for parallelism over a slower outer network.
"""
from __future__ import annotations

import collections
import math
import operator
from typing import Any, Sequence

import numpy as np

from plax_runtime import api as runtime_api


def _axis_sizes(mesh_shape: Any, what: str) -> tuple[int, ...]:
    shape = (mesh_shape,) if isinstance(mesh_shape, (int, np.integer)) else mesh_shape
    try:
        sizes = tuple(operator.index(s) for s in shape)
    except TypeError:
        raise ValueError(f"`{what}` passed to mesh_utils should be a sequence of ints. Got "
                         f"{mesh_shape}") from None
    if any(s < 1 for s in sizes):
        raise ValueError(f"`{what}` must hold positive sizes, got {sizes}")
    return sizes


def create_device_mesh(mesh_shape: Sequence[int], devices: Sequence[Any] | None = None, *,
                       contiguous_submeshes: bool = False,
                       allow_split_physical_axes: bool = False) -> np.ndarray:
    """A NumPy array of `devices` (default: all) of shape `mesh_shape`, whose size must
    be the number of devices. `contiguous_submeshes` and `allow_split_physical_axes`
    concern TPU torus layouts, which are not computed (see the module docstring)."""
    shape = _axis_sizes(mesh_shape, "mesh_shape")
    devices = list(runtime_api.devices() if devices is None else devices)
    if math.prod(shape) != len(devices):
        raise ValueError(f"Number of devices {len(devices)} must equal the product of "
                         f"mesh_shape {shape}")
    if devices and devices[-1].platform == "gpu":
        devices = sorted(devices, key=lambda d: d.id)
    elif devices and getattr(devices[-1], "device_kind", None) in _TRAY_KINDS:
        devices = _tray_order(shape, devices)
    grid = np.empty(len(devices), dtype=object)
    grid[:] = devices
    return grid.reshape(shape)


# TPU kinds with one core per chip, whose hosts hold a 2-D tray of chips.
_TRAY_KINDS = frozenset({"TPU v5 lite", "TPU v5e", "TPU v6 lite"})


def _tray_order(shape: tuple[int, ...], devices: list) -> list:
    """The devices of one tray in the order a mesh should take them: the tray's ring
    for 4 or 8 chips (the first half of the chips in row-major order, then the second
    half back), a comb-shaped ring through a 4 x 4 grid for a mesh with an axis over
    all 16 chips, a 2 x 2 x 2 cube by coordinates with x slowest; otherwise row-major
    by coordinates (x fastest), the physical grid."""
    coords = [tuple(d.coords) for d in devices]
    cols, rows, depth = (max(c[i] for c in coords) + 1 for i in range(3))
    n = len(devices)
    by_position = sorted(devices, key=lambda d: tuple(reversed(d.coords)))
    if (cols, rows, depth) == (2, 2, 2) and n == 8:
        return sorted(devices, key=lambda d: tuple(d.coords))
    if depth == 1 and n in (4, 8):
        half = n // 2
        return [by_position[i] for i in (*range(half), *range(n - 1, half - 1, -1))]
    if depth == 1 and rows * cols == n == 16 and max(shape) == n:
        return [by_position[i] for i in _comb_ring(rows, cols)]
    return by_position


def _comb_ring(rows: int, cols: int) -> list[int]:
    """A cycle through every cell of a rows x cols grid (rows even), by row-major index:
    along the first row, then snaking through the other rows over columns 1.., and back
    up column 0; consecutive cells (and the last and the first) are grid neighbours."""
    ring = list(range(cols))
    for r in range(1, rows):
        span = range(1, cols) if r % 2 == 0 else range(cols - 1, 0, -1)
        ring += [r * cols + c for c in span]
    return ring + [r * cols for r in range(rows - 1, 0, -1)]


def create_hybrid_device_mesh(mesh_shape: Sequence[int], dcn_mesh_shape: Sequence[int],
                              devices: Sequence[Any] | None = None, *,
                              process_is_granule: bool = False,
                              should_sort_granules_by_key: bool = True,
                              allow_split_physical_axes: bool = False) -> np.ndarray:
    """A device array of shape `mesh_shape * dcn_mesh_shape` (elementwise): granules
    (slices, or processes with `process_is_granule`) arranged as `dcn_mesh_shape`,
    each holding a `create_device_mesh(mesh_shape)` of its devices."""
    inner = _axis_sizes(mesh_shape, "mesh_shape")
    outer = _axis_sizes(dcn_mesh_shape, "dcn_mesh_shape")
    if len(inner) != len(outer):
        raise ValueError(f"mesh_shape {inner} and dcn_mesh_shape {outer} must have the "
                         "same number of axes")
    devices = list(runtime_api.devices() if devices is None else devices)
    attr = "process_index" if process_is_granule else "slice_index"
    if not hasattr(devices[0], attr):
        raise ValueError(f"Device {devices[0]} does not have attribute {attr}. See "
                         "`process_is_granule` option.")
    by_granule = collections.defaultdict(list)
    for device in devices:
        by_granule[getattr(device, attr)].append(device)
    keys = sorted(by_granule) if should_sort_granules_by_key else list(by_granule)
    if math.prod(outer) != len(keys):
        raise ValueError(f"Number of slices {len(keys)} must equal the product of "
                         f"dcn_mesh_shape {outer}")
    blocks = [create_device_mesh(inner, by_granule[k]) for k in keys]
    out = np.empty(tuple(i * o for i, o in zip(inner, outer)), dtype=object)
    for position, block in zip(np.ndindex(*outer), blocks):
        out[tuple(slice(p * i, (p + 1) * i) for p, i in zip(position, inner))] = block
    return out


__all__ = ["create_device_mesh", "create_hybrid_device_mesh"]

"""Pictures of shardings: `plax.debug.visualize_array_sharding(x)`,
`visualize_sharding(shape, sharding)` and `inspect_array_sharding`.

A 1-D or 2-D array is drawn as a grid of its tiles, each labelled with the devices
holding it (`CPU 0` or, when replicated, `CPU 0,4`), in box-drawing characters.
"""
from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, Callable

from plax.extend.core import Tracer
from plax.extend.sharding import Sharding
from plax_runtime.array import Array


def _device_label(devices) -> str:
    platform = devices[0].platform.upper()
    return f"{platform} {','.join(str(d.id) for d in sorted(devices, key=lambda d: d.id))}"


def sharding_picture(shape: Sequence[int], sharding: Sharding) -> str:
    """The text drawing `visualize_sharding` prints."""
    shape = tuple(shape)
    if len(shape) not in (1, 2):
        raise ValueError(f"visualize_sharding draws arrays of rank 1 or 2; got shape {shape}")
    indices = sharding.devices_indices_map(shape)
    grid = shape if len(shape) == 2 else (1, shape[0])

    def start(index, axis) -> int:
        if len(shape) == 1 and axis == 0:
            return 0
        s = index[axis if len(shape) == 2 else 0]
        return s.indices(grid[axis])[0]

    tiles: dict[tuple[int, int], list] = {}
    for device, index in indices.items():
        tiles.setdefault((start(index, 0), start(index, 1)), []).append(device)
    rows = sorted({r for r, _ in tiles})
    cols = sorted({c for _, c in tiles})
    labels = {key: _device_label(devs) for key, devs in tiles.items()}
    width = max(len(label) for label in labels.values()) + 2

    def line(left: str, middle: str, right: str) -> str:
        return left + middle.join("─" * width for _ in cols) + right

    out = [line("┌", "┬", "┐")]
    for i, r in enumerate(rows):
        cells = [labels.get((r, c), "").center(width) for c in cols]
        blank = "│" + "│".join(" " * width for _ in cols) + "│"
        out += [blank, "│" + "│".join(cells) + "│", blank]
        out.append(line("├", "┼", "┤") if i < len(rows) - 1 else line("└", "┴", "┘"))
    return "\n".join(out)


def visualize_sharding(shape: Sequence[int], sharding: Sharding, *, file=None) -> None:
    """Prints how an array of `shape` is split over devices by `sharding`."""
    print(sharding_picture(shape, sharding), file=file or sys.stdout)


def visualize_array_sharding(arr: Any, *, file=None) -> None:
    """Prints how the Array `arr` is split over its devices."""
    if isinstance(arr, Tracer):
        raise TypeError("visualize_array_sharding needs a concrete Array; inside jit use "
                        "plax.debug.inspect_array_sharding")
    if not isinstance(arr, Array):
        raise TypeError(f"visualize_array_sharding expects a plax Array, got "
                        f"{type(arr).__name__}")
    visualize_sharding(arr.shape, arr.sharding, file=file)


def inspect_array_sharding(value: Any, *, callback: Callable[[Sharding], None]) -> None:
    """Calls `callback` with the sharding of `value`: at once for an Array, and for a
    value traced inside jit when the computation is compiled (see `inspection.py`)."""
    from plax_sharding.inspection import inspect_sharding
    inspect_sharding(value, callback)

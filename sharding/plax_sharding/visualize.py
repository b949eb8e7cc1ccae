"""Pictures of shardings: `plax.debug.visualize_array_sharding(x)`,
`visualize_sharding(shape, sharding)` and `inspect_array_sharding`.

A 1-D or 2-D array is drawn as a grid of its tiles, each labelled with the devices
holding it (`CPU 0` or, when replicated, `CPU 0,4`). With `rich` installed the grid
is a rich table whose tiles are sized like the array's blocks (and coloured on a
colour terminal), as JAX draws it; without it, a plain grid of box-drawing
characters with one width for every tile.
"""
from __future__ import annotations

import colorsys
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Callable

from plax.extend.core import Tracer
from plax.extend.sharding import Sharding
from plax_runtime.array import Array


@dataclass(frozen=True)
class _Tile:
    label: str       # "CPU 0,4": the platform and the ids of the devices holding it
    height: float    # fraction of the array's rows (None for a 1-D array)
    width: float     # fraction of the array's columns (of its elements for 1-D)


def _tiles(shape: tuple, sharding: Sharding) -> list[list[_Tile]]:
    """The tiles of `shape` under `sharding`, row by row (one row for 1-D)."""
    if len(shape) not in (1, 2):
        raise ValueError(f"visualize_sharding draws arrays of rank 1 or 2; got shape {shape}")
    devices: dict[tuple, list] = {}
    extents: dict[tuple, tuple] = {}
    for device, index in sharding.devices_indices_map(shape).items():
        bounds = [s.indices(n)[:2] for s, n in zip(index, shape)]
        key = tuple(lo for lo, _ in bounds)
        devices.setdefault(key, []).append(device)
        extents[key] = tuple((hi - lo) / n for (lo, hi), n in zip(bounds, shape))
    rows = sorted({k[0] for k in devices}) if len(shape) == 2 else [None]
    cols = sorted({k[-1] for k in devices})

    def tile(key) -> _Tile:
        devs = sorted(devices[key], key=lambda d: d.id)
        label = f"{devs[0].platform.upper()} {','.join(str(d.id) for d in devs)}"
        return _Tile(label, extents[key][0] if len(shape) == 2 else None, extents[key][-1])

    return [[tile((c,) if r is None else (r, c)) for c in cols] for r in rows]


def _plain_picture(grid: list[list[_Tile]]) -> str:
    """The plain-text drawing (every tile as wide as the widest label)."""
    width = max(len(t.label) for row in grid for t in row) + 2

    def line(left: str, middle: str, right: str) -> str:
        return left + middle.join("─" * width for _ in grid[0]) + right

    blank = "│" + "│".join(" " * width for _ in grid[0]) + "│"
    out = [line("┌", "┬", "┐")]
    for i, row in enumerate(grid):
        out += [blank, "│" + "│".join(t.label.center(width) for t in row) + "│", blank]
        out.append(line("├", "┼", "┤") if i < len(grid) - 1 else line("└", "┴", "┘"))
    return "\n".join(out)


_CHAR_ASPECT = 2.5  # a terminal cell is about 2.5 times as tall as it is wide


def _palette(n: int) -> list[tuple[str, str]]:
    """`n` background colours spread round the hue circle, each with a readable
    text colour."""
    out = []
    for i in range(n):
        r, g, b = colorsys.hsv_to_rgb((i * 0.61803) % 1.0, 0.45, 0.85)
        text = "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"
        out.append((f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}", text))
    return out


def _rich_picture(grid: list[list[_Tile]], shape: tuple, file, *, use_color: bool,
                  scale: float, min_width: int, max_width: int) -> None:
    """Prints the tiles as a rich table: each tile's height and width follow the
    block of the array it holds; on a colour terminal tiles are coloured instead of
    boxed."""
    from rich import box
    from rich.console import Console
    from rich.padding import Padding
    from rich.style import Style
    from rich.table import Table

    console = Console(width=max_width, file=file)
    colored = use_color and console.color_system is not None
    base_height = int(10 * scale)
    base_width = int(base_height * (shape[1] if len(shape) == 2 else 1) / shape[0])
    colors = iter(_palette(sum(map(len, grid))))
    table = Table(show_header=False, show_lines=not colored, padding=0, pad_edge=False,
                  highlight=not colored, box=None if colored else box.SQUARE)
    for row in grid:
        cells = []
        for t in row:
            height = 1 if t.height is None else int(t.height * base_height)
            width = min(max(int(t.width * base_width * _CHAR_ASPECT), min_width), max_width)
            left, odd = divmod(width - len(t.label) - 2, 2)
            top, tall = divmod(height - 2, 2)
            pads = [top, left + odd, top + tall, left]
            style = Style()
            if colored:
                pads = [p + 1 for p in pads]
                background, text = next(colors)
                style = Style(bgcolor=background, color=text)
            cells.append(Padding(t.label, tuple(max(p, 0) for p in pads), style=style))
        table.add_row(*cells)
    console.print(table, end="\n\n")


def visualize_sharding(shape: Sequence[int], sharding: Sharding, *, use_color: bool = True,
                       scale: float = 1.0, min_width: int = 9, max_width: int = 80,
                       file=None) -> None:
    """Prints how an array of `shape` is split over devices by `sharding`: with rich
    when it is installed (JAX's keywords size and colour the tiles), as plain text
    otherwise. `file` (default stdout) is where it goes."""
    shape, file = tuple(shape), file or sys.stdout
    grid = _tiles(shape, sharding)
    try:
        import rich  # noqa: F401  (optional: the picture degrades to plain text)
    except ImportError:
        print(_plain_picture(grid), file=file)
        return
    _rich_picture(grid, shape, file, use_color=use_color, scale=scale,
                  min_width=min_width, max_width=max_width)


def visualize_array_sharding(arr: Any, **kwargs) -> None:
    """Prints how the Array `arr` is split over its devices (keywords as for
    `visualize_sharding`)."""
    if isinstance(arr, Tracer):
        raise TypeError("visualize_array_sharding needs a concrete Array; inside jit use "
                        "plax.debug.inspect_array_sharding")
    if not isinstance(arr, Array):
        raise TypeError(f"visualize_array_sharding expects a plax Array, got "
                        f"{type(arr).__name__}")
    visualize_sharding(arr.shape, arr.sharding, **kwargs)


def inspect_array_sharding(value: Any, *, callback: Callable[[Sharding], None]) -> None:
    """Calls `callback` with the sharding of `value`: at once for an Array, and for a
    value traced inside jit when the computation is compiled (see `inspection.py`)."""
    from plax_sharding.inspection import inspect_sharding
    inspect_sharding(value, callback)

"""`jax._src.util`: the list helpers custom interpreters written for JAX import
(`safe_map`, `safe_zip`: jaxlib's own, which check the lengths agree; `unzip2`,
`split_list`...; JAX's "Writing custom interpreters" tutorial uses `safe_map`)."""
from __future__ import annotations

import operator
from typing import Any, Iterable, Sequence

from jaxlib.utils import foreach, safe_map, safe_zip  # noqa: F401

PLAX_MODULE = None


def unzip2(pairs: Iterable[tuple[Any, Any]]) -> tuple[tuple, tuple]:
    """The first and the second elements of the pairs, as two tuples."""
    pairs = list(pairs)
    return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)


def unzip3(triples: Iterable[tuple[Any, Any, Any]]) -> tuple[tuple, tuple, tuple]:
    triples = list(triples)
    return tuple(t[0] for t in triples), tuple(t[1] for t in triples), tuple(
        t[2] for t in triples)


def split_list(items: Sequence, sizes: Sequence[int]) -> list[list]:
    """`items` cut into pieces of `sizes`, then the rest (len(sizes) + 1 lists)."""
    items, pieces = list(items), []
    for size in sizes:
        pieces.append(items[:size])
        items = items[size:]
    return [*pieces, items]


def partition_list(flags: Sequence[bool], items: Sequence) -> tuple[list, list]:
    """The items whose flag is False, and those whose flag is True."""
    assert len(flags) == len(items), (len(flags), len(items))
    return ([x for f, x in zip(flags, items) if not f], [x for f, x in zip(flags, items) if f])


def merge_lists(flags: Sequence[bool], falses: Sequence, trues: Sequence) -> list:
    """`partition_list` undone: the next of `trues` where a flag is set, else of `falses`."""
    falses, trues = iter(falses), iter(trues)
    merged = [next(trues) if f else next(falses) for f in flags]
    assert next(falses, None) is None and next(trues, None) is None, "lengths do not match"
    return merged


def canonicalize_axis(axis, num_dims: int) -> int:
    """`axis` in [0, num_dims), a negative one counted from the end; ValueError outside."""
    axis = operator.index(axis)
    if not -num_dims <= axis < num_dims:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {num_dims}")
    return axis % num_dims if num_dims else axis


def wrap_name(transform_name: str, name: str) -> str:
    """`jit(f)`: a function's name under a transformation."""
    return f"{transform_name}({name})"

"""`plax.ds(start, size, stride)`: a slice whose start (and size) may be traced.

Python's `x[i:i + 2]` needs a static `i`; `x[plax.ds(i, 2)]` takes a traced `i`
because the slice's *size* is what fixes the result's shape. `Slice` is the index
object (a pytree: a traced start or size is its child, a static one its aux data, so
it can cross `jit`); plax.numpy indexing, `x.at[...]` and `Ref` indexing accept it. A
traced size is only for what has no result shape (a Pallas kernel's asynchronous
copies, `pl.BoundedSlice` blocks); indexing an array with it is a TypeError.
"""
from __future__ import annotations

import dataclasses
import operator

import numpy as np

from plax.extend import tree_util
from plax.extend.core import Tracer


def _is_static_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _checked_size(size):
    """The size as an int, or as a traced integer scalar (a dynamic size)."""
    if isinstance(size, Tracer) and size.to_concrete_value() is None:
        if size.aval.shape or not np.issubdtype(size.aval.dtype, np.integer):
            raise TypeError(f"Slice: the size must be an integer scalar, got "
                            f"{size.aval.str_short()}")
        return size
    try:
        size = operator.index(size)
    except TypeError:
        raise TypeError(f"Slice: the size must be an integer, got {size!r}") from None
    if size < 0:
        raise ValueError(f"Slice: the size must be >= 0, got {size}")
    return size


@dataclasses.dataclass(slots=True)
class Slice:
    """A slice of `size` elements starting at `start`, taking every `stride`-th: like
    Python's `slice`, except that `start` may be a traced integer. So may `size`, where
    no result's shape depends on it (asynchronous copies in Pallas kernels).

    Pallas kernels index references with it (usually through `pl.ds`); it is a
    pytree whose traced start and size are its children.

    Args:
        start: the first index (an int or an integer scalar, possibly traced).
        size: the number of elements taken (an int >= 0, or a traced integer).
        stride: the step between them (a static int >= 0).

    Raises:
        TypeError: a size that is not an integer (scalar).
        ValueError: a negative size or stride, or a non-static stride.

    Examples:
        >>> from plax.experimental import pallas as pl
        >>> jnp.arange(6.0)[pl.Slice(1, 2, stride=2)]
        Array([1., 3.], dtype=float32)
    """
    start: object
    size: int
    stride: int = 1

    def __post_init__(self):
        if not _is_static_int(self.stride):
            raise ValueError("Non-static stride in `dslice`")
        if self.stride < 0:
            raise ValueError("`stride` must be >= 0.")
        self.size = _checked_size(self.size)


    @property
    def is_dynamic_start(self) -> bool:
        return not _is_static_int(self.start)

    @property
    def is_dynamic_size(self) -> bool:
        return not _is_static_int(self.size)

    @classmethod
    def from_slice(cls, slc: slice, size: int) -> "Slice":
        """The `Slice` picking what the static Python slice `slc` picks from `size`."""
        start, stop, step = slc.indices(size)
        if step < 1:
            raise ValueError(f"slice must have a step >= 1 (found: {step})")
        return cls(start, len(range(start, stop, step)), step)


def _flatten(s: Slice):
    dynamic = (s.is_dynamic_start, s.is_dynamic_size)
    children = tuple(x for x, d in zip((s.start, s.size), dynamic) if d)
    return children, (None if dynamic[0] else s.start, None if dynamic[1] else s.size,
                      s.stride, dynamic)


def _unflatten(aux, children):
    """The slice with `children` in place of its traced parts, whatever they are (a
    tree_map may put any value there), so not checked again."""
    *static, stride, dynamic = aux
    it = iter(children)
    out = object.__new__(Slice)
    out.start, out.size = (next(it) if d else x for x, d in zip(static, dynamic))
    out.stride = stride
    return out


tree_util.register_pytree_node(Slice, _flatten, _unflatten)


def dslice(start, size: int | None = None, stride: int | None = None) -> slice | Slice:
    """Makes a `Slice`, with arguments that mirror Python's `slice`: `ds(None)` is `:`,
    `ds(n)` is `:n`, `ds(i, n)` is `i:i+n`, and `ds(i, n, s)` picks the `n` elements
    `i, i+s, i+2s...`; `i` may be traced. `pl.ds` is the same function.

    Args:
        start: the first index, or the size when `size` is not given, or None.
        size: the number of elements (an int; a traced one only for copies).
        stride: the step (static); default 1.

    Returns:
        A `Slice` (or `slice(None)` for `ds(None)`).

    Raises:
        ValueError: a non-static stride.

    Examples:
        >>> from plax.experimental import pallas as pl
        >>> pl.ds(2, 3), pl.ds(4)
        (Slice(start=2, size=3, stride=1), Slice(start=0, size=4, stride=1))
        >>> jnp.arange(6.0)[pl.ds(2, 3)]
        Array([2., 3., 4.], dtype=float32)
    """
    if start is None:
        return slice(None)
    if stride is None:
        stride = 1
    if not _is_static_int(stride):
        raise ValueError("Non-static stride in `dslice`")
    if size is None:
        start, size = 0, start
    return Slice(start, size, stride)

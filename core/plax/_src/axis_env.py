"""The axis environment: the named axes collectives may use right now.

`vmap(..., axis_name='i')` (and later `shard_map`, `pmap`) binds a name to a size
for as long as the mapped function runs, per thread. A collective names axes;
`axis_size(name)` is how it learns their sizes, and using a name nothing bound
raises a `NameError` naming it.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Hashable


class _Env(threading.local):
    def __init__(self):
        self.sizes: list[tuple[Hashable, int]] = []  # innermost last


_env = _Env()


@contextlib.contextmanager
def extend_axis_env(name: Hashable, size: int):
    """Bind axis `name` to `size` for the block (an inner binding shadows an outer one)."""
    _env.sizes.append((name, size))
    try:
        yield
    finally:
        _env.sizes.pop()


def bound_axis_names() -> list[Hashable]:
    """The names bound now, outermost first (for error messages naming what exists)."""
    return [name for name, _ in _env.sizes]


def axis_size(name: Hashable) -> int:
    """The size bound to `name`; NameError if it is not bound."""
    for bound, size in reversed(_env.sizes):
        if bound == name:
            return size
    raise NameError(f"unbound axis name: {name}. The following axis names (e.g. defined "
                    f"by vmap, pmap or shard_map) are available to collective operations: "
                    f"{bound_axis_names()}")


def canonicalize_axis_names(axis_name: Any) -> tuple[Hashable, ...]:
    """`axis_name` (a name or a tuple/list of names) as a tuple of names."""
    names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    for name in names:
        try:
            hash(name)
        except TypeError:
            raise TypeError(f"axis names must be hashable, got {name!r}") from None
    return names

"""`plax.memory`: the memory spaces an Array can live in, as JAX's `jax.memory`.

`Space.Device` is the accelerator's own memory (memory kind "device"), `Space.Host`
the host memory a device can reach directly (memory kind "pinned_host");
`Space.Any` leaves the choice to the compiler and names no memory kind, so values
cannot be placed in it. `plax.device_put(x, plax.memory.Space.Host)` moves `x` to
that memory of the devices it is on (the default device for host values).
"""
from __future__ import annotations

import enum


class Space(enum.Enum):
    """A memory space: Device, Host or Any (see the module doc)."""
    Device = enum.auto()
    Host = enum.auto()
    Any = enum.auto()

    def __repr__(self):
        return f"MemorySpace.{self.name}"

    __hash__ = object.__hash__  # identity, as JAX's (Enum hashes the name)


_KINDS = {Space.Device: "device", Space.Host: "pinned_host"}


def memory_kind_of(space: Space) -> str:
    """The memory kind of shardings placing values in `space`."""
    kind = _KINDS.get(space)
    if kind is None:
        raise ValueError(f"{space!r} is not a memory values can be placed in; use "
                         "plax.memory.Space.Device or plax.memory.Space.Host")
    return kind


__all__ = ["Space"]

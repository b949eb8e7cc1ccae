"""`PartitionSpec` (`P`): which mesh axes split each dimension of an array.

`P('x', None, ('y', 'z'))` splits dimension 0 over mesh axis `x`, leaves dimension
1 whole, and splits dimension 2 over `y` and `z` (major first). Dimensions past the
end of the spec are not split. `P.UNCONSTRAINED` leaves a dimension to the
partitioner. Specs are interned: equal calls give the same object.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from jaxlib import weakref_lru_cache


class _Unconstrained:
    """The `P.UNCONSTRAINED` marker: the partitioner chooses this dimension's split."""
    __slots__ = ()

    def __repr__(self):
        return "UNCONSTRAINED"

    def __reduce__(self):
        return (_unconstrained, ())


UNCONSTRAINED = _Unconstrained()


def _unconstrained() -> _Unconstrained:
    return UNCONSTRAINED


def _canonical_entry(entry: Any) -> Any:
    """None, UNCONSTRAINED, one axis name, or a tuple of two or more names (a None
    among them, which JAX accepts, splits nothing)."""
    if entry is None or entry is UNCONSTRAINED:
        return entry
    if isinstance(entry, (tuple, list)):
        names = tuple(entry)
        for name in names:
            if name is UNCONSTRAINED or isinstance(name, (tuple, list)):
                raise TypeError(f"a PartitionSpec entry that is a tuple must hold mesh "
                                f"axis names only; got {entry!r}")
        if not names:
            return None
        return names[0] if len(names) == 1 else names
    try:
        hash(entry)
    except TypeError:
        raise TypeError(f"PartitionSpec entries must be mesh axis names, tuples of "
                        f"them, None or P.UNCONSTRAINED; got {entry!r}") from None
    return entry


def _axis_set(axes: Iterable | None, what: str) -> frozenset:
    if axes is None:
        return frozenset()
    if isinstance(axes, str):
        return frozenset((axes,))
    return frozenset(axes)


class PartitionSpec:
    """How each dimension of an array is split over mesh axes (see the module doc).

    Not a tuple, as in JAX 0.10: compare specs with `==` (trailing `None`s matter
    for equality, not for the layout they describe).
    """
    __slots__ = ("_partitions", "unreduced", "reduced", "_normalized", "_hash", "__weakref__")
    UNCONSTRAINED = UNCONSTRAINED

    def __new__(cls, *partitions, unreduced=None, reduced=None):
        parts = tuple(_canonical_entry(p) for p in partitions)
        return _create_spec(parts, _axis_set(unreduced, "unreduced"),
                            _axis_set(reduced, "reduced"))

    def __setattr__(self, name, value):
        raise AttributeError("PartitionSpec is immutable")

    def __getnewargs_ex__(self):
        return self._partitions, {"unreduced": self.unreduced, "reduced": self.reduced}

    def __reduce__(self):
        return (_rebuild_spec, (self._partitions, self.unreduced, self.reduced))

    # --- the sequence of entries ---------------------------------------------------

    def __len__(self) -> int:
        return len(self._partitions)

    def __iter__(self):
        return iter(self._partitions)

    def __getitem__(self, index):
        return self._partitions[index]

    def index(self, value) -> int:
        return self._partitions.index(value)

    def count(self, value) -> int:
        return self._partitions.count(value)

    def __add__(self, other):
        if isinstance(other, PartitionSpec):
            return PartitionSpec(*self._partitions, *other._partitions,
                                 unreduced=self.unreduced | other.unreduced,
                                 reduced=self.reduced | other.reduced)
        if isinstance(other, tuple):
            return PartitionSpec(*self._partitions, *other, unreduced=self.unreduced,
                                 reduced=self.reduced)
        return NotImplemented

    def __radd__(self, other):
        if isinstance(other, tuple):
            return PartitionSpec(*other, *self._partitions, unreduced=self.unreduced,
                                 reduced=self.reduced)
        return NotImplemented

    # --- what it means ---------------------------------------------------------------

    def axes_of(self, dim: int) -> tuple:
        """The mesh axes splitting dimension `dim` (major first); () if none."""
        if dim >= len(self._partitions):
            return ()
        entry = self._partitions[dim]
        if entry is None or entry is UNCONSTRAINED:
            return ()
        return tuple(a for a in entry if a is not None) if isinstance(entry, tuple) else (entry,)

    def mesh_axes(self) -> list:
        """Every mesh axis the spec names, in order of appearance (with repeats)."""
        return [a for i in range(len(self._partitions)) for a in self.axes_of(i)]

    def __eq__(self, other):
        if self is other:
            return True
        if not isinstance(other, PartitionSpec):
            return False
        return (self._partitions == other._partitions and self.unreduced == other.unreduced
                and self.reduced == other.reduced)

    def __hash__(self):
        return self._hash

    def __repr__(self):
        extras = [f"{kind}={set(sorted(axes, key=str))}" for kind, axes in
                  (("unreduced", self.unreduced), ("reduced", self.reduced)) if axes]
        if not extras:
            return f"P{self._partitions!r}"
        return f"P({', '.join([*map(repr, self._partitions), *extras])})"

    __str__ = __repr__


@weakref_lru_cache.weak_value_interner
def _create_spec(partitions, unreduced, reduced):
    spec = object.__new__(PartitionSpec)
    object.__setattr__(spec, "_partitions", partitions)
    object.__setattr__(spec, "unreduced", unreduced)
    object.__setattr__(spec, "reduced", reduced)
    normalized = list(partitions)
    while normalized and normalized[-1] is None:
        normalized.pop()
    # The entries without trailing Nones: the same for specs of one layout, which
    # therefore share a hash (P('x', None) != P('x'), as in JAX).
    object.__setattr__(spec, "_normalized", tuple(normalized))
    object.__setattr__(spec, "_hash", hash((spec._normalized, unreduced, reduced)))
    return spec


def _rebuild_spec(partitions, unreduced, reduced) -> PartitionSpec:
    return PartitionSpec(*partitions, unreduced=unreduced, reduced=reduced)


P = PartitionSpec

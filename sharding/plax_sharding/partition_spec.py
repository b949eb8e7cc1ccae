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
    """`unreduced=`/`reduced=`: a set of mesh axis names (as in JAX, not a name or a
    sequence, which would read as positional entries)."""
    if axes is None:
        return frozenset()
    if not isinstance(axes, (set, frozenset)):
        raise TypeError(f"PartitionSpec's {what} must be a set or frozenset of mesh axis "
                        f"names, got {axes!r} of type {type(axes).__name__}")
    if None in axes:
        raise ValueError(f"PartitionSpec's {what} cannot contain None: its elements name "
                         f"mesh axes; got {set(axes)!r}")
    return frozenset(axes)


def _check_disjoint(partitions: tuple, unreduced: frozenset, reduced: frozenset) -> None:
    """An axis splits a dimension, or holds unreduced or reduced values: one of them."""
    named = {a for e in partitions if e is not None and e is not UNCONSTRAINED
             for a in (e if isinstance(e, tuple) else (e,))}
    for what, axes in (("unreduced", unreduced), ("reduced", reduced)):
        if named & axes:
            raise ValueError(f"PartitionSpec's partitions {partitions} cannot overlap with "
                             f"its {what} axes {_set_str(axes)}")
    if unreduced & reduced:
        raise ValueError(f"PartitionSpec's unreduced axes {_set_str(unreduced)} and reduced "
                         f"axes {_set_str(reduced)} cannot overlap")


def _set_str(axes: frozenset) -> str:
    return "{" + ", ".join(map(repr, sorted(axes, key=str))) + "}"


class PartitionSpec:
    """Says, for each dimension of an array, which mesh axes split it (`P` is a short
    alias).

    Each entry is None (the dimension is not split), a mesh axis name, or a tuple of
    names (split over several axes, the first the major one). Dimensions past the
    end of the spec are not split. `P.UNCONSTRAINED` leaves a dimension's split to
    the compiler (in sharding constraints). Combined with a mesh it makes a
    `NamedSharding`; with a mesh in context (`plax.set_mesh`) a bare spec is accepted
    wherever a sharding is. As in JAX 0.10, a spec is not a tuple: compare specs with
    `==`, where trailing `None`s count (they do not change the layout).

    Args:
        *partitions: one entry per dimension.
        unreduced: mesh axes over which the value is an unreduced partial sum.
        reduced: mesh axes over which the value is known to be reduced.

    Examples:
        >>> P = plax.sharding.PartitionSpec
        >>> spec = P("x", None, ("y", "z"))
        >>> spec, len(spec), spec[2]
        (P('x', None, ('y', 'z')), 3, ('y', 'z'))
        >>> P("x") == P("x", None)
        False
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

    @property
    def partitions(self) -> tuple:
        """The per-dimension entries (what `*spec` gives when no axis is unreduced or
        reduced)."""
        return self._partitions

    def update(self, **changes) -> PartitionSpec:
        """A spec with `partitions`, `unreduced` and/or `reduced` replaced."""
        unknown = set(changes) - {"partitions", "unreduced", "reduced"}
        if unknown:
            raise TypeError(f"PartitionSpec.update got unexpected arguments {sorted(unknown)}")
        return PartitionSpec(*changes.get("partitions", self._partitions),
                             unreduced=changes.get("unreduced", self.unreduced),
                             reduced=changes.get("reduced", self.reduced))

    def for_rank(self, ndim: int) -> PartitionSpec:
        """This spec with one entry per dimension of a rank-`ndim` value (None for the
        dimensions it leaves out), as a value's type spells it."""
        missing = ndim - len(self._partitions)
        return self if missing <= 0 else self.update(
            partitions=self._partitions + (None,) * missing)

    def _entries(self, how: str) -> tuple:
        """The entries, refused (as JAX does) where unpacking would lose the unreduced
        or reduced axes."""
        if self.unreduced or self.reduced:
            raise ValueError(f"Using {how} on {self} would drop its unreduced/reduced axes; "
                             "use spec.partitions")
        return self._partitions

    def __len__(self) -> int:
        return len(self._partitions)

    def __iter__(self):
        return iter(self._entries("*pspec"))

    def __getitem__(self, index):
        return self._entries("pspec[...]")[index]

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
            return PartitionSpec(*self._plain("+"), *other)
        return NotImplemented

    def __radd__(self, other):
        if isinstance(other, tuple):
            return PartitionSpec(*other, *self._plain("+"))
        return NotImplemented

    def _plain(self, op: str) -> tuple:
        if self.unreduced or self.reduced:
            raise TypeError(f"a tuple cannot be combined by {op} with {self}: it has "
                            "unreduced/reduced axes; add a PartitionSpec instead")
        return self._partitions

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
        extras = [f"{kind}={_set_str(axes)}" for kind, axes in
                  (("unreduced", self.unreduced), ("reduced", self.reduced)) if axes]
        if not extras:
            return f"P{self._partitions!r}"
        return f"P({', '.join([*map(repr, self._partitions), *extras])})"

    __str__ = __repr__


@weakref_lru_cache.weak_value_interner
def _create_spec(partitions, unreduced, reduced):
    _check_disjoint(partitions, unreduced, reduced)
    spec = object.__new__(PartitionSpec)
    object.__setattr__(spec, "_partitions", partitions)
    object.__setattr__(spec, "unreduced", unreduced)
    object.__setattr__(spec, "reduced", reduced)
    normalized = list(partitions)
    while normalized and normalized[-1] is None:
        normalized.pop()
    # The entries without trailing Nones: the same for specs of one layout, which
    # therefore share a hash (P('x', None) != P('x'), as in JAX; like JAX's, the hash
    # leaves out the unreduced and reduced axes).
    object.__setattr__(spec, "_normalized", tuple(normalized))
    object.__setattr__(spec, "_hash", hash(spec._normalized))
    return spec


def _rebuild_spec(partitions, unreduced, reduced) -> PartitionSpec:
    return PartitionSpec(*partitions, unreduced=unreduced, reduced=reduced)


P = PartitionSpec

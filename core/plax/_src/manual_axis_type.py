"""`ManualAxisType`: how a value of a `shard_map` body relates to the body's manual
mesh axes: the axes it may vary over (`varying`, plax's `Vma` sets as
`plax_sharding.vma` infers them), and those over which it is an unreduced partial
sum or already reduced (JAX's `unreduced`/`reduced`, which plax's own values never
have but a type may still name).

Instances are interned (equal types are the same object, as JAX's are) and
immutable; `update` makes another.
"""
from __future__ import annotations

import contextlib
import threading
import weakref

_interned: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_lock = threading.Lock()


def _axes(what: str, axes) -> frozenset:
    if isinstance(axes, (str, bytes)) or not isinstance(axes, (set, frozenset, tuple, list)):
        raise TypeError(f"ManualAxisType: {what} must be a set of mesh axis names, got "
                        f"{axes!r}")
    return frozenset(axes)


class ManualAxisType:
    """The manual-axis part of a value's type inside `shard_map`: over which mesh axes
    the value differs from device to device (`varying`), is an unreduced partial
    result (`unreduced`), or is known to be reduced (`reduced`).

    `varying` shares no axis with the other two. Instances are immutable and
    interned (equal arguments give the same object).

    Args:
        varying: mesh axis names over which the value varies.
        unreduced: axis names over which it is an unreduced partial sum.
        reduced: axis names over which it has been reduced.

    Raises:
        ValueError: `varying` overlaps `unreduced` or `reduced`.

    Examples:
        >>> plax.sharding.ManualAxisType(varying={"x"})
        ManualAxisType(varying=frozenset({'x'}), unreduced=frozenset(), reduced=frozenset())
    """
    __slots__ = ("varying", "unreduced", "reduced", "__weakref__")

    def __new__(cls, *, varying=frozenset(), unreduced=frozenset(), reduced=frozenset()):
        varying, unreduced, reduced = (_axes(what, axes) for what, axes in (
            ("varying", varying), ("unreduced", unreduced), ("reduced", reduced)))
        for what, other in (("unreduced", unreduced), ("reduced", reduced)):
            if varying & other:
                raise ValueError(f"varying and {what} cannot have common mesh axes. Got "
                                 f"varying={set(varying)} and {what}={set(other)}")
        key = (varying, unreduced, reduced)
        with _lock:
            obj = _interned.get(key)
            if obj is None:
                obj = object.__new__(cls)
                for name, value in zip(cls.__slots__, key):
                    object.__setattr__(obj, name, value)
                _interned[key] = obj
        return obj

    def __setattr__(self, name, value):
        raise AttributeError(f"cannot assign to field {name!r}: ManualAxisType is immutable")

    def __delattr__(self, name):
        raise AttributeError(f"cannot delete field {name!r}: ManualAxisType is immutable")

    # (Interned: equality and hashing by identity.)

    def __reduce__(self):
        return _rebuild, (self.varying, self.unreduced, self.reduced)

    def __repr__(self):
        return (f"ManualAxisType(varying={self.varying}, unreduced={self.unreduced}, "
                f"reduced={self.reduced})")

    def update(self, **changes) -> "ManualAxisType":
        """This type with the given fields (`varying`, `unreduced`, `reduced`) replaced."""
        fields = dict(varying=self.varying, unreduced=self.unreduced, reduced=self.reduced)
        unknown = set(changes) - set(fields)
        if unknown:
            raise TypeError(f"ManualAxisType.update: unknown fields {sorted(unknown)}")
        return ManualAxisType(**{**fields, **changes})

    def to_ct_mat(self) -> "ManualAxisType":
        """The type of a cotangent: unreduced and reduced swap (a psum's transpose)."""
        return self.update(unreduced=self.reduced, reduced=self.unreduced)

    empty = property(lambda self: self is EMPTY)

    @property
    def vur(self) -> frozenset:
        """Every axis this type names."""
        return self.varying | self.unreduced | self.reduced

    def invarying(self, mesh) -> frozenset:
        """The manual axes of `mesh` over which a value of this type is the same."""
        return frozenset(getattr(mesh, "manual_axes", ())) - self.vur


def _rebuild(varying, unreduced, reduced) -> ManualAxisType:
    return ManualAxisType(varying=varying, unreduced=unreduced, reduced=reduced)


EMPTY = ManualAxisType()
"""The type of a value outside any manual region, or invariant over all its axes."""


# --- the order axes print in, and the rule staging uses ----------------------------------

_axis_order: dict = {}  # axis name -> its position in the last mesh a manual region used


def note_axis_order(names) -> None:
    """Remember the mesh's order of `names` (what printed types follow, as JAX orders
    them by the mesh's axis names)."""
    _axis_order.update((n, i) for i, n in enumerate(names))


def mat_axis_order(axes, mesh_order=()) -> tuple:
    """`axes` in the mesh's order: `mesh_order` where given, else the last manual
    region's mesh, then by name."""
    if mesh_order and set(axes) <= set(mesh_order):
        return tuple(a for a in mesh_order if a in axes)
    return tuple(sorted(axes, key=lambda a: (_axis_order.get(a, len(_axis_order)), str(a))))


# .rule: (trace, primitive, params, atoms, out_avals) -> (atoms, out_avals), or None (a
# class attribute: read for each staged equation, it is found without an AttributeError)
_vma = type("_VmaRule", (threading.local,), {"rule": None})()


def vma_rule():
    """The rule that types the results of staged equations with their varying manual
    axes while a `shard_map` body (with check_vma) is traced, or None elsewhere."""
    return _vma.rule


@contextlib.contextmanager
def set_vma_rule(rule):
    """Within, `rule` types staged results (the sharding package sets it around the
    tracing of a `shard_map` body; None turns it off, as check_vma=False does)."""
    previous, _vma.rule = vma_rule(), rule
    try:
        yield
    finally:
        _vma.rule = previous

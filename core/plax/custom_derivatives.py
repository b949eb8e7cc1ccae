"""`plax.custom_derivatives`: user-defined differentiation rules.

`custom_jvp` and `custom_vjp` are provided by plax-transforms and resolved on first
use. With `symbolic_zeros=True` a rule sees `SymbolicZero` for a tangent or
cotangent known to be zero, and a `custom_vjp` fwd rule sees each argument as a
`CustomVJPPrimal(value, perturbed)`.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from plax._src import plugins
from plax._src.abstract import ShapedArray


class SymbolicZero:
    """A tangent known to be zero, of the abstract value `aval` (JAX's
    `custom_derivatives.SymbolicZero`): it has `shape` and `dtype` but no values."""
    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: np.dtype(self.aval.dtype))
    ndim = property(lambda self: len(self.aval.shape))
    size = property(lambda self: int(np.prod(self.aval.shape, dtype=np.int64)))

    def __bool__(self):
        return False

    def __repr__(self):
        return f"SymbolicZero({self.aval.str_short()})"


class CustomVJPPrimal(NamedTuple):
    """What a `custom_vjp` fwd rule defined with `symbolic_zeros=True` receives for
    each argument leaf: its `value`, and whether it is `perturbed` (has a nonzero
    tangent, so that its cotangent matters)."""
    value: Any
    perturbed: bool


def zero_from_primal(x, symbolic_zeros: bool = False):
    """A zero tangent for each leaf of `x`: `SymbolicZero`s, or materialised zeros."""
    from plax._src import tree_util
    from plax._src.ad_util import tangent_aval, zeros_like_aval
    from plax._src.tracing import get_aval

    def zero(leaf):
        aval = tangent_aval(get_aval(leaf))
        return SymbolicZero(aval) if symbolic_zeros else zeros_like_aval(aval)
    return tree_util.tree_map(zero, x)


__getattr__ = plugins.lazy_attributes("plax.custom_derivatives", ("custom_jvp", "custom_vjp"))


__all__ = ["CustomVJPPrimal", "SymbolicZero", "custom_jvp", "custom_vjp", "zero_from_primal"]

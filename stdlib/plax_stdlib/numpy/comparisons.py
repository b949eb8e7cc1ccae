"""Whole-array and tolerance comparisons: isclose, allclose, array_equal, array_equiv."""
from __future__ import annotations

import numpy as np

from plax_stdlib import lax
from plax_stdlib.numpy import creation, reductions, ufuncs, util


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False):
    """Elementwise |a - b| <= atol + rtol * |b| (infinities must be equal; NaNs are
    close to each other only with `equal_nan`)."""
    a, b = util.promote_args_inexact("isclose", a, b)
    dtype = util.dtype_of(a)
    if util.dtype_category(dtype) == "c":
        dtype = np.zeros((), dtype).real.dtype
    rtol = util.convert(util.ensure_arraylike("isclose", rtol), dtype)
    atol = util.convert(util.ensure_arraylike("isclose", atol), dtype)
    in_range = lax.le(lax.abs(lax.sub(a, b)), lax.add(atol, lax.mul(rtol, lax.abs(b))))
    out = ufuncs.logical_or(lax.eq(a, b), ufuncs.logical_and(ufuncs.isfinite(b), in_range))
    if equal_nan:
        out = ufuncs.logical_or(out, ufuncs.logical_and(ufuncs.isnan(a), ufuncs.isnan(b)))
    return out


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False):
    """Whether every element of `a` is close to `b` (see `isclose`), as a 0-d array."""
    return reductions.all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan: bool = False):
    """Whether the arrays have the same shape and elements, as a 0-d bool array."""
    a1, a2 = util.ensure_arraylike("array_equal", a1, a2)
    if util.shape_of(a1) != util.shape_of(a2):
        return creation.asarray(False)
    a1, a2 = util.promote_dtypes(a1, a2)
    equal = lax.eq(a1, a2)
    if equal_nan:
        equal = ufuncs.logical_or(equal, ufuncs.logical_and(ufuncs.isnan(a1), ufuncs.isnan(a2)))
    return reductions.all(equal)


def array_equiv(a1, a2):
    """Whether the arrays broadcast to one shape and are then equal elementwise."""
    a1, a2 = util.ensure_arraylike("array_equiv", a1, a2)
    try:
        util.broadcast_shapes(util.shape_of(a1), util.shape_of(a2))
    except ValueError:
        return creation.asarray(False)
    return reductions.all(ufuncs.equal(a1, a2))

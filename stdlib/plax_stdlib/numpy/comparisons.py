"""Whole-array and tolerance comparisons: isclose, allclose, array_equal, array_equiv."""
from __future__ import annotations

import numpy as np

from plax.extend import dtypes
from plax_stdlib import jax_jits, lax
from plax_stdlib.numpy import creation, reductions, ufuncs, util


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False):
    """Whether `a` and `b` are equal within a tolerance, elementwise:
    `|a - b| <= atol + rtol * |b|`.

    Follows `numpy.isclose` (note the asymmetry: the relative tolerance scales `|b|`).
    Infinities are close only to the same infinity; NaNs are close to each other only
    with `equal_nan`. The default tolerances are NumPy's, which are tight for float32
    and loose for bfloat16/float16: choose them for your dtype.

    Args:
        a: an array.
        b: an array (broadcast against `a`).
        rtol: the relative tolerance.
        atol: the absolute tolerance.
        equal_nan: count NaNs as close to each other.

    Returns:
        A bool array of the broadcast shape.

    Examples:
        >>> jnp.isclose(jnp.array([1.0, 1.001, np.nan]), jnp.array([1.0, 1.0, np.nan]))
        Array([ True, False, False], dtype=bool)
        >>> jnp.isclose(jnp.array([1.0, 1.001]), 1.0, rtol=1e-2)
        Array([ True,  True], dtype=bool)
    """
    util.check_arraylike("isclose", a, b)
    if isinstance(util.dtype_of(a), dtypes.ExtendedDType):  # PRNG keys: equal or not
        return lax.eq(*util.promote_args("isclose", a, b))
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
    """Whether every element of `a` is close to `b` (see `isclose`).

    Follows `numpy.allclose`, but returns a 0-d bool array rather than a Python bool,
    so it also works on traced values (use `bool(...)` on a concrete result).

    Args:
        a: an array.
        b: an array (broadcast against `a`).
        rtol: the relative tolerance.
        atol: the absolute tolerance.
        equal_nan: count NaNs as close to each other.

    Returns:
        A 0-d bool array.

    Examples:
        >>> jnp.allclose(jnp.array([1.0, 2.0]), jnp.array([1.0, 2.0 + 1e-7]))
        Array(True, dtype=bool)
    """
    return reductions.all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan: bool = False):
    """Whether two arrays have the same shape and the same elements.

    Follows `numpy.array_equal`, returning a 0-d bool array. Arrays of different shapes
    give False (not an error); NaNs are unequal unless `equal_nan`.

    Args:
        a1: an array.
        a2: an array.
        equal_nan: count NaNs as equal to each other.

    Returns:
        A 0-d bool array.

    Examples:
        >>> jnp.array_equal(jnp.array([1, 2]), jnp.array([1, 2]))
        Array(True, dtype=bool)
        >>> jnp.array_equal(jnp.ones(2), jnp.ones(3))
        Array(False, dtype=bool)
    """
    a1, a2 = util.ensure_arraylike("array_equal", a1, a2)
    if util.shape_of(a1) != util.shape_of(a2):
        return creation.asarray(False)
    a1, a2 = util.promote_dtypes(a1, a2)
    equal = lax.eq(a1, a2)
    if equal_nan and dtypes.issubdtype(util.dtype_of(a1), np.inexact):  # (others: no NaN)
        equal = ufuncs.logical_or(equal, ufuncs.logical_and(ufuncs.isnan(a1), ufuncs.isnan(a2)))
    return reductions.all(equal)


def array_equiv(a1, a2):
    """Whether two arrays are equal elementwise after broadcasting to one shape (False,
    not an error, when they do not broadcast).

    Follows `numpy.array_equiv`, returning a 0-d bool array.

    Args:
        a1: an array.
        a2: an array.

    Returns:
        A 0-d bool array.

    Examples:
        >>> jnp.array_equiv(jnp.array([1, 2]), jnp.array([[1, 2], [1, 2]]))
        Array(True, dtype=bool)
    """
    a1, a2 = util.ensure_arraylike("array_equiv", a1, a2)
    try:
        util.broadcast_shapes(util.shape_of(a1), util.shape_of(a2))
    except ValueError:
        return creation.asarray(False)
    return reductions.all(ufuncs.equal(a1, a2))


jax_jits.apply(globals())  # JAX's jitted functions become jit functions

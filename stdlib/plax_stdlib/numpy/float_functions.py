"""Functions of the floating-point representation and classification: frexp, ldexp,
modf, nextafter, spacing, nan_to_num, fabs, logaddexp2, isposinf/isneginf,
iscomplex/isreal and their *obj forms.

`frexp` reads the exponent from the bits (scaling subnormals up first) and forms
the mantissa by multiplying with exact powers of two, so the mantissa's derivative
is the plain 2**-e; `ldexp` multiplies by powers of two in two exact steps, so
results that pass through the subnormal range are rounded once.
"""
from __future__ import annotations

import numpy as np

from plax.extend import dtypes
from plax_stdlib import jax_jits, lax
from plax_stdlib.numpy import ufuncs, util

_UINT_OF_BITS = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _real_float(name: str, x):
    x, = util.promote_args_inexact(name, x)
    if util.dtype_category(util.dtype_of(x)) == "c":
        raise TypeError(f"{name} does not support complex-valued inputs, got dtype "
                        f"{util.dtype_of(x)}")
    return x


def _power_of_two(k, dtype):
    """2**k, exactly, for integer k within the normal exponent range of `dtype`."""
    info = dtypes.finfo(dtype)
    uint = _UINT_OF_BITS[info.bits]
    biased = util.convert(lax.add(k, np.asarray(info.maxexp - 1, util.dtype_of(k))[()]), uint)
    return lax.bitcast_convert_type(lax.shift_left(biased, np.asarray(info.nmant, uint)[()]),
                                    dtype)


def _scaled(x, k):
    """x * 2**k in two exact power-of-two steps (k ranging over twice the normal
    exponent range)."""
    half = lax.div(k, np.asarray(2, util.dtype_of(k))[()])
    dtype = util.dtype_of(x)
    return lax.mul(lax.mul(x, _power_of_two(half, dtype)),
                   _power_of_two(lax.sub(k, half), dtype))


def _exponent(x):
    """The e of frexp (x = m * 2**e, 0.5 <= |m| < 1) for finite nonzero x, as int32."""
    dtype = util.dtype_of(x)
    info = dtypes.finfo(dtype)
    uint = _UINT_OF_BITS[info.bits]
    subnormal = lax.lt(lax.abs(x), np.asarray(info.tiny, dtype)[()])
    scaled = util.select_n(subnormal, x, lax.mul(x, np.asarray(2.0 ** info.nmant, dtype)[()]))
    bits = lax.bitcast_convert_type(scaled, uint)
    field = lax.bitwise_and(lax.shift_right_logical(bits, np.asarray(info.nmant, uint)[()]),
                            np.asarray((1 << info.nexp) - 1, uint)[()])
    e = lax.sub(util.convert(field, np.int32), np.int32(info.maxexp - 2))
    return util.select_n(subnormal, e, lax.sub(e, np.int32(info.nmant)))


def frexp(x, /):
    """Splits each element into a mantissa and a power of two:
    `x = mantissa * 2**exponent`, with `0.5 <= |mantissa| < 1`.

    Follows `numpy.frexp`: both are 0 for `x = 0`; infinities and NaN come back as the
    mantissa, with exponent 0. The exponent has the default int type.

    Args:
        x: a real array or scalar.

    Returns:
        A pair `(mantissa, exponent)`.

    Raises:
        TypeError: a complex input.

    Examples:
        >>> jnp.frexp(jnp.array([8.0, 0.75, 0.0]))
        (Array([0.5 , 0.75, 0.  ], dtype=float32), Array([4, 0, 0], dtype=int32))
    """
    x = _real_float("frexp", util.ensure_arraylike("frexp", x))
    special = lax.bitwise_or(lax.bitwise_not(lax.is_finite(x)), lax.eq(x, 0))
    e = util.select_n(special, _exponent(x), lax.full(util.shape_of(x), 0, np.int32))
    return util.as_array(util.select_n(special, _scaled(x, lax.neg(e)), x)), util.as_array(e)


def ldexp(x1, x2, /):
    """`x1 * 2**x2` for integer `x2`, elementwise, without intermediate overflow or
    double rounding (the inverse of `frexp`).

    Follows `numpy.ldexp`.

    Args:
        x1: a float array (integers become the default float type).
        x2: an integer array.

    Returns:
        An array of the broadcast shape.

    Raises:
        ValueError: a non-integer `x2`.

    Examples:
        >>> jnp.ldexp(jnp.array([0.5, 0.75]), jnp.array([4, 1]))
        Array([8. , 1.5], dtype=float32)
    """
    x1, x2 = util.ensure_arraylike("ldexp", x1, x2)
    if (util.dtype_category(util.dtype_of(x1)) == "c"
            or util.dtype_category(util.dtype_of(x2)) not in "biu"):
        raise ValueError(f"ldexp not supported for input types "
                         f"({util.dtype_of(x1)}, {util.dtype_of(x2)})")
    x1, = util.promote_args_inexact("ldexp", x1)
    x1, x2 = util.promote_shapes("ldexp", x1, x2)
    info = dtypes.finfo(util.dtype_of(x1))
    mantissa, e = frexp(x1)
    # Exponents past these bounds overflow to inf or underflow to 0 anyway.
    low, high = info.minexp - info.nmant - 2, info.maxexp + 1
    k = ufuncs.clip(ufuncs.add(util.convert(x2, np.int32), e), low, high)
    out = _scaled(mantissa, util.convert(k, np.int32))
    keep = lax.bitwise_or(lax.bitwise_not(lax.is_finite(x1)), lax.eq(x1, 0))
    return util.as_array(util.select_n(keep, out, util.broadcast_to_shape(
        x1, util.shape_of(out))))


def modf(x, /, out=None):
    """The fractional and integral parts of each element, both with the sign of `x`.

    Follows `numpy.modf`; `out` must be None.

    Args:
        x: a real array or scalar.
        out: unsupported; must be None.

    Returns:
        A pair `(fractional, integral)` of inexact arrays.

    Examples:
        >>> jnp.modf(jnp.array([2.5, -1.25]))
        (Array([ 0.5 , -0.25], dtype=float32), Array([ 2., -1.], dtype=float32))
    """
    if out is not None:
        raise NotImplementedError("The 'out' argument to plax.numpy.modf is not supported.")
    x = _real_float("modf", util.ensure_arraylike("modf", x))
    whole = util.select_n(lax.ge(x, ufuncs._lax_const(x, 0)), lax.ceil(x), lax.floor(x))
    return util.as_array(lax.sub(x, whole)), util.as_array(whole)


def nextafter(x1, x2, /):
    """The next representable floating-point value after `x1` in the direction of `x2`,
    elementwise.

    Follows `numpy.nextafter`.

    Args:
        x1: a float array.
        x2: the direction (broadcast against `x1`).

    Returns:
        An array of the broadcast shape.

    Examples:
        >>> jnp.nextafter(jnp.float32(1.0), 2.0) - 1.0
        Array(1.1920929e-07, dtype=float32)
    """
    return lax.nextafter(*util.promote_args_inexact("nextafter", x1, x2))


def spacing(x, /):
    """The distance from each element to the nearest adjacent representable number away
    from zero (the unit in the last place).

    Follows `numpy.spacing`.

    Args:
        x: a float array (integers become the default float type).

    Returns:
        An array of `x`'s shape.

    Examples:
        >>> jnp.spacing(jnp.array([1.0, 1024.0]))
        Array([1.1920929e-07, 1.2207031e-04], dtype=float32)
    """
    x = util.ensure_arraylike("spacing", x)
    x, = util.promote_args_inexact("spacing", x)
    if util.dtype_category(util.dtype_of(x)) == "c":
        raise ValueError("plax.numpy.spacing is not defined for complex inputs.")
    dtype = util.dtype_of(x)
    inf = lax.full(util.shape_of(x), np.inf, dtype)
    if dtype == np.dtype(np.float16):  # NumPy steps toward +inf for float16
        return lax.sub(lax.nextafter(x, inf), x)
    step = lax.sub(lax.nextafter(x, ufuncs.copysign(inf, x)), x)
    tiny = ufuncs.copysign(lax.full(util.shape_of(x), dtypes.finfo(dtype).smallest_subnormal,
                                    dtype), x)
    return util.select_n(lax.eq(step, 0), step, tiny)


def nan_to_num(x, copy: bool = True, nan=0.0, posinf=None, neginf=None):
    """`x` with NaN, +inf and -inf replaced by finite numbers: `nan` (default 0),
    `posinf` and `neginf` (default the largest and smallest finite values of the
    dtype).

    Follows `numpy.nan_to_num`; `copy` is ignored (a new array is returned; plax
    cannot modify `x`). Integer inputs come back unchanged; complex inputs are handled
    part by part.

    Args:
        x: an array.
        copy: ignored.
        nan: the value for NaN.
        posinf: the value for +inf.
        neginf: the value for -inf.

    Returns:
        An array of `x`'s shape and dtype.

    Examples:
        >>> jnp.nan_to_num(jnp.array([np.nan, np.inf, -1.0]))
        Array([ 0.0000000e+00,  3.4028235e+38, -1.0000000e+00], dtype=float32)
        >>> jnp.nan_to_num(jnp.array([np.nan, -np.inf]), nan=-1.0, neginf=-9.0)
        Array([-1., -9.], dtype=float32)
    """
    del copy
    x = util.ensure_arraylike("nan_to_num", x)
    category = util.dtype_category(util.dtype_of(x))
    if category in "biu":
        return util.as_array(x)
    if category == "c":
        return lax.complex(nan_to_num(lax.real(x), nan=nan, posinf=posinf, neginf=neginf),
                           nan_to_num(lax.imag(x), nan=nan, posinf=posinf, neginf=neginf))
    info = dtypes.finfo(util.dtype_of(x))
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    # each step looks at the one before, as JAX's: `nan=inf` then gives `posinf`
    out = ufuncs.where(ufuncs.isnan(x), util.convert(nan, util.dtype_of(x)), x)
    out = ufuncs.where(isposinf(out), util.convert(posinf, util.dtype_of(x)), out)
    return ufuncs.where(isneginf(out), util.convert(neginf, util.dtype_of(x)), out)


def fabs(x, /):
    """The absolute value of each element, as floating point.

    Follows `numpy.fabs`: integers give the default float type; complex inputs raise
    TypeError (use `abs` for their magnitude).

    Args:
        x: a real array or scalar.

    Returns:
        An inexact array of `x`'s shape.

    Raises:
        TypeError: a complex input.

    Examples:
        >>> jnp.fabs(jnp.array([-2, 3]))
        Array([2., 3.], dtype=float32)
    """
    x = util.ensure_arraylike("fabs", x)
    if util.dtype_category(util.dtype_of(x)) == "c":
        raise TypeError("ufunc 'fabs' does not support complex dtypes")
    return lax.abs(*util.promote_args_inexact("fabs", x))


def logaddexp2(x1, x2, /):
    """`log2(2**x1 + 2**x2)`, elementwise, without overflow (and exact for equal
    infinities).

    Follows `numpy.logaddexp2`; integers become the default float type.

    Args:
        x1: an array.
        x2: an array (broadcast against `x1`).

    Returns:
        An inexact array of the broadcast shape.

    Examples:
        >>> jnp.logaddexp2(jnp.array([1.0, 100.0]), jnp.array([1.0, 100.0]))
        Array([  2., 101.], dtype=float32)
    """
    x1, x2 = util.promote_args_inexact("logaddexp2", x1, x2)
    big = ufuncs.maximum(x1, x2)
    delta = lax.sub(x1, x2)  # NaN when both are the same infinity
    # (a weakly typed scalar's constant is weak too, so its result is, as JAX's)
    tail = lax.div(lax.log1p(lax.exp2(lax.neg(lax.abs(delta)))),
                   ufuncs._lax_const(big, float(np.log(2))))
    return util.select_n(ufuncs.isnan(delta), lax.add(big, tail), lax.add(x1, x2))


_INFINITY_TEST_DOC = """Whether each element is {sign}inf.

    Follows `numpy.{name}`; `out` must be None; complex inputs raise ValueError.

    Args:
        x: a real array.
        out: unsupported; must be None.

    Returns:
        A bool array of `x`'s shape.

    Examples:
        >>> jnp.{name}(jnp.array([np.inf, -np.inf, 1.0]))
        {output}
    """


def _infinity_test(name: str, sign: float, example_output: str):
    def fn(x, /, out=None):
        if out is not None:
            raise NotImplementedError(f"The 'out' argument to plax.numpy.{name} is not "
                                      "supported.")
        x = util.ensure_arraylike(name, x)
        category = util.dtype_category(util.dtype_of(x))
        if category == "c":
            raise ValueError("isposinf/isneginf are not well defined for complex types")
        if category != "f":
            return util.as_array(lax.full(util.shape_of(x), False, bool))
        return lax.eq(x, np.asarray(sign * np.inf, util.dtype_of(x))[()])
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = _INFINITY_TEST_DOC.format(name=name, sign="+" if sign > 0 else "-",
                                           output=example_output)
    return fn


isposinf = _infinity_test("isposinf", 1.0, "Array([ True, False, False], dtype=bool)")
isneginf = _infinity_test("isneginf", -1.0, "Array([False,  True, False], dtype=bool)")


def iscomplex(x):
    """Whether each element has a nonzero imaginary part (False everywhere for real
    dtypes).

    Follows `numpy.iscomplex`.

    Args:
        x: an array.

    Returns:
        A bool array of `x`'s shape.

    Examples:
        >>> jnp.iscomplex(jnp.array([1 + 0j, 1 + 2j]))
        Array([False,  True], dtype=bool)
    """
    x = util.ensure_arraylike("iscomplex", x)
    if util.dtype_category(util.dtype_of(x)) != "c":
        return util.as_array(util.bool_like(x, False))
    return lax.ne(lax.imag(x), 0)


def isreal(x):
    """Whether each element has a zero imaginary part (True everywhere for real dtypes).

    Follows `numpy.isreal`.

    Args:
        x: an array.

    Returns:
        A bool array of `x`'s shape.

    Examples:
        >>> jnp.isreal(jnp.array([1 + 0j, 1 + 2j]))
        Array([ True, False], dtype=bool)
    """
    return ufuncs.logical_not(iscomplex(x))


def iscomplexobj(x) -> bool:
    """Whether `x` has a complex dtype, whatever its values (a Python bool).

    Follows `numpy.iscomplexobj`.

    Args:
        x: an array, scalar or dtype-carrying object.

    Returns:
        A bool.

    Examples:
        >>> jnp.iscomplexobj(jnp.array([1 + 0j])), jnp.iscomplexobj(jnp.ones(2))
        (True, False)
    """
    if x is None:
        return False
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        dtype = util.dtype_of(x) if util.is_arraylike(x) else np.asarray(x).dtype
    return bool(dtypes.issubdtype(dtype, np.complexfloating))


def isrealobj(x) -> bool:
    """Whether `x` does not have a complex dtype, whatever its values (a Python bool).

    Follows `numpy.isrealobj`.

    Args:
        x: an array, scalar or dtype-carrying object.

    Returns:
        A bool.

    Examples:
        >>> jnp.isrealobj(jnp.array([1 + 0j])), jnp.isrealobj(jnp.ones(2))
        (False, True)
    """
    return not iscomplexobj(x)


jax_jits.apply(globals())  # JAX's jitted functions become jit functions

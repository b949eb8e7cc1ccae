"""The teaching docstrings of the elementwise functions of `plax.numpy` (ufuncs.py).

Most of those functions are made by small factories, so their docstrings are written
here as one table, `name: (summary, kind, example, its output)`, and assembled by
`teach`: the summary, what differs from NumPy for that kind of function, the
arguments (named from the signature), what is returned, and the example (run as a
doctest by tests/test_docstring_examples.py).
"""
from __future__ import annotations

import inspect
import textwrap
from typing import Callable

_PROMOTION = ("Type promotion follows JAX (see `jnp.promote_types`), not NumPy: Python "
              "scalars are weakly typed and do not widen an array's dtype, and without "
              "`jax_enable_x64` nothing becomes 64-bit. ")
_COMMON = ("As every `plax.numpy` function, it returns a new (immutable) array and has "
           "no `out=`, `where=` or `casting=` arguments.")

# What differs from NumPy, by kind of function.
_NOTES = {
    "unary": "Follows `numpy.{name}`. " + _COMMON,
    "inexact": ("Follows `numpy.{name}`, except that integer and bool inputs become the "
                "default float dtype (float32 unless `jax_enable_x64`), where NumPy gives "
                "float64. " + _COMMON),
    "binary": "Follows `numpy.{name}`, with NumPy broadcasting. " + _PROMOTION + _COMMON,
    "binary_inexact": ("Follows `numpy.{name}`, with NumPy broadcasting; integer inputs are "
                       "computed in the default float dtype. " + _PROMOTION + _COMMON),
    "binary_pair": "Follows `numpy.{name}`. " + _PROMOTION + _COMMON,
    "rounding": ("Follows `numpy.{name}`; integer and bool inputs are returned unchanged "
                 "(keeping their dtype) and complex inputs raise TypeError. " + _COMMON),
    "round": "Follows `numpy.round`; `out` must be None. " + _COMMON,
    "clip": "Follows `numpy.clip`. " + _PROMOTION + _COMMON,
    "angle": "Follows `numpy.angle`. " + _COMMON,
    "compare": "Follows `numpy.{name}`, with NumPy broadcasting. " + _PROMOTION + _COMMON,
    "logical": "Follows `numpy.{name}`, with NumPy broadcasting. " + _COMMON,
    "bool_unary": "Follows `numpy.{name}`. " + _COMMON,
}

_RETURNS = {
    "unary": "An array of `x`'s shape.",
    "inexact": "An array of `x`'s shape and an inexact (float or complex) dtype.",
    "binary": "An array of the broadcast shape and the promoted dtype.",
    "binary_inexact": "An array of the broadcast shape and the promoted inexact dtype.",
    "binary_pair": "A pair of arrays (quotient, remainder) of the broadcast shape.",
    "rounding": "An array of `x`'s shape and dtype.",
    "round": "An array of `a`'s shape and dtype.",
    "clip": "An array of the broadcast shape.",
    "angle": "A real array of `z`'s shape.",
    "compare": "A bool array of the broadcast shape.",
    "logical": "A bool array of the broadcast shape.",
    "bool_unary": "A bool array of `x`'s shape.",
}

_ARGS = {
    "x": "an array or scalar.",
    "val": "an array or scalar.",
    "z": "an array or scalar.",
    "a": "an array or scalar.",
    "arr": "an array or scalar.",
    "x1": "an array or scalar.",
    "x2": "an array or scalar, broadcast against `x1`.",
    "decimals": ("the number of decimal places (static); negative values round to tens, "
                 "hundreds..."),
    "out": "unsupported (arrays are immutable); must be None.",
    "deg": "return degrees instead of radians.",
    "min": "the lower bound (broadcast against `arr`), or None.",
    "max": "the upper bound, or None.",
}

TABLE: dict[str, tuple[str, str, str, str]] = {
    "add": (
        "Adds `x1` and `x2` elementwise; for two bool arrays, it is a logical or",
        "binary", "jnp.add(jnp.array([1, 2]), 3)",
        "Array([4, 5], dtype=int32)"),
    "subtract": (
        "Subtracts `x2` from `x1` elementwise (bool inputs raise TypeError, as in "
        "NumPy)",
        "binary", "jnp.subtract(jnp.array([5.0, 3.0]), 1)",
        "Array([4., 2.], dtype=float32)"),
    "multiply": (
        "Multiplies `x1` and `x2` elementwise; for bool arrays, a logical and. A bool "
        "factor selects rather than multiplies, as in JAX: `False * nan` is 0",
        "binary", "jnp.multiply(jnp.array([1.5, 2.0]), jnp.array([2, 3]))",
        "Array([3., 6.], dtype=float32)"),
    "true_divide": (
        "Divides `x1` by `x2` elementwise, in floating point (`divide` is an "
        "alias)",
        "binary_inexact", "jnp.true_divide(jnp.array([1, 3]), 2)",
        "Array([0.5, 1.5], dtype=float32)"),
    "floor_divide": (
        "Divides `x1` by `x2` elementwise, rounding toward negative infinity (Python's "
        "`//`). An integer division by zero gives XLA's answer (-1, or all ones for "
        "unsigned), as in JAX",
        "binary", "jnp.floor_divide(jnp.array([7, -7]), 2)",
        "Array([ 3, -4], dtype=int32)"),
    "remainder": (
        "The remainder of `x1 / x2` elementwise, with the sign of the divisor (Python's "
        "`%`; `mod` is an alias). An integer remainder by zero is 0, as in "
        "NumPy",
        "binary", "jnp.remainder(jnp.array([7, -7]), 3)",
        "Array([1, 2], dtype=int32)"),
    "divmod": (
        "`floor_divide(x1, x2)` and `remainder(x1, x2)` together",
        "binary_pair", "jnp.divmod(jnp.array([7, -7]), 3)",
        "(Array([ 2, -3], dtype=int32), Array([1, 2], dtype=int32))"),
    "fmod": (
        "The remainder of `x1 / x2` elementwise, with the sign of the dividend (C's "
        "`fmod`); an integer remainder by zero is 0",
        "binary", "jnp.fmod(jnp.array([7, -7]), 3)",
        "Array([ 1, -1], dtype=int32)"),
    "power": (
        "Raises `x1` to the power `x2` elementwise (`pow` is the same function). A "
        "concrete Python int exponent is computed by repeated multiplication and keeps "
        "`x1`'s dtype; integers to negative integer powers raise ValueError",
        "binary", "jnp.power(jnp.array([2, 3]), 3)",
        "Array([ 8, 27], dtype=int32)"),
    "float_power": (
        "Raises `x1` to the power `x2` elementwise, in floating point",
        "binary_inexact", "jnp.float_power(jnp.array([2, 4]), 0.5)",
        "Array([1.4142..., 2.       ], dtype=float32, weak_type=True)"),
    "negative": (
        "The negation `-x`, elementwise (bool inputs raise TypeError, as in NumPy)",
        "unary", "jnp.negative(jnp.array([1, -2]))",
        "Array([-1,  2], dtype=int32)"),
    "positive": (
        "Returns `x` (as an array): the unary `+x`",
        "unary", "jnp.positive(jnp.array([1, -2]))",
        "Array([ 1, -2], dtype=int32)"),
    "absolute": (
        "The absolute value `|x|`, elementwise; the magnitude (a real number) for "
        "complex inputs (`abs` is the same function)",
        "unary", "jnp.abs(jnp.array([-1.5, 2.0, 3 + 4j]))",
        "Array([1.5, 2. , 5. ], dtype=float32)"),
    "sign": (
        "The sign of `x`, elementwise: -1, 0 or 1 (and `x / |x|` for complex inputs); "
        "bool inputs raise TypeError",
        "unary", "jnp.sign(jnp.array([-2.0, 0.0, 3.0]))",
        "Array([-1.,  0.,  1.], dtype=float32)"),
    "reciprocal": (
        "The reciprocal `1 / x`, elementwise, in floating point (NumPy keeps integer "
        "dtypes and rounds)",
        "inexact", "jnp.reciprocal(jnp.array([1, 2, 4]))",
        "Array([1.  , 0.5 , 0.25], dtype=float32)"),
    "square": (
        "The square `x * x`, elementwise, keeping integer dtypes",
        "unary", "jnp.square(jnp.array([2, -3]))",
        "Array([4, 9], dtype=int32)"),
    "sqrt": (
        "The non-negative square root, elementwise (NaN for negative reals)",
        "inexact", "jnp.sqrt(jnp.array([1, 4, 9]))",
        "Array([1., 2., 3.], dtype=float32)"),
    "cbrt": (
        "The real cube root, elementwise (complex inputs raise TypeError)",
        "inexact", "jnp.cbrt(jnp.array([8.0, -27.0]))",
        "Array([ 2., -3.], dtype=float32)"),
    "exp": (
        "The exponential `e**x`, elementwise",
        "inexact", "jnp.exp(jnp.array([0.0, 1.0]))",
        "Array([1.       , 2.7182...], dtype=float32)"),
    "exp2": (
        "`2**x`, elementwise",
        "inexact", "jnp.exp2(jnp.array([0, 3]))",
        "Array([1., 8.], dtype=float32)"),
    "expm1": (
        "`exp(x) - 1`, elementwise, accurate for small `x`",
        "inexact", "jnp.expm1(jnp.array([0.0, 1e-10]))",
        "Array([0.e+00, 1.e-10], dtype=float32)"),
    "log": (
        "The natural logarithm, elementwise (-inf at 0, NaN for negative reals)",
        "inexact", "jnp.log(jnp.array([1.0, np.e]))",
        "Array([0., 1.], dtype=float32)"),
    "log1p": (
        "`log(1 + x)`, elementwise, accurate for small `x`",
        "inexact", "jnp.log1p(jnp.array([0.0, 1e-10]))",
        "Array([0.e+00, 1.e-10], dtype=float32)"),
    "log2": (
        "The base-2 logarithm, elementwise",
        "inexact", "jnp.log2(jnp.array([1, 8]))",
        "Array([0., 3.], dtype=float32)"),
    "log10": (
        "The base-10 logarithm, elementwise",
        "inexact", "jnp.log10(jnp.array([1, 100]))",
        "Array([0., 2.], dtype=float32)"),
    "sin": (
        "The sine of `x` (in radians), elementwise",
        "inexact", "jnp.sin(jnp.array([0.0, np.pi / 2]))",
        "Array([0., 1.], dtype=float32)"),
    "cos": (
        "The cosine of `x` (in radians), elementwise",
        "inexact", "jnp.cos(jnp.array([0.0, np.pi]))",
        "Array([ 1., -1.], dtype=float32)"),
    "tan": (
        "The tangent of `x` (in radians), elementwise",
        "inexact", "jnp.tan(jnp.array([0.0, np.pi / 4]))",
        "Array([0., 1.], dtype=float32)"),
    "arcsin": (
        "The inverse sine, elementwise, in [-pi/2, pi/2] (`asin` is an alias)",
        "inexact", "jnp.arcsin(jnp.array([0.0, 1.0]))",
        "Array([0.       , 1.5707...], dtype=float32)"),
    "arccos": (
        "The inverse cosine, elementwise, in [0, pi] (`acos` is an alias)",
        "inexact", "jnp.arccos(jnp.array([1.0, -1.0]))",
        "Array([0.       , 3.1415...], dtype=float32)"),
    "arctan": (
        "The inverse tangent, elementwise, in (-pi/2, pi/2) (`atan` is an "
        "alias)",
        "inexact", "jnp.arctan(jnp.array([0.0, 1.0]))",
        "Array([0.       , 0.7853...], dtype=float32)"),
    "sinh": (
        "The hyperbolic sine, elementwise",
        "inexact", "jnp.sinh(jnp.array([0.0, 1.0]))",
        "Array([0.       , 1.1752...], dtype=float32)"),
    "cosh": (
        "The hyperbolic cosine, elementwise",
        "inexact", "jnp.cosh(jnp.array([0.0, 1.0]))",
        "Array([1.       , 1.5430...], dtype=float32)"),
    "tanh": (
        "The hyperbolic tangent, elementwise",
        "inexact", "jnp.tanh(jnp.array([0.0, 1.0]))",
        "Array([0.       , 0.7615...], dtype=float32)"),
    "arcsinh": (
        "The inverse hyperbolic sine, elementwise (`asinh` is an alias)",
        "inexact", "jnp.arcsinh(jnp.array([0.0, 1.0]))",
        "Array([0.        , 0.8813...], dtype=float32)"),
    "arccosh": (
        "The inverse hyperbolic cosine, elementwise, for `x >= 1` (`acosh` is an "
        "alias)",
        "inexact", "jnp.arccosh(jnp.array([1.0, 2.0]))",
        "Array([0.      , 1.3169...], dtype=float32)"),
    "arctanh": (
        "The inverse hyperbolic tangent, elementwise, on (-1, 1) (`atanh` is an "
        "alias)",
        "inexact", "jnp.arctanh(jnp.array([0.0, 0.5]))",
        "Array([0.        , 0.5493...], dtype=float32)"),
    "deg2rad": (
        "Converts angles from degrees to radians, elementwise (`radians` is the same "
        "computation)",
        "inexact", "jnp.deg2rad(jnp.array([90, 180]))",
        "Array([1.5707..., 3.1415...], dtype=float32)"),
    "rad2deg": (
        "Converts angles from radians to degrees, elementwise (`degrees` is the same "
        "computation)",
        "inexact", "jnp.rad2deg(jnp.array([np.pi / 2]))",
        "Array([90.], dtype=float32)"),
    "radians": (
        "Converts angles from degrees to radians, elementwise (as `deg2rad`)",
        "inexact", "jnp.radians(jnp.array([180.0]))",
        "Array([3.1415...], dtype=float32)"),
    "degrees": (
        "Converts angles from radians to degrees, elementwise (as `rad2deg`)",
        "inexact", "jnp.degrees(jnp.array([np.pi]))",
        "Array([180.], dtype=float32)"),
    "arctan2": (
        "The angle of the point `(x2, x1)` from the positive x axis, elementwise, in "
        "[-pi, pi] (`atan2` is an alias); the quadrant comes from both signs",
        "binary_inexact", "jnp.arctan2(jnp.array([1.0, -1.0]), jnp.array([-1.0, -1.0]))",
        "Array([ 2.3561..., -2.3561...], dtype=float32)"),
    "logaddexp": (
        "`log(exp(x1) + exp(x2))`, elementwise, computed without overflow",
        "binary_inexact", "jnp.logaddexp(jnp.array([1000.0, 0.0]), jnp.array([1000.0, 0.0]))",
        "Array([1.0006...e+03, 6.9314...e-01], dtype=float32)"),
    "hypot": (
        "`sqrt(x1**2 + x2**2)`, elementwise, computed without overflow or underflow",
        "binary_inexact", "jnp.hypot(jnp.array([3.0, 1e30]), jnp.array([4.0, 1e30]))",
        "Array([5.0000...e+00, 1.4142...e+30], dtype=float32)"),
    "floor": (
        "Rounds down to the nearest integer value, elementwise",
        "rounding", "jnp.floor(jnp.array([-1.5, 1.5]))",
        "Array([-2.,  1.], dtype=float32)"),
    "ceil": (
        "Rounds up to the nearest integer value, elementwise",
        "rounding", "jnp.ceil(jnp.array([-1.5, 1.5]))",
        "Array([-1.,  2.], dtype=float32)"),
    "trunc": (
        "Rounds toward zero to an integer value, elementwise",
        "rounding", "jnp.trunc(jnp.array([-1.5, 1.5]))",
        "Array([-1.,  1.], dtype=float32)"),
    "fix": (
        "Rounds toward zero to an integer value, elementwise (as `trunc`)",
        "rounding", "jnp.fix(jnp.array([-1.5, 1.5]))",
        "Array([-1.,  1.], dtype=float32)"),
    "rint": (
        "Rounds to the nearest integer value, ties to even, elementwise; integer inputs "
        "give floats (as NumPy), and complex inputs round both parts",
        "unary", "jnp.rint(jnp.array([0.5, 1.5, 2.5]))",
        "Array([0., 2., 2.], dtype=float32)"),
    "round": (
        "Rounds to `decimals` decimal places, ties to even, keeping the dtype (`around` "
        "is an alias). Integer inputs with negative `decimals` round to tens, "
        "hundreds...; float16/bfloat16 are rounded in float32",
        "round", "jnp.round(jnp.array([1.25, 2.5, -0.5]), 1)",
        "Array([ 1.2,  2.5, -0.5], dtype=float32)"),
    "maximum": (
        "The larger of `x1` and `x2`, elementwise; NaN if either is NaN",
        "binary", "jnp.maximum(jnp.array([1.0, 5.0, np.nan]), 2)",
        "Array([ 2.,  5., nan], dtype=float32)"),
    "minimum": (
        "The smaller of `x1` and `x2`, elementwise; NaN if either is NaN",
        "binary", "jnp.minimum(jnp.array([1.0, 5.0, np.nan]), 2)",
        "Array([ 1.,  2., nan], dtype=float32)"),
    "fmax": (
        "The larger of `x1` and `x2`, elementwise, ignoring NaNs (NaN only where both "
        "are)",
        "binary", "jnp.fmax(jnp.array([1.0, np.nan]), jnp.array([2.0, 3.0]))",
        "Array([2., 3.], dtype=float32)"),
    "fmin": (
        "The smaller of `x1` and `x2`, elementwise, ignoring NaNs (NaN only where both "
        "are)",
        "binary", "jnp.fmin(jnp.array([1.0, np.nan]), jnp.array([2.0, 3.0]))",
        "Array([1., 3.], dtype=float32)"),
    "clip": (
        "Limits the values of `arr` to `[min, max]`, elementwise (either bound may be "
        "None). NumPy's older `a_min`/`a_max` names are not accepted",
        "clip", "jnp.clip(jnp.array([-2, 0, 5]), 0, 3)",
        "Array([0, 0, 3], dtype=int32)"),
    "isnan": (
        "Tests elementwise for NaN (always False for integers and bools)",
        "bool_unary", "jnp.isnan(jnp.array([1.0, np.nan]))",
        "Array([False,  True], dtype=bool)"),
    "isinf": (
        "Tests elementwise for positive or negative infinity (for complex inputs: "
        "either part)",
        "bool_unary", "jnp.isinf(jnp.array([1.0, np.inf, -np.inf]))",
        "Array([False,  True,  True], dtype=bool)"),
    "isfinite": (
        "Tests elementwise for finite values: neither infinite nor NaN (for complex "
        "inputs: both parts)",
        "bool_unary", "jnp.isfinite(jnp.array([1.0, np.inf, np.nan]))",
        "Array([ True, False, False], dtype=bool)"),
    "signbit": (
        "Tests elementwise whether the sign bit is set: True for negative numbers, -0.0 "
        "and negative NaNs (complex inputs raise ValueError)",
        "bool_unary", "jnp.signbit(jnp.array([-1.0, -0.0, 2.0]))",
        "Array([ True,  True, False], dtype=bool)"),
    "copysign": (
        "The magnitude of `x1` with the sign (bit) of `x2`, elementwise",
        "binary_inexact", "jnp.copysign(jnp.array([1.0, 2.0]), jnp.array([-1.0, 0.0]))",
        "Array([-1.,  2.], dtype=float32)"),
    "heaviside": (
        "The Heaviside step function: 0 where `x1 < 0`, `x2` where `x1 == 0`, 1 where "
        "`x1 > 0` (NaN where `x1` is NaN)",
        "binary_inexact", "jnp.heaviside(jnp.array([-1.0, 0.0, 2.0]), 0.5)",
        "Array([0. , 0.5, 1. ], dtype=float32)"),
    "sinc": (
        "The normalized sinc function `sin(pi x) / (pi x)`, elementwise, with `sinc(0) "
        "= 1`",
        "inexact", "jnp.sinc(jnp.array([0.0, 0.5]))",
        "Array([1. , 0.6366...], dtype=float32)"),
    "real": (
        "The real part of `val`, elementwise (the values themselves for real inputs)",
        "unary", "jnp.real(jnp.array([1 + 2j, 3 - 4j]))",
        "Array([1., 3.], dtype=float32)"),
    "imag": (
        "The imaginary part of `val`, elementwise (zeros for real inputs)",
        "unary", "jnp.imag(jnp.array([1 + 2j, 3 - 4j]))",
        "Array([ 2., -4.], dtype=float32)"),
    "conjugate": (
        "The complex conjugate, elementwise (the values themselves for real inputs; "
        "`conj` is an alias)",
        "unary", "jnp.conjugate(jnp.array([1 + 2j]))",
        "Array([1.-2.j], dtype=complex64)"),
    "angle": (
        "The argument (phase angle) of complex `z`, elementwise, in radians or, with "
        "`deg=True`, degrees; integer inputs give the default float dtype",
        "angle", "jnp.angle(jnp.array([1j, -1.0]), deg=True)",
        "Array([ 90., 180.], dtype=float32)"),
    "equal": (
        "Tests `x1 == x2` elementwise",
        "compare", "jnp.equal(jnp.array([1, 2, 3]), 2)",
        "Array([False,  True, False], dtype=bool)"),
    "not_equal": (
        "Tests `x1 != x2` elementwise",
        "compare", "jnp.not_equal(jnp.array([1, 2, 3]), 2)",
        "Array([ True, False,  True], dtype=bool)"),
    "less": (
        "Tests `x1 < x2` elementwise (complex values are ordered by real part, then "
        "imaginary part)",
        "compare", "jnp.less(jnp.array([1, 2, 3]), 2)",
        "Array([ True, False, False], dtype=bool)"),
    "less_equal": (
        "Tests `x1 <= x2` elementwise (complex values are ordered by real part, then "
        "imaginary part)",
        "compare", "jnp.less_equal(jnp.array([1, 2, 3]), 2)",
        "Array([ True,  True, False], dtype=bool)"),
    "greater": (
        "Tests `x1 > x2` elementwise (complex values are ordered by real part, then "
        "imaginary part)",
        "compare", "jnp.greater(jnp.array([1, 2, 3]), 2)",
        "Array([False, False,  True], dtype=bool)"),
    "greater_equal": (
        "Tests `x1 >= x2` elementwise (complex values are ordered by real part, then "
        "imaginary part)",
        "compare", "jnp.greater_equal(jnp.array([1, 2, 3]), 2)",
        "Array([False,  True,  True], dtype=bool)"),
    "logical_and": (
        "The logical and of the truth values of `x1` and `x2`, elementwise (nonzero is "
        "true)",
        "logical", "jnp.logical_and(jnp.array([True, True, False]), jnp.array([1, 0, 1]))",
        "Array([ True, False, False], dtype=bool)"),
    "logical_or": (
        "The logical or of the truth values of `x1` and `x2`, elementwise (nonzero is "
        "true)",
        "logical", "jnp.logical_or(jnp.array([True, False]), jnp.array([0, 0]))",
        "Array([ True, False], dtype=bool)"),
    "logical_xor": (
        "The logical exclusive or of the truth values of `x1` and `x2`, elementwise",
        "logical", "jnp.logical_xor(jnp.array([True, True]), jnp.array([True, False]))",
        "Array([False,  True], dtype=bool)"),
    "logical_not": (
        "The logical negation of the truth value of `x`, elementwise (nonzero is true)",
        "bool_unary", "jnp.logical_not(jnp.array([0, 2]))",
        "Array([ True, False], dtype=bool)"),
    "bitwise_and": (
        "The bitwise and of integers (logical and of bools), elementwise",
        "binary", "jnp.bitwise_and(jnp.array([12, 10]), 6)",
        "Array([4, 2], dtype=int32)"),
    "bitwise_or": (
        "The bitwise or of integers (logical or of bools), elementwise",
        "binary", "jnp.bitwise_or(jnp.array([12, 10]), 1)",
        "Array([13, 11], dtype=int32)"),
    "bitwise_xor": (
        "The bitwise exclusive or of integers (and bools), elementwise",
        "binary", "jnp.bitwise_xor(jnp.array([12, 10]), 6)",
        "Array([10, 12], dtype=int32)"),
    "bitwise_not": (
        "Inverts every bit of integers (logical not of bools), elementwise (`invert` "
        "and `bitwise_invert` are aliases)",
        "unary", "jnp.bitwise_not(jnp.array([0, 5], dtype=jnp.uint8))",
        "Array([255, 250], dtype=uint8)"),
    "left_shift": (
        "Shifts the bits of `x1` left by `x2`, elementwise (`bitwise_left_shift` is an "
        "alias)",
        "binary", "jnp.left_shift(jnp.array([1, 3]), 2)",
        "Array([ 4, 12], dtype=int32)"),
    "right_shift": (
        "Shifts the bits of `x1` right by `x2`, elementwise: arithmetic (sign-filling) "
        "for signed integers, logical for unsigned (`bitwise_right_shift` is an "
        "alias)",
        "binary", "jnp.right_shift(jnp.array([-8, 8]), 2)",
        "Array([-2,  2], dtype=int32)"),
    "matrix_transpose": (
        "Swaps the last two axes of `x` (a stack of matrices); raises ValueError for "
        "fewer than two dimensions",
        "unary", "jnp.matrix_transpose(jnp.ones((2, 3, 4))).shape",
        "(2, 4, 3)"),
}


def _docstring(fn: Callable, summary: str, kind: str, example: str, output: str) -> str:
    args = "\n".join(f"    {p}: {_ARGS[p]}" for p in inspect.signature(fn).parameters)
    summary = textwrap.fill(summary + ".", 84)
    note = textwrap.fill(_NOTES[kind].format(name=fn.__name__), 84)
    return (f"{summary}\n\n{note}\n\nArgs:\n{args}\n\nReturns:\n    {_RETURNS[kind]}\n\n"
            f"Examples:\n    >>> {example}\n    {output}\n")


# Other names of functions of `TABLE` (the array API's, NumPy's): functions of their own
# calling those, as JAX's are (each jitted as JAX's is), taught by the same example.
ALIASES = {"acos": "arccos", "asin": "arcsin", "atan": "arctan", "acosh": "arccosh",
           "asinh": "arcsinh", "atanh": "arctanh", "atan2": "arctan2",
           "divide": "true_divide", "mod": "remainder", "around": "round",
           "conj": "conjugate", "invert": "bitwise_not", "bitwise_invert": "bitwise_not",
           "bitwise_left_shift": "left_shift", "bitwise_right_shift": "right_shift"}


def teach(namespace: dict) -> None:
    """Gives each function of `TABLE` in `namespace` its docstring, and each alias
    its own."""
    for name, (summary, kind, example, output) in TABLE.items():
        fn = namespace[name]
        fn.__doc__ = _docstring(fn, summary, kind, example, output)
    for alias, name in ALIASES.items():
        _, _, example, output = TABLE[name]
        example = example.replace(f"jnp.{name}(", f"jnp.{alias}(")
        namespace[alias].__doc__ = (f"Alias of `{name}`.\n\nExamples:\n    >>> {example}\n"
                                    f"    {output}\n")

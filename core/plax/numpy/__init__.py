"""`plax.numpy`: NumPy's API on plax arrays, with `jax.numpy`'s semantics.

Functions work on concrete arrays (executed eagerly) and on traced values alike.
Type promotion follows JAX (weak Python scalars, no implicit 64-bit types with
x64 off); broadcasting follows NumPy, subject to `jax_numpy_rank_promotion`.
"""
import importlib as _importlib

from numpy import (complexfloating as complexfloating, dtype as dtype, e as e,
                   euler_gamma as euler_gamma, flexible as flexible, floating as floating,
                   generic as generic, inexact as inexact, inf as inf, integer as integer,
                   nan as nan, number as number, pi as pi, signedinteger as signedinteger,
                   unsignedinteger as unsignedinteger)

from plax._src.dtypes import (finfo as finfo, float0 as float0, iinfo as iinfo,
                              issubdtype as issubdtype, promote_types as promote_types,
                              result_type as result_type)
from plax._src.numpy.creation import (
    arange as arange, array as array, asarray as asarray, astype as astype, copy as copy,
    empty as empty, empty_like as empty_like, eye as eye, full as full, full_like as full_like,
    identity as identity, linspace as linspace, ones as ones, ones_like as ones_like,
    zeros as zeros, zeros_like as zeros_like)
from plax._src.numpy.indexing import take as take, take_along_axis as take_along_axis
from plax._src.numpy.linalg_products import (
    dot as dot, einsum as einsum, inner as inner, matmul as matmul, outer as outer,
    tensordot as tensordot, vdot as vdot)
from plax._src.numpy.reductions import (
    all as all, amax as amax, amin as amin, any as any, argmax as argmax, argmin as argmin,
    count_nonzero as count_nonzero, cumprod as cumprod, cumsum as cumsum, max as max,
    mean as mean, min as min, prod as prod, std as std, sum as sum, var as var)
from plax._src.numpy.scalar_types import (
    bfloat16 as bfloat16, bool_ as bool_, cdouble as cdouble, complex64 as complex64,
    complex128 as complex128, complex_ as complex_, csingle as csingle, double as double,
    float8_e4m3b11fnuz as float8_e4m3b11fnuz, float8_e4m3fn as float8_e4m3fn,
    float8_e4m3fnuz as float8_e4m3fnuz, float8_e5m2 as float8_e5m2,
    float8_e5m2fnuz as float8_e5m2fnuz, float16 as float16, float32 as float32,
    float64 as float64, float_ as float_, half as half, int4 as int4, int8 as int8,
    int16 as int16, int32 as int32, int64 as int64, int_ as int_, single as single,
    uint as uint, uint4 as uint4, uint8 as uint8, uint16 as uint16, uint32 as uint32,
    uint64 as uint64)
from plax._src.numpy.shape_ops import (
    array_split as array_split, atleast_1d as atleast_1d, atleast_2d as atleast_2d,
    atleast_3d as atleast_3d, broadcast_arrays as broadcast_arrays,
    broadcast_shapes as broadcast_shapes, broadcast_to as broadcast_to, concat as concat,
    concatenate as concatenate, diagonal as diagonal, dstack as dstack,
    expand_dims as expand_dims, flip as flip, fliplr as fliplr, flipud as flipud,
    hstack as hstack, isscalar as isscalar, moveaxis as moveaxis, ndim as ndim,
    permute_dims as permute_dims, ravel as ravel, repeat as repeat, reshape as reshape,
    roll as roll, shape as shape, size as size, split as split, squeeze as squeeze,
    stack as stack, swapaxes as swapaxes, tile as tile, trace as trace,
    transpose as transpose, tril as tril, triu as triu, vstack as vstack)
from plax._src.numpy.sorting import (argsort as argsort, argwhere as argwhere,
                                     flatnonzero as flatnonzero, nonzero as nonzero,
                                     sort as sort)
from plax._src.numpy.ufuncs import (
    abs as abs, absolute as absolute, acos as acos, acosh as acosh, add as add,
    angle as angle, arccos as arccos, arccosh as arccosh, arcsin as arcsin,
    arcsinh as arcsinh, arctan as arctan, arctan2 as arctan2, arctanh as arctanh,
    around as around, asin as asin, asinh as asinh, atan as atan, atan2 as atan2,
    atanh as atanh, bitwise_and as bitwise_and, bitwise_invert as bitwise_invert,
    bitwise_left_shift as bitwise_left_shift, bitwise_not as bitwise_not,
    bitwise_or as bitwise_or, bitwise_right_shift as bitwise_right_shift,
    bitwise_xor as bitwise_xor, cbrt as cbrt, ceil as ceil, clip as clip, conj as conj,
    conjugate as conjugate, copysign as copysign, cos as cos, cosh as cosh,
    deg2rad as deg2rad, degrees as degrees, divide as divide, divmod as divmod,
    equal as equal, exp as exp, exp2 as exp2, expm1 as expm1, fix as fix,
    float_power as float_power, floor as floor, floor_divide as floor_divide, fmax as fmax,
    fmin as fmin, fmod as fmod, greater as greater, greater_equal as greater_equal,
    heaviside as heaviside, hypot as hypot, imag as imag, invert as invert,
    isfinite as isfinite, isinf as isinf, isnan as isnan, left_shift as left_shift,
    less as less, less_equal as less_equal, log as log, log1p as log1p, log2 as log2,
    log10 as log10, logaddexp as logaddexp, logical_and as logical_and,
    logical_not as logical_not, logical_or as logical_or, logical_xor as logical_xor,
    matrix_transpose as matrix_transpose, maximum as maximum, minimum as minimum, mod as mod,
    multiply as multiply, negative as negative, not_equal as not_equal, positive as positive,
    pow as pow, power as power, rad2deg as rad2deg, radians as radians, real as real,
    reciprocal as reciprocal, remainder as remainder, right_shift as right_shift,
    rint as rint, round as round, sign as sign, signbit as signbit, sin as sin, sinc as sinc,
    sinh as sinh, sqrt as sqrt, square as square, subtract as subtract, tan as tan,
    tanh as tanh, true_divide as true_divide, trunc as trunc, where as where)

bool = bool_  # noqa: A001 - jax.numpy's name
newaxis = None


def __getattr__(name: str):
    # `jnp.ndarray` is the Array class, which the runtime package provides.
    if name == "ndarray":
        return _importlib.import_module("plax").Array
    raise AttributeError(f"module 'plax.numpy' has no attribute {name!r}")


"""Ranges spaced evenly on a log scale: logspace and geomspace."""
from __future__ import annotations

import operator

import numpy as np

from plax.extend import dtypes
from plax_stdlib import lax
from plax_stdlib.numpy import creation, ufuncs, util


def logspace(start, stop, num: int = 50, endpoint: bool = True, base=10.0, dtype=None,
             axis: int = 0):
    """`num` values `base ** t` for `t` evenly spaced from `start` to `stop`.

    Follows `numpy.logspace`; integer inputs give the default float type.

    Args:
        start: the first exponent.
        stop: the last exponent.
        num: the number of values (concrete).
        endpoint: include `base ** stop`.
        base: the base.
        dtype: the result's dtype.
        axis: where the values' axis goes, for array bounds.

    Returns:
        The values.

    Examples:
        >>> jnp.logspace(0, 3, 4)
        Array([   1.,   10.,  100., 1000.], dtype=float32)
        >>> jnp.logspace(0, 3, 4, base=2.0)
        Array([1., 2., 4., 8.], dtype=float32)
    """
    dtype = util.check_user_dtype(dtype, "logspace")
    start, stop, base = util.ensure_arraylike("logspace", start, stop, base)
    num = operator.index(util.concrete_or_error(num, "logspace: 'num' fixes the result size"))
    return _logspace(start, stop, num, endpoint, base, dtype, operator.index(axis))


@util.compiled(static_argnames=("num", "endpoint", "dtype", "axis"))
def _logspace(start, stop, num, endpoint, base, dtype, axis):
    """`logspace` as one jitted call (JAX's `_logspace`): `base` to the power of the
    linspace of the exponents."""
    # computed in the requested dtype's inexact kind (complex: a negative start
    # reaches a positive stop through the complex plane), as JAX does
    dtype = dtype or dtypes.to_inexact_dtype(dtypes.result_type(start, stop))
    compute = dtypes.to_inexact_dtype(dtype)
    start, stop = util.convert(start, compute), util.convert(stop, compute)
    exponents = creation.linspace(start, stop, num, endpoint=endpoint, axis=axis)
    return util.convert(ufuncs.power(base, exponents), dtype)


def geomspace(start, stop, num: int = 50, endpoint: bool = True, dtype=None, axis: int = 0):
    """`num` values from `start` to `stop` in geometric progression (each a constant
    multiple of the one before).

    Follows `numpy.geomspace`: the magnitudes are evenly spaced on a log scale and
    take the sign (or complex phase) of `start`; integer bounds give the default float
    type.

    Args:
        start: the first value (non-zero).
        stop: the last value (the bound, without `endpoint`).
        num: the number of values (concrete).
        endpoint: include `stop`.
        dtype: the result's dtype.
        axis: where the values' axis goes, for array bounds.

    Returns:
        The values.

    Examples:
        >>> jnp.geomspace(1, 1000, 4)
        Array([   1.,   10.,  100., 1000.], dtype=float32)
    """
    dtype = util.check_user_dtype(dtype, "geomspace")
    start, stop = util.ensure_arraylike("geomspace", start, stop)
    # computed in the requested dtype's inexact kind (complex: a negative start
    # reaches a positive stop through the complex plane), as JAX does
    compute = dtypes.to_inexact_dtype(dtype if dtype is not None
                                      else dtypes.result_type(start, stop))
    start, stop = util.convert(start, compute), util.convert(stop, compute)
    bounds = util.broadcast_shapes(util.shape_of(start), util.shape_of(stop))
    util.canonicalize_axis(axis, len(bounds) + 1)  # before linspace's, as JAX's ValueError
    sign = lax.sign(start)
    logs = creation.linspace(ufuncs.log10(ufuncs.divide(start, sign)),
                             ufuncs.log10(ufuncs.divide(stop, sign)), num, endpoint=endpoint,
                             dtype=compute, axis=axis)
    magnitudes = ufuncs.power(np.asarray(10.0, compute), logs)
    out_shape = util.shape_of(magnitudes)
    axis = util.canonicalize_axis(axis, len(out_shape))
    if util.shape_of(sign):
        sign, start, stop = (lax.expand_dims(v, (axis,)) for v in (sign, start, stop))
    out = ufuncs.multiply(sign, magnitudes)
    # The ends are the arguments themselves (not 10**log10 of them, which an integer
    # dtype would truncate below them), except where a zero end made the whole
    # sequence NaN, as in JAX.
    position = lax.broadcasted_iota(np.int32, tuple(n if d == axis else 1
                                                    for d, n in enumerate(out_shape)), axis)
    defined = ufuncs.logical_not(ufuncs.isnan(out))
    out = ufuncs.where((position == 0) & defined, start, out)
    if endpoint and num > 1:
        out = ufuncs.where((position == num - 1) & defined, stop, out)
    return util.as_array(util.convert(out, dtype or compute))

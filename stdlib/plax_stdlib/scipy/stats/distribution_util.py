"""What the distributions share: argument promotion (integers become the default
float, as in JAX), the location-scale form z = (x - loc) / scale and the integer
support of the discrete ones."""
from __future__ import annotations

import functools

import numpy as np

from plax_stdlib import numpy as jnp
from plax_stdlib.numpy import util


def promote(name: str, *args):
    """The arguments in a common inexact dtype, broadcast to a common rank."""
    out = util.promote_args_inexact(name, *args)
    return out[0] if len(out) == 1 else out


def promote_dtypes(name: str, *args):
    """The arguments in a common inexact dtype, their shapes left alone (for
    arguments whose axes mean different things, such as a mean and a covariance)."""
    util.check_arraylike(name, *args)
    return [jnp.asarray(a) for a in util.promote_dtypes_inexact(*map(util.operand, args))]


def const_like(x, value):
    """`value` in `x`'s dtype (JAX's `_lax_const`), for formulas written with lax."""
    return np.asarray(value, jnp.result_type(x))


def standardized(x, loc, scale):
    """(x - loc) / scale and log(scale), the change of variables of a location-scale
    family (its density is the standard one's at z, minus log(scale) in log space)."""
    return (x - loc) / scale, jnp.log(scale)


def on_integers(j, lowest):
    """Whether j is an integer no smaller than `lowest` (a discrete support)."""
    return jnp.logical_and(j >= lowest, j == jnp.round(j))


def nan_where_any_nan(value, *args):
    """`value`, NaN wherever one of `args` is NaN (as SciPy's functions are, where a
    support test alone would give a NaN point probability 0)."""
    nan = functools.reduce(jnp.logical_or, [jnp.isnan(a) for a in args])
    return jnp.where(nan, np.nan, value)


def on_support(inside, log_value, *args):
    """`log_value` where `inside`, -inf outside, NaN where one of `args` is NaN."""
    return nan_where_any_nan(jnp.where(inside, log_value, -np.inf), *args)

"""Dtype questions and NumPy's printing and misc helpers: can_cast, isdtype,
iterable, array_repr, array_str, the print options, and NumPy's classes
`ComplexWarning`, `character` and `object_`."""
from __future__ import annotations

import numpy as np
from numpy import (  # noqa: F401 - NumPy's own, as jax.numpy exports them
    character as character,
    get_printoptions as get_printoptions,
    iterable as iterable,
    object_ as object_,
    printoptions as printoptions,
    set_printoptions as set_printoptions,
)
from numpy.exceptions import ComplexWarning as ComplexWarning  # noqa: F401

from plax.extend import dtypes
from plax_stdlib.numpy import util

DTYPE_KINDS = {
    "bool": lambda d: d == np.dtype(bool),
    "signed integer": lambda d: dtypes.issubdtype(d, np.signedinteger),
    "unsigned integer": lambda d: dtypes.issubdtype(d, np.unsignedinteger),
    "integral": lambda d: dtypes.issubdtype(d, np.integer),
    "real floating": lambda d: dtypes.issubdtype(d, np.floating),
    "complex floating": lambda d: dtypes.issubdtype(d, np.complexfloating),
    "numeric": lambda d: d != np.dtype(bool) and dtypes.issubdtype(d, np.number),
}


def _as_dtype(x) -> np.dtype:
    """The dtype of a dtype-like (a dtype, a scalar type, a name) or of an array."""
    dtype = getattr(x, "dtype", None)
    if isinstance(dtype, np.dtype):  # arrays, and plax's scalar types
        return dtype
    if util.is_arraylike(x) and not isinstance(x, type):
        return util.dtype_of(x)
    return np.dtype(x)


def isdtype(dtype, kind) -> bool:
    """The array API's `isdtype`: whether `dtype` is of the given kind.

    `kind` is a dtype (exact match), one of "bool", "signed integer", "unsigned
    integer", "integral", "real floating", "complex floating", "numeric", or a tuple of
    those (any of them). bfloat16 and the float8 types count as "real floating".

    Args:
        dtype: a dtype.
        kind: a kind name, a dtype, or a tuple of them.

    Returns:
        A bool.

    Raises:
        TypeError: `dtype` is not a dtype (an array, say).
        ValueError: an unknown kind name.

    Examples:
        >>> jnp.isdtype(jnp.bfloat16, "real floating")
        True
        >>> jnp.isdtype(jnp.int8, ("bool", "unsigned integer"))
        False
    """
    dtype = _as_dtype(dtype)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
        if isinstance(k, str):
            if k not in DTYPE_KINDS:
                raise ValueError(f"isdtype: unrecognized kind {k!r}; expected a dtype or one "
                                 f"of {sorted(DTYPE_KINDS)}")
            if DTYPE_KINDS[k](dtype):
                return True
        elif dtype == _as_dtype(k):
            return True
    return False


def can_cast(from_, to, casting: str = "safe") -> bool:
    """Whether a value of dtype (or array) `from_` can be cast to `to` under NumPy's
    `casting` rule ("no", "equiv", "safe", "same_kind", "unsafe").

    Follows `numpy.can_cast`; bfloat16 and the other ml_dtypes types are included.
    Python scalars are refused (TypeError), as in NumPy 2 and JAX.

    Args:
        from_: a dtype or array.
        to: a dtype.
        casting: the rule.

    Returns:
        A bool.

    Raises:
        TypeError: a Python scalar `from_`.

    Examples:
        >>> jnp.can_cast(jnp.int8, jnp.int32), jnp.can_cast(jnp.float32, jnp.int32)
        (True, False)
        >>> jnp.can_cast(jnp.float32, jnp.bfloat16, casting="same_kind")
        True
    """
    return bool(np.can_cast(_dtype_if_typed(from_), _dtype_if_typed(to), casting))


def _dtype_if_typed(x):
    """The dtype of a plax array or scalar type; anything else (a NumPy array, which
    NumPy refuses as a target dtype) as given, for NumPy."""
    dtype = getattr(x, "dtype", None)
    return dtype if isinstance(dtype, np.dtype) and not isinstance(x, np.ndarray) else x


def array_repr(arr, max_line_width=None, precision=None, suppress_small=None) -> str:
    """NumPy's repr of the (concrete) array's values, as a string (NumPy's `array(...)`
    form, not plax's `Array(...)`).

    Follows `numpy.array_repr`; the formatting options are NumPy's.

    Args:
        arr: a concrete array.
        max_line_width: the line width to wrap at.
        precision: digits of floats.
        suppress_small: print tiny values as zero.

    Returns:
        A string.

    Examples:
        >>> jnp.array_repr(jnp.array([1.5, 2.0]))
        'array([1.5, 2. ], dtype=float32)'
    """
    return np.array_repr(np.asarray(util.concrete_or_error(arr, "array_repr")),
                         max_line_width, precision, suppress_small)


def array_str(a, max_line_width=None, precision=None, suppress_small=None) -> str:
    """NumPy's str of the (concrete) array's values, as a string.

    Follows `numpy.array_str`; the formatting options are NumPy's.

    Args:
        a: a concrete array.
        max_line_width: the line width to wrap at.
        precision: digits of floats.
        suppress_small: print tiny values as zero.

    Returns:
        A string.

    Examples:
        >>> jnp.array_str(jnp.array([1.5, 2.0]))
        '[1.5 2. ]'
    """
    return np.array_str(np.asarray(util.concrete_or_error(a, "array_str")),
                        max_line_width, precision, suppress_small)

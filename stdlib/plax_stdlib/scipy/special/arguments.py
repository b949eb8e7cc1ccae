"""Argument handling shared by the special functions: promotion to an inexact dtype
(integers and bools to the default float, as in JAX) and the refusal of complex
arguments by the functions that JAX defines for real ones only."""
from __future__ import annotations

import numpy as np

from plax_stdlib.numpy import util


def inexact(name: str, *args):
    """The arguments promoted to one inexact dtype: one value for one argument, else a
    list."""
    out = util.promote_args_inexact(name, *args)
    return out[0] if len(out) == 1 else out


def reject_complex(name: str, x) -> None:
    """A ValueError naming `name` where `x` is complex, as JAX's real-only functions."""
    if util.dtype_category(util.dtype_of(x)) == "c":
        raise ValueError(f"{name} does not support complex-valued inputs.")


def float32_or_64(name: str, x):
    """`x` promoted, refusing all but float32 and float64 inputs (Python floats
    included), as JAX does for the normal distribution's functions and spence."""
    util.check_arraylike(name, x)
    dtype = np.dtype(util.dtype_of(x))
    if dtype not in (np.dtype(np.float32), np.dtype(np.float64)) and type(x) is not float:
        raise TypeError(f"{name}: x.dtype={dtype} is not supported; pass a float32 or "
                        "float64 array")
    return inexact(name, x)

"""How `plax.numpy.linalg` functions take their arguments: array-likes promoted to an
inexact dtype (integers become the default float), and shapes checked up front, so
a wrong rank or a non-square matrix is a ValueError naming the function and shape."""
from __future__ import annotations

from typing import Any

from plax.extend.core import get_aval
from plax_stdlib.numpy import util


def inexact(fun_name: str, *args: Any) -> list[Any]:
    """The arguments as arrays of one inexact dtype (JAX's promotion)."""
    util.check_arraylike(fun_name, *args)
    return util.promote_dtypes_inexact(*map(util.operand, args))


def check_matrices(fun_name: str, x: Any, *, square: bool = False, what: str = "a") -> None:
    """`x` must be a batch of matrices `[..., m, n]` (square if asked)."""
    shape = get_aval(x).shape
    if len(shape) < 2:
        raise ValueError(f"{fun_name}: {what} must be a matrix or a batch of matrices with "
                         f"shape [..., m, n]; got an array of shape {shape}")
    if square and shape[-1] != shape[-2]:
        raise ValueError(f"{fun_name}: {what} must be a square matrix or a batch of square "
                         f"matrices with shape [..., n, n]; got shape {shape}")


def matrices(fun_name: str, a: Any, *, square: bool = False) -> Any:
    """One checked, promoted batch of matrices."""
    a, = inexact(fun_name, a)
    check_matrices(fun_name, a, square=square)
    return a

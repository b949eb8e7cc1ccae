"""`plax.typing`: the annotation types of JAX's `jax.typing`, for code that accepts
plax values.

`ArrayLike` is what functions of `plax.numpy` and `plax.lax` accept as an array: a
plax `Array` (tracers count, see `plax.Array`), a NumPy array or scalar, or a Python
scalar. `DTypeLike` is what a `dtype=` argument accepts: a name, a scalar type, a
NumPy dtype, or anything with a `dtype` attribute.
"""
from __future__ import annotations

from typing import Any, Protocol, Union

import numpy as np

from plax_runtime.array import Array


class SupportsDType(Protocol):
    @property
    def dtype(self) -> np.dtype: ...


ArrayLike = Union[Array, np.ndarray, np.bool_, np.number, bool, int, float, complex]
DTypeLike = Union[str, type[Any], np.dtype, SupportsDType]

__all__ = ["ArrayLike", "DTypeLike"]

"""`plax.dtypes`: JAX's public dtype utilities (`jax.dtypes`), on the kernel's rules:
x64 canonicalization, the promotion lattice with weak types, the extra dtypes
(bfloat16, float0 for integer tangents) and the extended dtypes (PRNG keys)."""
from __future__ import annotations

from typing import Any

from plax._src import dtypes as _dtypes
from plax._src.dtypes import (  # noqa: F401
    TypePromotionError, bfloat16, extended, finfo, float0, iinfo, issubdtype, itemsize_bits,
    prng_key, result_type, scalar_type_of)


def canonicalize_dtype(dtype: Any, allow_extended_dtype: bool = False):
    """The dtype plax uses for `dtype`: 64-bit types become 32-bit with x64 off.
    Extended dtypes (PRNG keys) pass only with `allow_extended_dtype=True`."""
    return _dtypes.canonicalize_dtype(dtype, allow_extended=allow_extended_dtype)


__all__ = ["TypePromotionError", "bfloat16", "canonicalize_dtype", "extended", "finfo",
           "float0", "iinfo", "issubdtype", "itemsize_bits", "prng_key", "result_type",
           "scalar_type_of"]

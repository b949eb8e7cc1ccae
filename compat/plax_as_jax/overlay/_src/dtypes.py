"""`jax._src.dtypes` on `plax.extend.dtypes`: `TypePromotionError` (equinox),
`ExtendedDType`, `extended`, `issubdtype`, `finfo`, `DType`, `supports_inf` (flax's
fp8 meta dtype)."""
from __future__ import annotations

import numpy as np

PLAX_MODULE = "plax.extend.dtypes"
DType = np.dtype


def supports_inf(dtype) -> bool:
    """Whether `dtype` has infinities (the fp8 `fn` types have none)."""
    with np.errstate(all="ignore"):
        return bool(np.isinf(np.array(np.inf).astype(np.dtype(dtype))))

"""`jnp.__array_namespace_info__()`: the array API standard's inspection namespace,
what generic array code asks of `plax.numpy` (its capabilities, devices and dtypes),
answered as JAX answers."""
from __future__ import annotations

import numpy as np

import plax
from plax.extend import config, dtypes
from plax_stdlib.numpy.type_utils import DTYPE_KINDS

# The dtypes the standard names (none of float16, bfloat16...); its 64-bit ones only
# where plax makes them (x64 on).
_STANDARD_DTYPES = ("bool", "int8", "int16", "int32", "uint8", "uint16", "uint32", "float32",
                    "complex64")
_STANDARD_X64_DTYPES = ("int64", "uint64", "float64", "complex128")


def __array_namespace_info__() -> ArrayNamespaceInfo:
    """The array API inspection namespace of `plax.numpy`."""
    return ArrayNamespaceInfo()


class ArrayNamespaceInfo:
    """The array API's inspection namespace: what `plax.numpy` supports.

    Examples:
        >>> info = jnp.__array_namespace_info__()
        >>> info.default_dtypes()["real floating"]
        dtype('float32')
        >>> sorted(info.dtypes(kind="real floating"))
        ['float32']
    """

    def capabilities(self) -> dict:
        """Boolean indexing and data-dependent shapes are unsupported (inside
        transformations a result's shape cannot depend on values); XLA caps the rank."""
        return {"boolean indexing": False, "data-dependent shapes": False,
                "max dimensions": 64}

    def default_device(self) -> None:
        """None: a new array is uncommitted, placed where plax chooses."""
        return None

    def devices(self) -> list:
        """None (uncommitted), then the devices."""
        return [None, *plax.devices()]

    def default_dtypes(self, *, device=None) -> dict:
        """The default dtypes by kind (the same on every device)."""
        del device
        return {"real floating": dtypes.default_float_dtype(),
                "complex floating": dtypes.default_complex_dtype(),
                "integral": dtypes.default_int_dtype(),
                "indexing": dtypes.default_int_dtype()}

    def dtypes(self, *, device=None, kind: str | tuple[str, ...] | None = None) -> dict:
        """`{name: dtype}` of the standard's dtypes of `kind` (one of `isdtype`'s kind
        names, or a tuple of them; default: numeric and bool), the same on every device.
        KeyError for an unknown kind."""
        del device
        kinds = (("bool", "numeric") if kind is None
                 else kind if isinstance(kind, tuple) else (kind,))
        for k in kinds:
            if k not in DTYPE_KINDS:
                raise KeyError(f"dtypes: unknown kind {k!r}; expected one of {sorted(DTYPE_KINDS)}")
        names = _STANDARD_DTYPES + (_STANDARD_X64_DTYPES if config.enable_x64.value else ())
        return {name: np.dtype(name) for name in names
                if any(DTYPE_KINDS[k](np.dtype(name)) for k in kinds)}

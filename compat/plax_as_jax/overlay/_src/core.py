"""`jax._src.core`: `ShapedArray` and `physical_aval` (flax's fp8 dtype rules)."""
from plax.extend.core import ShapedArray, physical_aval  # noqa: F401

PLAX_MODULE = None

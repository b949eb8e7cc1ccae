"""`plax.image`: JAX's `jax.image`, resampling images (any number of dimensions)."""
from plax_stdlib.image.resampling import ResizeMethod, resize, scale_and_translate

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]

"""`plax.ops`: JAX's `jax.ops`, reductions over segments of an array."""
from plax_stdlib.ops.segments import segment_max, segment_min, segment_prod, segment_sum

__all__ = ["segment_max", "segment_min", "segment_prod", "segment_sum"]

"""`jax.experimental.array_serialization`."""
PLAX_MODULE = None

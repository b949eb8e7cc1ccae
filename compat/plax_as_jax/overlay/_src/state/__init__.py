"""`jax._src.state`."""
PLAX_MODULE = None

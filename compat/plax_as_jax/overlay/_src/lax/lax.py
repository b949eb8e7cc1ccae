"""`jax._src.lax.lax`, JAX's module of the lax functions: `plax.lax`."""
PLAX_MODULE = "plax.lax"

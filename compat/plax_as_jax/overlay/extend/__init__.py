"""`jax.extend`: `plax.extend`, plus JAX's spellings of what it holds."""

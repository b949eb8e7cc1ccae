"""`jax.interpreters`: JAX's legacy extension modules, mapped onto `plax.extend`."""
PLAX_MODULE = None

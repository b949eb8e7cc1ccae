"""`jax._src.lib.xla_client`: jaxlib's client API (JAX's autodidax reads it)."""
PLAX_MODULE = "jaxlib.xla_client"

"""`jax._src.lib`: of JAX's handles on jaxlib, `xla_client` alone (JAX's autodidax
compiles and runs its programs with that client API)."""
PLAX_MODULE = None

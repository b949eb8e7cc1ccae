"""`jax._src.lax`: the package of JAX's lax implementation; `jax._src.lax.lax` (JAX's
"How primitives work" imports it) is `plax.lax`."""
PLAX_MODULE = None

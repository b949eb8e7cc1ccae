"""`jax._src.api`, where JAX defines `grad`, `jit`, `vmap`...: `plax` itself (JAX's
"How primitives work" calls `api.grad` and `api.jit`)."""
PLAX_MODULE = "plax"

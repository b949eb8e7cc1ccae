"""`jax._src`: JAX's private modules. Only the names listed in the modules here
exist, each because a library that runs on the alias reads it (the library is
named beside each)."""

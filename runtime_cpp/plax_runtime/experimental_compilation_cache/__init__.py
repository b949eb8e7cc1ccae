"""`plax.experimental.compilation_cache`: JAX's home of the persistent compilation
cache's controls, in its submodule `compilation_cache`."""

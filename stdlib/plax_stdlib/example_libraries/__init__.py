"""`plax.example_libraries`: JAX's example libraries, `optimizers` and `stax`."""

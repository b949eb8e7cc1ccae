"""`jax.extend.mlir.ir`: jaxlib's MLIR core (contexts, types, attributes, values)."""
PLAX_MODULE = "jaxlib.mlir.ir"

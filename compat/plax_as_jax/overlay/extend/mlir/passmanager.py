"""`jax.extend.mlir.passmanager`: jaxlib's MLIR pass manager."""
PLAX_MODULE = "jaxlib.mlir.passmanager"

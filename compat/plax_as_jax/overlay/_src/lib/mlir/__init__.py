"""`jax._src.lib.mlir`: jaxlib's MLIR bindings (`ir`, `passmanager`, `dialects`)."""
PLAX_MODULE = "jaxlib.mlir"

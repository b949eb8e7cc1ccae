"""`jax._src.lib.mlir.dialects.hlo`: jaxlib's StableHLO dialect, under JAX's name."""
PLAX_MODULE = "jaxlib.mlir.dialects.stablehlo"

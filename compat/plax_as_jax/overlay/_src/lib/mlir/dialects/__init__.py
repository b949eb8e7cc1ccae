"""`jax._src.lib.mlir.dialects`: jaxlib's MLIR dialects, with StableHLO also under
JAX's name `hlo` (lowering rules written for JAX emit `hlo.add`...)."""
PLAX_MODULE = "jaxlib.mlir.dialects"

"""`jax.extend.mlir.dialects`: jaxlib's MLIR dialects; `jax.extend.mlir.dialects.func`,
`.stablehlo`... are their modules (a submodule of an alias is its counterpart's)."""
PLAX_MODULE = "jaxlib.mlir.dialects"

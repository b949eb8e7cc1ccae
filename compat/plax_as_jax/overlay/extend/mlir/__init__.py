"""`jax.extend.mlir`: `plax.extend.mlir`, a package here so that JAX's submodules
`jax.extend.mlir.ir`, `.passmanager` and `.dialects.<name>` (jaxlib's MLIR modules, as
JAX re-exports them) can be imported from it (JAX's autodidax builds modules so)."""

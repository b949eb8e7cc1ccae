"""plax-stdlib: the standard primitives (`plax.lax`) and the NumPy API (`plax.numpy`),
defined through `plax.extend` exactly as a third-party package defines its own."""

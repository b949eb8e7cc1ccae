"""The implementation of `plax.numpy`, one module per family of functions.

Reading order: `util` (how every function turns its inputs into arrays of one
dtype and shape), then `creation`, `ufuncs`, `reductions`, `shape_ops`,
`indexing`, `sorting`, `linalg_products`.
"""

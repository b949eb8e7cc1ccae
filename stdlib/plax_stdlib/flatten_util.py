"""`plax.flatten_util`: a pytree of arrays as one flat vector, and back.

`ravel_pytree(tree)` concatenates the raveled leaves at their promoted dtype (what
optimizers and solvers written for a single vector want); its `unravel` splits a
vector of that length and dtype back into the tree, each leaf reshaped and cast to
its own dtype. Both are made of jnp operations, so they trace, differentiate and
batch like any other code.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np

from plax.extend import dtypes, tree_util
from plax_stdlib import lax, numpy as jnp

__all__ = ["ravel_pytree"]


def ravel_pytree(pytree: Any) -> tuple[Any, Callable[[Any], Any]]:
    """`(flat, unravel)`: the leaves of `pytree` raveled and concatenated into a 1-D
    array, and the function taking such an array back to a pytree like `pytree`."""
    leaves, treedef = tree_util.tree_flatten(pytree)
    arrays = [jnp.asarray(leaf) for leaf in leaves]
    dtype = dtypes.result_type(*arrays) if arrays else dtypes.canonicalize_dtype(np.float32)
    flat = (jnp.concatenate([jnp.ravel(a).astype(dtype) for a in arrays]) if arrays
            else jnp.zeros((0,), dtype))
    shapes = [a.shape for a in arrays]
    leaf_dtypes = [a.dtype for a in arrays]
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
    total = sum(sizes)

    def unravel(vector):
        shape, got = jnp.shape(vector), dtypes.dtype(vector)
        if shape != (total,):
            raise ValueError(f"unravel function given array of shape {shape}, but expected "
                             f"shape ({total},)")
        if got != dtype:
            raise TypeError(f"unravel function given array of dtype {got}, but expected "
                            f"dtype {dtype}")
        pieces = jnp.split(vector, np.cumsum(sizes)[:-1]) if arrays else []
        with warnings.catch_warnings():  # real leaves of a complex vector: by design
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            leaves = [lax.convert_element_type(piece.reshape(s), d)
                      for piece, s, d in zip(pieces, shapes, leaf_dtypes)]
        return tree_util.tree_unflatten(treedef, leaves)

    return flat, unravel

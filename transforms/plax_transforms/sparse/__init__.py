"""`plax.experimental.sparse`: JAX's sparse arrays (the unbatched BCOO format).

`BCOO.fromdense(m)` / `.todense()`, products with dense arrays (`bcoo @ x`,
`x @ bcoo`, `bcoo_dot_general`), sums, transposes and reductions, `sparsify(f)` to
run dense code on BCOO arguments, and `grad`/`value_and_grad` with respect to the
stored elements. All of it works under jit and vmap, and plain `plax.grad` flows
through it to dense operands and to the data of BCOOs built inside.
"""
from plax_transforms.sparse.autodiff import grad, value_and_grad
from plax_transforms.sparse.bcoo import (BCOO, bcoo_dot_general, bcoo_fromdense,
                                         bcoo_reduce_sum, bcoo_todense, bcoo_transpose, todense)
from plax_transforms.sparse.sparsify import sparsify

__all__ = ["BCOO", "bcoo_dot_general", "bcoo_fromdense", "bcoo_reduce_sum", "bcoo_todense",
           "bcoo_transpose", "grad", "sparsify", "todense", "value_and_grad"]

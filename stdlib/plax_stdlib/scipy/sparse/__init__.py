"""`plax.scipy.sparse`: as in `jax.scipy.sparse`, only the iterative solvers of
`plax.scipy.sparse.linalg`, which take A as a dense matrix or a linear function."""
from plax_stdlib.scipy.sparse import linalg as linalg

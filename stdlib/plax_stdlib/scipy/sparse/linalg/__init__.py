"""`plax.scipy.sparse.linalg`: Krylov solvers of A x = b (`cg` for Hermitian positive
definite A, `bicgstab` and `gmres` for any), for A a matrix or a linear function on
pytrees, differentiated implicitly through `lax.custom_linear_solve`."""
from plax_stdlib.scipy.sparse.linalg.bicgstab import bicgstab as bicgstab
from plax_stdlib.scipy.sparse.linalg.cg import cg as cg
from plax_stdlib.scipy.sparse.linalg.gmres import gmres as gmres

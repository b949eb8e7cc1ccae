"""`plax.lax.linalg`: matrix decompositions and solves as primitives, with
`jax.lax.linalg`'s names and signatures."""
from plax_stdlib.lax.linalg.cholesky import cholesky as cholesky, cholesky_p as cholesky_p
from plax_stdlib.lax.linalg.triangular_solve import (
    triangular_solve as triangular_solve,
    triangular_solve_p as triangular_solve_p,
)
from plax_stdlib.lax.linalg.lu import (
    lu as lu,
    lu_p as lu_p,
    lu_pivots_to_permutation as lu_pivots_to_permutation,
    lu_pivots_to_permutation_p as lu_pivots_to_permutation_p,
)
from plax_stdlib.lax.linalg.qr import (
    geqp3 as geqp3,
    geqp3_p as geqp3_p,
    geqrf as geqrf,
    geqrf_p as geqrf_p,
    householder_product as householder_product,
    householder_product_p as householder_product_p,
    qr as qr,
    qr_p as qr_p,
)
from plax_stdlib.lax.linalg.eigh import (
    EighImplementation as EighImplementation,
    eigh as eigh,
    eigh_p as eigh_p,
)
from plax_stdlib.lax.linalg.svd import SvdAlgorithm as SvdAlgorithm, svd as svd, svd_p as svd_p
from plax_stdlib.lax.linalg.eig import (
    EigImplementation as EigImplementation,
    eig as eig,
    eig_p as eig_p,
)
from plax_stdlib.lax.linalg.schur import (
    hessenberg as hessenberg,
    hessenberg_p as hessenberg_p,
    schur as schur,
    schur_p as schur_p,
)
from plax_stdlib.lax.linalg.tridiagonal import (
    tridiagonal as tridiagonal,
    tridiagonal_p as tridiagonal_p,
    tridiagonal_solve as tridiagonal_solve,
    tridiagonal_solve_p as tridiagonal_solve_p,
)


def __getattr__(name: str):
    """`qdwh` on first use: it is built from `plax.numpy`, which imports this module."""
    if name == "qdwh":
        from plax_stdlib.lax.linalg.halley import qdwh
        return qdwh
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""`plax.numpy.linalg`: NumPy's linear algebra with `jax.numpy.linalg`'s semantics,
on the `plax.lax.linalg` primitives. Functions act on the last two axes and treat
any leading axes as a batch."""
from plax_stdlib.numpy.linalg.decompositions import (
    EighResult as EighResult,
    EigResult as EigResult,
    QRResult as QRResult,
    SVDResult as SVDResult,
    cholesky as cholesky,
    eig as eig,
    eigh as eigh,
    eigvals as eigvals,
    eigvalsh as eigvalsh,
    qr as qr,
    svd as svd,
    svdvals as svdvals,
)
from plax_stdlib.numpy.linalg.determinants import (
    SlogdetResult as SlogdetResult,
    det as det,
    slogdet as slogdet,
)
from plax_stdlib.numpy.linalg.norms import (
    cond as cond,
    matrix_norm as matrix_norm,
    matrix_rank as matrix_rank,
    norm as norm,
    vector_norm as vector_norm,
)
from plax_stdlib.numpy.linalg.products import (
    cross as cross,
    diagonal as diagonal,
    matmul as matmul,
    matrix_transpose as matrix_transpose,
    multi_dot as multi_dot,
    outer as outer,
    tensordot as tensordot,
    trace as trace,
    vecdot as vecdot,
)
from plax_stdlib.numpy.linalg.solvers import (
    inv as inv,
    lstsq as lstsq,
    matrix_power as matrix_power,
    pinv as pinv,
    solve as solve,
    tensorinv as tensorinv,
    tensorsolve as tensorsolve,
)


# Errors raised below a public function are shown from the caller (plax.errors).
from plax.extend.traceback_util import api_boundaries as _api_boundaries  # noqa: E402

_api_boundaries(globals())

"""Building matrices and vector products beyond `linalg_products`: diag, diagflat,
tri, vander, kron, cross, matvec, vecmat, einsum_path (`vecdot` is
`plax.numpy.linalg.vecdot`).

The batched products (`matvec`, `vecmat`) broadcast their leading
dimensions, as NumPy's gufuncs do, and become one `dot_general` with those
dimensions as batch dimensions.
"""
from __future__ import annotations

import operator

import numpy as np
import opt_einsum

from plax_stdlib import jax_jits, lax
from plax_stdlib.numpy import shape_ops, ufuncs, util


def diag(v, k: int = 0):
    """The `k`-th diagonal of a 2-D `v`, or a 2-D array with a 1-D `v` on its `k`-th
    diagonal (and zeros elsewhere).

    Follows `numpy.diag`; the extracted diagonal is a new array, not a view.

    Args:
        v: a 1-D or 2-D array.
        k: the diagonal: 0 the main one, positive above it, negative below.

    Returns:
        A 1-D array (from a 2-D `v`) or a 2-D array (from a 1-D `v`).

    Raises:
        ValueError: `v` is neither 1-D nor 2-D.

    Examples:
        >>> jnp.diag(jnp.array([[1, 2], [3, 4]]))
        Array([1, 4], dtype=int32)
        >>> jnp.diag(jnp.array([1, 2]), k=1)
        Array([[0, 1, 0],
               [0, 0, 2],
               [0, 0, 0]], dtype=int32)
    """
    v = util.ensure_arraylike("diag", v)
    return _diag(v, k=operator.index(k))


@util.compiled(static_argnames=("k",))
def _diag(v, k: int):
    """`diag` as one jitted call (JAX's `_diag`). From a 1-D `v`: `v` padded to the
    side `n` of the matrix, shifted by `k`, then kept where an `eye` of the k-th
    diagonal is true, as a column broadcast along the rows."""
    from plax_stdlib.numpy.creation import eye
    shape = util.shape_of(v)
    if len(shape) == 2:
        return shape_ops.diagonal(v, offset=k)
    if len(shape) != 1:
        raise ValueError(f"diag input must be 1d or 2d, got shape {shape}")
    zero = util.convert(0, util.dtype_of(v), util.is_weak(v))  # a scalar of v's type
    n = shape[0] + abs(k)
    v = lax.pad(v, zero, ((max(0, -k), max(0, k), 0),))
    return ufuncs.where(eye(n, k=k, dtype=bool), v[:, None], zero)


def diagflat(v, k: int = 0):
    """A 2-D array with the flattened `v` on its `k`-th diagonal and zeros elsewhere.

    Follows `numpy.diagflat`.

    Args:
        v: an array (flattened).
        k: the diagonal.

    Returns:
        A square 2-D array of side `v.size + |k|`.

    Examples:
        >>> jnp.diagflat(jnp.array([[1, 2]]))
        Array([[1, 0],
               [0, 2]], dtype=int32)
    """
    v = shape_ops.ravel(util.ensure_arraylike("diagflat", v))
    k = operator.index(k)
    n = util.shape_of(v)[0]
    size = n + abs(k)
    # Entry (r, c) of the k-th diagonal is v[r] when k >= 0 and v[c] when k < 0.
    padded = lax.pad(v, np.zeros((), util.dtype_of(v))[()], ((0, abs(k), 0),))
    values = lax.broadcast_in_dim(padded, (size, size), (0 if k >= 0 else 1,))
    on_diagonal = lax.eq(lax.add(lax.broadcasted_iota(np.int32, (size, size), 0), k),
                         lax.broadcasted_iota(np.int32, (size, size), 1))
    return util.as_array(util.select_n(on_diagonal, util.full_like(values, 0), values))


def tri(N: int, M: int | None = None, k: int = 0, dtype=None):
    """An `N` × `M` array with ones at and below the `k`-th diagonal and zeros above.

    Follows `numpy.tri`, but the default dtype is the default float type (float32
    unless `jax_enable_x64`), as in JAX.

    Args:
        N: the number of rows.
        M: the number of columns (default `N`).
        k: the diagonal (0 the main one, positive above it).
        dtype: the result's dtype.

    Returns:
        An `(N, M)` array.

    Examples:
        >>> jnp.tri(2, 3, dtype=jnp.int32)
        Array([[1, 0, 0],
               [1, 1, 0]], dtype=int32)
    """
    dtype = util.check_user_dtype(dtype, "tri") or np.dtype(np.float32)
    N = util.canonicalize_shape((N,), "tri")[0]
    M = N if M is None else util.canonicalize_shape((M,), "tri")[0]
    k = operator.index(k)
    # rows + k >= cols, in JAX's order of operations
    lower = lax.add(lax.broadcasted_iota(np.int32, (N, M), 0), k)
    lower = lax.ge(lower, lax.broadcasted_iota(np.int32, (N, M), 1))
    return util.as_array(lax.convert_element_type(lower, dtype))


def vander(x, N: int | None = None, increasing: bool = False):
    """The Vandermonde matrix of the 1-D `x`: column `j` is `x ** (N - 1 - j)` (or
    `x ** j` with `increasing`).

    Follows `numpy.vander`.

    Args:
        x: a 1-D array.
        N: the number of columns (default `len(x)`).
        increasing: powers increase from left to right.

    Returns:
        A `(len(x), N)` array.

    Raises:
        ValueError: `x` is not 1-D, or a negative `N`.

    Examples:
        >>> jnp.vander(jnp.array([1, 2, 3]), 3)
        Array([[1, 1, 1],
               [4, 2, 1],
               [9, 3, 1]], dtype=int32)
    """
    x = util.ensure_arraylike("vander", x)
    if len(util.shape_of(x)) != 1:
        raise ValueError(f"vander: x must be a one-dimensional array, got shape "
                         f"{util.shape_of(x)}")
    N = util.shape_of(x)[0] if N is None else operator.index(util.concrete_or_error(
        N, "vander: N must be static"))
    if N < 0:
        raise ValueError(f"vander: N must be nonnegative, got {N}")
    return _vander(x, N=N, increasing=bool(increasing))


def _vander(x, N: int, increasing: bool):
    """The powers as an iota of x's dtype (int32 for bool), reversed by subtracting it
    from N - 1, as JAX's."""
    dtype = util.dtype_of(x) if util.dtype_category(util.dtype_of(x)) != "b" else np.int32
    if util.dtype_category(dtype) == "c":  # (lax.iota makes real numbers only)
        powers = util.convert(lax.iota(np.finfo(dtype).dtype, N), dtype)
    else:
        powers = lax.iota(dtype, N)
    if not increasing:
        powers = lax.sub(np.asarray(N - 1, dtype)[()], powers)
    return ufuncs.power(lax.expand_dims(x, (1,)), lax.expand_dims(powers, (0,)))


def kron(a, b):
    """The Kronecker product of `a` and `b`: a block array whose blocks are `a[i, j] * b`,
    for arrays of any rank (the lower-rank one gains leading size-one axes).

    Follows `numpy.kron`; two bool arrays are a TypeError (the product is
    `lax.mul`'s), as in JAX.

    Args:
        a: an array.
        b: an array.

    Returns:
        An array whose shape is the elementwise product of the two shapes.

    Examples:
        >>> jnp.kron(jnp.eye(2, dtype=jnp.int32), jnp.array([[1, 2]]))
        Array([[1, 2, 0, 0],
               [0, 0, 1, 2]], dtype=int32)
    """
    a, b = util.promote_dtypes(*util.ensure_arraylike("kron", a, b))
    rank = max(len(util.shape_of(a)), len(util.shape_of(b)))
    a = lax.reshape(a, (1,) * (rank - len(util.shape_of(a))) + util.shape_of(a))
    b = lax.reshape(b, (1,) * (rank - len(util.shape_of(b))) + util.shape_of(b))
    sa, sb = util.shape_of(a), util.shape_of(b)
    a = lax.reshape(a, tuple(d for n in sa for d in (n, 1)))
    b = lax.reshape(b, tuple(d for n in sb for d in (1, n)))
    return util.as_array(lax.reshape(lax.mul(a, b),
                                     tuple(x * y for x, y in zip(sa, sb))))


def cross(a, b, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: int | None = None):
    """The cross product of (arrays of) 3-vectors, or of 2-vectors (whose cross product
    is the scalar z component), taken along the given axes.

    Follows `numpy.cross`; the vectors broadcast over the other axes.

    Args:
        a: an array whose `axisa` has size 2 or 3.
        b: an array whose `axisb` has size 2 or 3.
        axisa: the vector axis of `a`.
        axisb: the vector axis of `b`.
        axisc: the vector axis of the result.
        axis: if given, overrides all three.

    Returns:
        The cross products.

    Raises:
        ValueError: vector axes whose sizes are not 2 or 3.

    Examples:
        >>> jnp.cross(jnp.array([1, 0, 0]), jnp.array([0, 1, 0]))
        Array([0, 0, 1], dtype=int32)
    """
    a, b = util.promote_args("cross", a, b)
    if axis is not None:
        axisa = axisb = axisc = axis
    a = shape_ops.moveaxis(a, axisa, -1)
    b = shape_ops.moveaxis(b, axisb, -1)
    if util.shape_of(a)[-1] not in (2, 3) or util.shape_of(b)[-1] not in (2, 3):
        raise ValueError(f"cross: incompatible dimensions for cross product (dimension must "
                         f"be 2 or 3), got shapes {util.shape_of(a)} and {util.shape_of(b)}")

    def component(x, i):
        if i < util.shape_of(x)[-1]:
            return lax.index_in_dim(x, i, axis=len(util.shape_of(x)) - 1, keepdims=False)
        return util.full_like(lax.index_in_dim(x, 0, axis=len(util.shape_of(x)) - 1,
                                               keepdims=False), 0)

    a0, a1, a2 = (component(a, i) for i in range(3))
    b0, b1, b2 = (component(b, i) for i in range(3))
    if util.shape_of(a)[-1] == 2 and util.shape_of(b)[-1] == 2:
        return ufuncs.subtract(ufuncs.multiply(a0, b1), ufuncs.multiply(a1, b0))
    c = shape_ops.stack([ufuncs.subtract(ufuncs.multiply(a1, b2), ufuncs.multiply(a2, b1)),
                         ufuncs.subtract(ufuncs.multiply(a2, b0), ufuncs.multiply(a0, b2)),
                         ufuncs.subtract(ufuncs.multiply(a0, b1), ufuncs.multiply(a1, b0))])
    return shape_ops.moveaxis(c, 0, axisc)


def _batched_product(name: str, x1, x2, core1: int, core2: int, contract: tuple[int, int],
                     precision=None, preferred_element_type=None):
    """`dot_general` of x1 and x2 whose last `core1`/`core2` dimensions are the core
    (contracted over the given core axes) and whose leading dimensions broadcast."""
    x1, x2 = util.promote_dtypes(*util.ensure_arraylike(name, x1, x2))
    s1, s2 = util.shape_of(x1), util.shape_of(x2)
    if len(s1) < core1 or len(s2) < core2:
        raise ValueError(f"{name}: operands of shapes {s1} and {s2} have too few dimensions")
    c1, c2 = len(s1) - core1 + contract[0], len(s2) - core2 + contract[1]
    if s1[c1] != s2[c2]:
        raise ValueError(f"{name}: the contracted dimensions of shapes {s1} and {s2} differ "
                         f"({s1[c1]} and {s2[c2]})")
    batch = util.broadcast_shapes(s1[:len(s1) - core1], s2[:len(s2) - core2])
    x1 = util.broadcast_to_shape(x1, batch + s1[len(s1) - core1:])
    x2 = util.broadcast_to_shape(x2, batch + s2[len(s2) - core2:])
    b = tuple(range(len(batch)))
    preferred = util.check_user_dtype(preferred_element_type, name)
    return util.as_array(lax.dot_general(
        x1, x2, (((len(batch) + contract[0],), (len(batch) + contract[1],)), (b, b)),
        precision=precision, preferred_element_type=preferred))


def matvec(x1, x2, /):
    """Matrix-vector products `x1[..., :, :] @ x2[..., :]`, the batch dimensions
    broadcast together.

    Follows `numpy.matvec` (NumPy 2.2).

    Args:
        x1: an array of matrices, `(..., M, N)`.
        x2: an array of vectors, `(..., N)`.

    Returns:
        An array of vectors, `(..., M)`.

    Raises:
        ValueError: the contracted sizes differ.

    Examples:
        >>> jnp.matvec(jnp.array([[1, 2], [3, 4]]), jnp.array([1, 1]))
        Array([3, 7], dtype=int32)
    """
    return _batched_product("matvec", x1, x2, 2, 1, (1, 0))


def vecmat(x1, x2, /):
    """Vector-matrix products `conj(x1[..., :]) @ x2[..., :, :]`, the batch dimensions
    broadcast together.

    Follows `numpy.vecmat` (NumPy 2.2).

    Args:
        x1: an array of vectors, `(..., M)` (conjugated if complex).
        x2: an array of matrices, `(..., M, N)`.

    Returns:
        An array of vectors, `(..., N)`.

    Raises:
        ValueError: the contracted sizes differ.

    Examples:
        >>> jnp.vecmat(jnp.array([1, 1]), jnp.array([[1, 2], [3, 4]]))
        Array([4, 6], dtype=int32)
    """
    x1 = util.ensure_arraylike("vecmat", x1)
    if util.dtype_category(util.dtype_of(x1)) == "c":
        x1 = lax.conj(x1)
    return _batched_product("vecmat", x1, x2, 1, 2, (0, 0))


def einsum_path(subscripts, /, *operands, optimize="auto"):
    """The contraction order `einsum` would use for these operands, as
    `opt_einsum.contract_path` gives it: the path and a printable report.

    Follows `numpy.einsum_path`. `optimize` is "auto" (the default), "greedy",
    "optimal", or False (left to right).

    Args:
        subscripts: the index string.
        *operands: the arrays (or anything with `.shape`).
        optimize: the strategy.

    Returns:
        A pair `(path, report)`; pass the path to `einsum(..., optimize=path)`.

    Examples:
        >>> a, b, c = jnp.ones((2, 3)), jnp.ones((3, 4)), jnp.ones((4, 5))
        >>> path, report = jnp.einsum_path("ij,jk,kl->il", a, b, c)
        >>> path
        [(0, 1), (0, 1)]
    """
    if optimize is True:
        optimize = "optimal"
    elif optimize is False:
        count = len(operands) if isinstance(subscripts, str) else (len(operands) + 1) // 2
        optimize = [(0, 1)] * (count - 1) if count > 1 else [(0,)]
    shapes = [util.shape_of(util.ensure_arraylike("einsum_path", x))
              if isinstance(subscripts, str) or i % 2 == 0 else x
              for i, x in enumerate(operands)]
    if not isinstance(subscripts, str):  # einsum(a, [0, 1], b, [1, 2]) form
        shapes = [util.shape_of(util.ensure_arraylike("einsum_path", subscripts)), *shapes]
        return opt_einsum.contract_path(*shapes, shapes=True, optimize=optimize)
    return opt_einsum.contract_path(subscripts, *shapes, shapes=True, optimize=optimize)


jax_jits.apply(globals())  # JAX's jitted functions become jit functions

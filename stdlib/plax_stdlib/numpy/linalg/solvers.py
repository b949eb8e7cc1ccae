"""Solving and inverting with `plax.numpy.linalg`: solve, inv, lstsq, pinv,
matrix_power, tensorsolve, tensorinv (determinants are in `determinants`).

`solve` and `pinv` carry their own derivative rules (`plax.custom_jvp`): a solve's
tangent reuses the LU factors of the primal solve, (Ẋ = A⁻¹(Ḃ - Ȧ X)), and the
pseudo-inverse's is Golub and Pereyra's. An exactly singular matrix gives what its
LU factors give (infinities and NaNs from solves), as in JAX.
"""
from __future__ import annotations

import functools
import math
import operator

import numpy as np

import plax
from plax.extend import dtypes
from plax.extend.core import get_aval, max_dim
from plax_stdlib import jax_jits, lax
from plax_stdlib.lax.linalg.matrices import eye_like, matmul, mH
from plax_stdlib.numpy import util
from plax_stdlib.numpy.linalg.lu_solves import solve_square
from plax_stdlib.numpy.linalg.operands import check_matrices, inexact, matrices


# --- solve -----------------------------------------------------------------------------------

def solve(a, b):
    """The solution `x` of `a @ x = b` for each square matrix of `a`.

    Follows `numpy.linalg.solve` (NumPy 2's rule: `b` is one vector `(n,)` or a batch
    of matrices `(..., n, k)` whose batch axes broadcast with `a`'s). A singular `a`
    gives infinities or NaNs rather than LinAlgError.

    Args:
        a: `(..., n, n)` matrices.
        b: `(n,)` or `(..., n, k)`.

    Returns:
        `x`, shaped like `b` (broadcast).

    Raises:
        ValueError: shapes that do not fit.

    Examples:
        >>> a = jnp.array([[4.0, 2.0], [2.0, 3.0]])
        >>> jnp.linalg.solve(a, jnp.array([2.0, 1.0]))
        Array([0.5, 0. ], dtype=float32)
    """
    from plax_stdlib.numpy.functional import vectorize
    a, b = inexact("jnp.linalg.solve", a, b)
    a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
    if len(a_shape) < 2:
        raise ValueError(f"left hand array must be at least two dimensional; got a.shape="
                         f"{a_shape}")
    if (len(b_shape) > 1 and len(a_shape) == len(b_shape) + 1 and a_shape[-1] == b_shape[-1]
            and a_shape[-1] != b_shape[-2]):
        raise ValueError(f"Invalid shapes for solve: {a_shape}, {b_shape}. Prior to JAX "
                         "v0.5.0, this would have been treated as a batched 1-dimensional "
                         "solve. To recover this behavior, use solve(a, b[..., None])"
                         ".squeeze(-1).")
    signature = "(m,m),(m)->(m)" if len(b_shape) == 1 else "(m,m),(m,n)->(m,n)"
    return vectorize(solve_square, signature=signature)(a, b)


def inv(a):
    """The inverse of each square matrix: a solve against the identity.

    Follows `numpy.linalg.inv`, batched over leading axes. A singular matrix gives
    infinities or NaNs rather than LinAlgError. To solve `a x = b`, `solve` is faster
    and more accurate than `inv(a) @ b`.

    Args:
        a: `(..., n, n)` matrices.

    Returns:
        `(..., n, n)` inverses.

    Raises:
        ValueError: matrices that are not square.

    Examples:
        >>> a = jnp.array([[4.0, 2.0], [2.0, 3.0]])
        >>> jnp.linalg.inv(a)
        Array([[ 0.375, -0.25 ],
               [-0.25 ,  0.5  ]], dtype=float32)
    """
    from plax_stdlib.numpy.creation import eye
    util.check_arraylike("jnp.linalg.inv", a)
    a = util.operand(a)
    shape = get_aval(a).shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"Argument to inv must have shape [..., n, n], got {shape}.")
    return solve(a, lax.broadcast(eye(shape[-1], dtype=get_aval(a).dtype), shape[:-2]))


# --- least squares and the pseudo-inverse ---------------------------------------------------

def _default_rtol(a):
    """10·max(m, n)·eps (a value computed from the sizes in a shape-polymorphic export)."""
    m, n = get_aval(a).shape[-2:]
    return 10.0 * lax.dimension_as_value(max_dim(m, n)) * float(dtypes.finfo(get_aval(a).dtype).eps)


def _pinv_value(a, rtol, hermitian):
    """V diag(1/s) Uᴴ, dropping singular values at most `rtol` times the largest."""
    from plax_stdlib.numpy.linalg.decompositions import svd
    u, s, vh = svd(a, full_matrices=False, hermitian=hermitian)
    rtol = _default_rtol(a) if rtol is None else rtol
    cutoff = lax.mul(lax.convert_element_type(rtol, get_aval(s).dtype),
                     lax.slice_in_dim(s, 0, 1, axis=get_aval(s).ndim - 1))
    keep = lax.gt(s, lax.broadcast_in_dim(cutoff, get_aval(s).shape,
                                          tuple(range(get_aval(s).ndim))))
    s_inv = lax.select(keep, lax.div(lax.full_like(s, 1), lax.select(keep, s, lax.full_like(s, 1))),
                       lax.full_like(s, 0))
    nb = get_aval(u).ndim - 2
    scale = lax.broadcast_in_dim(lax.convert_element_type(s_inv, get_aval(u).dtype),
                                 get_aval(mH(u)).shape, (*range(nb), nb))
    return matmul(mH(vh), lax.mul(scale, mH(u)))


def _pinv_jvp(rtol, hermitian, primals, tangents):
    """Golub and Pereyra: Ȧ⁺ = -A⁺ȦA⁺ + A⁺A⁺ᴴȦᴴ(I - AA⁺) + (I - A⁺A)ȦᴴA⁺ᴴA⁺."""
    (a,), (a_dot,) = primals, tangents
    p = _pinv_value(a, rtol, hermitian)
    if hermitian:
        from plax_stdlib.lax.linalg.matrices import symmetrize
        a, a_dot = symmetrize(a), symmetrize(a_dot)
    a_dot_h = mH(a_dot)
    first = lax.neg(matmul(matmul(p, a_dot), p))
    left = matmul(matmul(p, mH(p)), a_dot_h)
    second = lax.sub(left, matmul(matmul(left, a), p))
    right = matmul(matmul(a_dot_h, mH(p)), p)
    third = lax.sub(right, matmul(matmul(p, a), right))
    return p, lax.add(first, lax.add(second, third))


@functools.cache
def _pinv_rule():
    fn = plax.custom_jvp(_pinv_value, nondiff_argnums=(1, 2))
    fn.defjvp(_pinv_jvp)
    return fn


def pinv(a, rtol=None, hermitian: bool = False, *, rcond=None):
    """The Moore-Penrose pseudo-inverse of each matrix, through its SVD: singular values
    at most `rtol` times the largest are treated as zero.

    Follows `numpy.linalg.pinv` (NumPy 2's `rtol`; `rcond` is its older name). The
    default `rtol` is `10 * max(m, n) * eps`.

    Args:
        a: `(..., m, n)` matrices.
        rtol: the relative cutoff.
        hermitian: `a` is Hermitian (uses `eigh`).
        rcond: the older name of `rtol`.

    Returns:
        `(..., n, m)` pseudo-inverses.

    Examples:
        >>> jnp.linalg.pinv(jnp.array([[2.0, 0.0], [0.0, 0.0]]))
        Array([[0.5, 0. ],
               [0. , 0. ]], dtype=float32)
    """
    if rcond is not None:
        if rtol is not None:
            raise ValueError("jnp.linalg.pinv: only one of rtol and rcond may be given")
        rtol = rcond
    a = matrices("jnp.linalg.pinv", a, square=hermitian)
    m, n = get_aval(a).shape[-2:]
    if m == 0 or n == 0:
        return lax.full((*get_aval(a).shape[:-2], n, m), 0, get_aval(a).dtype)
    if rtol is not None and not isinstance(rtol, (int, float)):
        rtol = float(util.concrete_or_error(rtol, "jnp.linalg.pinv: rtol"))
    return _pinv_rule()(a, rtol, bool(hermitian))


def lstsq(a, b, rcond=None, *, numpy_resid: bool = False):
    """The least-squares solution `x` minimizing `||a @ x - b||`, through the SVD of `a`.

    Follows `numpy.linalg.lstsq`: also returns the residuals (the squared norm of
    `b - a @ x` per column), the rank and the singular values of `a`. Singular values
    below `rcond` (default `eps * max(m, n)`) times the largest are dropped. The
    residuals are always computed (as JAX); `numpy_resid=True` gives NumPy's empty
    array for rank-deficient or wide problems, which needs concrete values.

    Args:
        a: an `(m, n)` matrix.
        b: `(m,)` or `(m, k)`.
        rcond: the relative cutoff for small singular values.
        numpy_resid: return NumPy's residuals (empty when rank-deficient or wide).

    Returns:
        `(x, residuals, rank, s)`.

    Examples:
        >>> a = jnp.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
        >>> x, residuals, rank, s = jnp.linalg.lstsq(a, jnp.array([1.0, 2.0, 3.0]))
        >>> jnp.round(x, 4), rank
        (Array([1., 1.], dtype=float32), Array(2, dtype=int32))
    """
    from plax_stdlib.numpy.linalg.decompositions import svd
    a, b = inexact("jnp.linalg.lstsq", a, b)
    a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
    if len(a_shape) != 2:
        raise ValueError(f"jnp.linalg.lstsq: a must be two-dimensional, got shape {a_shape}")
    if len(b_shape) not in (1, 2) or b_shape[0] != a_shape[0]:
        raise ValueError(f"jnp.linalg.lstsq: b must have shape [{a_shape[0]}] or "
                         f"[{a_shape[0]}, k] for a of shape {a_shape}; got {b_shape}")
    vector = len(b_shape) == 1
    if vector:
        b = lax.expand_dims(b, (1,))
    m, n = a_shape
    dtype = get_aval(a).dtype
    real_dt = dtypes.finfo(dtype).dtype
    if m == 0 or n == 0:
        x = lax.full((n, get_aval(b).shape[1]), 0, dtype)
        s, rank = lax.full((0,), 0, real_dt), lax.full((), 0, np.int32)
    else:
        u, s, vh = svd(a, full_matrices=False)
        eps = float(dtypes.finfo(dtype).eps)
        cutoff = eps * lax.dimension_as_value(max_dim(m, n)) if rcond is None else rcond
        if not isinstance(cutoff, (int, float)):
            cutoff = lax.convert_element_type(cutoff, real_dt)
        elif cutoff < 0:
            cutoff = eps
        threshold = lax.mul(lax.convert_element_type(cutoff, real_dt),
                            lax.index_in_dim(s, 0, keepdims=False))
        keep = lax.bitwise_and(lax.gt(s, lax.full_like(s, 0)), lax.ge(s, threshold))
        rank = lax.reduce_sum(lax.convert_element_type(keep, np.int32), (0,))
        s_inv = lax.select(keep, lax.div(lax.full_like(s, 1), lax.select(keep, s, lax.full_like(
            s, 1))), lax.full_like(s, 0))
        projected = matmul(mH(u), b)
        scale = lax.broadcast_in_dim(lax.convert_element_type(s_inv, dtype),
                                     get_aval(projected).shape, (0,))
        coefficients = lax.mul(scale, projected)
        x = matmul(mH(vh), coefficients)
    residual = lax.sub(b, matmul(a, x))
    residuals = lax.reduce_sum(lax.real(lax.mul(residual, lax.conj(residual))) if
                               dtypes.is_complex(dtype) else lax.mul(residual, residual), (0,))
    if numpy_resid:
        rank_value = int(util.concrete_or_error(rank, "jnp.linalg.lstsq(numpy_resid=True)"))
        if rank_value < n or m <= n:
            residuals = lax.full((0,), 0, real_dt)
    if vector:
        x = lax.squeeze(x, (1,))
    return x, residuals, rank, s


# --- powers and tensors ------------------------------------------------------------------------

def matrix_power(a, n):
    """The square matrix `a` raised to the integer power `n`, by repeated squaring (the
    inverse's power for negative `n`, the identity for 0).

    Follows `numpy.linalg.matrix_power`; `n` must be a static int.

    Args:
        a: `(..., m, m)` matrices.
        n: the exponent (a Python int).

    Returns:
        `(..., m, m)` matrices of `a`'s dtype.

    Raises:
        TypeError: a non-integer `n`.

    Examples:
        >>> jnp.linalg.matrix_power(jnp.array([[1, 1], [0, 1]]), 3)
        Array([[1, 3],
               [0, 1]], dtype=int32)
    """
    if _is_int_array(a):
        a = _int_matrices(a)
    else:
        a = matrices("jnp.linalg.matrix_power", a, square=True)
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"jnp.linalg.matrix_power: exponent must be an integer, got {n!r}") \
            from None
    if n == 0:
        return eye_like(a)
    if n < 0:
        a, n = inv(a), -n
    if n == 3:  # (a a) a, as JAX's, not a (a a)
        return _product(_product(a, a), a)
    result, square = None, a
    while True:
        if n & 1:
            result = square if result is None else _product(result, square)
        n >>= 1
        if not n:
            return result
        square = _product(square, square)


def _is_int_array(a) -> bool:
    return util.is_arraylike(a) and util.dtype_category(util.dtype_of(util.operand(a))) in "biu"


def _int_matrices(a):
    """Integer matrices keep their dtype in matrix_power (bool becomes int32)."""
    util.check_arraylike("jnp.linalg.matrix_power", a)
    a, = util.promote_dtypes_numeric(util.operand(a))
    check_matrices("jnp.linalg.matrix_power", a, square=True)
    return a


def _product(x, y):
    from plax_stdlib.numpy.linalg_products import matmul as np_matmul
    return np_matmul(x, y)


def tensorinv(a, ind: int = 2):
    """The inverse of `a` seen as a linear map from the tensor of its first `ind` axes to
    the tensor of the rest; the result has shape `a.shape[ind:] + a.shape[:ind]`.

    Follows `numpy.linalg.tensorinv`.

    Args:
        a: an array whose first `ind` axes and the rest have equal total sizes.
        ind: the number of leading axes forming the input space.

    Returns:
        The inverse tensor.

    Raises:
        ValueError: sizes that do not match.

    Examples:
        >>> jnp.linalg.tensorinv(jnp.eye(4).reshape(4, 2, 2), ind=1).shape
        (2, 2, 4)
    """
    a, = inexact("jnp.linalg.tensorinv", a)
    ind = operator.index(ind)
    shape = get_aval(a).shape
    if ind <= 0:
        raise ValueError(f"jnp.linalg.tensorinv: ind must be a positive integer, got {ind}")
    rows, cols = math.prod(shape[:ind]), math.prod(shape[ind:])
    if rows != cols:
        raise ValueError(f"jnp.linalg.tensorinv: the product of the first ind={ind} "
                         f"dimensions must equal that of the rest, got shape {shape}")
    inverse = inv(lax.reshape(a, (rows, cols)))
    return lax.reshape(inverse, (*shape[ind:], *shape[:ind]))


def tensorsolve(a, b, axes=None):
    """The `x` with `tensordot(a, x, x.ndim) == b`, after moving `axes` of `a` to the end.

    Follows `numpy.linalg.tensorsolve`.

    Args:
        a: the coefficient tensor.
        b: the right-hand side, shaped like `a`'s leading axes.
        axes: axes of `a` to move to the end first.

    Returns:
        The solution, shaped like `a`'s trailing axes.

    Examples:
        >>> jnp.linalg.tensorsolve(jnp.eye(4).reshape(2, 2, 4), jnp.ones((2, 2)))
        Array([1., 1., 1., 1.], dtype=float32)
    """
    a, b = inexact("jnp.linalg.tensorsolve", a, b)
    if axes is not None:
        from plax_stdlib.numpy.shape_ops import moveaxis
        ndim = get_aval(a).ndim
        axes = [util.canonicalize_axis(ax, ndim) for ax in
                ((axes,) if isinstance(axes, int) else axes)]
        a = moveaxis(a, axes, list(range(ndim - len(axes), ndim)))
    a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
    x_shape = a_shape[len(b_shape):]
    if a_shape[:len(b_shape)] != b_shape or math.prod(x_shape) != math.prod(b_shape):
        raise ValueError(f"jnp.linalg.tensorsolve: a of shape {a_shape} does not match b of "
                         f"shape {b_shape} (a must be b.shape + x.shape with "
                         "prod(x.shape) == prod(b.shape))")
    size = math.prod(b_shape)
    x = solve(lax.reshape(a, (size, size)), lax.reshape(b, (size,)))
    return lax.reshape(x, x_shape)


jax_jits.apply(globals(), "numpy.linalg")  # JAX's jitted functions become jit functions

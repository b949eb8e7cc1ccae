"""Norms and what is measured with them: norm, vector_norm, matrix_norm, cond and
matrix_rank, with NumPy's `ord` conventions (vector: any real p, ±inf, 0; matrix:
'fro', 'nuc', ±1, ±2, ±inf)."""
from __future__ import annotations

import math

import numpy as np

from plax.extend import dtypes
from plax.extend.core import get_aval, max_dim
from plax_stdlib import jax_jits, lax
from plax_stdlib.lax.linalg import svd as lax_svd
from plax_stdlib.numpy import reductions, shape_ops, ufuncs, util
from plax_stdlib.numpy.linalg.decompositions import svd
from plax_stdlib.numpy.linalg.operands import check_matrices, inexact


def _sum_of_squares(x, axis, keepdims):
    return reductions.sum(ufuncs.real(ufuncs.multiply(x, ufuncs.conj(x))), axis=axis,
                          keepdims=keepdims)


def _vector_norm(x, ord, axis: tuple[int, ...], keepdims: bool):
    if ord is None or ord == 2:
        return ufuncs.sqrt(_sum_of_squares(x, axis, keepdims))
    if isinstance(ord, str):
        raise ValueError(f"Invalid order {ord!r} for vector norm")
    magnitude = ufuncs.abs(x)
    if ord == np.inf:
        return reductions.max(magnitude, axis=axis, keepdims=keepdims, initial=0)
    if ord == -np.inf:
        return reductions.min(magnitude, axis=axis, keepdims=keepdims)
    if ord == 0:
        nonzero = ufuncs.not_equal(x, 0)
        return reductions.sum(lax.convert_element_type(nonzero, util.dtype_of(magnitude)),
                              axis=axis, keepdims=keepdims)
    if ord == 1:
        return reductions.sum(magnitude, axis=axis, keepdims=keepdims)
    p = lax.convert_element_type(np.asarray(ord), util.dtype_of(magnitude))
    powered = reductions.sum(ufuncs.power(magnitude, p), axis=axis, keepdims=keepdims)
    return ufuncs.power(powered, ufuncs.reciprocal(p))


def _matrix_norm(x, ord, axes: tuple[int, int], keepdims: bool):
    rows, cols = axes
    if ord in (None, "fro", "f"):
        return ufuncs.sqrt(_sum_of_squares(x, axes, keepdims))
    if ord in (1, -1, np.inf, -np.inf):
        # 1: the largest column sum of |x|; inf: the largest row sum.
        summed, other = (rows, cols) if ord in (1, -1) else (cols, rows)
        sums = reductions.sum(ufuncs.abs(x), axis=summed, keepdims=keepdims)
        if not keepdims and other > summed:
            other -= 1  # the summed axis is gone
        if ord in (1, np.inf):
            return reductions.max(sums, axis=other, keepdims=keepdims, initial=0)
        return reductions.min(sums, axis=other, keepdims=keepdims)
    if ord in ("nuc", 2, -2):
        s = lax_svd(shape_ops.moveaxis(x, axes, (-2, -1)), compute_uv=False)
        if ord == "nuc":
            out = reductions.sum(s, axis=-1)
        elif ord == 2:
            out = reductions.max(s, axis=-1, initial=0)
        else:
            out = reductions.min(s, axis=-1)
        return shape_ops.expand_dims(out, axes) if keepdims else out
    raise ValueError(f"Invalid order {ord!r} for matrix norm")


def norm(x, ord=None, axis=None, keepdims: bool = False):
    """NumPy's `norm`: a vector or matrix norm. With `ord` None it is the 2-norm of the
    flattened array (any rank); with `axis` an int, vector norms along it; with
    `axis` a pair (or a 2-D input), matrix norms over those axes.

    Follows `numpy.linalg.norm` (`ord`: for vectors any real p, inf, -inf, 0; for
    matrices "fro", "nuc", 1, -1, 2, -2, inf, -inf).

    Args:
        x: an array.
        ord: the norm's order.
        axis: None, an int, or a pair of ints.
        keepdims: keep the reduced axes with size 1.

    Returns:
        The norms.

    Raises:
        ValueError: an `ord` that does not fit the number of axes.

    Examples:
        >>> jnp.linalg.norm(jnp.array([3.0, 4.0]))
        Array(5., dtype=float32)
        >>> jnp.linalg.norm(jnp.array([[1.0, 2.0], [3.0, 4.0]]), ord=1)
        Array(6., dtype=float32)
    """
    x, = inexact("jnp.linalg.norm", x)
    ndim = get_aval(x).ndim
    if axis is None:
        if ord is None:
            return ufuncs.sqrt(_sum_of_squares(x, None, keepdims))
        if ndim not in (1, 2):
            raise ValueError(f"jnp.linalg.norm: ord={ord!r} needs a 1-D or 2-D array when axis "
                             f"is None, got shape {get_aval(x).shape}")
        axis = tuple(range(ndim))
    axes = util.canonicalize_axes(axis, ndim)
    if len(axes) == 1:
        return _vector_norm(x, ord, axes, keepdims)
    if len(axes) == 2:
        return _matrix_norm(x, ord, axes, keepdims)
    raise ValueError(f"jnp.linalg.norm: axis must name one axis (a vector norm) or two (a "
                     f"matrix norm), got {axis!r}")


def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2):
    """The `ord`-norm of vectors along `axis` (all axes, flattened, by default): the array
    API's `vector_norm`.

    Args:
        x: an array.
        axis: None, an int, or a tuple of ints.
        keepdims: keep the reduced axes with size 1.
        ord: any real p, inf, -inf or 0 (the count of nonzeros).

    Returns:
        The norms.

    Examples:
        >>> jnp.linalg.vector_norm(jnp.array([[3.0, 4.0], [6.0, 8.0]]), axis=1)
        Array([ 5., 10.], dtype=float32)
    """
    x, = inexact("jnp.linalg.vector_norm", x)
    ndim = get_aval(x).ndim
    if axis is None:
        flat = lax.reshape(x, (math.prod(get_aval(x).shape),))
        out = _vector_norm(flat, ord, (0,), False)
        return lax.reshape(out, (1,) * ndim) if keepdims else out
    return _vector_norm(x, ord, util.canonicalize_axes(axis, ndim), keepdims)


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro"):
    """The `ord`-norm of each matrix over the last two axes: the array API's
    `matrix_norm` ("fro" by default, or "nuc", 1, -1, 2, -2, inf, -inf).

    Args:
        x: `(..., m, n)` matrices.
        keepdims: keep the reduced axes with size 1.
        ord: the norm.

    Returns:
        The norms.

    Examples:
        >>> jnp.linalg.matrix_norm(jnp.array([[3.0, 0.0], [0.0, 4.0]]))
        Array(5., dtype=float32)
    """
    x, = inexact("jnp.linalg.matrix_norm", x)
    check_matrices("jnp.linalg.matrix_norm", x, what="x")
    ndim = get_aval(x).ndim
    return _matrix_norm(x, ord, (ndim - 2, ndim - 1), keepdims)


def cond(x, p=None):
    """The condition number of each matrix in the `p`-norm: how much relative errors in
    `b` can grow in the solution of `a x = b`.

    Follows `numpy.linalg.cond`: for `p` None, 2 or -2 the ratio of extreme singular
    values, else `norm(x, p) * norm(inv(x), p)` (square matrices). A singular matrix
    gives infinity.

    Args:
        x: `(..., m, n)` matrices.
        p: None, 1, -1, 2, -2, inf, -inf or "fro".

    Returns:
        `(...)` condition numbers.

    Examples:
        >>> jnp.linalg.cond(jnp.array([[2.0, 0.0], [0.0, 1.0]]))
        Array(2., dtype=float32)
    """
    from plax_stdlib.numpy.linalg.solvers import inv
    x, = inexact("jnp.linalg.cond", x)
    check_matrices("jnp.linalg.cond", x, square=p not in (None, 2, -2), what="x")
    if p in (None, 2):  # the descending singular values' first over last, as JAX's
        s = svd(x, compute_uv=False)
        return ufuncs.divide(s[..., 0], s[..., -1])
    if p == -2:
        s = svd(x, compute_uv=False)
        ratio = ufuncs.divide(s[..., -1], s[..., 0])
    else:
        ratio = ufuncs.multiply(norm(x, p, axis=(-2, -1)), norm(inv(x), p, axis=(-2, -1)))
    # A NaN from a singular matrix (not from NaN input) is an infinite condition number.
    input_nan = reductions.any(ufuncs.isnan(x), axis=(-2, -1))
    infinite = ufuncs.logical_and(ufuncs.isnan(ratio), ufuncs.logical_not(input_nan))
    return ufuncs.where(infinite, np.inf, ratio)


def matrix_rank(M, rtol=None, *, hermitian: bool = False, tol=None):
    """The rank of each matrix: the number of singular values above `rtol` times the
    largest (default `max(m, n) * eps`); for 1-D or 0-D input, whether any entry is
    nonzero.

    Follows `numpy.linalg.matrix_rank` (NumPy 2's `rtol`; `tol` is an absolute
    threshold).

    Args:
        M: `(..., m, n)` matrices.
        rtol: the relative threshold.
        hermitian: `M` is Hermitian (uses eigenvalues).
        tol: an absolute threshold instead.

    Returns:
        `(...)` integer ranks.

    Examples:
        >>> jnp.linalg.matrix_rank(jnp.array([[1.0, 2.0], [2.0, 4.0]]))
        Array(1, dtype=int32)
    """
    if tol is not None:
        if rtol is not None:
            raise ValueError("jnp.linalg.matrix_rank: only one of tol and rtol may be given")
        rtol = tol
    M, = inexact("jnp.linalg.matrix_rank", M)
    shape = get_aval(M).shape
    if len(shape) < 2:
        return lax.convert_element_type(reductions.any(ufuncs.not_equal(M, 0)), np.int32)
    s = svd(M, full_matrices=False, compute_uv=False, hermitian=hermitian)
    if rtol is None:  # (a given rtol is compared with s as it is, as by JAX's)
        eps = float(dtypes.finfo(util.dtype_of(s)).eps)
        rtol = (reductions.max(s, axis=-1)
                * lax.dimension_as_value(max_dim(*shape[-2:])) * eps)
    rtol = shape_ops.expand_dims(rtol, len(util.shape_of(rtol)))
    return reductions.sum(ufuncs.greater(s, rtol), axis=-1)


jax_jits.apply(globals(), "numpy.linalg")  # JAX's jitted functions become jit functions

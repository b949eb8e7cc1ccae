"""Polynomials as 1-D coefficient arrays, highest power first (NumPy's legacy
`numpy.poly*` API): polyval, polyadd, polysub, polymul, polydiv, polyder, polyint,
poly, roots, polyfit.

`roots` (eigenvalues of the companion matrix), `poly` of a matrix (its
eigenvalues) and `polyfit` (least squares) use `plax.numpy.linalg`.
"""
from __future__ import annotations

import operator

import numpy as np

from plax.extend import dtypes
from plax_stdlib import jax_jits, lax
from plax_stdlib.numpy.convolve import convolve
from plax_stdlib.numpy import (array_edits, creation, matrices, reductions, shape_ops,
                               ufuncs, util)


def _linalg():
    from plax_stdlib.numpy import linalg  # the linear algebra lives in its own package
    return linalg


def _coefficients(name: str, *polys, inexact: bool = False):
    polys = util.ensure_arraylike(name, *polys)
    polys = polys if isinstance(polys, tuple) else (polys,)
    promote = util.promote_dtypes_inexact if inexact else util.promote_dtypes
    out = [creation.asarray(p) for p in promote(*polys)]
    for p in out:
        if len(util.shape_of(p)) != 1:
            raise ValueError(f"{name}: polynomial coefficients must be 1-D, got shape "
                             f"{util.shape_of(p)}")
    return out


def polyval(p, x, *, unroll: int = 16):
    """The polynomial with coefficients `p` (highest power first) evaluated at `x`:
    `p[0] * x**(n-1) + ... + p[n-1]`, by Horner's rule.

    Follows `numpy.polyval`; `p` may carry trailing dimensions that broadcast with `x`
    (several polynomials at once). JAX's `unroll` sets how many Horner steps the loop
    unrolls (a compile-time/run-time trade-off).

    Args:
        p: the coefficients, highest power first.
        x: where to evaluate.
        unroll: loop unrolling of the Horner loop.

    Returns:
        The values, of the broadcast shape.

    Examples:
        >>> jnp.polyval(jnp.array([1, 0, -1]), jnp.array([0, 1, 2]))  # x**2 - 1
        Array([-1,  0,  3], dtype=int32)
    """
    p, x = util.ensure_arraylike("polyval", p, x)
    p, x = util.promote_dtypes(p, x)
    if not util.shape_of(p):
        raise ValueError("polyval: p must have at least one dimension")
    shape = util.broadcast_shapes(util.shape_of(p)[1:], util.shape_of(x))
    start = lax.full(shape, 0, util.dtype_of(x))
    out, _ = lax.scan(lambda y, c: (ufuncs.add(ufuncs.multiply(y, x), c), None), start,
                      creation.asarray(p), unroll=unroll)
    return util.as_array(out)


def _added(name: str, a1, a2):
    """The coefficients of a1 + a2 (promoted), along their first axis: the shorter (a2
    if equally long) is added into the end of the longer, broadcast to that part's
    shape, so the arrays may carry trailing dimensions (JAX's rule). As in JAX, a
    shorter of length 0 is added into all of the longer (the part `[-0:]`)."""
    shapes = util.shape_of(a1), util.shape_of(a2)
    if not all(shapes):
        raise IndexError(f"{name}: polynomial coefficients must have at least one "
                         f"dimension, got shapes {shapes[0]} and {shapes[1]}")
    (long_shape, longer), (short_shape, shorter) = sorted(
        ((shapes[0], a1), (shapes[1], a2)), key=lambda pair: -pair[0][0])
    part = (short_shape[0] or long_shape[0],) + long_shape[1:]
    fits = len(short_shape) <= len(part) and all(
        s in (1, p) for s, p in zip(reversed(short_shape), reversed(part)))
    if not fits and 0 not in part:  # an empty part takes anything (JAX adds nothing)
        raise ValueError(f"{name}: coefficients of shape {short_shape} cannot be broadcast "
                         f"to the part {part} of the longer coefficients' shape {long_shape} "
                         "that they are added to")
    return util.as_array(creation.asarray(longer).at[-short_shape[0]:].add(shorter))


def polyadd(a1, a2):
    """The sum of two polynomials (coefficient arrays, highest power first; the shorter
    is aligned to the right).

    Follows `numpy.polyadd` for 1-D coefficients, and JAX's for more: the first axis
    holds the coefficients, and the shorter array is broadcast against the end of the
    longer one.

    Args:
        a1: coefficients (an array, not a list).
        a2: coefficients.

    Returns:
        The coefficients of the sum, of the longer array's shape.

    Raises:
        IndexError: a scalar (0-d) input.
        ValueError: the shorter array does not broadcast to the end of the longer.

    Examples:
        >>> jnp.polyadd(jnp.array([1, 2]), jnp.array([1, 0, 0]))
        Array([1, 1, 2], dtype=int32)
        >>> jnp.polyadd(jnp.array([[1, 2], [3, 4]]), jnp.array([10]))
        Array([[ 1,  2],
               [13, 14]], dtype=int32)
    """
    a1, a2 = util.promote_dtypes(*util.ensure_arraylike("polyadd", a1, a2))
    return _added("polyadd", a1, a2)


def polysub(a1, a2):
    """The difference `a1 - a2` of two polynomials (coefficients highest power first):
    `a1` plus the negated `a2`, as `polyadd` adds them.

    Follows `numpy.polysub` for 1-D coefficients, and JAX's `polyadd` rule for more.

    Args:
        a1: coefficients (an array, not a list).
        a2: coefficients.

    Returns:
        The coefficients of the difference, of the longer array's shape.

    Raises:
        IndexError: a scalar (0-d) input.
        TypeError: boolean coefficients (which cannot be negated).
        ValueError: the shorter array does not broadcast to the end of the longer.

    Examples:
        >>> jnp.polysub(jnp.array([1, 2, 3]), jnp.array([1, 1]))
        Array([1, 1, 2], dtype=int32)
    """
    a1, a2 = util.promote_dtypes(*util.ensure_arraylike("polysub", a1, a2))
    return _added("polysub", a1, ufuncs.negative(a2))


def polymul(a1, a2, *, trim_leading_zeros: bool = False):
    """The product of two polynomials: the convolution of their coefficients.

    Follows `numpy.polymul`, except that leading zeros are kept (the result's length is
    static) unless `trim_leading_zeros=True`, which needs concrete values.

    Args:
        a1: coefficients.
        a2: coefficients.
        trim_leading_zeros: drop leading zero coefficients of the inputs first.

    Returns:
        The coefficients of the product.

    Examples:
        >>> jnp.polymul(jnp.array([1, 1]), jnp.array([1, -1]))  # (x + 1)(x - 1)
        Array([ 1.,  0., -1.], dtype=float32)
    """
    a1, a2 = _coefficients("polymul", a1, a2, inexact=True)
    if trim_leading_zeros and (util.shape_of(a1)[0] > 1 or util.shape_of(a2)[0] > 1):
        a1, a2 = array_edits.trim_zeros(a1, trim="f"), array_edits.trim_zeros(a2, trim="f")
    if util.shape_of(a1)[0] == 0:
        a1 = creation.zeros((1,), util.dtype_of(a2))
    if util.shape_of(a2)[0] == 0:
        a2 = creation.zeros((1,), util.dtype_of(a1))
    return convolve(a1, a2, mode="full")


def polydiv(u, v, *, trim_leading_zeros: bool = False):
    """The quotient and remainder of the polynomial division `u / v`.

    Follows `numpy.polydiv`, except that the remainder keeps `u`'s length (padded with
    leading zeros) unless `trim_leading_zeros=True`, which needs concrete values.

    Args:
        u: the dividend's coefficients.
        v: the divisor's coefficients.
        trim_leading_zeros: trim the remainder's leading zeros.

    Returns:
        A pair `(quotient, remainder)`.

    Examples:
        >>> jnp.polydiv(jnp.array([1.0, 0.0, -1.0]), jnp.array([1.0, 1.0]))  # (x² - 1) / (x + 1)
        (Array([ 1., -1.], dtype=float32), Array([0., 0., 0.], dtype=float32))
    """
    u, v = _coefficients("polydiv", u, v, inexact=True)
    m, n = util.shape_of(u)[0] - 1, util.shape_of(v)[0] - 1
    if n < 0:
        raise ValueError("polydiv: the divisor must have at least one coefficient")
    scale = ufuncs.divide(1.0, v[0])
    quotient = creation.zeros((max(m - n + 1, 1),), util.dtype_of(u))
    for k in range(m - n + 1):
        d = ufuncs.multiply(scale, u[k])
        quotient = quotient.at[k].set(d)
        u = u.at[k:k + n + 1].add(ufuncs.negative(ufuncs.multiply(d, v)))
    if trim_leading_zeros:
        tol = float(np.sqrt(dtypes.finfo(util.dtype_of(u)).eps))
        values = np.abs(np.asarray(util.concrete_or_error(
            u, "polydiv: trim_leading_zeros needs concrete inputs")))
        first = int(np.argmax(values >= tol)) if (values >= tol).any() else len(values)
        u = u[first:]
    return quotient, u


def polyder(p, m: int = 1):
    """The coefficients of the `m`-th derivative of a polynomial.

    Follows `numpy.polyder`.

    Args:
        p: coefficients, highest power first.
        m: the order of the derivative (static, non-negative).

    Returns:
        The derivative's coefficients (`m` fewer).

    Raises:
        ValueError: a negative `m`.

    Examples:
        >>> jnp.polyder(jnp.array([1, 1, 1]))  # d/dx (x**2 + x + 1)
        Array([2., 1.], dtype=float32)
    """
    p, = _coefficients("polyder", p, inexact=True)
    m = operator.index(util.concrete_or_error(m, "polyder: m must be static"))
    if m < 0:
        raise ValueError(f"polyder: order of derivative must be non-negative, got {m}")
    n = util.shape_of(p)[0]
    if m == 0:
        return p
    if m >= n:  # as JAX: no coefficients left
        return creation.zeros((0,), util.dtype_of(p))
    powers = np.arange(n - 1, m - 1, -1)  # of the terms that survive
    factor = np.prod([powers - j for j in range(m)], axis=0).astype(util.dtype_of(p))
    return util.as_array(ufuncs.multiply(p[:n - m], factor))


def polyint(p, m: int = 1, k=None):
    """The coefficients of the `m`-th antiderivative of a polynomial, with integration
    constants `k` (a scalar, or one per integration, the first one innermost).

    Follows `numpy.polyint`.

    Args:
        p: coefficients, highest power first.
        m: the number of integrations (static, non-negative).
        k: the integration constants (default 0).

    Returns:
        The antiderivative's coefficients (`m` more).

    Raises:
        ValueError: a negative `m`, or the wrong number of constants.

    Examples:
        >>> jnp.polyint(jnp.array([3.0, 2.0, 1.0]), k=5.0)
        Array([1., 1., 1., 5.], dtype=float32)
    """
    m = operator.index(util.concrete_or_error(m, "polyint: m must be static"))
    p, k = util.ensure_arraylike("polyint", p, 0 if k is None else k)
    p, k = util.promote_dtypes_inexact(p, k)
    if m < 0:
        raise ValueError(f"polyint: order of integral must be non-negative, got {m}")
    k = shape_ops.atleast_1d(k)
    if util.shape_of(k) == (1,):
        k = shape_ops.broadcast_to(k, (m,))
    if util.shape_of(k) != (m,):
        raise ValueError(f"polyint: k must be a scalar or a rank-1 array of length 1 or m "
                         f"({m}), got shape {util.shape_of(k)}")
    if m == 0:
        return util.as_array(p)
    n = util.shape_of(p)[0]
    # Coefficient j (of the power n + m - 1 - j) is divided by the falling factorial
    # of that power, of length m; the constants become the lowest terms.
    powers = np.arange(n + m - 1, -1, -1)
    divisor = np.prod([np.maximum(powers - j, 1) for j in range(m)], axis=0)
    return util.as_array(ufuncs.true_divide(shape_ops.concatenate([p, k]),
                                            divisor.astype(util.dtype_of(p))))


@util.compiled()  # one jitted call, as JAX's
def poly(seq_of_zeros):
    """The coefficients of the monic polynomial whose roots are `seq_of_zeros` (for a
    square matrix: its characteristic polynomial).

    Follows `numpy.poly`.

    Args:
        seq_of_zeros: a 1-D array of roots, or a square matrix.

    Returns:
        The coefficients, highest power first (leading 1).

    Raises:
        ValueError: an input that is neither 1-D nor a square matrix.

    Examples:
        >>> jnp.poly(jnp.array([1.0, -1.0]))  # (x - 1)(x + 1)
        Array([ 1.,  0., -1.], dtype=float32)
    """
    zeros = shape_ops.atleast_1d(*util.promote_args_inexact("poly", seq_of_zeros))
    shape = util.shape_of(zeros)
    if len(shape) == 2 and shape[0] == shape[1] and shape[0]:
        zeros = _linalg().eigvals(zeros)
    if len(util.shape_of(zeros)) != 1:
        raise ValueError(f"poly: input must be 1d or a non-empty square 2d array, got shape "
                         f"{shape}")
    dtype = util.dtype_of(zeros)
    if not util.shape_of(zeros)[0]:
        return creation.ones((), dtype)
    out = creation.ones((1,), dtype)
    for i in range(util.shape_of(zeros)[0]):
        factor = shape_ops.stack([np.ones((), dtype)[()], ufuncs.negative(zeros[i])])
        out = convolve(out, factor, mode="full")
    return out


def roots(p, *, strip_zeros: bool = True):
    """The (complex) roots of the polynomial with coefficients `p`: the eigenvalues of its
    companion matrix.

    Follows `numpy.roots`. Leading zeros are stripped, which needs concrete
    coefficients; with `strip_zeros=False` the result has a fixed length (extra roots
    at NaN/infinity for leading zeros), which works under `jit`.

    Args:
        p: coefficients, highest power first.
        strip_zeros: strip leading zeros of `p` (requires concrete values).

    Returns:
        A 1-D complex array of roots.

    Examples:
        >>> r = jnp.roots(jnp.array([1.0, 0.0, -4.0]))  # x**2 - 4
        >>> r.dtype, jnp.round(jnp.sort(r.real), 4)
        (dtype('complex64'), Array([-2.,  2.], dtype=float32))
    """
    p = shape_ops.atleast_1d(*util.promote_args_inexact("roots", p))
    if len(util.shape_of(p)) != 1:
        raise ValueError(f"roots: input must be a rank-1 array, got shape {util.shape_of(p)}")
    n = util.shape_of(p)[0]
    complex_dtype = dtypes.to_complex_dtype(util.dtype_of(p))
    if n < 2:
        return creation.zeros((0,), complex_dtype)
    is_zero = lax.eq(p, 0)
    leading = ufuncs.where(reductions.all(is_zero), n, reductions.argmin(is_zero))
    if strip_zeros:
        leading = int(util.concrete_or_error(
            leading, "roots: stripping leading zeros needs concrete coefficients; pass "
            "strip_zeros=False under jit (missing roots are then NaN)"))
        return _companion_roots(p[leading:], complex_dtype)
    p = ufuncs.where(lax.eq(leading, n), np.ones((), util.dtype_of(p))[()], p)
    found = _companion_roots(shape_ops.roll(p, -leading), complex_dtype)
    # Rolling leading zeros to the end adds roots at 0: those are the missing ones.
    found = lax.sort_key_val(lax.eq(found, 0), found)[1]
    return ufuncs.where(lax.lt(creation.arange(n - 1), n - 1 - leading), found,
                        complex(np.nan, np.nan))


def _companion_roots(p, complex_dtype):
    n = util.shape_of(p)[0]
    if n < 2:
        return creation.zeros((0,), complex_dtype)
    companion = matrices.diag(creation.ones((n - 2,), util.dtype_of(p)), -1)
    companion = creation.asarray(companion).at[0, :].set(ufuncs.negative(
        ufuncs.divide(p[1:], p[0])))
    return _linalg().eigvals(companion)


def polyfit(x, y, deg: int, rcond=None, full: bool = False, w=None, cov=False):
    """The least-squares fit of a polynomial of degree `deg` to the points `(x, y)`.

    Follows `numpy.polyfit`: `y` may hold several data sets as columns, `w` weights the
    points, `full` also returns the diagnostics (residuals, rank, singular values,
    rcond), and `cov` the covariance of the coefficients (`cov="unscaled"` without
    scaling by the residual variance). `deg` must be static.

    Args:
        x: the sample points (1-D).
        y: the values (1-D, or 2-D with one data set per column).
        deg: the degree (static).
        rcond: the relative cutoff for small singular values.
        full: also return the diagnostics.
        w: weights of the points.
        cov: also return the coefficients' covariance (True or "unscaled").

    Returns:
        The coefficients (highest power first), or a tuple with the diagnostics or the
        covariance.

    Raises:
        ValueError: a negative degree, or inputs of the wrong rank or length.

    Examples:
        >>> x = jnp.array([0.0, 1.0, 2.0, 3.0])
        >>> jnp.round(jnp.polyfit(x, 2 * x + 1, 1), 4)
        Array([2., 1.], dtype=float32)
    """
    x, y = util.ensure_arraylike("polyfit", x, y)
    deg = operator.index(util.concrete_or_error(deg, "polyfit: deg must be static"))
    order = deg + 1
    if deg < 0:
        raise ValueError(f"polyfit: expected deg >= 0, got {deg}")
    if len(util.shape_of(x)) != 1:
        raise TypeError(f"polyfit: expected a 1D vector for x, got shape {util.shape_of(x)}")
    if not util.shape_of(x)[0]:
        raise TypeError("polyfit: expected a non-empty vector for x")
    if not 1 <= len(util.shape_of(y)) <= 2:
        raise TypeError(f"polyfit: expected a 1D or 2D array for y, got shape "
                        f"{util.shape_of(y)}")
    if util.shape_of(x)[0] != util.shape_of(y)[0]:
        raise TypeError(f"polyfit: expected x and y to have the same length, got "
                        f"{util.shape_of(x)[0]} and {util.shape_of(y)[0]}")
    x, y = util.promote_dtypes_inexact(x, y)
    n = util.shape_of(x)[0]
    rcond = n * float(dtypes.finfo(util.dtype_of(x)).eps) if rcond is None else float(rcond)
    lhs, rhs = matrices.vander(x, order), y
    if w is not None:
        w, = util.promote_args_inexact("polyfit", w)
        if util.shape_of(w) != (n,):
            raise TypeError(f"polyfit: expected a 1-d array of {n} weights, got shape "
                            f"{util.shape_of(w)}")
        lhs = ufuncs.multiply(lhs, lax.expand_dims(w, (1,)))
        rhs = ufuncs.multiply(rhs, lax.expand_dims(w, (1,)) if len(util.shape_of(rhs)) == 2
                              else w)
    scale = ufuncs.sqrt(reductions.sum(ufuncs.multiply(lhs, lhs), axis=0))
    lhs = ufuncs.divide(lhs, lax.expand_dims(scale, (0,)))
    c, resids, rank, s = _linalg().lstsq(lhs, rhs, rcond)
    c = ufuncs.divide(c, lax.expand_dims(scale, (1,)) if len(util.shape_of(c)) > 1 else scale)
    if full:
        return c, resids, rank, s, creation.asarray(rcond)
    if cov:
        base = _linalg().inv(lax.dot(lax.transpose(lhs, (1, 0)), lhs))
        base = ufuncs.divide(base, ufuncs.multiply(lax.expand_dims(scale, (1,)),
                                                   lax.expand_dims(scale, (0,))))
        if cov == "unscaled":
            factor = creation.asarray(1.0)
        else:
            if n <= order:
                raise ValueError("polyfit: the number of data points must exceed the order "
                                 "to scale the covariance matrix")
            factor = ufuncs.divide(resids, n - order)
        factor = shape_ops.atleast_1d(factor)
        if len(util.shape_of(y)) == 1:
            return c, ufuncs.multiply(base, lax.expand_dims(factor, (0,)))
        return c, ufuncs.multiply(lax.expand_dims(base, (2,)),
                                  lax.expand_dims(factor, (0, 1)))
    return c


jax_jits.apply(globals())  # JAX's jitted functions become jit functions

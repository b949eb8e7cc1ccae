"""Differences, sums and interpolation along an axis: diff, ediff1d, gradient,
trapezoid, unwrap, interp, and the array API's cumulative_sum/cumulative_prod.
"""
from __future__ import annotations

import operator

import numpy as np

from plax_stdlib import jax_jits, lax
from plax_stdlib.numpy import creation, indexing, reductions, shape_ops, ufuncs, util
from plax_stdlib.numpy.searching import searchsorted


def _slice(x, start, stop, axis: int):
    """`x[start:stop]` along `axis`, with Python's clamping (of symbolic sizes too)."""
    return indexing.getitem(x, (slice(None),) * axis + (slice(start, stop),))


def _with_edge(x, edge, axis: int):
    """`edge` (prepended/appended to `diff`) broadcast to one slice along `axis` when
    it is a scalar."""
    edge = util.ensure_arraylike("diff", edge)
    if util.shape_of(edge):
        return edge
    shape = list(util.shape_of(x))
    shape[axis] = 1
    return shape_ops.broadcast_to(edge, tuple(shape))


def diff(a, n: int = 1, axis: int = -1, prepend=None, append=None):
    """The `n`-th discrete difference along `axis`: `a[1:] - a[:-1]`, applied `n` times
    (`!=` for bool arrays).

    Follows `numpy.diff`; `prepend` and `append` are joined to `a` first.

    Args:
        a: an array.
        n: the number of times to difference (static, non-negative).
        axis: the axis.
        prepend: values (broadcast to one slice) joined before `a`.
        append: values joined after `a`.

    Returns:
        An array shorter by `n` along `axis`.

    Raises:
        ValueError: a negative `n`.

    Examples:
        >>> jnp.diff(jnp.array([1, 4, 9, 16]))
        Array([3, 5, 7], dtype=int32)
        >>> jnp.diff(jnp.array([1, 4, 9, 16]), n=2), jnp.diff(jnp.array([1, 4]), prepend=0)
        (Array([2, 2], dtype=int32), Array([1, 3], dtype=int32))
    """
    a = util.ensure_arraylike("diff", a)
    n = operator.index(util.concrete_or_error(n, "diff: 'n' must be static"))
    if n < 0:
        raise ValueError(f"diff: order must be non-negative but got {n}")
    if n == 0:
        return util.as_array(a)
    if not util.shape_of(a):
        raise ValueError("diff requires input that is at least one dimensional")
    axis = util.canonicalize_axis(axis, len(util.shape_of(a)))
    parts = [_with_edge(a, prepend, axis)] if prepend is not None else []
    parts.append(a)
    if append is not None:
        parts.append(_with_edge(a, append, axis))
    if len(parts) > 1:
        a = shape_ops.concatenate(parts, axis)
    for _ in range(n):
        later, earlier = _slice(a, 1, None, axis), _slice(a, None, -1, axis)
        a = (ufuncs.not_equal if util.dtype_of(a) == np.dtype(bool) else ufuncs.subtract)(
            later, earlier)
    return util.as_array(a)


def ediff1d(ary, to_end=None, to_begin=None):
    """The differences of consecutive elements of the flattened array, with `to_begin`
    and `to_end` joined at either end.

    Follows `numpy.ediff1d`.

    Args:
        ary: an array (flattened).
        to_end: values appended to the differences.
        to_begin: values prepended.

    Returns:
        A 1-D array.

    Examples:
        >>> jnp.ediff1d(jnp.array([1, 2, 4, 7]), to_begin=-1)
        Array([-1,  1,  2,  3], dtype=int32)
    """
    flat = shape_ops.ravel(util.ensure_arraylike("ediff1d", ary))
    out = lax.sub(flat[1:], flat[:-1])
    dtype = util.dtype_of(flat)
    if to_begin is not None:
        begin = shape_ops.ravel(util.convert(util.ensure_arraylike("ediff1d", to_begin), dtype))
        out = shape_ops.concatenate([begin, out])
    if to_end is not None:
        end = shape_ops.ravel(util.convert(util.ensure_arraylike("ediff1d", to_end), dtype))
        out = shape_ops.concatenate([out, end])
    return util.as_array(out)


def _gradient_along(a, h, axis: int, edge_order: int):
    s = lambda start, stop, x=a: _slice(x, start, stop, axis)  # noqa: E731
    n = util.shape_of(a)[axis]
    if not util.shape_of(h):
        inner = lax.div(lax.sub(s(2, None), s(None, -2)), lax.mul(h, 2.0))
        if edge_order == 1:
            first = lax.div(lax.sub(s(1, 2), s(0, 1)), h)
            last = lax.div(lax.sub(s(-1, None), s(-2, -1)), h)
        else:
            first = lax.div(lax.add(lax.add(lax.mul(s(0, 1), -1.5), lax.mul(s(1, 2), 2.0)),
                                    lax.mul(s(2, 3), -0.5)), h)
            last = lax.div(lax.add(lax.add(lax.mul(s(-3, -2), 0.5), lax.mul(s(-2, -1), -2.0)),
                                   lax.mul(s(-1, None), 1.5)), h)
        return shape_ops.concatenate([first, inner, last], axis)
    if util.shape_of(h) != (n,):
        raise ValueError(f"gradient: spacing arrays must have the length of the axis "
                         f"({n}), got shape {util.shape_of(h)}")
    shape = [1] * len(util.shape_of(a))
    shape[axis] = n
    x = lax.reshape(h, tuple(shape))
    sx = lambda start, stop: _slice(x, start, stop, axis)  # noqa: E731
    dx1, dx2 = lax.sub(sx(1, -1), sx(0, -2)), lax.sub(sx(2, None), sx(1, -1))
    # Second-order accurate weights for uneven spacing (NumPy's formulas).
    w0 = lax.div(lax.neg(dx2), lax.mul(dx1, lax.add(dx1, dx2)))
    w1 = lax.div(lax.sub(dx2, dx1), lax.mul(dx1, dx2))
    w2 = lax.div(dx1, lax.mul(dx2, lax.add(dx1, dx2)))
    inner = lax.add(lax.add(lax.mul(w0, s(0, -2)), lax.mul(w1, s(1, -1))),
                    lax.mul(w2, s(2, None)))
    if edge_order == 1:
        first = lax.div(lax.sub(s(1, 2), s(0, 1)), lax.sub(sx(1, 2), sx(0, 1)))
        last = lax.div(lax.sub(s(-1, None), s(-2, -1)), lax.sub(sx(-1, None), sx(-2, -1)))
    else:
        d1, d2 = lax.sub(sx(1, 2), sx(0, 1)), lax.sub(sx(2, 3), sx(1, 2))
        a0 = lax.div(lax.neg(lax.add(lax.mul(d1, 2.0), d2)), lax.mul(d1, lax.add(d1, d2)))
        a1 = lax.div(lax.add(d1, d2), lax.mul(d1, d2))
        a2 = lax.div(lax.neg(d1), lax.mul(d2, lax.add(d1, d2)))
        first = lax.add(lax.add(lax.mul(a0, s(0, 1)), lax.mul(a1, s(1, 2))),
                        lax.mul(a2, s(2, 3)))
        e1, e2 = lax.sub(sx(-2, -1), sx(-3, -2)), lax.sub(sx(-1, None), sx(-2, -1))
        b0 = lax.div(e2, lax.mul(e1, lax.add(e1, e2)))
        b1 = lax.div(lax.neg(lax.add(e2, e1)), lax.mul(e1, e2))
        b2 = lax.div(lax.add(lax.mul(e2, 2.0), e1), lax.mul(e2, lax.add(e1, e2)))
        last = lax.add(lax.add(lax.mul(b0, s(-3, -2)), lax.mul(b1, s(-2, -1))),
                       lax.mul(b2, s(-1, None)))
    return shape_ops.concatenate([first, inner, last], axis)


def gradient(f, *varargs, axis=None, edge_order: int | None = None):
    """The gradient of sampled values `f` along each axis: central differences inside,
    one-sided differences (of order `edge_order`, 1 by default) at the ends.

    Follows `numpy.gradient`: the spacing is 1, a scalar per axis, or the sample
    coordinates per axis (`varargs`).

    Args:
        f: an array of samples.
        *varargs: spacings or coordinate arrays, one per axis of `axis`.
        axis: an int or tuple of ints; None means every axis.
        edge_order: 1 or 2.

    Returns:
        One array for a single axis, else a list of arrays, each of `f`'s shape.

    Raises:
        ValueError: an axis with fewer than `edge_order + 1` samples, or mismatched
            spacings.

    Examples:
        >>> jnp.gradient(jnp.array([1.0, 4.0, 9.0, 16.0]))
        Array([3., 4., 6., 7.], dtype=float32)
        >>> jnp.gradient(jnp.array([1.0, 4.0, 9.0]), 0.5)
        Array([ 6.,  8., 10.], dtype=float32)
    """
    edge_order = 1 if edge_order is None else operator.index(edge_order)
    if edge_order not in (1, 2):
        raise ValueError(f"gradient: edge_order must be 1 or 2, got {edge_order}")
    a, *spacing = util.promote_args_inexact("gradient", f, *varargs)
    ndim = len(util.shape_of(a))
    axes = util.canonicalize_axes(axis, ndim)
    if not axes:
        return []
    if min(util.shape_of(a)[ax] for ax in axes) < edge_order + 1:
        raise ValueError(f"gradient: shape {util.shape_of(a)} is too small to compute a "
                         f"numerical gradient; at least {edge_order + 1} elements are "
                         f"required along each axis")
    if not spacing:
        spacing = [np.ones((), util.dtype_of(a))[()]] * len(axes)
    elif len(spacing) == 1:
        spacing = spacing * len(axes)
    elif len(spacing) != len(axes):
        raise TypeError(f"gradient: invalid number of spacing arguments {len(spacing)} for "
                        f"{len(axes)} axes")
    spacing = [lax.reshape(h, ()) if util.shape_of(h) == (1,) else h for h in spacing]
    if any(len(util.shape_of(h)) > 1 for h in spacing):
        raise ValueError("gradient: spacing arrays must be 1D arrays or scalars")
    out = [util.as_array(_gradient_along(a, h, ax, edge_order)) for ax, h in zip(axes, spacing)]
    return out[0] if len(out) == 1 else out


def trapezoid(y, x=None, dx=1.0, axis: int = -1):
    """The integral of `y` along `axis` by the trapezoidal rule, at the sample points `x`
    (or with uniform spacing `dx`).

    Follows `numpy.trapezoid` (formerly `trapz`).

    Args:
        y: the sample values.
        x: the sample points (broadcastable to `y`), or None.
        dx: the spacing when `x` is None.
        axis: the axis to integrate along.

    Returns:
        The integrals, `y`'s shape without `axis`.

    Examples:
        >>> jnp.trapezoid(jnp.array([0.0, 1.0, 4.0]), dx=0.5)
        Array(1.5, dtype=float32)
    """
    if x is None:
        y, dx = util.promote_args_inexact("trapezoid", y, dx)
        y = shape_ops.moveaxis(y, axis, -1)
        if util.shape_of(dx):
            dx = shape_ops.moveaxis(lax.reshape(dx, (1,) * (len(util.shape_of(y))
                                                            - len(util.shape_of(dx)))
                                                + util.shape_of(dx)), axis, -1)
            if util.shape_of(dx)[-1] != 1:
                return _trapezoid_uneven(y, dx)
            dx = dx[..., 0]
        total = reductions.sum(y, axis=-1)
        ends = lax.mul(lax.add(y[..., 0], y[..., -1]), 0.5) if util.shape_of(y)[-1] else 0.0
        return util.as_array(ufuncs.multiply(dx, ufuncs.subtract(total, ends)))
    # (dtypes only: x's widths meet y's heights by broadcasting, as in NumPy)
    util.check_arraylike("trapezoid", y, x)
    y, x = util.promote_dtypes_inexact(util.operand(y), util.operand(x))
    if len(util.shape_of(x)) == 1:
        widths = diff(x)
    else:
        widths = shape_ops.moveaxis(diff(x, axis=axis), axis, -1)
    return _trapezoid_uneven(shape_ops.moveaxis(y, axis, -1), widths)


def _trapezoid_uneven(y, widths):
    heights = ufuncs.add(y[..., 1:], y[..., :-1])
    return util.as_array(lax.mul(reductions.sum(ufuncs.multiply(widths, heights), axis=-1),
                                 0.5))


def unwrap(p, discont=None, axis: int = -1, period=2 * np.pi):
    """`p` with the jumps between neighbours larger than `discont` (period/2 by default)
    removed by adding multiples of `period`: a phase made continuous.

    Follows `numpy.unwrap`.

    Args:
        p: an array of phases.
        discont: the largest jump left as it is.
        axis: the axis along which to unwrap.
        period: the period (2π by default).

    Returns:
        An array of `p`'s shape (of an inexact dtype).

    Examples:
        >>> jnp.unwrap(jnp.array([1.0, 9.0, 2.0]), period=10.0)
        Array([ 1., -1.,  2.], dtype=float32)
    """
    p, period = util.promote_args("unwrap", p, period)
    if util.dtype_category(util.dtype_of(p)) == "c":
        raise ValueError("plax.numpy.unwrap does not support complex inputs.")
    axis = util.canonicalize_axis(axis, len(util.shape_of(p)), IndexError)  # JAX's class
    if util.shape_of(p)[axis] == 0:
        return util.as_array(p)
    integer = util.dtype_category(util.dtype_of(p)) in "iu"
    half = ufuncs.floor_divide(period, 2) if integer else ufuncs.divide(period, 2)
    discont = half if discont is None else discont
    steps = diff(p, axis=axis)
    wrapped = ufuncs.subtract(ufuncs.remainder(ufuncs.add(steps, half), period), half)
    wrapped = ufuncs.where(ufuncs.logical_and(ufuncs.equal(wrapped, ufuncs.negative(half)),
                                              lax.gt(steps, 0)), half, wrapped)
    correction = ufuncs.where(lax.lt(ufuncs.absolute(steps), discont), 0,
                              ufuncs.subtract(wrapped, steps))
    rest = ufuncs.add(_slice(p, 1, None, axis), reductions.cumsum(correction, axis=axis))
    return shape_ops.concatenate([_slice(p, 0, 1, axis), util.convert(rest, util.dtype_of(p))],
                                 axis)


def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation of the points `(xp, fp)` at `x`.

    Follows `numpy.interp`: `xp` must be increasing (not checked: a traced value
    cannot be); outside `[xp[0], xp[-1]]` the result is `left`/`right` (the end values
    by default; JAX also accepts "extrapolate"); with `period`, the points repeat
    periodically.

    Args:
        x: where to evaluate.
        xp: the increasing sample positions (1-D).
        fp: the sample values (1-D, as long as `xp`).
        left: the value below `xp[0]`, or "extrapolate".
        right: the value above `xp[-1]`, or "extrapolate".
        period: the period of the x coordinate.

    Returns:
        An array of `x`'s shape.

    Raises:
        ValueError: `xp` and `fp` that are not 1-D or differ in length; a zero period.

    Examples:
        >>> xp, fp = jnp.array([0.0, 1.0, 2.0]), jnp.array([0.0, 10.0, 20.0])
        >>> jnp.interp(jnp.array([0.5, 1.5, 5.0]), xp, fp)
        Array([ 5., 15., 20.], dtype=float32)
    """
    x, xp, fp = util.ensure_arraylike("interp", x, xp, fp)
    if util.shape_of(xp) != util.shape_of(fp) or len(util.shape_of(xp)) != 1:
        raise ValueError(f"interp: xp and fp must be one-dimensional arrays of equal size, "
                         f"got shapes {util.shape_of(xp)} and {util.shape_of(fp)}")
    x, xp = util.promote_dtypes_inexact(x, xp)
    fp, = util.promote_dtypes_inexact(fp)
    if util.dtype_category(util.dtype_of(x)) == "c":
        raise ValueError("plax.numpy.interp: complex x values are not supported.")
    extrapolate = {}
    for name, value in (("left", left), ("right", right)):
        if isinstance(value, str) and value != "extrapolate":
            raise ValueError(f"interp: the only valid string value of `{name}` is "
                             f"'extrapolate', but got: {value!r}")
        extrapolate[name] = isinstance(value, str)
    xp, fp = creation.asarray(xp), creation.asarray(fp)
    if period is not None:
        period = util.ensure_arraylike("interp", period)
        if util.shape_of(period):
            raise ValueError(f"interp: period must be a scalar; got shape "
                             f"{util.shape_of(period)}")
        period = ufuncs.absolute(period)
        x, xp = ufuncs.remainder(x, period), ufuncs.remainder(xp, period)
        xp, fp = lax.sort_key_val(xp, fp)
        xp = shape_ops.concatenate([ufuncs.subtract(xp[-1:], period), xp,
                                    ufuncs.add(xp[:1], period)])
        fp = shape_ops.concatenate([fp[-1:], fp, fp[:1]])
    n = util.shape_of(xp)[0]
    i = ufuncs.clip(searchsorted(xp, x, side="right"), 1, n - 1)
    df = ufuncs.subtract(fp[i], fp[i - 1])
    dx = ufuncs.subtract(xp[i], xp[i - 1])
    delta = ufuncs.subtract(x, xp[i - 1])
    tiny = np.spacing(np.finfo(util.dtype_of(xp)).eps)
    flat = lax.le(ufuncs.absolute(dx), tiny)  # repeated xp: no division (nor NaN gradient)
    f = ufuncs.where(flat, fp[i - 1], ufuncs.add(
        fp[i - 1], ufuncs.multiply(ufuncs.divide(delta, ufuncs.where(flat, 1, dx)), df)))
    if period is None:
        if not extrapolate["left"]:
            f = ufuncs.where(lax.lt(x, xp[0]), fp[0] if left is None else left, f)
        if not extrapolate["right"]:
            f = ufuncs.where(lax.gt(x, xp[-1]), fp[-1] if right is None else right, f)
    return util.as_array(f)


# The docstrings of the two array API functions the factory below makes.
_CUMULATIVE_DOCS = {
    "cumulative_sum": """The array API's `cumulative_sum`: the running sum along `axis`,
    optionally starting with 0 (`include_initial`, which makes the result one longer).

    `axis` is required for arrays of more than one dimension. Narrow integers widen as
    in `sum` (unlike `cumsum`, which keeps the input's dtype).

    Args:
        x: an array.
        axis: the axis (optional for 1-D input).
        dtype: the dtype to accumulate in and return.
        include_initial: start with the identity 0.

    Returns:
        The running sums.

    Raises:
        ValueError: a missing `axis` for input of more than one dimension.

    Examples:
        >>> jnp.cumulative_sum(jnp.array([1, 2, 3]), include_initial=True)
        Array([0, 1, 3, 6], dtype=int32)
    """,
    "cumulative_prod": """The array API's `cumulative_prod`: the running product along `axis`,
    optionally starting with 1 (`include_initial`).

    `axis` is required for arrays of more than one dimension.

    Args:
        x: an array.
        axis: the axis (optional for 1-D input).
        dtype: the dtype to accumulate in and return.
        include_initial: start with the identity 1.

    Returns:
        The running products.

    Raises:
        ValueError: a missing `axis` for input of more than one dimension.

    Examples:
        >>> jnp.cumulative_prod(jnp.array([[1, 2], [3, 4]]), axis=1)
        Array([[ 1,  2],
               [ 3, 12]], dtype=int32)
    """,
}


def _cumulative(name: str, accumulate, identity: int, promote_integers: bool):
    def fn(x, /, *, axis: int | None = None, dtype=None, include_initial: bool = False):
        x = util.ensure_arraylike(name, x)
        shape = util.shape_of(x)
        if not shape:
            raise ValueError(f"{name} does not support scalars")
        if axis is None:
            if len(shape) > 1:
                raise ValueError(f"{name}: axis must be specified for arrays of more than "
                                 f"one dimension, got shape {shape}")
            axis = 0
        axis = util.canonicalize_axis(axis, len(shape))
        if dtype is None and promote_integers:
            dtype = reductions.summed_dtype(util.dtype_of(x))
        out = accumulate(x, axis=axis, dtype=dtype)
        if include_initial:
            start = list(util.shape_of(out))
            start[axis] = 1
            out = shape_ops.concatenate([lax.full(tuple(start), identity, util.dtype_of(out)),
                                         out], axis)
        return util.as_array(out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = _CUMULATIVE_DOCS[name]
    return fn


# As in JAX, cumulative_sum widens narrow integers like `sum`; cumulative_prod does not.
cumulative_sum = _cumulative("cumulative_sum", reductions.cumsum, 0, promote_integers=True)
cumulative_prod = _cumulative("cumulative_prod", reductions.cumprod, 1, promote_integers=False)


jax_jits.apply(globals())  # JAX's jitted functions become jit functions

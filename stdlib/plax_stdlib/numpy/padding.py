"""`pad` in every NumPy mode: constant, edge, wrap, reflect and symmetric (even or
odd), linear_ramp, maximum/minimum/mean/median (over `stat_length`), empty, and a
user function.

Axes are padded one after another, as NumPy does, so the corners of later axes
see the padding of earlier ones. Pad widths are static; constant and end values
may be traced.
"""
from __future__ import annotations

import operator

import numpy as np

from plax.extend.core import SymbolicDimension, canonical_dim
from plax_stdlib import lax
from plax_stdlib.numpy import reductions, shape_ops, ufuncs, util

_MODE_OPTIONS = {
    "constant": ("constant_values",), "edge": (), "wrap": (), "empty": (),
    "linear_ramp": ("end_values",), "reflect": ("reflect_type",),
    "symmetric": ("reflect_type",), "maximum": ("stat_length",), "minimum": ("stat_length",),
    "mean": ("stat_length",), "median": ("stat_length",),
}


def _nested(values):
    """`values` as nested lists of scalars (entries may stay traced)."""
    if isinstance(values, (list, tuple)):
        return [_nested(v) for v in values]
    shape = np.shape(values) if not util.is_arraylike(values) else util.shape_of(values)
    if shape:
        return [_nested(values[i]) for i in range(shape[0])]
    return values


def _nested_shape(values) -> tuple:
    if not isinstance(values, list):
        return ()
    shapes = {_nested_shape(v) for v in values}
    if len(shapes) > 1:
        raise TypeError("pad: entries must be the same shape")
    return (len(values),) + (shapes.pop() if shapes else ())


def _pairs(values, ndim: int, name: str) -> tuple:
    """`values` given as a scalar, (v,), (before, after), ((before, after),) or one
    pair per axis, as one (before, after) pair per axis."""
    nested = _nested(values)
    try:
        shape = _nested_shape(nested)
    except TypeError:
        raise TypeError(f"pad: `{name}` entries must be the same shape: {values!r}") from None
    if shape == (ndim, 2):
        return tuple((row[0], row[1]) for row in nested)
    if shape == (1, 2):
        return ((nested[0][0], nested[0][1]),) * ndim
    if shape == (2,):
        return ((nested[0], nested[1]),) * ndim
    if shape in ((1,), ()):
        v = nested[0] if shape else nested
        return ((v, v),) * ndim
    raise ValueError(f"pad: {name} with {ndim} dimensions has unsupported shape {shape}. "
                     f"Valid shapes are ({ndim}, 2), (1, 2), (2,), (1,), or ().")


def _widths(pad_width, ndim: int) -> tuple:
    pad_width = util.concrete_or_error(pad_width, "pad: pad_width must be static") \
        if util.is_arraylike(pad_width) else pad_width
    pairs = _pairs(pad_width, ndim, "pad_width")
    out = []
    for before, after in pairs:
        if not all(isinstance(v, (int, np.integer, SymbolicDimension))
                   and not isinstance(v, bool) for v in (before, after)):
            raise TypeError(f"pad: `pad_width` must be of integral type, got {pad_width!r}")
        out.append(tuple(canonical_dim(v) for v in (before, after)))
    return tuple(out)


def _check_nonnegative(widths, pad_width) -> None:
    """Negative widths, checked after the mode, as JAX does."""
    if any(w < 0 for pair in widths for w in pair):
        raise ValueError(f"pad: index can't contain negative values, got {pad_width!r}")


def _part(x, start: int, stop: int, axis: int):
    return lax.slice_in_dim(x, start, stop, axis=axis)


def _constant(x, axis: int, widths, values):
    """Both sides in one `lax.pad` when they take one value (as JAX pads: on a
    sharded axis, only the total width must keep the mesh axes dividing it)."""
    dtype = util.dtype_of(x)
    scalars = all(isinstance(v, (int, float, complex, np.number)) for v in values)
    sides = ([(widths, values[0])] if values[0] is values[1] or (scalars and values[0] == values[1])
             else [((widths[0], 0), values[0]), ((0, widths[1]), values[1])])
    for (before, after), value in sides:
        if before or after:
            value = util.convert(util.ensure_arraylike("pad", value), dtype)
            config = [(0, 0, 0)] * len(util.shape_of(x))
            config[axis] = (before, after, 0)
            x = lax.pad(x, value, config)
    return x


def _edge(x, axis: int, widths):
    shape = util.shape_of(x)
    n = shape[axis]
    if all(isinstance(d, int) for d in shape):  # JAX's: each edge slice repeated
        before = shape_ops.repeat(lax.slice_in_dim(x, 0, 1, axis=axis), widths[0], axis=axis)
        after = shape_ops.repeat(lax.slice_in_dim(x, n - 1, n, axis=axis), widths[1],
                                 axis=axis)
        return lax.concatenate([before, x, after], axis)
    # A symbolic (shape-polymorphic) shape: the edge slices broadcast beside `x`.
    parts = []
    for start, width in ((0, widths[0]), (n - 1, widths[1])):
        edge = lax.slice_in_dim(x, start, start + 1, axis=axis)
        parts.append(lax.broadcast_in_dim(edge, shape[:axis] + (width,) + shape[axis + 1:],
                                          tuple(range(len(shape)))))
    return lax.concatenate([parts[0], x, parts[1]], axis)


def _wrap(x, axis: int, widths):
    """JAX's: copies of `x` side by side, with the partial copies at the ends sliced."""
    n = util.shape_of(x)[axis]
    left_copies, left_rest = divmod(widths[0], n)
    right_copies, right_rest = divmod(widths[1], n)
    parts = [_part(x, n - left_rest, n, axis)] if left_rest else []
    parts += [x] * (left_copies + right_copies + 1)
    parts += [_part(x, 0, right_rest, axis)] if right_rest else []
    return lax.concatenate(parts, axis)


def _reflect(x, axis: int, widths, symmetric: bool, odd: bool):
    """Padding by mirror images, one period at a time, each mirrored about the current
    edge (for 'odd', the images are also negated about the edge value)."""
    n = util.shape_of(x)[axis]
    period = n if symmetric else n - 1
    if period == 0:  # a single element reflects onto itself
        return _edge(x, axis, widths)
    before, after = widths
    while before:
        chunk = min(before, period)
        offset = 0 if symmetric else 1
        image = lax.rev(_part(x, offset, offset + chunk, axis), (axis,))
        if odd:
            image = lax.sub(lax.mul(_part(x, 0, 1, axis), np.asarray(2, util.dtype_of(x))[()]),
                            image)
        x, before = shape_ops.concatenate([image, x], axis), before - chunk
    while after:
        size = util.shape_of(x)[axis]
        chunk = min(after, period)
        offset = 0 if symmetric else 1
        image = lax.rev(_part(x, size - offset - chunk, size - offset, axis), (axis,))
        if odd:
            image = lax.sub(lax.mul(_part(x, size - 1, size, axis),
                                    np.asarray(2, util.dtype_of(x))[()]), image)
        x, after = shape_ops.concatenate([x, image], axis), after - chunk
    return x


def _linear_ramp(x, axis: int, widths, end_values):
    n, dtype = util.shape_of(x)[axis], util.dtype_of(x)
    compute = np.dtype(np.float64 if dtype == np.float64 else np.float32) \
        if util.dtype_category(dtype) in "biu" else dtype
    parts = []
    for side, width in ((0, widths[0]), (1, widths[1])):
        if not width:
            parts.append(None)
            continue
        edge = util.convert(_part(x, 0, 1, axis) if side == 0 else _part(x, n - 1, n, axis),
                            compute)
        end = util.convert(util.ensure_arraylike("pad", end_values[side]), compute)
        # NumPy's linspace(end, edge, width, endpoint=False): end + i * ((edge - end) / width)
        shape = [1] * len(util.shape_of(x))
        shape[axis] = width
        steps = np.arange(width, dtype=compute)
        steps = lax.reshape(steps if side == 0 else steps[::-1].copy(), tuple(shape))
        step = ufuncs.divide(ufuncs.subtract(edge, end), np.asarray(width, compute))
        ramp = ufuncs.add(end, ufuncs.multiply(steps, step))
        if util.dtype_category(dtype) in "iu":
            ramp = ufuncs.floor(ramp)  # NumPy's linspace rounds down into integer dtypes
        parts.append(util.convert(ramp, dtype))
    middle = [x]
    return shape_ops.concatenate([p for p in (parts[0], *middle, parts[1]) if p is not None],
                                 axis)


_STATISTICS = {"maximum": reductions.max, "minimum": reductions.min, "mean": reductions.mean}


def _statistic(x, axis: int, widths, lengths, mode: str):
    n, dtype = util.shape_of(x)[axis], util.dtype_of(x)
    parts = []
    for side, width in ((0, widths[0]), (1, widths[1])):
        if not width:
            parts.append(None)
            continue
        length = n if lengths[side] is None else max(1, min(operator.index(lengths[side]), n))
        region = _part(x, 0, length, axis) if side == 0 else _part(x, n - length, n, axis)
        if mode == "median":
            from plax_stdlib.numpy.statistics import median
            value = median(region, axis=axis, keepdims=True)
        else:
            value = _STATISTICS[mode](region, axis=axis, keepdims=True)
        if util.dtype_category(dtype) in "iu" and mode in ("mean", "median"):
            value = ufuncs.round(value)
        shape = list(util.shape_of(x))
        shape[axis] = width
        parts.append(shape_ops.broadcast_to(util.convert(value, dtype), tuple(shape)))
    return shape_ops.concatenate([p for p in (parts[0], x, parts[1]) if p is not None], axis)


def pad(array, pad_width, mode="constant", **kwargs):
    """`array` padded along each axis by `pad_width` elements before and after, filled
    as `mode` says.

    Follows `numpy.pad`, with its modes: "constant" (`constant_values`, default 0),
    "edge", "linear_ramp" (`end_values`), "maximum", "mean", "median", "minimum"
    (`stat_length`), "reflect" and "symmetric" (`reflect_type`), "wrap", "empty"
    (zeros here: XLA has no uninitialized memory), or a function
    `f(vector, iaxis_pad_width, iaxis, kwargs)` returning the padded vector (NumPy
    writes into the vector in place instead). `pad_width` must be concrete; the fill
    values may be traced.

    Args:
        array: an array.
        pad_width: an int (every side), a pair `(before, after)` (every axis), or one
            pair per axis.
        mode: a mode name or a function.
        **kwargs: the mode's options (`constant_values`, `end_values`,
            `stat_length`, `reflect_type`).

    Returns:
        The padded array.

    Raises:
        ValueError: an unknown mode, negative or malformed widths, or options that do
            not belong to the mode.

    Examples:
        >>> x = jnp.array([1, 2, 3])
        >>> jnp.pad(x, (1, 2))
        Array([0, 1, 2, 3, 0, 0], dtype=int32)
        >>> jnp.pad(x, 2, mode="reflect"), jnp.pad(x, 1, mode="edge")
        (Array([3, 2, 1, 2, 3, 2, 1], dtype=int32), Array([1, 1, 2, 3, 3], dtype=int32))
        >>> jnp.pad(jnp.ones((1, 2), jnp.int32), ((1, 0), (0, 1)), constant_values=7)
        Array([[7, 7, 7],
               [1, 1, 7]], dtype=int32)
    """
    array = util.ensure_arraylike("pad", array)
    ndim = len(util.shape_of(array))
    widths = _widths(pad_width, ndim)
    if callable(mode):
        _check_nonnegative(widths, pad_width)
        return _pad_with_function(array, widths, mode, kwargs)
    if mode not in _MODE_OPTIONS:
        raise NotImplementedError(f"pad: unimplemented padding mode {mode!r}")
    _check_nonnegative(widths, pad_width)
    unexpected = set(kwargs) - set(_MODE_OPTIONS[mode])
    if unexpected:
        raise ValueError(f"pad: unsupported keyword arguments for mode {mode!r}: "
                         f"{sorted(unexpected)}")
    reflect_type = kwargs.get("reflect_type", "even")
    if reflect_type not in ("even", "odd"):
        raise ValueError(f"pad: reflect_type must be 'even' or 'odd', got {reflect_type!r}")
    # The fill values the mode reads are traced (as JAX's constant_values); the rest is
    # static.
    if mode == "constant":
        values = kwargs.get("constant_values", 0)
        _pairs(values, ndim, "constant_values")  # checks the shape
    elif mode == "linear_ramp":
        values = kwargs.get("end_values", 0)
        _pairs(values, ndim, "end_values")
    else:
        values = 0
    lengths = kwargs.get("stat_length")
    if lengths is not None:
        lengths = tuple(tuple(operator.index(v) if v is not None else None for v in pair)
                        for pair in _pairs(lengths, ndim, "stat_length"))
    return _pad(array, widths, mode, values, lengths, reflect_type)


@util.compiled(static_argnums=(1, 2, 4, 5))
def _pad(array, widths, mode, values, lengths, reflect_type):
    """`pad` with a mode name, as one jitted call (JAX's `_pad`): `values` are the
    constant or end values, traced."""
    ndim = len(util.shape_of(array))
    if ndim == 0:
        return array
    if mode == "constant":
        return _pad_constant(array, widths, values)
    if mode == "linear_ramp":
        values = _pairs(values, ndim, "end_values")
    elif mode in _STATISTICS or mode == "median":
        values = ((None, None),) * ndim if lengths is None else lengths
    x = array
    for axis, w in enumerate(widths):
        if util.shape_of(x)[axis] == 0 and w != (0, 0) and mode != "empty":
            raise ValueError(f"pad: cannot apply {mode!r} padding to an empty axis")
        if w == (0, 0) and (mode not in ("edge", "wrap") or util.shape_of(x)[axis] == 0):
            continue  # (JAX's edge and wrap go through every non-empty axis)
        if mode == "empty":
            x = _constant(x, axis, w, (0, 0))
        elif mode == "edge":
            x = _edge(x, axis, w)
        elif mode == "wrap":
            x = _wrap(x, axis, w)
        elif mode in ("reflect", "symmetric"):
            x = _reflect(x, axis, w, mode == "symmetric", reflect_type == "odd")
        elif mode == "linear_ramp":
            x = _linear_ramp(x, axis, w, values[axis])
        else:
            x = _statistic(x, axis, w, values[axis], mode)
    return x


def _pad_constant(array, widths, values):
    """Constant padding as JAX's: the values in `array`'s type; one `lax.pad` of every
    axis for a single value, else one per padded side."""
    from plax_stdlib.numpy.creation import asarray
    values = util.convert(asarray(values), util.dtype_of(array), util.is_weak(array))
    ndim = len(util.shape_of(array))
    # Concrete widths as NumPy integers, as JAX's come out of its np.asarray of them.
    widths = tuple(tuple(np.int64(w) if isinstance(w, int) else w for w in pair)
                   for pair in widths)
    shape = util.shape_of(values)
    if len(shape) == 1 and shape[0] == 1:
        values, shape = lax.reshape(values, ()), ()
    if not shape:
        return lax.pad(array, values, [(before, after, 0) for before, after in widths])
    values = shape_ops.broadcast_to(values, (ndim, 2))
    for axis, (before, after) in enumerate(widths):
        for side, config in ((0, (before, 0, 0)), (1, (0, after, 0))):
            if config[side]:
                full = [(0, 0, 0)] * ndim
                full[axis] = config
                array = lax.pad(array, values[axis, side], full)
    return array


def _pad_with_function(array, widths, function, kwargs):
    """NumPy's callable mode: `function(vector, (before, after), axis, kwargs)` returns
    each 1-D slice (zero-padded) with its padding filled in."""
    from plax_stdlib.numpy.functional import apply_along_axis
    x = array
    for axis, w in enumerate(widths):
        x = _constant(x, axis, w, (0, 0))
    for axis, w in enumerate(widths):
        x = apply_along_axis(function, axis, x, w, axis, kwargs)
    return util.as_array(x)

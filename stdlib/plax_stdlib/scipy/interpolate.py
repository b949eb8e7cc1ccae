"""`plax.scipy.interpolate.RegularGridInterpolator`: values on a rectangular grid
interpolated (multilinear or nearest) at arbitrary points, with JAX's semantics: no
`bounds_error`, points outside the grid get `fill_value` (or are extrapolated when
it is None), and the interpolator is a pytree, so it passes through `jit` and
`vmap` and is differentiable in its values and query points.

Beyond JAX, a grid known outside tracing is checked as SciPy checks it (1-D axes
as long as the values' axes, strictly monotonic) and a descending axis is flipped,
as SciPy does, rather than answered wrongly."""
from __future__ import annotations

import functools
import itertools
import operator

import numpy as np

import plax
from plax.extend import tree_util
from plax.extend.core import Tracer
from plax_stdlib import numpy as jnp
from plax_stdlib.numpy import util

_METHODS = ("linear", "nearest")


def _check_method(method):
    if method not in _METHODS:
        raise ValueError(f"method {method!r} is not defined; RegularGridInterpolator "
                         f"supports {list(_METHODS)}")


def _ascending_axis(axis: int, points, values):
    """`points` (one grid axis) and `values`, flipped along `axis` when the points
    are known and descending; ValueError when they are known and not monotonic."""
    if points.ndim != 1:
        raise ValueError(f"The points in dimension {axis} must be 1-dimensional, got "
                         f"shape {points.shape}")
    if points.shape[0] != values.shape[axis]:
        raise ValueError(f"There are {points.shape[0]} points and {values.shape[axis]} "
                         f"values in dimension {axis}")
    if isinstance(points, Tracer) or points.shape[0] < 2:
        return points, values
    steps = np.diff(np.asarray(points))
    if np.all(steps > 0):
        return points, values
    if np.all(steps < 0):
        return jnp.flip(points), jnp.flip(values, axis)
    raise ValueError(f"The points in dimension {axis} must be strictly ascending or "
                     "descending")


def _query_points(xi, ndim: int):
    """`xi` as an array whose last axis holds the coordinates of each point: a tuple
    of coordinate arrays is broadcast and stacked, a 1-D array is split into points."""
    if isinstance(xi, tuple) and len(xi) == 1:
        xi = xi[0]
    if isinstance(xi, tuple):
        util.check_arraylike("RegularGridInterpolator", *xi)
        coordinates = jnp.broadcast_arrays(*xi)
        return jnp.stack([c.astype(float) for c in coordinates], axis=-1)
    util.check_arraylike("RegularGridInterpolator", xi)
    xi = jnp.asarray(xi)
    return xi.reshape(-1, ndim) if xi.ndim == 1 else xi


class RegularGridInterpolator:
    """Interpolation of `values` on the grid whose axes are `points`: a callable
    taking points of shape (..., len(points)) to values of shape
    (...,) + values.shape[len(points):]."""

    def __init__(self, points, values, method="linear", bounds_error=False,
                 fill_value=np.nan):
        _check_method(method)
        if bounds_error:
            raise NotImplementedError("RegularGridInterpolator: `bounds_error` takes no "
                                      "effect under JIT; points outside the grid get "
                                      "`fill_value` (None extrapolates)")
        util.check_arraylike("RegularGridInterpolator", values)
        values = jnp.asarray(values)
        if len(points) > values.ndim:
            raise ValueError(f"there are {len(points)} point arrays, but values has "
                             f"{values.ndim} dimensions")
        values, = util.promote_dtypes_inexact(values)
        if fill_value is not None:
            util.check_arraylike("RegularGridInterpolator", fill_value)
            fill_value = jnp.asarray(fill_value)
            if not jnp.can_cast(fill_value.dtype, values.dtype, casting="same_kind"):
                raise ValueError("fill_value must be either 'None' or of a type compatible "
                                 f"with values: {fill_value.dtype} does not cast to "
                                 f"{values.dtype}")
        util.check_arraylike("RegularGridInterpolator", *points)
        grid = []
        for axis, p in enumerate(points):
            p, values = _ascending_axis(axis, jnp.asarray(p), values)
            grid.append(p)
        self.method = method
        self.bounds_error = bounds_error
        self.fill_value = fill_value
        self.grid = tuple(grid)
        self.values = values

    def __call__(self, xi, method=None):
        method = self.method if method is None else method
        _check_method(method)
        ndim = len(self.grid)
        xi = _query_points(xi, ndim)
        if xi.shape[-1] != ndim:
            raise ValueError(f"the requested sample points xi have dimension {xi.shape[-1]}, "
                             f"but this RegularGridInterpolator has dimension {ndim}")
        return _interpolate(self, xi.reshape(-1, ndim), method).reshape(
            xi.shape[:-1] + self.values.shape[ndim:])


@functools.partial(plax.jit, static_argnames=("method",))
def _interpolate(interpolator, xi, method):
    """The interpolated values at the points `xi` (M, ndim), compiled once per shape
    rather than dispatched op by op."""
    indices, distances, outside = _cells(interpolator.grid, xi)
    values = interpolator.values
    if method == "linear":
        result = _linear(values, indices, distances)
    else:
        result = values[tuple(jnp.where(d <= 0.5, i, i + 1) for i, d in zip(indices, distances))]
    if interpolator.fill_value is not None:
        outside = outside.reshape(outside.shape + (1,) * (result.ndim - 1))
        result = jnp.where(outside, interpolator.fill_value, result)
    return result


def _cells(grid, xi):
    """Per axis, the lower corner index of each point's cell and the point's distance
    from it in cell widths; and which points lie outside the grid."""
    indices, distances, outside = [], [], False
    for x, g in zip(xi.T, grid):
        if g.shape[0] == 1:
            i, distance = jnp.zeros(x.shape, np.int32), jnp.zeros_like(x)
        else:
            i = jnp.clip(jnp.searchsorted(g, x) - 1, 0, g.shape[0] - 2)
            distance = (x - g[i]) / (g[i + 1] - g[i])
        indices.append(i)
        distances.append(distance)
        outside = outside | (x < g[0]) | (x > g[-1])
    return indices, distances, jnp.broadcast_to(outside, xi.shape[:1])


def _linear(values, indices, distances):
    trailing = (slice(None),) + (None,) * (values.ndim - len(indices))
    terms = []
    for corner in itertools.product((0, 1), repeat=len(indices)):
        weights = [d if upper else 1 - d for upper, d in zip(corner, distances)]
        weight = functools.reduce(operator.mul, weights)
        value = values[tuple(i + upper for upper, i in zip(corner, indices))]
        terms.append(value * weight[trailing])
    return functools.reduce(operator.add, terms)


def _flatten(interpolator):
    return ((interpolator.grid, interpolator.values, interpolator.fill_value),
            (interpolator.method, interpolator.bounds_error))


def _unflatten(aux, children):
    """Rebuilt without `__init__`'s checks: the leaves may be tracers or tree_util
    placeholders."""
    interpolator = object.__new__(RegularGridInterpolator)
    interpolator.method, interpolator.bounds_error = aux
    interpolator.grid, interpolator.values, interpolator.fill_value = children
    return interpolator


tree_util.register_pytree_node(RegularGridInterpolator, _flatten, _unflatten)

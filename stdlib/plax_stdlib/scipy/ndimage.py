"""`plax.scipy.ndimage.map_coordinates`: an array sampled at fractional coordinates by
nearest-neighbour (order 0) or multilinear (order 1) interpolation, with JAX's
boundary modes (its 'constant' and 'wrap' are SciPy's 'grid-constant' and 'grid-wrap';
order 0 rounds halves away from zero, as JAX does)."""
from __future__ import annotations

import functools
import itertools
import operator

import numpy as np

from plax_stdlib import numpy as jnp
from plax_stdlib.numpy import util

_MODES = ("constant", "nearest", "wrap", "mirror", "reflect")


def _in_range(index, size, mode):
    """The index of the element that `index` stands for under `mode`, and whether it
    stands for one at all (only 'constant' has indices that stand for none)."""
    if mode == "constant":
        return jnp.clip(index, 0, size - 1), jnp.logical_and(index >= 0, index < size)
    if mode == "nearest":
        return jnp.clip(index, 0, size - 1), True
    if mode == "wrap":
        return index % size, True
    # mirror: about the edge elements (period 2(n - 1)); reflect: about the edges
    # themselves, each edge element repeated (period 2n).
    period = max(2 * size - 2, 1) if mode == "mirror" else 2 * size
    folded = index % period
    return jnp.where(folded < size, folded, period - folded - (mode == "reflect")), True


def _round_half_away_from_zero(x):
    return jnp.sign(x) * jnp.floor(jnp.abs(x) + 0.5)


def _neighbours(coordinate, order):
    """The grid points a coordinate's value is taken from, with their weights."""
    if order == 0:
        return [(_round_half_away_from_zero(coordinate).astype(np.int32), None)]
    lower = jnp.floor(coordinate)
    upper_weight = coordinate - lower
    lower = lower.astype(np.int32)
    return [(lower, 1 - upper_weight), (lower + 1, upper_weight)]


def map_coordinates(input, coordinates, order, mode="constant", cval=0.0):
    """input[coordinates] interpolated: `coordinates` holds one array of positions per
    axis of `input` (all of one shape, the result's). Integer inputs round the
    interpolated values half away from zero."""
    util.check_arraylike("map_coordinates", input)
    input = jnp.asarray(input)
    coordinates = [jnp.asarray(c) for c in coordinates]
    if len(coordinates) != input.ndim:
        raise ValueError("map_coordinates: coordinates must be a sequence of length "
                         f"input.ndim={input.ndim}, but {len(coordinates)} were given")
    if len({c.shape for c in coordinates}) > 1:
        raise ValueError("map_coordinates: the coordinate arrays must have one shape; got "
                         f"{[c.shape for c in coordinates]}")
    if order not in (0, 1):
        raise NotImplementedError(f"map_coordinates: order={order} is not supported (only "
                                  "0 and 1, as in JAX)")
    if mode not in _MODES:
        raise NotImplementedError(f"map_coordinates: mode={mode!r} is not supported; "
                                  f"expected one of {list(_MODES)}")
    weight_dtype = util.promote_dtypes_inexact(input)[0].dtype
    coordinates = [c.astype(weight_dtype) if not jnp.issubdtype(c.dtype, np.floating) else c
                   for c in coordinates]
    cval = jnp.asarray(cval, input.dtype)
    terms = []
    for corner in itertools.product(*(_neighbours(c, order) for c in coordinates)):
        mapped = [_in_range(i, n, mode) for (i, _), n in zip(corner, input.shape)]
        value = input[tuple(i for i, _ in mapped)]
        valid = functools.reduce(jnp.logical_and, [v for _, v in mapped], True)
        value = jnp.where(valid, value, cval) if mode == "constant" else value
        weights = [w for _, w in corner if w is not None]
        terms.append(functools.reduce(operator.mul, weights, value) if weights else value)
    result = functools.reduce(operator.add, terms)
    if jnp.issubdtype(input.dtype, np.integer):
        result = _round_half_away_from_zero(result)
    return result.astype(input.dtype)

"""`standardize` and `one_hot`: the array preparations of `plax.nn`."""
from __future__ import annotations

import numpy as np

import plax
from plax.extend import dtypes
from plax.extend.core import canonical_dim
from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.numpy import util


@plax.jit(static_argnames=("axis", "algorithm"))
def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None, *,
                algorithm: str = "fast"):
    """Normalizes `x` to zero mean and unit variance along `axis`:
    `(x - mean) / sqrt(variance + epsilon)`.

    Statistics not given are computed from `x` (from the elements `where` selects):
    the variance as `E[x²] - E[x]²` (`algorithm="fast"`, clipped at 0) or as
    `E[(x - E[x])²]` (`algorithm="stable"`, one more pass but no cancellation).
    This is the core of layer normalization.

    Args:
        x: an array.
        axis: the axis or tuple of axes the statistics are taken over (static).
        mean: a precomputed mean, broadcastable to `x`.
        variance: a precomputed variance, broadcastable to `x`.
        epsilon: added to the variance before the square root.
        where: a boolean mask broadcastable to `x` for the statistics.
        algorithm: `"fast"` or `"stable"` (static, keyword-only).

    Returns:
        An array of `x`'s shape.

    Raises:
        ValueError: `algorithm` is neither "fast" nor "stable".

    Examples:
        >>> plax.nn.standardize(jnp.array([1.0, 2.0, 3.0]))
        Array([-1.224...,  0. ,  1.224...], dtype=float32)
    """
    util.check_arraylike("standardize", x)
    for name, value in (("mean", mean), ("variance", variance), ("where", where)):
        if value is not None:
            util.check_arraylike(f"standardize ({name})", value)
    if algorithm not in ("fast", "stable"):
        raise ValueError(f"Unknown algorithm '{algorithm}'. Expected 'fast' or 'stable'.")
    if mean is None:
        mean = jnp.mean(x, axis, keepdims=True, where=where)
    if variance is None:
        if algorithm == "stable":
            variance = jnp.mean(jnp.square(x - mean), axis, keepdims=True, where=where)
        else:
            variance = jnp.mean(jnp.square(x), axis, keepdims=True, where=where)
            variance = jnp.clip(variance - jnp.square(mean), 0)
    return (x - mean) * lax.rsqrt(variance + epsilon)


def one_hot(x, num_classes: int, *, dtype=None, axis: int = -1):
    """Encodes integer class labels as one-hot vectors.

    Args:
        x: an integer array of labels.
        num_classes: the vectors' length; labels outside `[0, num_classes)` give
            all-zero vectors.
        dtype: the result's dtype (default: the default float type).
        axis: where the new axis of length `num_classes` goes.

    Returns:
        An array of `x`'s shape with the new axis inserted at `axis`.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> plax.nn.one_hot(jnp.array([0, 2]), 3)
        Array([[1., 0., 0.],
               [0., 0., 1.]], dtype=float32)
    """
    try:
        num_classes = canonical_dim(num_classes)  # symbolic in export (`x.shape[0]`)
    except TypeError:
        raise TypeError("one_hot: num_classes must be a concrete integer (it sets the "
                        f"result's shape), got {num_classes!r}") from None
    if num_classes < 0:
        raise ValueError(f"one_hot: num_classes must be non-negative, got {num_classes}")
    x = jnp.asarray(x)
    dtype = dtypes.default_float_dtype() if dtype is None else dtype
    return _one_hot(x, num_classes, dtype=util.check_user_dtype(dtype, "one_hot"), axis=axis)


@plax.jit(static_argnames=("num_classes", "dtype", "axis"))
def _one_hot(x, num_classes, *, dtype, axis):
    ndim = np.ndim(x)
    if not isinstance(axis, int) or not -ndim - 1 <= axis <= ndim:
        raise ValueError(f"one_hot: axis {axis!r} is out of bounds for the result of rank "
                         f"{ndim + 1}")
    position = axis % (ndim + 1)
    classes_shape = [1] * ndim
    classes_shape.insert(position, num_classes)
    labels = jnp.expand_dims(x, position)
    classes = lax.broadcasted_iota(util.dtype_of(x), tuple(classes_shape), position)
    return (labels == classes).astype(dtype)

"""Reordering and picking: `permutation` and `choice`.

A shuffle sorts by fresh random 32-bit keys, repeated often enough (by JAX's
static criterion: ceil(3 ln n / ln 2**32) rounds) that ties are unlikely to bias
it, which parallelises better than Fisher–Yates. Both follow JAX 0.10.2 exactly.
"""
from __future__ import annotations

import functools
import math
import operator
from collections.abc import Sequence

import numpy as np

import plax
from plax.extend.core import SymbolicDimension
from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.lax.dimensions import dimension_as_value
from plax_stdlib.numpy.util import (
    canonicalize_axis,
    check_arraylike,
    concrete_or_error,
    promote_dtypes_inexact,
)
from plax_stdlib.random import key_primitives as prims
from plax_stdlib.random.continuous import gumbel_mode, _gumbel
from plax_stdlib.random.discrete import randint, top_k_indices
from plax_stdlib.random.keys import check_prng_key, split_typed
from plax_stdlib.lax.out_sharding import laid_out
from plax_stdlib.random.uniform_normal import _uniform


def permutation(key, x, axis: int = 0, independent: bool = False, *, out_sharding=None):
    """Returns a random permutation of `x` along `axis` (of `arange(x)` for an int).

    Args:
        key: a PRNG key.
        x: an array, or an int `n` to permute `arange(n)`.
        axis: the axis to shuffle along.
        independent: shuffle each slice along `axis` on its own, instead of moving
            whole slices.
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        A shuffled copy of `x` (or of `arange(x)`).

    Examples:
        >>> import plax
        >>> perm = plax.random.permutation(plax.random.key(0), 5)
        >>> sorted(perm.tolist())
        [0, 1, 2, 3, 4]
    """
    key, _ = check_prng_key("permutation", key)
    check_arraylike("permutation", x)
    axis = canonicalize_axis(axis, np.ndim(x) or 1)
    if not np.ndim(x):
        if not (isinstance(x, SymbolicDimension) or jnp.issubdtype(jnp.asarray(x).dtype,
                                                                    np.integer)):
            raise TypeError("x must be an integer or at least 1-dimensional")
        # (a symbolic size: InconclusiveDimensionOperation, the range needs a constant)
        n = operator.index(concrete_or_error(x, "argument x of plax.random.permutation()"))
        return laid_out("permutation", out_sharding,
                        lambda k: _shuffle(k, jnp.arange(n), axis), key)
    return laid_out("permutation", out_sharding,
                    lambda k, x: _permuted(k, x, axis, independent), key, x)


def _permuted(key, x, axis: int, independent: bool):
    if independent or np.ndim(x) == 1:
        return _shuffle(key, x, axis)
    order = _shuffle(key, jnp.arange(x.shape[axis]), 0)
    return jnp.take(x, order, axis, unique_indices=True)


@functools.partial(plax.jit, static_argnums=(2,))
def _shuffle(key, x, axis):
    """`x` reordered along `axis` by sorting on random keys, in enough rounds."""
    if isinstance(x.size, SymbolicDimension):
        raise NotImplementedError(
            f"plax.random.permutation and shuffles of an array of symbolic size {x.size} "
            "(shape polymorphism): the number of sorting rounds depends on the size")
    rounds = int(np.ceil(3 * np.log(max(1, x.size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(rounds):
        key, subkey = split_typed(key)
        _, x = lax.sort_key_val(prims.random_bits(subkey, 32, x.shape), x, axis)
    return x


def _search_left(sorted_arr, query):
    """For each `query` value, the number of entries of the sorted 1-D `sorted_arr`
    below it (NumPy's `searchsorted(side='left')`), by a binary search (by counting,
    for a symbolic size, whose number of halvings is not known while tracing)."""
    n = sorted_arr.shape[0]
    if isinstance(n, SymbolicDimension):
        return (sorted_arr < jnp.expand_dims(query, -1)).sum(-1, dtype=np.int32)
    index = jnp.zeros(np.shape(query), np.int32)
    step = 1 << (n.bit_length() - 1) if n else 0
    while step:
        candidate = index + step
        below = sorted_arr[jnp.clip(candidate - 1, 0, n - 1)] < query
        index = jnp.where((candidate <= n) & below, candidate, index)
        step >>= 1
    return index


def choice(key, a, shape: Sequence[int] = (), replace: bool = True, p=None, axis: int = 0,
           mode=None):
    """Draws entries of `a` at random, with or without replacement, uniformly or
    with given probabilities.

    Args:
        key: a PRNG key.
        a: an array (entries are drawn along `axis`) or an int n (draws from
            `arange(n)`).
        shape: the shape of the draws.
        replace: draw with replacement.
        p: the probability of each entry (default: uniform); a 1-d array of
            `a`'s length along `axis`.
        axis: the axis of `a` to draw along.
        mode: `"low"` or `"high"` for the Gumbel noise of weighted draws
            without replacement (see `gumbel`).

    Returns:
        An array of the draws: `shape` followed by `a`'s other dimensions.

    Raises:
        ValueError: more draws than entries without replacement, or a shape of
            `p` that does not match `a`.

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> x = plax.random.choice(key, 5, (5,), replace=False)
        >>> sorted(x.tolist())
        [0, 1, 2, 3, 4]
        >>> import plax.numpy as jnp
        >>> plax.random.choice(key, jnp.array([10, 20]), (4,), p=jnp.array([0.0, 1.0]))
        Array([20, 20, 20, 20], dtype=int32)
    """
    key, _ = check_prng_key("choice", key)
    if not isinstance(shape, Sequence):
        raise TypeError(f"shape argument of plax.random.choice must be a sequence, got "
                        f"{shape}")
    check_arraylike("choice", a)
    symbolic = isinstance(a, SymbolicDimension)  # (export) a draw from range(a)
    arr = jnp.asarray(dimension_as_value(a) if symbolic else a)
    if symbolic:
        n_inputs = a
    elif arr.ndim == 0:
        try:
            n_inputs = operator.index(concrete_or_error(a, "The error occurred in "
                                                           "plax.random.choice()"))
        except TypeError:
            raise TypeError(f"choice: a must be an int or an array, got {a!r}") from None
    else:
        axis = canonicalize_axis(axis, arr.ndim)
        n_inputs = arr.shape[axis]
    shape = tuple(shape)
    n_draws = math.prod(shape)
    if n_draws == 0:
        return jnp.zeros(shape, dtype=arr.dtype)
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population "
                         f"(size {n_inputs}) when 'replace=False'")
    if p is None:
        if replace:
            ind = randint(key, shape, 0, n_inputs)
            result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis)
        else:
            slices = (slice(None),) * axis + (slice(n_draws),)
            result = permutation(key, n_inputs if arr.ndim == 0 else arr, axis)[slices]
    else:
        check_arraylike("choice", p)
        (p_arr,) = promote_dtypes_inexact(p)
        if p_arr.shape != (n_inputs,):
            raise ValueError(f"p must be None or a 1D vector with the same size as "
                             f"a.shape[axis]. p has shape {p_arr.shape} and a.shape[axis] "
                             f"is {n_inputs}.")
        if replace:
            p_cuml = jnp.cumsum(p_arr)
            r = p_cuml[-1] * (1 - _uniform(key, 0.0, 1.0, shape, p_cuml.dtype))
            ind = _search_left(p_cuml, r).astype(int)
        else:  # the Gumbel top-k trick
            g = _gumbel(key, (n_inputs,), p_arr.dtype, gumbel_mode(mode)) + jnp.log(p_arr)
            ind = top_k_indices(g, n_draws).astype(int)
        result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis)
    return result.reshape(shape if arr.ndim == 0 else
                          arr.shape[:axis] + shape + arr.shape[axis + 1:])

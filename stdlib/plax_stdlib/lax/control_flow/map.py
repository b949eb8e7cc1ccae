"""`map`: apply a function to each slice of arrays along their leading axis, one
slice (or one batch of `batch_size` slices, vectorized with `vmap`) at a time —
a `scan` with no carry."""
from __future__ import annotations

import plax
from plax.extend import tree_util
from plax.extend.core import get_aval
from plax_stdlib.lax import shape_ops
from plax_stdlib.lax.control_flow.scan import scan


def map(f, xs, *, batch_size: int | None = None):  # noqa: A001 - lax's name
    """Applies `f` to each slice of `xs` along its leading axis, in a compiled loop.

    It computes `stack([f(x) for x in xs])` like `vmap(f)(xs)` does, but one slice
    (or `batch_size` slices) at a time: less memory than `vmap`, more time.

    Args:
        f: a function of one slice (a pytree like `xs` without its leading axis).
        xs: a pytree of arrays with a common leading size.
        batch_size: map this many slices at once with `vmap` inside the loop.

    Returns:
        `f`'s results stacked along a new leading axis.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> plax.lax.map(lambda x: x ** 2, jnp.arange(4.0))
        Array([0., 1., 4., 9.], dtype=float32)
    """
    if not callable(f):
        raise TypeError(f"lax.map: f argument should be callable, got {f!r}")
    if batch_size is None:
        return scan(lambda _, x: ((), f(x)), (), xs)[1]
    batch_size = int(batch_size)
    if batch_size < 1:
        raise ValueError(f"lax.map: batch_size must be a positive int, got {batch_size}")
    leaves, tree = tree_util.tree_flatten(xs)
    if not leaves:
        raise ValueError("lax.map: xs has no arrays to map over")
    n = get_aval(leaves[0]).shape[0] if get_aval(leaves[0]).shape else 0
    batched_f = plax.vmap(f)  # vmap is a transform: reached through the facade
    n_batches = n // batch_size
    n_main = n_batches * batch_size
    if n_batches == 0:
        return batched_f(xs)
    # Staged in JAX's order: each leaf's batches then its remainder, the loop, the
    # remainder's batch, then the loop's results flattened and joined to it.
    main_in, rest_in = [], []
    for x in leaves:
        main_in.append(shape_ops.reshape(x[:n_main], (n_batches, batch_size,
                                                      *get_aval(x).shape[1:])))
        if n_main < n:
            rest_in.append(x[n_main:])
    main_in = tree_util.tree_unflatten(tree, main_in)
    main_out = scan(lambda _, x: ((), batched_f(x)), (), main_in)[1]
    flatten = lambda y: shape_ops.reshape(y, (n_main, *get_aval(y).shape[2:]))  # noqa: E731
    if not rest_in:
        return tree_util.tree_map(flatten, main_out)
    rest_out = batched_f(tree_util.tree_unflatten(tree, rest_in))
    return tree_util.tree_map(lambda a, b: shape_ops.concatenate([flatten(a), b], 0),
                              main_out, rest_out)

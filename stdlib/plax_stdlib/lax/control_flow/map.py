"""`map`: apply a function to each slice of arrays along their leading axis, one
slice (or one batch of `batch_size` slices, vectorized with `vmap`) at a time —
a `scan` with no carry."""
from __future__ import annotations

import plax
from plax.extend import tree_util
from plax.extend.core import get_aval
from plax_stdlib.lax import shape_ops, slicing
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
    n_main = (n // batch_size) * batch_size

    def batches(x):
        shape = get_aval(x).shape
        main = slicing.slice_in_dim(x, 0, n_main)
        return shape_ops.reshape(main, (n_main // batch_size, batch_size, *shape[1:]))

    main_in = tree_util.tree_unflatten(tree, [batches(x) for x in leaves])
    main_out = scan(lambda _, x: ((), batched_f(x)), (), main_in)[1]
    main_out = tree_util.tree_map(
        lambda y: shape_ops.reshape(y, (n_main, *get_aval(y).shape[2:])), main_out)
    if n_main == n:
        return main_out
    rest_in = tree_util.tree_unflatten(tree, [slicing.slice_in_dim(x, n_main, n)
                                              for x in leaves])
    rest_out = batched_f(rest_in)
    return tree_util.tree_map(lambda a, b: shape_ops.concatenate([a, b], 0), main_out, rest_out)

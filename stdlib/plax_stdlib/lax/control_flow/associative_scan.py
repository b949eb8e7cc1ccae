"""`associative_scan`: all prefix combinations of an associative operation, in
O(log n) rounds of vectorized calls (the odd/even recursion of parallel prefix
sums), written with slicing, padding and concatenation — no loop primitive."""
from __future__ import annotations

import numpy as np

from plax.extend import tree_util
from plax.extend.constructors import canonicalize_axis, describe
from plax.extend.core import get_aval
from plax_stdlib.lax import bitwise, elementwise, shape_ops, slicing


def associative_scan(fn, elems, reverse: bool = False, axis: int = 0):
    """All prefix combinations of `elems` under an associative operation, computed
    in parallel (in O(log n) steps).

    Returns `[e0, fn(e0, e1), fn(fn(e0, e1), e2), ...]` along `axis`. Because
    `fn` is associative the order of combination can be rearranged into a tree,
    which is much faster than a sequential `scan` on parallel hardware.

    Args:
        fn: an associative function of two pytrees like `elems` (slices of any
            length along `axis`), applied elementwise.
        elems: a pytree of arrays of one length along `axis`.
        reverse: scan from the end.
        axis: the dimension to scan along.

    Returns:
        A pytree like `elems` of the prefix combinations.

    Raises:
        ValueError: the leaves have different lengths along `axis`.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.associative_scan(jnp.add, jnp.arange(1, 6))
        Array([ 1, 3, 6, 10, 15], dtype=int32)
        >>> lax.associative_scan(jnp.maximum, jnp.array([1, 3, 2, 5, 4]))
        Array([1, 3, 3, 5, 5], dtype=int32)
    """
    if not callable(fn):
        raise TypeError(f"lax.associative_scan: fn argument should be callable, got {fn!r}")
    leaves, tree = tree_util.tree_flatten(elems)
    if not leaves:
        raise ValueError("lax.associative_scan: elems has no arrays")
    avals = [get_aval(x) for x in leaves]
    axis = canonicalize_axis("associative_scan", axis, len(avals[0].shape))
    sizes = {a.shape[axis] if len(a.shape) > axis else None for a in avals}
    if len(sizes) != 1 or None in sizes:
        raise ValueError("Array inputs to associative_scan must have the same first "
                         f"dimension along axis {axis}, got "
                         f"{', '.join(describe(a) for a in avals)}")
    if reverse:
        leaves = [shape_ops.rev(x, (axis,)) for x in leaves]

    def combine(a, b):
        out = fn(tree_util.tree_unflatten(tree, a), tree_util.tree_unflatten(tree, b))
        out_leaves, out_tree = tree_util.tree_flatten(out)
        if out_tree != tree:
            raise TypeError(f"associative_scan: fn must return a pytree of the structure of "
                            f"elems ({tree}), got {out_tree}")
        return out_leaves

    def piece(xs, start, stop=None, stride=1):
        return [slicing.slice_in_dim(x, start, stop, stride, axis) for x in xs]

    def prefix(xs):
        n = get_aval(xs[0]).shape[axis]
        if n < 2:
            return xs
        odd = prefix(combine(piece(xs, 0, n - 1, 2), piece(xs, 1, n, 2)))
        evens = combine(piece(odd, 0, n // 2 - 1) if n % 2 == 0 else odd, piece(xs, 2, n, 2))
        evens = [shape_ops.concatenate([first, e], axis)
                 for first, e in zip(piece(xs, 0, 1), evens)]
        return [_interleave(e, o, axis) for e, o in zip(evens, odd)]

    out = prefix(leaves)
    if reverse:
        out = [shape_ops.rev(x, (axis,)) for x in out]
    return tree_util.tree_unflatten(tree, out)


def _interleave(a, b, axis: int):
    """`a[0], b[0], a[1], b[1], ...` along `axis` (`a` may be one longer)."""
    aval = get_aval(a)
    n = aval.shape[axis] + get_aval(b).shape[axis]
    zero = np.zeros((), aval.dtype)[()]
    none = [(0, 0, 0)] * len(aval.shape)
    pad_a, pad_b = list(none), list(none)
    pad_a[axis] = (0, 1 if n % 2 == 0 else 0, 1)
    pad_b[axis] = (1, 0 if n % 2 == 0 else 1, 1)
    a, b = shape_ops.pad(a, zero, pad_a), shape_ops.pad(b, zero, pad_b)
    return bitwise.bitwise_or(a, b) if aval.dtype == np.bool_ else elementwise.add(a, b)

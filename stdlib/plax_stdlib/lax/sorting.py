"""`sort`: sorts several same-shaped operands together along one dimension, ordered
lexicographically by the first `num_keys` of them.

Floats sort as NumPy does: -0.0 equals 0.0, and NaNs (of either sign) come last.
Complex numbers sort by real part, then imaginary part.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from plax.extend.ad import Zero
from plax.extend.batching import moveaxis
from plax.extend.constructors import (
    ANY,
    canonicalize_axis,
    check_dtype,
    describe,
    kind_of,
    real_dtype,
    standard_primitive,
)
from plax.extend.core import ShapedArray, get_aval
from plax.extend.mlir import hlo, mu


def _sort_abstract_eval(*operands, dimension, is_stable, num_keys):
    if not operands:
        raise TypeError("sort requires at least one operand")
    for operand in operands:
        check_dtype("sort", operand, ANY)
    if any(o.shape != operands[0].shape for o in operands[1:]):
        raise TypeError(f"sort requires operands of the same shape, got "
                        f"{', '.join(map(describe, operands))}")
    if not 0 <= dimension < operands[0].ndim:
        raise ValueError(f"sort: dimension {dimension} out of range for operands of rank "
                         f"{operands[0].ndim}")
    if not 1 <= num_keys <= len(operands):
        raise ValueError(f"sort: num_keys must be between 1 and the number of operands "
                         f"({len(operands)}), got {num_keys}")
    return list(operands)


def _float_sort_key(x, dtype):
    """`x` with -0.0 made 0.0 and NaNs made positive, so that total order sorts as NumPy
    (in JAX's order of the two selects, which XLA then fuses alike)."""
    scalar = ShapedArray((), dtype)
    zero = mu.splat(0, scalar)
    canonical = hlo.select(mu.compare(x, zero, "EQ", dtype), zero, x)
    return hlo.select(mu.is_nan(x, dtype), mu.splat(np.nan, scalar), canonical)


def _key_parts(x, dtype) -> list[tuple[object, np.dtype]]:
    """The values, most significant first, that order one key."""
    kind = kind_of(dtype)
    if kind == "complex":
        part = real_dtype(dtype)
        return [(_float_sort_key(hlo.real(x), part), part),
                (_float_sort_key(hlo.imag(x), part), part)]
    if kind == "float":
        return [(_float_sort_key(x, dtype), dtype)]
    return [(x, dtype)]


def _lexicographic_less(lhs: Sequence, rhs: Sequence, key_dtypes: Sequence[np.dtype]):
    """lhs < rhs comparing keys in order, the first difference deciding."""
    parts = [(a, b, dt) for x, y, dtype in zip(lhs, rhs, key_dtypes)
             for (a, dt), (b, _) in zip(_key_parts(x, dtype), _key_parts(y, dtype))]
    less = None
    for a, b, dtype in reversed(parts):
        here = mu.compare(a, b, "LT", dtype, total_order=True)
        if less is not None:
            tie = mu.compare(a, b, "EQ", dtype, total_order=True)
            here = hlo.or_(here, hlo.and_(tie, less))
        less = here
    return less


def _sort_lower(ctx, *operands, dimension, is_stable, num_keys):
    op = hlo.SortOp(mu.ir_types(ctx.avals_out), list(operands), dimension=dimension,
                    is_stable=is_stable)
    scalars = [ShapedArray((), a.dtype) for a in ctx.avals_in]
    key_dtypes = [a.dtype for a in scalars[:num_keys]]

    def comparator(*args):  # lhs_0, rhs_0, lhs_1, rhs_1, ...
        return [_lexicographic_less(args[0:2 * num_keys:2], args[1:2 * num_keys:2],
                                    key_dtypes)]

    mu.build_region(op.comparator, [s for s in scalars for _ in (0, 1)], comparator)
    return list(op.results)


def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
    """Sort an iota along with the operands to learn the permutation, then apply it to
    every tangent (ties keep their order when `is_stable`, as the primal sort does)."""
    from plax_stdlib.lax.creation import broadcasted_iota
    shape = get_aval(primals[0]).shape
    *outs, permutation = sort_p.bind(*primals, broadcasted_iota(np.int32, shape, dimension),
                                     dimension=dimension, is_stable=is_stable,
                                     num_keys=num_keys)
    return outs, [t if isinstance(t, Zero) else _take_along(t, permutation, dimension)
                  for t in tangents]


def _take_along(x, indices, dimension: int):
    """`x[..., indices[...], ...]` along `dimension`, as one gather of single elements."""
    from plax_stdlib.lax.creation import broadcasted_iota
    from plax_stdlib.lax.gathers import GatherDimensionNumbers, GatherScatterMode, gather
    from plax_stdlib.lax.shape_ops import concatenate, expand_dims
    shape = get_aval(x).shape
    coordinates = [indices if d == dimension else broadcasted_iota(np.int32, shape, d)
                   for d in range(len(shape))]
    index_vectors = concatenate([expand_dims(c, (len(shape),)) for c in coordinates],
                                len(shape))
    everything = tuple(range(len(shape)))
    dnums = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=everything,
                                   start_index_map=everything)
    return gather(x, index_vectors, dnums, (1,) * len(shape),
                  mode=GatherScatterMode.PROMISE_IN_BOUNDS)


def _sort_batching(axis_data, args, dims, *, dimension, **params):
    """JAX's rule: the operands batched where the first batched one is, unbatched ones
    broadcast there (their dimensions Python ints, as JAX's Jaxprs print them)."""
    from plax_stdlib.lax.shape_ops import broadcast_in_dim
    shape, d = next((get_aval(x).shape, d) for x, d in zip(args, dims) if d is not None)
    kept = [i for i in range(len(shape)) if i != d]
    operands = [broadcast_in_dim(x, shape, kept) if xd is None else moveaxis(x, xd, d)
                for x, xd in zip(args, dims)]
    outs = sort_p.bind(*operands, dimension=dimension + (d <= dimension), **params)
    return outs, [d] * len(outs)


sort_p = standard_primitive("lax.sort", _sort_abstract_eval, _sort_lower, multiple_results=True,
                            dtypes=ANY, batching=_sort_batching, jvp=_sort_jvp)


def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
    """Sorts along a dimension; given several arrays, sorts them together by the
    first `num_keys` of them.

    Floating-point values are ordered with NaNs last (-0.0 and 0.0 are equal). With
    several operands, the tuple of the first `num_keys` arrays is the sort key
    (lexicographically) and all arrays are permuted the same way.

    Args:
        operand: an array, or a sequence of arrays of one shape.
        dimension: the dimension to sort along.
        is_stable: keep equal elements in their original order.
        num_keys: how many of the operands form the key.

    Returns:
        The sorted array, or a tuple of them for a sequence.

    Raises:
        TypeError: the operands' shapes differ.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.sort(jnp.array([3.0, jnp.nan, 1.0, 2.0]))
        Array([ 1., 2., 3., nan], dtype=float32)
        >>> keys, values = lax.sort([jnp.array([2, 1, 3]), jnp.array([20, 10, 30])])
        >>> values
        Array([10, 20, 30], dtype=int32)
    """
    many = isinstance(operand, (tuple, list))
    operands = list(operand) if many else [operand]
    if not operands:
        raise ValueError("sort requires at least one operand")
    ndim = get_aval(operands[0]).ndim
    dimension = canonicalize_axis("sort", dimension, max(ndim, 1), "dimension")
    out = sort_p.bind(*operands, dimension=dimension, is_stable=bool(is_stable),
                      num_keys=int(num_keys))
    return tuple(out) if many else out[0]


def sort_key_val(keys, values, dimension: int = -1, is_stable: bool = True):
    """Sorts `keys` along a dimension and permutes `values` the same way.

    Args:
        keys: an array.
        values: an array of `keys`'s shape.
        dimension: the dimension to sort along.
        is_stable: keep equal keys in their original order.

    Returns:
        `(sorted_keys, permuted_values)`.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.sort_key_val(jnp.array([3, 1, 2]), jnp.array([30.0, 10.0, 20.0]))
        (Array([1, 2, 3], dtype=int32), Array([10., 20., 30.], dtype=float32))
    """
    return sort((keys, values), dimension, is_stable, num_keys=1)

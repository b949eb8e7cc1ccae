"""`top_k` and the approximate `approx_max_k`/`approx_min_k`: the k largest (or
smallest) entries along one axis, with their int32 indices.

`top_k` lowers to `chlo.top_k` (IEEE total order: positive NaNs rank above
+inf); the approximate primitive is computed exactly on every platform (an exact
answer meets any recall target), as a stable sort of (value, index) pairs cut to the
output size, which is `k` when `aggregate_to_topk` and else XLA's reduction output
size.
"""
from __future__ import annotations

import numpy as np

from plax.extend.ad import Zero, tangent_aval
from plax.extend.batching import axes_batcher
from plax.extend.constructors import (
    ANY,
    FLOAT,
    canonicalize_axis,
    check_dtype,
    describe,
    kind_of,
    standard_primitive,
)
from plax.extend.core import ShapedArray, decided, get_aval
from plax.extend.mlir import chlo, hlo, mu

_INT32_MAX = np.iinfo(np.int32).max


def _check_k(name: str, operand: ShapedArray, k: int, axis: int) -> None:
    if operand.ndim == 0:
        raise TypeError(f"{name} operand must have >= 1 dimension, got {describe(operand)}")
    if not 0 <= axis < operand.ndim:
        raise ValueError(f"{name}: axis {axis} out of range for {describe(operand)}")
    if k < 0:
        raise ValueError(f"k argument to {name} must be nonnegative, got {k}")
    if operand.shape[axis] < k:
        raise ValueError(f"k argument to {name} must be no larger than size along axis; "
                         f"got k={k} with shape={operand.shape} and axis={axis}")
    if decided(lambda: operand.shape[axis] > _INT32_MAX + 1, False):
        raise ValueError(f"{name} returns int32 indices, which overflow for dimensions "
                         f"larger than {_INT32_MAX}; got {describe(operand)}")


def _with_axis_size(aval: ShapedArray, axis: int, size: int) -> list[ShapedArray]:
    shape = aval.shape[:axis] + (size,) + aval.shape[axis + 1:]
    return [ShapedArray(shape, aval.dtype, weak_type=aval.weak_type),
            ShapedArray(shape, np.dtype(np.int32))]


def _take_along(x, indices, axis: int):
    """`x` gathered at `indices` along `axis` (the tangent of a top-k selection): one
    gather of single elements, the other coordinates being those of `indices`."""
    from plax_stdlib.lax.creation import broadcasted_iota
    from plax_stdlib.lax.gathers import GatherDimensionNumbers, GatherScatterMode, gather
    from plax_stdlib.lax.shape_ops import concatenate, expand_dims
    shape = get_aval(indices).shape
    ndim = len(shape)
    coordinates = [indices if d == axis else broadcasted_iota(np.int32, shape, d)
                   for d in range(ndim)]
    index_vectors = concatenate([expand_dims(c, (ndim,)) for c in coordinates], ndim)
    everything = tuple(range(ndim))
    dnums = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=everything,
                                   start_index_map=everything)
    return gather(x, index_vectors, dnums, (1,) * ndim,
                  mode=GatherScatterMode.PROMISE_IN_BOUNDS)


def _selection_jvp(prim, axis_param: str):
    def jvp(primals, tangents, **params):
        (operand,), (tangent,) = primals, tangents
        values, indices = prim.bind(operand, **params)
        if isinstance(tangent, Zero):
            out_tangent = Zero(tangent_aval(get_aval(values)))
        else:
            out_tangent = _take_along(tangent, indices, params[axis_param])
        return [values, indices], [out_tangent, Zero(tangent_aval(get_aval(indices)))]
    jvp.__name__ = f"{prim.name}_jvp"
    return jvp


# --- top_k ----------------------------------------------------------------------------

def _top_k_abstract_eval(operand, *, k, axis):
    check_dtype("top_k", operand, ANY)
    if kind_of(operand.dtype) == "complex":
        raise ValueError(f"top_k is not compatible with complex inputs, got {describe(operand)}")
    _check_k("top_k", operand, k, axis)
    return _with_axis_size(operand, axis, k)


def _swap_last(ndim: int, axis: int) -> list[int]:
    perm = list(range(ndim))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    return perm


def _top_k_lower(ctx, operand, *, k, axis):
    ndim = ctx.avals_in[0].ndim
    perm = None if axis == ndim - 1 else _swap_last(ndim, axis)
    if perm is not None:
        operand = hlo.transpose(operand, perm)
    results = list(chlo.top_k(operand, k))
    if perm is not None:
        results = [hlo.transpose(r, perm) for r in results]
    return results


top_k_p = standard_primitive("lax.top_k", _top_k_abstract_eval, _top_k_lower,
                             multiple_results=True, batching=axes_batcher("axis"))
top_k_p.define_rule("jvp", _selection_jvp(top_k_p, "axis"))


def top_k(operand, k: int, *, axis: int = -1):
    """The `k` largest entries along an axis, largest first, with their indices.

    Equal entries keep their original order. For the smallest, negate the
    operand (or use `approx_min_k`).

    Args:
        operand: an array of a real dtype.
        k: how many entries to return (an int, at most the axis's size).
        axis: the axis to search (default: the last).

    Returns:
        `(values, indices)`: arrays whose size along `axis` is `k`; the indices
        are int32.

    Raises:
        ValueError: `k` is negative or larger than the axis.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.top_k(jnp.array([1.0, 4.0, 2.0, 4.0]), 2)
        (Array([4., 4.], dtype=float32), Array([1, 3], dtype=int32))
    """
    aval = get_aval(operand)
    k = int(k)
    if k < 0:
        raise ValueError(f"k argument to top_k must be nonnegative, got {k}")
    axis = canonicalize_axis("top_k", axis, max(aval.ndim, 1))
    values, indices = top_k_p.bind(operand, k=k, axis=axis)
    return values, indices


# --- approx_max_k / approx_min_k ---------------------------------------------------------

def _approx_output_size(n: int, rank: int, k: int, recall_target: float,
                        aggregate_to_topk: bool, size_override: int) -> int:
    if aggregate_to_topk:
        return k
    from jaxlib import _jax  # XLA's formula, as the TPU kernel uses it
    return int(_jax.approx_top_k_reduction_output_size(
        n, rank, k, recall_target, aggregate_to_topk, size_override)[0])


def _approx_top_k_abstract_eval(operand, *, k, reduction_dimension, recall_target, is_max_k,
                                reduction_input_size_override, aggregate_to_topk):
    name = "approx_max_k" if is_max_k else "approx_min_k"
    check_dtype(name, operand, FLOAT)
    _check_k(name, operand, k, reduction_dimension)
    if not 0 < recall_target <= 1:
        raise ValueError(f"{name}: recall_target must be in (0, 1], got {recall_target}")
    n = operand.shape[reduction_dimension]
    if reduction_input_size_override >= 0 and reduction_input_size_override < n:
        raise ValueError(f"{name}: reduction_input_size_override "
                         f"({reduction_input_size_override}) must be at least the size of "
                         f"the reduction dimension ({n})")
    size = _approx_output_size(n, operand.ndim, k, recall_target, aggregate_to_topk,
                               reduction_input_size_override)
    return _with_axis_size(operand, reduction_dimension, min(size, n))


def _approx_top_k_lower(ctx, operand, *, k, reduction_dimension, recall_target, is_max_k,
                        reduction_input_size_override, aggregate_to_topk):
    aval = ctx.avals_in[0]
    index_aval = ShapedArray(aval.shape, np.dtype(np.int32))
    iota = mu.iota(index_aval, reduction_dimension)
    op = hlo.SortOp(mu.ir_types([aval, index_aval]), [operand, iota],
                    dimension=reduction_dimension, is_stable=True)
    scalar = ShapedArray((), aval.dtype)
    index_scalar = ShapedArray((), np.dtype(np.int32))

    def comparator(a, b, _i, _j):
        return [mu.compare(a, b, "GT" if is_max_k else "LT", aval.dtype, total_order=True)]

    mu.build_region(op.comparator, [scalar, scalar, index_scalar, index_scalar], comparator)
    size = ctx.avals_out[0].shape[reduction_dimension]
    limits = list(aval.shape)
    limits[reduction_dimension] = size
    zeros, ones = [0] * aval.ndim, [1] * aval.ndim
    return [hlo.slice(r, zeros, limits, ones) for r in op.results]


approx_top_k_p = standard_primitive(
    "lax.approx_top_k", _approx_top_k_abstract_eval, _approx_top_k_lower,
    multiple_results=True, batching=axes_batcher("reduction_dimension"))
approx_top_k_p.define_rule("jvp", _selection_jvp(approx_top_k_p, "reduction_dimension"))


def _approx_k(is_max_k: bool):
    def approx_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
        aval = get_aval(operand)
        dim = canonicalize_axis(approx_k.__name__, reduction_dimension, max(aval.ndim, 1),
                                "reduction_dimension")
        values, indices = approx_top_k_p.bind(
            operand, k=int(k), reduction_dimension=dim, recall_target=float(recall_target),
            is_max_k=is_max_k, reduction_input_size_override=int(reduction_input_size_override),
            aggregate_to_topk=bool(aggregate_to_topk))
        return values, indices
    approx_k.__name__ = approx_k.__qualname__ = "approx_max_k" if is_max_k else "approx_min_k"
    which, result = (("largest", "(Array([9., 7.], dtype=float32), Array([1, 3], dtype=int32))")
                     if is_max_k else
                     ("smallest", "(Array([1., 3.], dtype=float32), Array([2, 0], dtype=int32))"))
    approx_k.__doc__ = f"""The `k` {which} entries along a dimension and their indices; in JAX an
    approximate search (faster on TPU), here computed exactly, so the recall is 1.

    Args:
        operand: an array.
        k: how many entries.
        reduction_dimension: the dimension to search.
        recall_target: the recall asked for (accepted; exact here).
        reduction_input_size_override: accepted for compatibility.
        aggregate_to_topk: accepted for compatibility (the results are always
            the top k).

    Returns:
        `(values, indices)`, the {which} first.

    Examples:
        >>> import plax.numpy as jnp
        >>> plax.lax.{approx_k.__name__}(jnp.array([3.0, 9.0, 1.0, 7.0]), 2)
        {result}
    """
    return approx_k


approx_max_k = _approx_k(True)
approx_min_k = _approx_k(False)

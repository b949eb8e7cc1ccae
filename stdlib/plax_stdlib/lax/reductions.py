"""Reductions over axes: the monoid primitives (`reduce_sum`, `reduce_max`...),
`argmax`/`argmin`, and `lax.reduce`, which recognises a monoid computation and
dispatches to its primitive."""
from __future__ import annotations

import math
import operator
from typing import Callable, Sequence

import numpy as np

from plax.extend import config, dtypes, tree_util
from plax.extend.ad import defjvp, instantiate, linear_jvp
from plax.extend.batching import axes_batcher
from plax.extend.constructors import (
    BOOL_OR_INT,
    COMPLEX,
    INT,
    NUMBER,
    ORDERED,
    canonicalize_axis,
    check_axes,
    check_dtype,
    describe,
    kind_of,
    standard_primitive,
)
from plax.extend.core import ShapedArray, Tracer, get_aval
from plax.extend.mlir import hlo, mu
from plax_stdlib.lax import bitwise, comparison, elementwise, shape_ops
from plax_stdlib.lax.out_sharding import check_out_sharding


def canonicalize_axes(name: str, axes: Sequence[int], ndim: int) -> tuple[int, ...]:
    """Axes checked to be in `[0, ndim)` (lax's reductions take no negative axes, as
    JAX's) and sorted; ValueError if repeated or out of range."""
    canonical = [canonicalize_axis(name, operator.index(a), ndim, "axis", negative=False)
                 for a in axes]
    if len(set(canonical)) != len(canonical):
        raise ValueError(f"{name}: repeated axis in {tuple(axes)}")
    return tuple(sorted(canonical))


def _reduced_shape(operand: ShapedArray, axes: Sequence[int]) -> tuple[int, ...]:
    return tuple(d for i, d in enumerate(operand.shape) if i not in axes)


# --- identities of the monoids ------------------------------------------------------------

def _has_inf(dtype) -> bool:
    """False for float8 formats such as e4m3fn, which have no infinities."""
    with np.errstate(invalid="ignore", over="ignore"):
        return bool(np.isinf(np.asarray(np.inf, dtype).astype(np.float32)))


def _real_part_dtype(dtype) -> np.dtype:
    """complex64 → float32, complex128 → float64; other dtypes unchanged."""
    return np.finfo(dtype).dtype if kind_of(dtype) == "complex" else np.dtype(dtype)


def lowest_value(dtype):
    """The identity of max: -inf, or the most negative finite value if there is no inf
    (for complex dtypes, -inf + 0j: complex numbers are ordered by real part first)."""
    kind = kind_of(dtype)
    if kind == "complex":
        return lowest_value(_real_part_dtype(dtype))
    if kind == "bool":
        return False
    if kind in ("signed", "unsigned"):
        return dtypes.iinfo(dtype).min
    return -np.inf if _has_inf(dtype) else dtypes.finfo(dtype).min


def highest_value(dtype):
    """The identity of min: inf, or the largest finite value if there is no inf
    (inf + 0j for complex dtypes)."""
    kind = kind_of(dtype)
    if kind == "complex":
        return highest_value(_real_part_dtype(dtype))
    if kind == "bool":
        return True
    if kind in ("signed", "unsigned"):
        return dtypes.iinfo(dtype).max
    return np.inf if _has_inf(dtype) else dtypes.finfo(dtype).max


def _all_ones(dtype):
    kind = kind_of(dtype)
    return True if kind == "bool" else (-1 if kind == "signed" else dtypes.iinfo(dtype).max)


# --- monoid reductions ---------------------------------------------------------------------

_BATCHING = axes_batcher("axes", reduces=True, numpy_ints=True)


def _monoid_reduction(name: str, kinds: frozenset, op_name: str, identity: Callable,
                      check: Callable | None = None, complex_direction: str | None = None,
                      keeps_weak_type: bool = True, **rules: Callable):
    def abstract_eval(operand, *, axes, out_sharding):
        check_dtype(name, operand, kinds)
        check_axes(name, axes, operand.ndim)
        if check is not None:
            check(operand, axes)
        return ShapedArray(_reduced_shape(operand, axes), operand.dtype,
                           keeps_weak_type and operand.weak_type)

    def lower(ctx, operand, *, axes, out_sharding):
        aval = ctx.avals_in[0]
        init = mu.dense_constant(identity(aval.dtype), aval.dtype)
        lexicographic = complex_direction is not None and kind_of(aval.dtype) == "complex"

        def combine(acc, x):
            if lexicographic:
                return [elementwise.complex_extremum(acc, x, complex_direction, aval.dtype)]
            return [getattr(hlo, op_name)(acc, x)]

        return mu.reduce([operand], [init], ctx.avals_out, axes, combine)[0]

    lower.__name__ = f"lower_{name}"
    if name != "reduce_sum":  # JAX's other reductions take no out_sharding: none printed
        rules["pretty_print"] = lambda eqn, _: sorted(
            kv for kv in eqn.params.items() if kv != ("out_sharding", None))
    return standard_primitive(f"lax.{name}", abstract_eval, lower, dtypes=kinds,
                              batching=_BATCHING, **rules)


def _kept_dims(ndim: int, axes) -> tuple[int, ...]:
    return tuple(d for d in range(ndim) if d not in axes)


def _extremum_tangent(g, ans, x, *, axes, out_sharding):
    """The tangent of max/min: the mean of the tangents where the extremum is attained
    (JAX's formulation: `eq` against the result with its reduced axes kept as 1s)."""
    from plax_stdlib.lax.conversion import convert_element_type
    kept_shape = tuple(1 if d in axes else n for d, n in enumerate(x.shape))
    picked = convert_element_type(comparison.eq(x, shape_ops.reshape(ans, kept_shape)),
                                  get_aval(g).dtype)
    counts = reduce_sum_p.bind(picked, axes=axes, out_sharding=None)
    return elementwise.div(reduce_sum_p.bind(elementwise.mul(g, picked), axes=axes,
                                             out_sharding=None), counts)


def _check_half_precision_sum(operand: ShapedArray, axes) -> None:
    """`jax_allow_f16_reductions=False` refuses sums of 16-bit floats (which lose
    precision quickly) over more than one element."""
    if (operand.dtype in (np.float16, dtypes.bfloat16) and not config.allow_f16_reductions.value
            and any(operand.shape[a] != 1 for a in axes)):
        raise ValueError(f"reduce_sum on operand {operand.str_short()} is not allowed when "
                         "jax_allow_f16_reductions=False.")


reduce_sum_p = _monoid_reduction(
    "reduce_sum", NUMBER, "add", lambda dt: 0, check=_check_half_precision_sum, jvp=linear_jvp(),
    transpose=lambda ct, x, *, axes, out_sharding: [shape_ops.broadcast_in_dim(
        ct, x.aval.shape, tuple(map(np.int64, _kept_dims(x.aval.ndim, axes))),  # (as JAX's)
        out_sharding=x.aval.typed_sharding)])


def _prod_jvp(primals, tangents, *, axes, out_sharding):
    """JAX's rule: the product as a pairwise tree of the reduced elements (moved to the
    front and flattened; an odd half padded with 1), differentiated by `jvp`: exact
    where the operand has zeros (no division by factors)."""
    import plax
    from plax_stdlib.lax import creation
    from plax_stdlib.lax.slicing import slice_in_dim
    (x,), (t,) = primals, tangents
    shape = get_aval(x).shape
    kept = np.delete(np.arange(len(shape)), axes)
    flat_shape = (math.prod(shape[a] for a in axes), *(shape[d] for d in kept))
    one = np.ones((), get_aval(x).dtype)[()]

    def tree(v):
        while get_aval(v).shape[0] > 1:
            n = get_aval(v).shape[0]
            half = (n + 1) // 2
            low, high = slice_in_dim(v, 0, half), slice_in_dim(v, half, None)
            if n - half != half:
                high = shape_ops.pad(high, one, [(0, 1, 0)] + [(0, 0, 0)] * (len(kept)))
            v = elementwise.mul(low, high)
        if get_aval(v).shape[0] == 0:
            return creation.full(flat_shape[1:], one)
        return shape_ops.squeeze(v, (0,))

    order = (*axes, *kept)
    return plax.jvp(tree, (shape_ops.reshape(x, flat_shape, order),),
                    (shape_ops.reshape(instantiate(t), flat_shape, order),))


reduce_prod_p = _monoid_reduction("reduce_prod", NUMBER, "multiply", lambda dt: 1,
                                  jvp=_prod_jvp)
# Complex operands are ordered lexicographically (real part, then imaginary part), as
# `lax.max`/`lax.min` order them.
reduce_max_p = _monoid_reduction("reduce_max", ORDERED | COMPLEX, "maximum", lowest_value,
                                 complex_direction="GT", jvp=defjvp(_extremum_tangent))
reduce_min_p = _monoid_reduction("reduce_min", ORDERED | COMPLEX, "minimum", highest_value,
                                 complex_direction="LT",
                                 jvp=defjvp(_extremum_tangent))
# The bitwise reductions give strongly typed results even of weak operands, as in JAX.
reduce_and_p = _monoid_reduction("reduce_and", BOOL_OR_INT, "and_", _all_ones,
                                 keeps_weak_type=False)
reduce_or_p = _monoid_reduction("reduce_or", BOOL_OR_INT, "or_", lambda dt: 0,
                                keeps_weak_type=False)
reduce_xor_p = _monoid_reduction("reduce_xor", BOOL_OR_INT, "xor", lambda dt: 0,
                                 keeps_weak_type=False)


def _reducer(prim, what: str, operand: str, result: str):
    """The public function of a monoid reduction; `what` is the combining operation,
    `operand` and `result` an example's operand (`x`) and printed result."""
    def reduce_fn(operand, axes, *, out_sharding=None):
        axes = canonicalize_axes(prim.name, axes, get_aval(operand).ndim)
        return prim.bind(operand, axes=axes,
                         out_sharding=check_out_sharding(prim.name, out_sharding))
    reduce_fn.__name__ = prim.name
    reduce_fn.__doc__ = f"""Reduces `operand` over the dimensions `axes` by {what}.

    Args:
        operand: an array.
        axes: the dimensions to reduce, a sequence of ints in [0, ndim) (lax takes
            no negative axes; `plax.numpy`'s reductions do).
        out_sharding: on a mesh with `Explicit` axes, the result's sharding.

    Returns:
        An array of `operand`'s dtype whose shape is `operand`'s without `axes`.

    Raises:
        ValueError: an axis is negative or not below `operand.ndim`
            (`numpy.exceptions.AxisError`).
        TypeError: `operand`'s dtype does not support {what}.

    Examples:
        >>> import plax.numpy as jnp
        >>> x = {operand}
        >>> plax.lax.{prim.name}(x, (1,))
        {result}
    """
    return reduce_fn


_INTS = "jnp.array([[1, 2, 3], [4, 5, 6]])"
_BOOLS = "jnp.array([[True, False], [True, True]])"
reduce_sum = _reducer(reduce_sum_p, "addition", _INTS, "Array([ 6, 15], dtype=int32)")
reduce_prod = _reducer(reduce_prod_p, "multiplication", _INTS,
                       "Array([  6, 120], dtype=int32)")
reduce_max = _reducer(reduce_max_p, "taking the maximum", _INTS, "Array([3, 6], dtype=int32)")
reduce_min = _reducer(reduce_min_p, "taking the minimum", _INTS, "Array([1, 4], dtype=int32)")
reduce_and = _reducer(reduce_and_p, "bitwise AND", _BOOLS,
                      "Array([False, True], dtype=bool)")
reduce_or = _reducer(reduce_or_p, "bitwise OR", _BOOLS, "Array([ True, True], dtype=bool)")
reduce_xor = _reducer(reduce_xor_p, "bitwise XOR", _BOOLS,
                      "Array([ True, False], dtype=bool)")


# --- lax.reduce ------------------------------------------------------------------------------

# A binary primitive → (its reduction primitive, its identity, the lax function).
_MONOIDS = {
    elementwise.add_p: (reduce_sum_p, lambda dt: 0, elementwise.add),
    elementwise.mul_p: (reduce_prod_p, lambda dt: 1, elementwise.mul),
    elementwise.max_p: (reduce_max_p, lowest_value, elementwise.max),
    elementwise.min_p: (reduce_min_p, highest_value, elementwise.min),
    bitwise.and_p: (reduce_and_p, _all_ones, bitwise.bitwise_and),
    bitwise.or_p: (reduce_or_p, lambda dt: 0, bitwise.bitwise_or),
    bitwise.xor_p: (reduce_xor_p, lambda dt: 0, bitwise.bitwise_xor),
}


def monoid_of(computation: Callable, dtype: np.dtype):
    """The binary primitive `computation(a, b)` applies to its two scalar arguments,
    if that is all it does; else None."""
    from plax.extend.core import trace_to_jaxpr
    scalar = ShapedArray((), dtype)
    in_tree = tree_util.tree_structure(((scalar, scalar), {}))
    closed, _ = trace_to_jaxpr(computation, in_tree, [scalar, scalar], None)
    jaxpr = closed.jaxpr
    if len(jaxpr.eqns) != 1 or jaxpr.constvars:
        return None
    eqn = jaxpr.eqns[0]
    if (eqn.primitive in _MONOIDS and set(map(id, eqn.invars)) == set(map(id, jaxpr.invars))
            and len(eqn.invars) == 2 and jaxpr.outvars == eqn.outvars):
        return eqn.primitive
    return None


def is_identity(value, identity) -> bool:
    if isinstance(value, Tracer):
        return False
    with np.errstate(invalid="ignore"):
        return bool(np.all(np.asarray(value) == identity))


def monoid_reduce(operand, init, computation: Callable, dimensions: Sequence[int],
                  out_sharding=None):
    """`lax.reduce` of one operand by a monoid `computation` (see `monoid_of`), as the
    monoid's reduction primitive (then combined with `init` unless it is the identity);
    None for any other computation."""
    aval = get_aval(operand)
    binary = monoid_of(computation, aval.dtype)
    if binary is None:
        return None
    reduction, identity, combine = _MONOIDS[binary]
    axes = canonicalize_axes("reduce", dimensions, aval.ndim)
    result = reduction.bind(operand, axes=axes,
                            out_sharding=check_out_sharding("reduce", out_sharding))
    if not is_identity(init, identity(aval.dtype)):
        result = combine(result, init)
    return result


# --- argmax / argmin ----------------------------------------------------------------------------

def _arg_reduction(name: str, direction: str, identity: Callable):
    def abstract_eval(operand, *, axes, index_dtype):
        # the axis first, then the dtypes, as JAX checks them (an empty axis of complex
        # numbers is JAX's ValueError)
        if len(axes) != 1:
            raise ValueError(f"{name} reduces exactly one axis, got axes {axes}")
        check_axes(name, axes, operand.ndim)
        if operand.shape[axes[0]] == 0:
            raise ValueError(f"{name} of an empty axis: axis {axes[0]} of operand "
                             f"{describe(operand)}")
        check_dtype(name, operand, ORDERED)
        check_dtype(name, ShapedArray((), index_dtype), INT, what="index_dtype")
        return ShapedArray(_reduced_shape(operand, axes), index_dtype)

    def lower(ctx, operand, *, axes, index_dtype):
        aval, out = ctx.avals_in[0], ctx.avals_out[0]
        indices = mu.iota(aval.update(dtype=index_dtype), axes[0])
        inits = [mu.dense_constant(identity(aval.dtype), aval.dtype),
                 mu.dense_constant(0, index_dtype)]
        floating = kind_of(aval.dtype) == "float"

        def body(acc, acc_index, x, x_index):
            """Keep the better value, NaN beating numbers; on ties the lower index."""
            better = mu.compare(x, acc, direction, aval.dtype)
            same = mu.compare(x, acc, "EQ", aval.dtype)
            if floating:
                x_nan, acc_nan = mu.is_nan(x, aval.dtype), mu.is_nan(acc, aval.dtype)
                better = hlo.or_(better, hlo.and_(x_nan, hlo.not_(acc_nan)))
                same = hlo.or_(same, hlo.and_(x_nan, acc_nan))
            earlier = mu.compare(x_index, acc_index, "LT", index_dtype)
            pick = hlo.or_(better, hlo.and_(same, earlier))
            return [hlo.select(pick, x, acc), hlo.select(pick, x_index, acc_index)]

        return mu.reduce([operand, indices], inits, [out.update(dtype=aval.dtype), out], axes,
                         body)[1]

    lower.__name__ = f"lower_{name}"
    return standard_primitive(f"lax.{name}", abstract_eval, lower, dtypes=ORDERED,
                              batching=_BATCHING, jvp=defjvp(None))


argmax_p = _arg_reduction("argmax", "GT", lowest_value)
argmin_p = _arg_reduction("argmin", "LT", highest_value)


def _arg_reducer(prim, which: str, operand: str, result: str):
    """The public function of `argmax_p`/`argmin_p`; `which` is "largest" or
    "smallest", `operand` and `result` an example's operand and printed result."""
    def arg_reduce(operand, axis: int, index_dtype):
        axis = canonicalize_axis(prim.name, axis, get_aval(operand).ndim, negative=False)
        index_dtype = dtypes.dtype(index_dtype, canonicalize=True)
        return prim.bind(operand, axes=(axis,), index_dtype=index_dtype)
    arg_reduce.__name__ = prim.name
    arg_reduce.__doc__ = f"""The index of the {which} element along an axis.

    On ties the first index wins; NaN counts as {which} (beyond any number), so
    the first NaN is found.

    Args:
        operand: an array of a real dtype.
        axis: the axis to search (an int in [0, ndim)).
        index_dtype: the integer dtype of the result.

    Returns:
        An array of `index_dtype`, `operand`'s shape without `axis`.

    Examples:
        >>> import plax.numpy as jnp
        >>> plax.lax.{prim.name}({operand}, 1, jnp.int32)
        {result}
    """
    return arg_reduce


argmax = _arg_reducer(argmax_p, "largest", "jnp.array([[1, 5, 5], [7, 0, 2]])",
                      "Array([1, 0], dtype=int32)")
argmin = _arg_reducer(argmin_p, "smallest", "jnp.array([[1, 5, 0], [7, 0, 0]])",
                      "Array([2, 1], dtype=int32)")

"""`scatter`, `scatter_add`, `scatter_mul`, `scatter_min`, `scatter_max`: write
windows of `updates` into an operand at many start positions at once (XLA's
Scatter), replacing what is there or combining with it.

`scatter_indices` holds one index vector per window in its last dimension; its
other dimensions are matched, in order, with the *scatter* dimensions of `updates`
(those not in `update_window_dims`). `dimension_numbers` says which operand
dimensions the index vector addresses (`scatter_dims_to_operand_dims`), which
operand dimensions the windows lack (`inserted_window_dims`, size 1 each), and
which operand dimensions are matched one to one with index dimensions
(`operand_batching_dims`/`scatter_indices_batching_dims`). A scatter is the
transpose of a gather with the corresponding dimension numbers.

Windows that would stick out of the operand are dropped (`mode="fill"`, the
default as in JAX) or moved back in (`mode="clip"`).
"""
from __future__ import annotations

import functools
import math
import operator
from typing import Callable, NamedTuple

import numpy as np

from plax.extend.ad import PrimitiveRule, Zero, instantiate, is_undefined_primal, tangent_aval
from plax.extend.batching import bdim_at_front
from plax.extend.constructors import (
    ANY,
    EXTENDED,
    INT,
    NUMBER,
    check_dtype,
    check_same_dtypes,
    describe,
    standard_primitive,
)
from plax.extend.core import ShapedArray, get_aval, stage_flat
from plax.extend.mlir import hlo, mu
from plax_stdlib.lax import comparison, creation, elementwise, shape_ops
from plax_stdlib.lax.gathers import GatherDimensionNumbers, GatherScatterMode, clamp_indices, gather


class ScatterDimensionNumbers(NamedTuple):
    """Describes how a scatter's index vectors and update windows map to the
    operand's dimensions.

    The index vector is the last dimension of `scatter_indices`.

    Attributes:
        update_window_dims: the dimensions of `updates` that are window
            dimensions (the others are matched with the indices' batch).
        inserted_window_dims: operand dimensions the windows lack (size 1).
        scatter_dims_to_operand_dims: for each component of an index vector,
            the operand dimension it indexes.
        operand_batching_dims: operand dimensions matched one to one with...
        scatter_indices_batching_dims: ...these dimensions of the indices.

    Examples:
        `x.at[idx].add(updates)` on a vector, one element per index:

        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> dnums = lax.ScatterDimensionNumbers(update_window_dims=(),
        ...     inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
        >>> lax.scatter_add(jnp.zeros(3), jnp.array([[0], [2]]), jnp.array([5.0, 7.0]), dnums)
        Array([5., 0., 7.], dtype=float32)
    """
    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()


def _canonical_dnums(name: str, dnums) -> ScatterDimensionNumbers:
    if not isinstance(dnums, ScatterDimensionNumbers):
        raise TypeError(f"{name}: dimension_numbers must be a ScatterDimensionNumbers, got "
                        f"{dnums!r}")
    return ScatterDimensionNumbers(*(tuple(map(operator.index, f)) for f in dnums))


def window_sizes(operand_ndim: int, updates_shape, dnums: ScatterDimensionNumbers) -> list[int]:
    """The window size along each operand dimension (1 where the window has none)."""
    sizes = iter(updates_shape[d] for d in dnums.update_window_dims)
    dropped = set(dnums.inserted_window_dims) | set(dnums.operand_batching_dims)
    return [1 if d in dropped else next(sizes) for d in range(operand_ndim)]


_DTYPES = {"scatter": ANY | EXTENDED, "scatter_add": NUMBER, "scatter_sub": NUMBER,
           "scatter_mul": NUMBER,
           "scatter_min": ANY, "scatter_max": ANY}  # complex: lexicographic, as lax.max


def _check_shapes(name: str, operand: ShapedArray, indices: ShapedArray,
                  updates: ShapedArray, dnums: ScatterDimensionNumbers) -> None:
    check_dtype(name, operand, _DTYPES[name])
    check_dtype(name, indices, INT, what="scatter_indices")
    check_same_dtypes(name, operand, updates)
    n_index = len(dnums.scatter_dims_to_operand_dims)
    if indices.ndim < 1 or indices.shape[-1] != n_index:
        raise TypeError(f"{name}: the last dimension of scatter_indices {describe(indices)} "
                        f"must have size len(scatter_dims_to_operand_dims) = {n_index}")
    for what, axes, ndim in (
            ("update_window_dims", dnums.update_window_dims, updates.ndim),
            ("inserted_window_dims", dnums.inserted_window_dims, operand.ndim),
            ("operand_batching_dims", dnums.operand_batching_dims, operand.ndim),
            ("scatter_dims_to_operand_dims", dnums.scatter_dims_to_operand_dims, operand.ndim),
            ("scatter_indices_batching_dims", dnums.scatter_indices_batching_dims,
             indices.ndim - 1)):
        if any(not 0 <= a < ndim for a in axes) or len(set(axes)) != len(axes):
            raise ValueError(f"{name}: {what} {axes} must be distinct dimensions in "
                             f"[0, {ndim})")
    if list(dnums.update_window_dims) != sorted(dnums.update_window_dims):
        raise ValueError(f"{name}: update_window_dims {dnums.update_window_dims} must be "
                         "sorted")
    dropped = dnums.inserted_window_dims + dnums.operand_batching_dims
    if len(set(dropped)) != len(dropped):
        raise ValueError(f"{name}: inserted_window_dims {dnums.inserted_window_dims} and "
                         f"operand_batching_dims {dnums.operand_batching_dims} must be "
                         "disjoint")
    if set(dnums.scatter_dims_to_operand_dims) & set(dnums.operand_batching_dims):
        raise ValueError(f"{name}: scatter_dims_to_operand_dims "
                         f"{dnums.scatter_dims_to_operand_dims} must not contain "
                         f"operand_batching_dims {dnums.operand_batching_dims}")
    if len(dnums.update_window_dims) + len(dropped) != operand.ndim:
        raise TypeError(f"{name}: operand {describe(operand)} must have one dimension per "
                        f"update window dimension {dnums.update_window_dims}, inserted "
                        f"window dimension {dnums.inserted_window_dims} and operand batching "
                        f"dimension {dnums.operand_batching_dims}")
    scatter_shape = tuple(s for d, s in enumerate(updates.shape)
                          if d not in dnums.update_window_dims)
    if scatter_shape != indices.shape[:-1]:
        raise TypeError(f"{name}: the scatter dimensions of updates {describe(updates)} "
                        f"(those not in update_window_dims {dnums.update_window_dims}) must "
                        f"match the batch dimensions of scatter_indices {describe(indices)}")
    # Only the window's own dimensions are bounded by the operand's: inserted and
    # batching dimensions have no window (an empty batch of operands is no error).
    dropped = set(dropped)
    for d, (w, n) in enumerate(zip(window_sizes(operand.ndim, updates.shape, dnums),
                                   operand.shape)):
        if d not in dropped and w > n:
            raise TypeError(f"{name}: the update window of updates {describe(updates)} is "
                            f"larger than operand {describe(operand)} in dimension {d}")
    if len(dnums.operand_batching_dims) != len(dnums.scatter_indices_batching_dims):
        raise ValueError(f"{name}: operand_batching_dims and scatter_indices_batching_dims "
                         "must have the same length")
    for o, i in zip(dnums.operand_batching_dims, dnums.scatter_indices_batching_dims):
        if operand.shape[o] != indices.shape[i]:
            raise TypeError(f"{name}: operand batching dimension {o} of {describe(operand)} "
                            f"and scatter_indices batching dimension {i} of "
                            f"{describe(indices)} must have the same size")


def _abstract_eval(name: str):
    def rule(operand, indices, updates, *, dimension_numbers, **_):
        _check_shapes(name, operand, indices, updates, dimension_numbers)
        return ShapedArray(operand.shape, operand.dtype, operand.weak_type)
    return rule


def _lowering(combine):
    """The lowering of a scatter whose region computes `combine(old, new, dtype)` of
    scalars of the operand's (physical) dtype."""
    def rule(ctx, operand, indices, updates, *, dimension_numbers, indices_are_sorted,
             unique_indices, mode, update_jaxpr, update_consts):
        dn = dimension_numbers
        updates_aval = ctx.avals_in[2]  # keys: their data is scattered whole
        attr = hlo.ScatterDimensionNumbers.get(
            update_window_dims=[*dn.update_window_dims, *mu.element_dims(updates_aval)],
            inserted_window_dims=list(dn.inserted_window_dims),
            input_batching_dims=list(dn.operand_batching_dims),
            scatter_indices_batching_dims=list(dn.scatter_indices_batching_dims),
            scattered_dims_to_operand_dims=list(dn.scatter_dims_to_operand_dims),
            index_vector_dim=ctx.avals_in[1].ndim - 1)
        aval = ctx.avals_out[0]
        op = hlo.ScatterOp([mu.ir_type(aval)], [operand], indices, [updates], attr,
                           indices_are_sorted=bool(indices_are_sorted),
                           unique_indices=bool(unique_indices))
        scalar = ShapedArray((), mu.physical_aval(aval).dtype)
        mu.build_region(op.update_computation, [scalar] * 2,
                        lambda old, new: [combine(old, new, scalar.dtype)])
        return op.results[0]
    return rule


class _scatter_batcher(PrimitiveRule):
    """Every operand batched at 0 (unbatched ones broadcast there); the batch
    dimension becomes an operand/indices batching dimension of the scatter."""

    def for_primitive(self, prim):
        def rule(axis_data, args, dims, *, dimension_numbers, **params):
            operand, indices, updates = (bdim_at_front(x, d, axis_data.size)
                                         for x, d in zip(args, dims))
            dn = dimension_numbers
            up = lambda axes: tuple(a + 1 for a in axes)  # noqa: E731
            new = ScatterDimensionNumbers(
                up(dn.update_window_dims), up(dn.inserted_window_dims),
                up(dn.scatter_dims_to_operand_dims), (0,) + up(dn.operand_batching_dims),
                (0,) + up(dn.scatter_indices_batching_dims))
            return prim.bind(operand, indices, updates, dimension_numbers=new, **params), 0
        rule.__name__ = f"{prim.name}_batching"
        return rule


def gather_dnums(dnums: ScatterDimensionNumbers) -> GatherDimensionNumbers:
    """The dimension numbers of the gather reading back what a scatter wrote."""
    return GatherDimensionNumbers(dnums.update_window_dims, dnums.inserted_window_dims,
                                  dnums.scatter_dims_to_operand_dims,
                                  dnums.operand_batching_dims,
                                  dnums.scatter_indices_batching_dims)


def _gather_updates(ct, indices, updates_aval, *, dimension_numbers, mode, **_):
    """The windows of `ct` a scatter wrote `updates_aval`-shaped updates into; those
    it dropped (out of bounds) read zero."""
    sizes = window_sizes(get_aval(ct).ndim, updates_aval.shape, dimension_numbers)
    return gather(ct, indices, gather_dnums(dimension_numbers), sizes, mode=mode,
                  fill_value=0)


# --- scatter_add -------------------------------------------------------------------------

def linear_scatter_rules(primitive: Callable, negate_updates: bool = False) -> dict:
    """The jvp and transpose of a scatter linear in operand and updates together
    (`scatter_add`; `scatter_sub` with `negate_updates`); `primitive()` gives the
    primitive, defined after its rules."""
    def jvp(primals, tangents, **params):
        operand, indices, updates = primals
        ans = primitive().bind(*primals, **params)
        t_operand, _, t_updates = tangents
        if isinstance(t_operand, Zero) and isinstance(t_updates, Zero):
            return ans, Zero(tangent_aval(get_aval(ans)))
        return ans, primitive().bind(instantiate(t_operand), indices, instantiate(t_updates),
                                     **params)

    def transpose(ct, operand, indices, updates, **params):
        """The operand's cotangent is `ct`; the updates' is `ct` gathered at the windows
        (negated for a subtraction)."""
        ct_operand = ct_updates = None
        if is_undefined_primal(updates):
            if isinstance(ct, Zero):
                ct_updates = Zero(updates.aval)
            else:
                ct_updates = _gather_updates(ct, indices, updates.aval, **params)
                if negate_updates:
                    ct_updates = elementwise.neg(ct_updates)
        if is_undefined_primal(operand):
            ct_operand = ct
        return [ct_operand, None, ct_updates]
    return dict(jvp=jvp, transpose=transpose)


scatter_add_p = standard_primitive(
    "lax.scatter-add", _abstract_eval("scatter_add"),
    _lowering(lambda old, new, _: hlo.add(old, new)),
    **linear_scatter_rules(lambda: scatter_add_p), batching=_scatter_batcher())


# --- scatter_mul, scatter_min, scatter_max ------------------------------------------------

def _scatter_mul_jvp(primals, tangents, **params):
    """Linear in the operand; in the updates only where no two windows overlap."""
    operand, indices, updates = primals
    ans = scatter_mul_p.bind(*primals, **params)
    t_operand, _, t_updates = tangents
    if isinstance(t_operand, Zero) and isinstance(t_updates, Zero):
        return ans, Zero(tangent_aval(get_aval(ans)))
    t_out = scatter_mul_p.bind(instantiate(t_operand), indices, updates, **params)
    if isinstance(t_updates, Zero):
        return ans, t_out
    if not params["unique_indices"]:
        raise NotImplementedError("scatter_mul gradients with respect to updates are only "
                                  "implemented if unique_indices=True")
    at_windows = _gather_updates(operand, indices, get_aval(updates), **params)
    return ans, elementwise.add(t_out, scatter_add_p.bind(
        creation.full(get_aval(operand).shape, np.zeros((), get_aval(operand).dtype)[()]),
        indices, elementwise.mul(t_updates, at_windows),
        **with_update_params(scatter_add_p, operand, params)))


def _scatter_mul_transpose(ct, operand, indices, updates, **params):
    """Linear in the operand (for known updates): `ct` scaled where they land. Linear
    in the updates (for a known operand) where no two windows overlap: `ct * operand`
    read at the windows."""
    if is_undefined_primal(updates):
        if is_undefined_primal(operand):
            raise NotImplementedError("scatter_mul is not linear in its operand and "
                                      "updates together")
        if not params["unique_indices"]:
            raise NotImplementedError("scatter_mul gradients with respect to updates are "
                                      "only implemented if unique_indices=True")
        ct_updates = (Zero(updates.aval) if isinstance(ct, Zero) else
                      _gather_updates(elementwise.mul(ct, operand), indices, updates.aval,
                                      **params))
        return [None, None, ct_updates]
    if isinstance(ct, Zero):
        return [Zero(operand.aval), None, None]
    return [scatter_mul_p.bind(ct, indices, updates, **params), None, None]


scatter_mul_p = standard_primitive(
    "lax.scatter-mul", _abstract_eval("scatter_mul"),
    _lowering(lambda old, new, _: hlo.multiply(old, new)),
    jvp=_scatter_mul_jvp, transpose=_scatter_mul_transpose, batching=_scatter_batcher())
class _extremal_jvp(PrimitiveRule):
    """The tangent of whichever value (the operand's or an update's) is the result at
    each position; where several tie, their tangents are averaged."""

    def for_primitive(self, prim):
        def jvp(primals, tangents, **params):
            operand, indices, updates = primals
            ans = prim.bind(*primals, **params)
            t_operand, _, t_updates = tangents
            op_aval, up_aval = get_aval(operand), get_aval(updates)
            zero = np.zeros((), op_aval.dtype)[()]
            one = np.ones((), op_aval.dtype)[()]
            from_operand = comparison.eq(operand, ans)
            from_updates = comparison.eq(updates, _gather_updates(ans, indices, up_aval,
                                                                  **params))
            scatter_sum = lambda u: scatter_add_p.bind(  # noqa: E731
                creation.full(op_aval.shape, zero), indices, u,
                **with_update_params(scatter_add_p, operand, params))
            pick = lambda which, t, aval: comparison.select(  # noqa: E731
                which, instantiate(t), creation.full(aval.shape, zero))
            ties = elementwise.add(pick(from_operand, creation.full(op_aval.shape, one), op_aval),
                                   scatter_sum(pick(from_updates, creation.full(up_aval.shape,
                                                                                one), up_aval)))
            t_out = elementwise.add(pick(from_operand, t_operand, op_aval),
                                    scatter_sum(pick(from_updates, t_updates, up_aval)))
            return ans, elementwise.div(t_out, ties)
        jvp.__name__ = f"{prim.name}_jvp"
        return jvp


def _extremal_scatter(name: str, direction: str):
    """scatter_min ("LT") or scatter_max ("GT"); complex numbers by real part, then
    imaginary part, as lax.min and lax.max order them."""
    return standard_primitive(
        f"lax.{name.replace('_', '-')}", _abstract_eval(name),  # JAX's name: scatter-min
        _lowering(lambda old, new, dtype: elementwise.extremum(old, new, direction, dtype)),
        jvp=_extremal_jvp(), batching=_scatter_batcher())


scatter_min_p = _extremal_scatter("scatter_min", "LT")
scatter_max_p = _extremal_scatter("scatter_max", "GT")


# --- scatter (replace) ---------------------------------------------------------------------

def _scatter_jvp(primals, tangents, *, dimension_numbers, indices_are_sorted,
                 unique_indices, mode, update_jaxpr, update_consts):
    """With unique indices the tangents scatter like the primals. Otherwise the
    updates that win each position are found by scattering update ids and reading
    them back; the result is then the operand where nothing landed plus a
    scatter_add of the winning updates, for primals and tangents alike."""
    params = dict(dimension_numbers=dimension_numbers, indices_are_sorted=indices_are_sorted,
                  unique_indices=unique_indices, mode=mode, update_jaxpr=update_jaxpr,
                  update_consts=update_consts)
    operand, indices, updates = primals
    t_operand, _, t_updates = tangents
    if unique_indices:
        ans = scatter_p.bind(*primals, **params)
        return ans, scatter_p.bind(instantiate(t_operand), indices, instantiate(t_updates),
                                   **params)
    dn = dimension_numbers
    op_aval, up_aval = get_aval(operand), get_aval(updates)
    scatter_axes = [d for d in range(up_aval.ndim) if d not in dn.update_window_dims]
    scatter_shape = [up_aval.shape[d] for d in scatter_axes]
    n = math.prod(scatter_shape)
    ids = shape_ops.reshape(creation.iota(np.int32, n), tuple(scatter_shape))
    ids = elementwise.add(shape_ops.broadcast_in_dim(ids, up_aval.shape, tuple(scatter_axes)),
                          np.int32(1))  # 0 stands for "no update landed here"
    landed = scatter_p.bind(creation.full(op_aval.shape, np.int32(0)), indices, ids, **params)
    won = comparison.eq(_gather_updates(landed, indices, up_aval, **params), ids)
    kept = comparison.eq(landed, np.int32(0))

    def combine(x, u):
        x = comparison.select(kept, x, creation.full(op_aval.shape, np.zeros((), x.dtype)[()]))
        u = comparison.select(won, u, creation.full(up_aval.shape, np.zeros((), u.dtype)[()]))
        return scatter_add_p.bind(x, indices, u, **with_update_params(scatter_add_p, x, params))

    ans = combine(operand, updates)
    if isinstance(t_operand, Zero) and isinstance(t_updates, Zero):
        return ans, Zero(tangent_aval(op_aval))
    return ans, combine(instantiate(t_operand), instantiate(t_updates))


def _scatter_transpose(ct, operand, indices, updates, *, unique_indices, **params):
    """Defined for unique indices (the linear form the jvp produces): the operand
    keeps the cotangent where no update landed; the updates gather it."""
    if not unique_indices:
        raise NotImplementedError("scatter transpose is only implemented where "
                                  "unique_indices=True")
    params = dict(params, unique_indices=True)
    updates_aval = updates.aval if is_undefined_primal(updates) else get_aval(updates)
    if isinstance(ct, Zero):
        return [Zero(operand.aval) if is_undefined_primal(operand) else None, None,
                Zero(updates_aval) if is_undefined_primal(updates) else None]
    ct_operand = ct_updates = None
    if is_undefined_primal(operand):
        zeros = creation.full(updates_aval.shape, np.zeros((), updates_aval.dtype)[()])
        ct_operand = scatter_p.bind(ct, indices, zeros, **params)
    if is_undefined_primal(updates):
        ct_updates = _gather_updates(ct, indices, updates_aval, **params)
    return [ct_operand, None, ct_updates]


scatter_p = standard_primitive(
    "lax.scatter", _abstract_eval("scatter"), _lowering(lambda old, new, _: new),
    jvp=_scatter_jvp, transpose=_scatter_transpose, batching=_scatter_batcher())

# How each scatter combines, for its `update_jaxpr` (JAX's parameter; `scatter` has none)
_COMBINE = {scatter_add_p: elementwise.add, scatter_mul_p: elementwise.mul,
            scatter_min_p: elementwise.min, scatter_max_p: elementwise.max}


# --- the public functions ---------------------------------------------------------------
_SCATTER_DOC = """{summary}

{combining} `scatter_indices` holds one index vector per window in its last
dimension; `dimension_numbers` says how index vectors and windows map to
`operand`'s dimensions (see `ScatterDimensionNumbers`). This is the
functional form of `x.at[idx].{method}(...)`, which `plax.numpy` lowers to it.

Args:
    operand: the array to update.
    scatter_indices: an integer array of index vectors (last dimension).
    updates: the windows to {verb}, of `operand`'s dtype; its scatter
        dimensions match `scatter_indices`'s leading dimensions.
    dimension_numbers: a `ScatterDimensionNumbers`.
    indices_are_sorted: a promise that the indices are sorted (may be
        faster; wrong results if false).
    unique_indices: a promise that no two windows overlap (may be faster;
        wrong results if false).
    mode: windows that would stick out of `operand`: dropped
        (`"fill"`/`GatherScatterMode.FILL_OR_DROP`, the default), moved back
        in (`"clip"`), or promised not to occur (`"promise_in_bounds"`).

Returns:
    A new array of `operand`'s shape and dtype.

Raises:
    TypeError: the dtypes differ, or the shapes do not fit
        `dimension_numbers`.

Examples:
    >>> import plax.numpy as jnp
    >>> from plax import lax
    >>> dnums = lax.ScatterDimensionNumbers(update_window_dims=(),
    ...     inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    >>> x = jnp.array([1.0, 2.0, 3.0, 4.0])
    >>> indices = jnp.array([[1], [3], [1]])  # index 1 twice
    >>> lax.{name}(x, indices, jnp.array({updates}), dnums)
    {result}
"""


def documented_scatter(summary: str, combining: str, method: str, verb: str, updates: str,
                       result: str):
    """Sets the docstring of a scatter function from `_SCATTER_DOC`."""
    def document(fn):
        fn.__doc__ = _SCATTER_DOC.format(
            summary=summary, combining=combining, method=method, verb=verb,
            name=fn.__name__, updates=updates, result=result)
        return fn
    return document



@functools.cache
def _update_jaxpr(combine: Callable, aval: ShapedArray):
    """The combining function on two scalars of `aval`, as a Jaxpr (JAX's)."""
    return stage_flat(lambda old, new: [combine(old, new)], [aval, aval]).jaxpr


def combines_with(prim, combine: Callable) -> None:
    """Registers how `prim`, a scatter defined elsewhere, combines (its update_jaxpr)."""
    _COMBINE[prim] = combine


def with_update_params(prim, operand, params: dict) -> dict:
    """`params` with `prim`'s `update_jaxpr` and `update_consts`: JAX's parameters
    naming how a scatter combines (None for `scatter`), printed in Jaxprs; the
    lowering combines as the primitive says."""
    combine, aval, jaxpr = _COMBINE.get(prim), get_aval(operand), None
    if combine is not None:
        try:
            jaxpr = _update_jaxpr(combine, ShapedArray((), aval.dtype, aval.weak_type))
        except TypeError:  # a dtype the scatter refuses: its own check says so
            pass
    return dict(params, update_jaxpr=jaxpr, update_consts=())


def _bind(prim, operand, scatter_indices, updates, dimension_numbers, indices_are_sorted,
          unique_indices, mode):
    name = prim.name.replace("-", "_")  # the function's name (the primitive's is JAX's)
    dnums = _canonical_dnums(name, dimension_numbers)
    mode = GatherScatterMode.from_any(mode)
    if mode is GatherScatterMode.CLIP:
        op_aval, up_aval = get_aval(operand), get_aval(updates)
        _check_shapes(name, op_aval, get_aval(scatter_indices), up_aval, dnums)
        window = window_sizes(op_aval.ndim, up_aval.shape, dnums)
        scatter_indices = clamp_indices(scatter_indices, op_aval.shape, window,
                                        dnums.scatter_dims_to_operand_dims)
        mode = GatherScatterMode.PROMISE_IN_BOUNDS
    return prim.bind(operand, scatter_indices, updates, **with_update_params(prim, operand, dict(
        dimension_numbers=dnums, indices_are_sorted=bool(indices_are_sorted),
        unique_indices=bool(unique_indices), mode=mode)))


@documented_scatter(
    "Adds windows of `updates` into `operand` at many positions at once.",
    "Where windows overlap, all their updates are added.", "add", "add",
    "[10.0, 20.0, 30.0]", "Array([ 1., 42.,  3., 24.], dtype=float32)")
def scatter_add(operand, scatter_indices, updates, dimension_numbers: ScatterDimensionNumbers,
                *, indices_are_sorted: bool = False, unique_indices: bool = False, mode=None):
    return _bind(scatter_add_p, operand, scatter_indices, updates, dimension_numbers,
                 indices_are_sorted, unique_indices, mode)


@documented_scatter(
    "Multiplies elements of `operand` by windows of `updates`, at many positions at once.",
    "Where windows overlap, all their updates multiply.", "multiply", "multiply by",
    "[10.0, 20.0, 30.0]", "Array([  1., 600.,   3.,  80.], dtype=float32)")
def scatter_mul(operand, scatter_indices, updates, dimension_numbers: ScatterDimensionNumbers,
                *, indices_are_sorted: bool = False, unique_indices: bool = False, mode=None):
    return _bind(scatter_mul_p, operand, scatter_indices, updates, dimension_numbers,
                 indices_are_sorted, unique_indices, mode)


@documented_scatter(
    "Lowers elements of `operand` to windows of `updates` where those are smaller.",
    "Each element becomes the minimum of itself and every update landing on it.",
    "min", "compare with", "[10.0, -20.0, 0.0]",
    "Array([  1.,   0.,   3., -20.], dtype=float32)")
def scatter_min(operand, scatter_indices, updates, dimension_numbers: ScatterDimensionNumbers,
                *, indices_are_sorted: bool = False, unique_indices: bool = False, mode=None):
    return _bind(scatter_min_p, operand, scatter_indices, updates, dimension_numbers,
                 indices_are_sorted, unique_indices, mode)


@documented_scatter(
    "Raises elements of `operand` to windows of `updates` where those are larger.",
    "Each element becomes the maximum of itself and every update landing on it.",
    "max", "compare with", "[10.0, 20.0, 30.0]",
    "Array([ 1., 30.,  3., 20.], dtype=float32)")
def scatter_max(operand, scatter_indices, updates, dimension_numbers: ScatterDimensionNumbers,
                *, indices_are_sorted: bool = False, unique_indices: bool = False, mode=None):
    return _bind(scatter_max_p, operand, scatter_indices, updates, dimension_numbers,
                 indices_are_sorted, unique_indices, mode)


@documented_scatter(
    "Writes windows of `updates` into `operand` at many positions at once.",
    "Where windows overlap, one of them wins (which one is unspecified).", "set",
    "write", "[10.0, 20.0, 30.0]", "Array([ 1., ..., 3., 20.], dtype=float32)")
def scatter(operand, scatter_indices, updates, dimension_numbers: ScatterDimensionNumbers,
            *, indices_are_sorted: bool = False, unique_indices: bool = False, mode=None):
    return _bind(scatter_p, operand, scatter_indices, updates, dimension_numbers,
                 indices_are_sorted, unique_indices, mode)


"""Primitives that move elements without computing: broadcast, reshape, transpose,
squeeze, concatenate, pad and rev, with their `lax` functions (and `broadcast`,
`expand_dims`, which are built from them)."""
from __future__ import annotations

import contextlib
import contextvars
import operator
from typing import Callable, Iterator, Sequence

import numpy as np

from plax.errors import InvalidShapeError
from plax.extend.ad import is_undefined_primal, linear_jvp
from plax.extend.batching import axes_batcher, move_to, moveaxis, not_mapped
from plax.extend.constructors import (
    ANY,
    canonicalize_axis,
    check_axes,
    check_dtype,
    check_same_dtypes,
    describe,
    standard_primitive,
    weak_result,
)
from plax.extend.core import (EvalTrace, Primitive, ShapedArray, StagingTrace, Tracer,
                              canonical_dim, current_trace, get_aval, max_dim)
from plax.extend.mlir import hlo, mu
from plax_stdlib.lax.conversion import staged_constant
from plax_stdlib.lax.out_sharding import check_out_sharding, with_batch_dim


def shape_dims(shape) -> tuple:
    """`shape` (an int, or a sequence of them) as a tuple of dimensions; a traced size
    is JAX's TypeError, naming the argument it depends on and `static_argnums`."""
    if isinstance(shape, (int, np.integer)) or (isinstance(shape, Tracer)
                                                and get_aval(shape).shape == ()):
        shape = (shape,)
    try:
        return tuple(canonical_dim(d) for d in shape)
    except TypeError as err:
        shown = tuple(shape) if isinstance(shape, (list, tuple)) else shape
        traced = [d for d in (shown if isinstance(shown, tuple) else ()) if isinstance(d, Tracer)]
        hint = "" if not traced else (
            " If using `jit`, try using `static_argnums` or applying `jit` to smaller "
            "subfunctions. " + traced[0]._trace.value_origin(traced[0]))
        raise TypeError("Shapes must be 1D sequences of concrete values of integer type, "
                        f"got {shown!r}.{hint}".rstrip()) from err


def param_int(d, canonical: Callable = operator.index):
    """An integer parameter as JAX keeps it: a NumPy integer stays one (JAX's Jaxprs
    print it so); anything else as `canonical` makes it."""
    return d if isinstance(d, np.integer) else canonical(d)


def canonicalize_shape(name: str, shape) -> tuple[int, ...]:
    """A shape given as an int or a sequence of ints, as a tuple of non-negative ints
    (and symbolic dimensions, in shape-polymorphic export)."""
    dims = shape_dims(shape)
    if any(d < 0 for d in dims):
        raise InvalidShapeError(f"{name}: shapes must have non-negative dimensions, got "
                                f"{dims}")
    return dims


def _is_array(x) -> bool:
    """Tracers and plax Arrays, which functions may return unchanged."""
    return isinstance(x, Tracer) or hasattr(x, "aval")


def _check_permutation(name: str, perm: Sequence[int], ndim: int, what: str) -> None:
    if sorted(perm) != list(range(ndim)):
        raise TypeError(f"{name}: {what} {tuple(perm)} is not a permutation of the "
                        f"operand's {ndim} dimensions")


# --- broadcast_in_dim ---------------------------------------------------------------------

def _broadcast_in_dim_abstract_eval(operand, *, shape, broadcast_dimensions, sharding):
    name, dims = "broadcast_in_dim", broadcast_dimensions
    canonicalize_shape(name, shape)
    if len(dims) != operand.ndim:
        raise TypeError(f"{name}: broadcast_dimensions {dims} must have one entry per "
                        f"operand dimension, got operand {describe(operand)}")
    if any(not 0 <= d < len(shape) for d in dims):
        raise TypeError(f"{name}: broadcast_dimensions {dims} out of range for the "
                        f"result shape {shape}")
    for i, d in enumerate(dims):
        if operand.shape[i] not in (1, shape[d]):
            raise TypeError(f"{name}: operand {describe(operand)} cannot be broadcast to "
                            f"shape {shape}: dimension {i} of size {operand.shape[i]} maps "
                            f"to result dimension {d} of size {shape[d]}")
    if len(set(dims)) != len(dims):  # any order is fine (JAX's), but each goes once
        raise TypeError(f"{name}: broadcast_dimensions {dims} map two operand dimensions "
                        "to one result dimension")
    return ShapedArray(shape, operand.dtype, operand.weak_type)


def _broadcast_in_dim_lower(ctx, operand, *, shape, broadcast_dimensions, sharding):
    out = ctx.avals_out[0]
    return mu.broadcast_in_dim(operand, mu.physical_aval(out).shape,
                               [*broadcast_dimensions, *mu.element_dims(out)])


def _broadcast_in_dim_transpose(ct, operand, *, shape, broadcast_dimensions, sharding):
    """Sum over the new dimensions and the size-1 dimensions that were stretched, put
    the rest back in the operand's order (broadcast_dimensions may permute), and the
    stretched ones back as size 1."""
    from plax_stdlib.lax.reductions import reduce_sum
    in_shape = operand.aval.shape
    kept = [d for i, d in enumerate(broadcast_dimensions)
            if in_shape[i] != 1 or shape[d] == 1]
    summed = reduce_sum(ct, tuple(d for d in range(len(shape)) if d not in kept))
    order = sorted(kept)
    perm = tuple(order.index(d) for d in kept)
    if perm != tuple(range(len(perm))):
        summed = transpose(summed, perm)
    stretched = [i for i, d in enumerate(broadcast_dimensions) if d not in kept]
    return [expand_dims(summed, stretched)]  # (JAX's: no equation when none was stretched)


def _broadcast_in_dim_batching(axis_data, args, dims, *, shape, broadcast_dimensions,
                               sharding):
    """JAX's rule: the batch dimension moved to the front of the operand and of the
    result (the other dimensions' places are NumPy integers, as JAX prints them)."""
    (x,), (d,) = args, dims
    return broadcast_in_dim_p.bind(moveaxis(x, d, 0), shape=(axis_data.size, *shape),
                                   broadcast_dimensions=(0, *np.add(1, broadcast_dimensions)),
                                   sharding=with_batch_dim(sharding, 0, axis_data)), 0


def _broadcast_in_dim_pretty_print(eqn, same_names):
    """JAX's form: the shape and sharding are the result's type, and an empty
    `broadcast_dimensions` is left out."""
    return [(k, v) for k, v in sorted(eqn.params.items())
            if k not in ("shape", "sharding") and (v or k != "broadcast_dimensions")]


_identity_broadcasts_kept = contextvars.ContextVar("identity_broadcasts_kept", default=False)


@contextlib.contextmanager
def keeping_identity_broadcasts() -> Iterator[None]:
    """Within it, `broadcast_in_dim` of an array to its own shape is an equation, not
    the array itself. JAX forwards such a broadcast only where it stages a program;
    `linear_transpose` traces by partial evaluation, which keeps it, so JAX's
    transposes have its transpose (a `reduce_sum` over no axes)."""
    token = _identity_broadcasts_kept.set(True)
    try:
        yield
    finally:
        _identity_broadcasts_kept.reset(token)


class _BroadcastInDim(Primitive):
    """Where a Jaxpr is traced, a broadcast to the operand's own shape is the operand
    (a constant too, which stays a literal), as JAX's staging forwards it: the
    transposed sum of a scalar, a scalar's `zeros_like`."""

    def bind(self, operand, *, shape, broadcast_dimensions, sharding):
        trace = current_trace()
        if (sharding is None and type(trace) is StagingTrace
                and not _identity_broadcasts_kept.get() and get_aval(operand).shape == shape
                and broadcast_dimensions == tuple(range(len(shape)))):
            return operand if _is_array(operand) else staged_constant(trace, operand)
        return super().bind(operand, shape=shape, broadcast_dimensions=broadcast_dimensions,
                            sharding=sharding)


broadcast_in_dim_p = standard_primitive("lax.broadcast_in_dim", _broadcast_in_dim_abstract_eval,
                                        _broadcast_in_dim_lower, primitive_type=_BroadcastInDim,
                                        jvp=linear_jvp(),
                                        transpose=_broadcast_in_dim_transpose,
                                        batching=_broadcast_in_dim_batching,
                                        pretty_print=_broadcast_in_dim_pretty_print)


def broadcast_in_dim(operand, shape, broadcast_dimensions, *, out_sharding=None):
    """Broadcasts `operand` to `shape`, saying where each of its dimensions goes.

    Dimension i of `operand` becomes dimension `broadcast_dimensions[i]` of the
    result (distinct dimensions, in any order: out of order, they also transpose);
    it must have that size or size 1 (then it is repeated). The result's other
    dimensions are new. This is the explicit form of NumPy broadcasting that `jnp`
    lowers to.

    Args:
        operand: an array.
        shape: the result's shape.
        broadcast_dimensions: for each dimension of `operand`, its position in
            the result.
        out_sharding: on a mesh with `Explicit` axes, the result's sharding.

    Returns:
        An array of `shape` and `operand`'s dtype.

    Raises:
        TypeError: `broadcast_dimensions` has the wrong length, is out of range or
            repeats a dimension, or a size is neither equal nor 1.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.broadcast_in_dim(jnp.array([1, 2]), (2, 3), broadcast_dimensions=(0,))
        Array([[1, 1, 1],
               [2, 2, 2]], dtype=int32)
    """
    shape = canonicalize_shape("broadcast_in_dim", shape)
    dims = tuple(map(param_int, broadcast_dimensions))
    if (_is_array(operand) and get_aval(operand).shape == shape
            and dims == tuple(range(len(shape))) and out_sharding is None
            and not (dims and _identity_broadcasts_kept.get())):
        return operand
    return broadcast_in_dim_p.bind(operand, shape=shape, broadcast_dimensions=dims,
                                   sharding=check_out_sharding("broadcast_in_dim", out_sharding))


def broadcast(operand, sizes, *, out_sharding=None):
    """Adds new leading dimensions to `operand`, repeating it.

    Args:
        operand: an array.
        sizes: the sizes of the new leading dimensions.
        out_sharding: on a mesh with `Explicit` axes, the result's sharding.

    Returns:
        An array of shape `(*sizes, *operand.shape)`.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.broadcast(jnp.array([1, 2]), (3,))
        Array([[1, 2],
               [1, 2],
               [1, 2]], dtype=int32)
    """
    sizes = canonicalize_shape("broadcast", sizes)
    if not sizes and out_sharding is None and not isinstance(current_trace(), EvalTrace):
        return operand  # a constant stays one, inline where it is used (JAX's)
    ndim = get_aval(operand).ndim
    return broadcast_in_dim(operand, sizes + get_aval(operand).shape,
                            tuple(range(len(sizes), len(sizes) + ndim)),
                            out_sharding=out_sharding)


def expand_dims(array, dimensions):
    """Inserts dimensions of size 1.

    Args:
        array: an array.
        dimensions: the positions of the new dimensions in the result.

    Returns:
        `array` with the new size-1 dimensions.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.expand_dims(jnp.zeros((3,)), (0, 2)).shape
        (1, 3, 1)
    """
    aval = get_aval(array)
    ndim_out = aval.ndim + len(dimensions)
    dims = [canonicalize_axis("expand_dims", d, ndim_out, "dimension") for d in dimensions]
    if len(set(dims)) != len(dims):
        raise ValueError(f"expand_dims: repeated dimension in {tuple(dimensions)}")
    shape = list(aval.shape)
    for d in sorted(dims):
        shape.insert(d, 1)
    kept = tuple(i for i in range(ndim_out) if i not in dims)
    return broadcast_in_dim(array, tuple(shape), kept)


# --- reshape ----------------------------------------------------------------------------

def _reshape_abstract_eval(operand, *, new_sizes, dimensions, sharding):
    canonicalize_shape("reshape", new_sizes)
    if dimensions is not None:
        _check_permutation("reshape", dimensions, operand.ndim, "dimensions")
    if ShapedArray(new_sizes, operand.dtype).size != operand.size:
        raise TypeError(f"reshape cannot change the number of elements: new_sizes "
                        f"{tuple(new_sizes)} for operand {describe(operand)}")
    return ShapedArray(new_sizes, operand.dtype, operand.weak_type)


def _reshape_lower(ctx, operand, *, new_sizes, dimensions, sharding):
    if dimensions is not None:
        operand = hlo.transpose(operand, [*dimensions, *mu.element_dims(ctx.avals_in[0])])
    return mu.reshape(operand, ctx.avals_out[0])


def axes_order(axes: Sequence[int]) -> tuple[int, ...]:
    """The positions of the distinct `axes` in increasing order, a permutation's inverse:
    `np.argsort`, without NumPy's cost on a few ints (transpose rules run it eagerly)."""
    return tuple(sorted(range(len(axes)), key=axes.__getitem__))


def _reshape_transpose(ct, operand, *, new_sizes, dimensions, sharding):
    if dimensions is None:
        return [reshape(ct, operand.aval.shape)]
    permuted = tuple(operand.aval.shape[d] for d in dimensions)
    return [transpose(reshape(ct, permuted), axes_order(dimensions))]


def _reshape_batching(axis_data, args, dims, *, new_sizes, dimensions, sharding):
    """Reshaping mixes dimensions, so the batch dimension must lead."""
    (x,), (d,) = args, dims
    x = moveaxis(x, d, 0)
    if dimensions is not None:
        dimensions = (0,) + tuple(p + 1 for p in dimensions)
    return reshape_p.bind(x, new_sizes=(axis_data.size,) + tuple(new_sizes),
                          dimensions=dimensions, sharding=sharding), 0


reshape_p = standard_primitive("lax.reshape", _reshape_abstract_eval, _reshape_lower,
                               jvp=linear_jvp(), transpose=_reshape_transpose,
                               batching=_reshape_batching)


def reshape(operand, new_sizes, dimensions=None, *, out_sharding=None):
    """Gives `operand`'s elements a new shape, in row-major (C) order.

    Args:
        operand: an array.
        new_sizes: the new shape, with as many elements in all as `operand`
            (no `-1`: lax takes exact sizes).
        dimensions: if given, `operand` is first transposed to this order.
        out_sharding: on a mesh with `Explicit` axes, the result's sharding.

    Returns:
        An array of shape `new_sizes` and `operand`'s dtype.

    Raises:
        TypeError: the sizes' product differs from `operand.size`.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.reshape(jnp.arange(6), (2, 3))
        Array([[0, 1, 2],
               [3, 4, 5]], dtype=int32)
        >>> lax.reshape(jnp.arange(6).reshape(2, 3), (6,), dimensions=(1, 0))
        Array([0, 3, 1, 4, 2, 5], dtype=int32)
    """
    new_sizes = canonicalize_shape("reshape", new_sizes)
    aval = get_aval(operand)
    dims = None if dimensions is None else tuple(operator.index(d) for d in dimensions)
    if dims == tuple(range(aval.ndim)):
        dims = None
    if (aval.shape and _is_array(operand) and dims is None and aval.shape == new_sizes
            and out_sharding is None):  # (a scalar is reshaped all the same, as by JAX)
        return operand
    return reshape_p.bind(operand, new_sizes=new_sizes, dimensions=dims,
                          sharding=check_out_sharding("reshape", out_sharding))


# --- transpose --------------------------------------------------------------------------------

def _transpose_abstract_eval(operand, *, permutation):
    _check_permutation("transpose", permutation, operand.ndim, "permutation")
    return ShapedArray(tuple(operand.shape[p] for p in permutation), operand.dtype,
                       operand.weak_type)


transpose_p = standard_primitive(
    "lax.transpose", _transpose_abstract_eval,
    lambda ctx, operand, *, permutation: hlo.transpose(
        operand, [*permutation, *mu.element_dims(ctx.avals_in[0])]),
    jvp=linear_jvp(),
    transpose=lambda ct, x, *, permutation: [transpose(ct, axes_order(permutation))],
    batching=lambda axis_data, args, dims, *, permutation: (
        _batched_transpose(args[0], dims[0], permutation), dims[0]))


def _batched_transpose(x, d: int, permutation):
    """The permutation applied around the batch dimension, which stays at `d`."""
    perm = tuple(p + (p >= d) for p in permutation)
    return transpose_p.bind(x, permutation=perm[:d] + (d,) + perm[d:])


def transpose(operand, permutation):
    """Permutes the dimensions of an array.

    Result dimension i is operand dimension `permutation[i]`.

    Args:
        operand: an array.
        permutation: a permutation of `range(operand.ndim)`.

    Returns:
        The transposed array.

    Raises:
        TypeError: `permutation` is not a permutation of the dimensions.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.transpose(jnp.zeros((2, 3, 4)), (2, 0, 1)).shape
        (4, 2, 3)
    """
    perm = tuple(operator.index(p) for p in permutation)
    if _is_array(operand) and perm == tuple(range(get_aval(operand).ndim)):
        return operand
    return transpose_p.bind(operand, permutation=perm)


# --- squeeze --------------------------------------------------------------------------------

def _squeeze_abstract_eval(operand, *, dimensions):
    check_axes("squeeze", dimensions, operand.ndim, "dimensions")
    if any(operand.shape[d] != 1 for d in dimensions):
        raise ValueError(f"squeeze: cannot remove dimensions {dimensions} of operand "
                         f"{describe(operand)}: only dimensions of size 1 can be removed")
    shape = tuple(s for i, s in enumerate(operand.shape) if i not in dimensions)
    return ShapedArray(shape, operand.dtype, operand.weak_type)


def _squeeze_lower(ctx, operand, *, dimensions):
    return mu.reshape(operand, ctx.avals_out[0])


def _squeeze_batching(axis_data, args, dims, *, dimensions):
    """JAX's rule: the batch dimension moved to the front, the others squeezed."""
    (operand,), (d,) = args, dims
    return squeeze(moveaxis(operand, d, 0), tuple(np.add(1, dimensions))), 0


squeeze_p = standard_primitive(
    "lax.squeeze", _squeeze_abstract_eval, _squeeze_lower,
    jvp=linear_jvp(), transpose=lambda ct, x, *, dimensions: [expand_dims(ct, dimensions)],
    batching=_squeeze_batching)


def squeeze(array, dimensions):
    """Removes dimensions of size 1.

    Args:
        array: an array.
        dimensions: the dimensions to remove; each must have size 1 (negative
            counts from the end).

    Returns:
        `array` without those dimensions.

    Raises:
        ValueError: a listed dimension does not have size 1.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.squeeze(jnp.zeros((1, 3, 1)), (0, 2)).shape
        (3,)
    """
    ndim = get_aval(array).ndim
    dims = tuple(sorted(canonicalize_axis("squeeze", d, ndim, "dimension")
                        for d in dimensions))
    if len(set(dims)) != len(dims):
        raise ValueError(f"squeeze: dimensions are not unique: {tuple(dimensions)}")
    if not dims and _is_array(array):
        return array
    return squeeze_p.bind(array, dimensions=dims)


# --- concatenate --------------------------------------------------------------------------

def _concatenate_abstract_eval(*operands, dimension):
    if not operands:
        raise TypeError("concatenate requires at least one operand")
    dtype = check_same_dtypes("concatenate", *operands)
    shapes = ", ".join(map(describe, operands))
    if any(o.ndim != operands[0].ndim for o in operands) or operands[0].ndim == 0:
        raise TypeError(f"concatenate requires operands of the same rank, at least 1, got "
                        f"{shapes}")
    if not 0 <= dimension < operands[0].ndim:
        raise ValueError(f"concatenate: dimension {dimension} out of range for operands "
                         f"of rank {operands[0].ndim}")
    others = {o.shape[:dimension] + o.shape[dimension + 1:] for o in operands}
    if len(others) != 1:
        raise TypeError(f"concatenate requires operands whose shapes agree except on "
                        f"dimension {dimension}, got {shapes}")
    shape = list(operands[0].shape)
    shape[dimension] = sum(o.shape[dimension] for o in operands)
    return ShapedArray(shape, dtype, weak_result(operands, dtype))


def _concatenate_transpose(ct, *operands, dimension):
    from plax_stdlib.lax.slicing import slice_in_dim
    cts, start = [], 0
    for x in operands:
        size = (x.aval if is_undefined_primal(x) else get_aval(x)).shape[dimension]
        cts.append(slice_in_dim(ct, start, start + size, axis=dimension)
                   if is_undefined_primal(x) else None)
        start += size
    return cts


concatenate_p = standard_primitive(
    "lax.concatenate", _concatenate_abstract_eval,
    lambda ctx, *operands, dimension: hlo.concatenate(list(operands), dimension),
    jvp=linear_jvp(), transpose=_concatenate_transpose, batching=axes_batcher("dimension"))


def concatenate(operands, dimension: int):
    """Joins arrays end to end along an existing dimension.

    Args:
        operands: a sequence of arrays of one dtype and rank, whose shapes agree
            except along `dimension`.
        dimension: the dimension to join along, in [0, rank).

    Returns:
        An array whose size along `dimension` is the sum of the operands'.

    Raises:
        TypeError: different dtypes or ranks, or shapes that differ outside
            `dimension`.
        ValueError: no operands.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.concatenate([jnp.array([1, 2]), jnp.array([3])], 0)
        Array([1, 2, 3], dtype=int32)
    """
    operands = list(operands)
    if not operands:
        raise ValueError("concatenate requires a non-empty sequence of arrays")
    if len(operands) == 1 and _is_array(operands[0]):
        return operands[0]
    ndim = get_aval(operands[0]).ndim
    dimension = canonicalize_axis("concatenate", dimension, max(ndim, 1), "dimension",
                                  error=TypeError, negative=False)
    return concatenate_p.bind(*operands, dimension=dimension)


# --- pad --------------------------------------------------------------------------------------

def _pad_abstract_eval(operand, padding_value, *, padding_config):
    check_dtype("pad", operand, ANY)
    if len(padding_config) != operand.ndim:  # checked first, as JAX does
        raise ValueError(f"pad: padding_config has {len(padding_config)} entries for operand "
                         f"{describe(operand)}; it needs one (low, high, interior) per "
                         "dimension")
    if padding_value.shape:
        raise TypeError(f"pad requires a scalar padding_value, got {describe(padding_value)}")
    if any(interior < 0 for _, _, interior in padding_config):
        raise ValueError(f"pad: interior padding must be non-negative, got {padding_config}")
    shape = tuple(lo + hi + d + (max_dim(d - 1, 0) * interior if interior else 0)
                  for d, (lo, hi, interior) in zip(operand.shape, padding_config))
    if any(d < 0 for d in shape):
        raise ValueError(f"pad: padding_config {padding_config} would give operand "
                         f"{describe(operand)} the negative shape {shape}")
    dtype = check_same_dtypes("pad", operand, padding_value)  # after the shape, as JAX
    return ShapedArray(shape, dtype, weak_result((operand, padding_value), dtype))


def _pad_lower(ctx, operand, padding_value, *, padding_config):
    lo, hi, interior = zip(*padding_config) if padding_config else ((), (), ())
    if not mu.is_static([*lo, *hi, *interior]):  # symbolic (shape-polymorphic) padding
        return hlo.dynamic_pad(mu.ir_type(ctx.avals_out[0]), operand, padding_value,
                               mu.shape_tensor(lo), mu.shape_tensor(hi),
                               mu.shape_tensor(interior))
    return hlo.pad(operand, padding_value, list(lo), list(hi), list(interior))


def _pad_transpose(ct, operand, padding_value, *, padding_config):
    """The operand's cotangent undoes the padding (negative padding crops, strides
    skip the interior); the padding value's gets what is left."""
    from plax_stdlib.lax.elementwise import sub
    from plax_stdlib.lax.reductions import reduce_sum
    from plax_stdlib.lax.slicing import slice as slice_
    lo, hi, interior = ([c[i] for c in padding_config] for i in range(3))  # (as JAX's)
    unpadded = pad(ct, np.zeros((), get_aval(ct).dtype)[()],
                   list(zip(np.negative(lo), np.negative(hi), np.zeros_like(interior))))
    shape = get_aval(unpadded).shape
    t_operand = slice_(unpadded, np.zeros_like(lo), shape, np.add(interior, 1))
    t_value = None
    if is_undefined_primal(padding_value):
        axes = tuple(range(len(shape)))
        t_value = sub(reduce_sum(ct, axes), reduce_sum(t_operand, axes))
    return [t_operand if is_undefined_primal(operand) else None, t_value]


def _pad_batching(axis_data, args, dims, *, padding_config):
    (x, value), (xd, vd) = args, dims
    if vd is not_mapped:
        config = padding_config[:xd] + ((0, 0, 0),) + padding_config[xd:]
        return pad_p.bind(x, value, padding_config=config), xd
    # A value per batch member: pad with zeros, then select the value where padding went.
    from plax_stdlib.lax.comparison import select_n
    x = move_to(x, xd, 0, axis_data.size)
    dtype = get_aval(x).dtype
    padded = pad_p.bind(x, np.zeros((), dtype)[()],
                        padding_config=((0, 0, 0),) + padding_config)
    shape = get_aval(padded).shape
    inside = pad_p.bind(broadcast_in_dim(np.True_, get_aval(x).shape[1:], ()), np.False_,
                        padding_config=padding_config)
    inside = broadcast_in_dim(inside, shape, tuple(range(1, len(shape))))
    return select_n(inside, broadcast_in_dim(value, shape, (0,)), padded), 0


pad_p = standard_primitive("lax.pad", _pad_abstract_eval, _pad_lower, jvp=linear_jvp(),
                           transpose=_pad_transpose, batching=_pad_batching)


def pad(operand, padding_value, padding_config):
    """Pads an array with a value: at the low and high ends of each dimension and
    between its elements.

    Each dimension has `(low, high, interior)`: `low` elements before, `high`
    after, and `interior` between every two elements. Negative `low`/`high`
    remove elements instead.

    Args:
        operand: an array.
        padding_value: a scalar of `operand`'s dtype. A Python scalar keeps its
            default dtype, so padding an int8 array with `0` is a TypeError, as
            in JAX: pass `jnp.int8(0)`.
        padding_config: one `(low, high, interior)` triple per dimension.

    Returns:
        The padded array.

    Raises:
        TypeError: the padding value's dtype differs from `operand`'s, or the
            config's length differs from the rank.
        ValueError: negative interior padding, or negative padding removing more
            than the dimension holds.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.pad(jnp.array([1.0, 2.0, 3.0]), 0.0, [(1, 2, 1)])
        Array([0., 1., 0., 2., 0., 3., 0., 0.], dtype=float32)
    """
    config = tuple(tuple(param_int(d, canonical_dim) for d in triple)
                   for triple in padding_config)
    return pad_p.bind(operand, padding_value, padding_config=config)


# --- rev ----------------------------------------------------------------------------------------

def _rev_abstract_eval(operand, *, dimensions):
    check_axes("rev", dimensions, operand.ndim, "dimensions", error=TypeError)
    return operand


rev_p = standard_primitive("lax.rev", _rev_abstract_eval,
                           lambda ctx, operand, *, dimensions: hlo.reverse(operand, dimensions),
                           jvp=linear_jvp(),
                           transpose=lambda ct, x, *, dimensions: [rev(ct, dimensions)],
                           batching=axes_batcher("dimensions"))


def rev(operand, dimensions):
    """Reverses the order of elements along some dimensions.

    Args:
        operand: an array.
        dimensions: the dimensions to reverse (ints, non-negative).

    Returns:
        An array of `operand`'s shape and dtype.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.rev(jnp.arange(6).reshape(2, 3), (1,))
        Array([[2, 1, 0],
               [5, 4, 3]], dtype=int32)
    """
    ndim = get_aval(operand).ndim
    dims = tuple(canonicalize_axis("rev", d, ndim, "dimension", error=TypeError,
                                   negative=False) for d in dimensions)
    return rev_p.bind(operand, dimensions=dims)

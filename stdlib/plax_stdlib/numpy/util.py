"""How every `plax.numpy` function treats its arguments before binding primitives.

1. `check_arraylike`: only arrays, tracers, NumPy values and Python scalars are
   accepted (lists are not, as in JAX: build them into arrays with `asarray`).
2. `operand`: NumPy values are made canonical (64-bit → 32-bit with x64 off);
   Python scalars stay Python scalars, so they remain weakly typed.
3. `promote_dtypes`: every argument is converted to the dtype and weak type that
   JAX's promotion lattice gives (`dtypes.lattice_result_type`).
4. `promote_shapes`: NumPy broadcasting, honouring `jax_numpy_rank_promotion`.
"""
from __future__ import annotations

import operator
import warnings
from typing import Any, Callable, Sequence

import numpy as np

import plax
from plax.errors import ConcretizationTypeError
from plax.extend import config, dtypes
from plax.extend.core import ShapedArray, SymbolicDimension, Tracer, get_aval, reject_masked
from plax_stdlib import lax
from plax_stdlib.lax import shape_ops as lax_shape_ops
from plax_stdlib.lax.conversion import convert_with_weak_type
from plax_stdlib.lax.dimensions import dimension_as_value

_PY_SCALARS = (bool, int, float, complex)


def compiled(name: str | None = None, **jit_options):
    """Decorator: the function as a `plax.jit` function (printed as `name`, if given), as
    JAX's internal jitted helpers (`_where`...) and the methods of its `jnp.ufunc`s are:
    an eager call rounds as one jitted computation (XLA fuses the whole body), not op by
    op, and a Jaxpr shows the call. (The public functions JAX jits are listed in
    jax_jits.py.)"""
    def decorate(fun: Callable) -> Callable:
        if name is not None:
            fun.__name__ = fun.__qualname__ = name
        return plax.jit(fun, **jit_options)
    return decorate


def is_arraylike(x: Any) -> bool:
    return (type(x) in _PY_SCALARS or isinstance(x, (Tracer, np.ndarray, np.generic))
            or isinstance(getattr(x, "aval", None), ShapedArray)
            or hasattr(x, "__jax_array__"))  # an object standing for an array (JAX's)


def check_arraylike(fun_name: str, *args: Any) -> None:
    """TypeError unless each arg is array-like or a symbolic dimension (which
    `operand` makes its value)."""
    for pos, arg in enumerate(args):
        if not is_arraylike(arg) and not isinstance(arg, SymbolicDimension):
            hint = (" Convert it with plax.numpy.asarray first."
                    if isinstance(arg, (list, tuple)) else "")
            raise TypeError(f"{fun_name} requires ndarray or scalar arguments, got "
                            f"{type(arg).__name__} at position {pos}.{hint}")


def operand(x: Any) -> Any:
    """`x` as lax primitives take it: NumPy values at their canonical dtype; a Python
    int must fit the default integer type (OverflowError otherwise, as in JAX); a
    symbolic dimension (export) is its value."""
    if type(x) is int:
        get_aval(x)  # checks the range
        return x
    if hasattr(x, "__jax_array__") and not isinstance(x, Tracer):
        x = x.__jax_array__()
    if isinstance(x, SymbolicDimension):
        return dimension_as_value(x)
    if isinstance(x, (np.ndarray, np.generic)):
        reject_masked(x)
        dt = dtypes.canonicalize_dtype(x.dtype)
        dtypes.check_valid_dtype(dt)
        return x if x.dtype == dt else x.astype(dt)
    return x


def ensure_arraylike(fun_name: str, *args: Any) -> Any:
    """Checked operands; one value for one argument, else a tuple."""
    check_arraylike(fun_name, *args)
    out = tuple(operand(a) for a in args)
    return out[0] if len(out) == 1 else out


def shape_of(x: Any) -> tuple[int, ...]:
    return get_aval(x).shape


def dtype_of(x: Any) -> np.dtype:
    return get_aval(x).dtype


def is_python_scalar(x: Any) -> bool:
    return type(x) in _PY_SCALARS


# --- dtypes -------------------------------------------------------------------------

def _python_kind_for(dtype: np.dtype) -> type | None:
    """The Python scalar type whose weak dtype is `dtype`, if there is one."""
    for kind in (int, float, complex):
        if dtypes.canonicalize_dtype(dtypes.python_scalar_dtypes[kind]) == dtype:
            return kind
    return None


def convert(x: Any, dtype: Any, weak_type: bool = False) -> Any:
    """`x` (an operand) as `dtype`, weakly typed iff `weak_type`.

    Python scalars become Python scalars of the right kind when the result is weak
    (so they stay literals) and NumPy scalars otherwise, converted the way
    `convert_element_type` converts (integers wrap, floats overflow to inf); NumPy
    arrays are converted by NumPy; only traced and device values go through
    `convert_element_type`.
    """
    if isinstance(dtype, dtypes.ExtendedDType):  # PRNG keys: never converted
        if is_arraylike(x) and not is_python_scalar(x) and get_aval(x).dtype == dtype:
            return x
        raise TypeError(f"cannot convert {x!r} to dtype {dtype.name}; arrays of that dtype "
                        "are made by the functions of their kind (plax.random.wrap_key_data "
                        "for PRNG keys)")
    dtype = np.dtype(dtype)
    if is_python_scalar(x):
        if weak_type:
            kind = _python_kind_for(dtype)
            if kind is not None:
                return kind(x)
        else:
            return _cast_python_scalar(x, dtype)
    aval = get_aval(x)
    if aval.dtype == dtype and aval.weak_type == weak_type and not isinstance(x, Tracer):
        return x  # (a tracer: convert_with_weak_type converts one of a known value)
    if isinstance(x, (np.ndarray, np.generic)) and not weak_type:
        return host_cast(x, dtype)
    return convert_with_weak_type(x, dtype, weak_type)


def host_cast(x: np.ndarray | np.generic, dtype: np.dtype) -> np.ndarray | np.generic:
    """`x.astype(dtype)` with XLA's semantics, so that a conversion gives the same
    values on the host as on a device: floats become integers saturating at the
    type's bounds (NaN becomes 0) rather than wrapping around."""
    if dtype_category(x.dtype) in "fc" and dtype_category(dtype) in "iu":
        info = dtypes.iinfo(dtype)
        real = np.real(x) if np.iscomplexobj(x) else x
        with np.errstate(invalid="ignore"):
            x = np.clip(np.nan_to_num(real.astype(np.float64), nan=0.0), info.min, info.max)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        return x.astype(dtype)


_float_max: dict[np.dtype, float] = {}  # inexact dtype -> its largest finite value
# Dtypes that hold every int up to 2**24 exactly (`x * 2` of a float32 array converts 2)
_EXACT_FOR_SMALL_INTS = frozenset(map(np.dtype, ("float32", "float64", "complex64",
                                                 "complex128")))


def _cast_python_scalar(x: bool | int | float | complex, dtype: np.dtype) -> np.generic:
    if type(x) is float and dtype_category(dtype) in "fc":
        limit = _float_max.get(dtype)
        if limit is None:
            limit = _float_max[dtype] = float(dtypes.finfo(dtype).max)
        if -limit <= x <= limit:  # rounds to a finite value: no overflow to handle
            return dtype.type(x)
    if type(x) is int and dtype in _EXACT_FOR_SMALL_INTS and -2**24 <= x <= 2**24:
        return dtype.type(x)  # exact: what converting the int32 value gives
    with np.errstate(over="ignore"):
        natural = np.asarray(x, dtypes.canonicalize_dtype(dtypes.dtype(x)))
        return host_cast(natural, dtype)[()]


def promote_dtypes(*args: Any) -> list[Any]:
    """Convert operands to their common dtype (JAX's lattice, weak types included)."""
    if len(args) < 2:
        return list(args)
    to_dtype, weak = dtypes.lattice_result_type(*args)
    return [convert(x, to_dtype, weak) for x in args]


def promote_dtypes_inexact(*args: Any) -> list[Any]:
    """Like `promote_dtypes`, then bool/integer results become the default float."""
    to_dtype, weak = dtypes.lattice_result_type(*args)
    return [convert(x, dtypes.to_inexact_dtype(to_dtype), weak) for x in args]


def promote_dtypes_complex(*args: Any) -> list[Any]:
    """Like `promote_dtypes`, then the result made complex (float32 -> complex64)."""
    to_dtype, weak = dtypes.lattice_result_type(*args)
    return [convert(x, dtypes.to_complex_dtype(to_dtype), weak) for x in args]


def promote_dtypes_numeric(*args: Any) -> list[Any]:
    """Like `promote_dtypes`, with bool becoming int32 (as in JAX, even with x64)."""
    to_dtype, weak = dtypes.lattice_result_type(*args)
    if to_dtype == np.dtype(bool):
        to_dtype = np.dtype(np.int32)
    return [convert(x, to_dtype, weak) for x in args]


def is_weak(x: Any) -> bool:
    # A value with no weak type (a mutable reference's type: `zeros_like(ref)`) is strong.
    return getattr(get_aval(x), "weak_type", False)


_categories: dict[Any, str] = {}  # dtype (or dtype-like) -> its category, as found


def dtype_category(dtype: Any) -> str:
    """'b', 'i', 'u', 'f' or 'c' (bfloat16 is 'f', unlike NumPy's `kind`)."""
    try:
        return _categories[dtype]
    except (KeyError, TypeError):  # new, or unhashable
        pass
    for category, parent in (("b", np.bool_), ("u", np.unsignedinteger),
                             ("i", np.signedinteger), ("f", np.floating),
                             ("c", np.complexfloating)):
        if dtypes.issubdtype(dtype, parent):
            if len(_categories) < 1024:
                try:
                    _categories[dtype] = category
                except TypeError:
                    pass
            return category
    if isinstance(dtype, dtypes.ExtendedDType):
        hint = (": arrays of PRNG keys support no arithmetic (plax.random.key_data gives "
                "their integer data)")
    elif dtype == dtypes.float0:
        dtype, hint = "float0", f": {_FLOAT0_HINT}"
    else:
        hint = ""
    raise TypeError(f"dtype {dtype} is not a bool or numeric dtype{hint}")


def full_like(x: Any, fill_value: Any, dtype: Any = None) -> Any:
    """An array of `x`'s shape holding the scalar `fill_value`, of `dtype` or else of
    `x`'s dtype and weak type; the fill value is written inline, not converted."""
    weak = dtype is None and is_weak(x)
    fill = convert(fill_value, dtype_of(x) if dtype is None else dtype, weak)
    return lax.broadcast_in_dim(fill, shape_of(x), ())


def bool_like(x: Any, value: bool) -> Any:
    """`value` at each element of `x`, weakly typed where `x` is: the result of a
    predicate that is constant on `x`'s dtype (JAX computes such ones as `x != x`)."""
    return lax.broadcast_in_dim(convert(value, bool, is_weak(x)), shape_of(x), ())


def as_array(x: Any) -> Any:
    """`x` itself if it is traced or a plax Array, else `x` placed on a device: what
    functions return when they have nothing to compute."""
    if isinstance(x, Tracer) or isinstance(getattr(x, "aval", None), ShapedArray):
        return x
    return plax.device_put(x)  # the runtime, a layer above: through the facade


def check_user_dtype(dtype: Any, fun_name: str) -> np.dtype | None:
    """A `dtype=` argument made canonical; None stays None."""
    if dtype is None:
        return None
    return dtypes.check_and_canonicalize_user_dtype(dtype, fun_name)


# --- shapes -------------------------------------------------------------------------

def _as_shape(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer, SymbolicDimension)) or (
            isinstance(shape, Tracer) and not shape_of(shape)):
        return (shape,)  # (a traced size: canonicalize_shape then says it is traced)
    return tuple(shape)


def broadcast_shapes(*shapes: Any) -> tuple[int, ...]:
    """The shape that arrays of the given shapes broadcast to, by NumPy's rules.

    Follows `numpy.broadcast_shapes`.

    Args:
        *shapes: shapes (tuples of ints, or ints).

    Returns:
        A tuple of ints.

    Raises:
        ValueError: shapes that do not broadcast (the message names them all).

    Examples:
        >>> jnp.broadcast_shapes((2, 1), (3,), (1, 1, 1))
        (1, 2, 3)
    """
    shapes = [canonicalize_shape(_as_shape(s), "broadcast_shapes") for s in shapes]
    if not shapes:
        return ()
    ndim = max(len(s) for s in shapes)
    padded = [(1,) * (ndim - len(s)) + s for s in shapes]
    result = []
    for sizes in zip(*padded):
        non_one = set(sizes) - {1}
        if len(non_one) > 1:
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={list(shapes)}")
        result.append(non_one.pop() if non_one else 1)
    return tuple(result)


def broadcast_to_shape(x: Any, shape: tuple[int, ...]) -> Any:
    """`x` broadcast to `shape` (which must be a broadcast of x's shape)."""
    x_shape = shape_of(x)
    if x_shape == shape:
        return x
    lead = len(shape) - len(x_shape)
    return lax.broadcast_in_dim(x, shape, tuple(range(lead, len(shape))))


def select_n(which: Any, *cases: Any) -> Any:
    """`lax.select_n` after broadcasting the cases (and a non-scalar `which`) to
    their common shape; lax requires equal shapes."""
    shape = broadcast_shapes(*(shape_of(x) for x in (which, *cases)))
    if shape_of(which):
        which = broadcast_to_shape(which, shape)
    return lax.select_n(which, *(broadcast_to_shape(c, shape) for c in cases))


def _check_rank_promotion(fun_name: str, shapes: Sequence[tuple[int, ...]]) -> None:
    mode = config.numpy_rank_promotion.value
    if mode == "allow" or len({len(s) for s in shapes if s}) < 2:
        return
    listed = " ".join(map(str, shapes))
    if mode == "warn":
        warnings.warn(f"Following NumPy automatic rank promotion for {fun_name} on shapes "
                      f"{listed}. Set the jax_numpy_rank_promotion config option to 'allow' "
                      "to disable this warning.", stacklevel=4)
    else:
        raise ValueError(f"Operands could not be broadcast together for {fun_name} on shapes "
                         f"{listed} and with the config option "
                         "jax_numpy_rank_promotion='raise'.")


def broadcast_result_shape(fun_name: str, *args: Any) -> tuple[int, ...]:
    """The broadcast shape of operands, under the `jax_numpy_rank_promotion` policy."""
    shapes = [shape_of(a) for a in args]
    if all(s == shapes[0] for s in shapes):
        return shapes[0]
    result = broadcast_shapes(*shapes)
    _check_rank_promotion(fun_name, shapes)
    return result


def promote_shapes(fun_name: str, *args: Any) -> list[Any]:
    """Check that operands broadcast and give lower-rank ones leading unit
    dimensions; lax itself broadcasts rank-0 operands and unit dimensions, so
    nothing is materialized.

    As in JAX, operands of one rank (besides scalars) that do not broadcast are a
    TypeError (lax's class); operands of several ranks a ValueError (NumPy's).
    """
    if len(args) < 2:
        return list(args)
    shapes = [shape_of(a) for a in args]
    if len({len(s) for s in shapes if s}) < 2:
        _check_elementwise_shapes(fun_name, [s for s in shapes if s])
        return list(args)
    rank = len(broadcast_result_shape(fun_name, *args))
    return [a if len(s) in (0, rank) else lax.expand_dims(a, tuple(range(rank - len(s))))
            for a, s in zip(args, shapes)]


def _check_elementwise_shapes(fun_name: str, shapes: list[tuple[int, ...]]) -> None:
    for sizes in zip(*shapes):
        if len(set(sizes) - {1}) > 1:
            raise TypeError(f"{fun_name} got incompatible shapes for broadcasting: "
                            f"{', '.join(map(str, shapes))}.")


def _unchanged_by_promotion(args: tuple, categories: str) -> bool:
    """Whether promotion would give `args` back as they are: plax Arrays (not tracers)
    of one aval (shape, dtype, weak type) whose dtype is in `categories`. The common
    eager call (`jnp.sin(x)`, `x * y` of one dtype) then skips the general path, whose
    Python costs as much as the operation's own dispatch."""
    first = args[0]
    if type(first) is not plax.Array:
        return False
    aval = first.aval
    return (not isinstance(aval.dtype, dtypes.ExtendedDType)
            and dtype_category(aval.dtype) in categories
            and all(type(a) is plax.Array and a.aval == aval for a in args[1:]))


def _promote_args(fun_name: str, args: tuple, categories: str, promote: Callable) -> list:
    """`args` checked, their dtypes promoted by `promote` and their ranks made equal;
    as they are when promotion would not change them (dtypes in `categories`)."""
    if args and _unchanged_by_promotion(args, categories):
        return list(args)
    check_arraylike(fun_name, *args)
    args = [operand(a) for a in args]
    if any(dtype_of(a) == dtypes.float0 for a in args):  # (JAX's class, before promotion)
        raise TypeError(f"{fun_name} was called with a float0 array: {_FLOAT0_HINT}")
    return promote_shapes(fun_name, *promote(*args))


_FLOAT0_HINT = ("float0 arrays (the tangents of integers and bools) support no "
                "operations; np.zeros(x.shape, dtype) gives ordinary zeros of their shape")


def promote_args(fun_name: str, *args: Any) -> list[Any]:
    return _promote_args(fun_name, args, "biufc", promote_dtypes)


def promote_args_inexact(fun_name: str, *args: Any) -> list[Any]:
    return _promote_args(fun_name, args, "fc", promote_dtypes_inexact)


def promote_args_numeric(fun_name: str, *args: Any) -> list[Any]:
    return _promote_args(fun_name, args, "iufc", promote_dtypes_numeric)


def strong_unless_scalar(*args: Any) -> tuple[Any, ...]:
    """Promoted operands made strongly typed unless their broadcast shape is (): the
    weak types of JAX's gcd, lcm and hypot, whose formulas lose a non-scalar weak
    type to a strongly typed constant (a scalar result keeps it)."""
    if broadcast_shapes(*map(shape_of, args)) == ():
        return args
    return tuple(convert(x, dtype_of(x)) for x in args)


def canonicalize_shape(shape: Any, fun_name: str) -> tuple[int, ...]:
    """A shape as a tuple of non-negative Python ints; traced sizes are a TypeError,
    negative ones an `InvalidShapeError` (both a ValueError and a TypeError)."""
    return lax_shape_ops.canonicalize_shape(fun_name, _as_shape(shape))


# --- axes ---------------------------------------------------------------------------

def canonicalize_axis(axis: Any, ndim: int, error: type[Exception] = ValueError) -> int:
    """`axis` in [0, ndim); out of range, `error` with NumPy's message: a ValueError, as
    JAX raises in most functions (those where JAX's is an IndexError pass that class).
    A traced axis is JAX's ConcretizationTypeError (an axis shapes the result, so it
    must be static)."""
    if isinstance(axis, Tracer):
        axis = concrete_or_error(axis, "axis arguments must be static")
    try:
        axis = operator.index(axis)
    except TypeError:
        raise TypeError(f"axis must be an integer, got {axis!r}") from None
    if not -ndim <= axis < ndim:
        raise error(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def canonicalize_axes(axis: Any, ndim: int, error: type[Exception] = ValueError
                      ) -> tuple[int, ...]:
    """None → every axis; an int or a sequence of ints → sorted-free tuple of axes (an
    axis out of range is `error`, as for `canonicalize_axis`)."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = tuple(canonicalize_axis(a, ndim, error) for a in axis)
        if len(set(axes)) != len(axes):
            raise ValueError(f"duplicate value in 'axis': {tuple(axis)}")
        return axes
    return (canonicalize_axis(axis, ndim, error),)


# --- concrete values ----------------------------------------------------------------

def concrete_or_error(x: Any, context: str) -> Any:
    """The NumPy/Python value of `x`; ConcretizationTypeError if it is traced."""
    if isinstance(x, Tracer):
        value = x.to_concrete_value()
        if value is None:
            origin = x._trace.value_origin(x)
            raise ConcretizationTypeError(
                f"Abstract tracer value encountered where a concrete value is expected: "
                f"{context}, but got a traced array {x.aval.str_short()} while tracing "
                f"{x._trace.describe()}.{' ' + origin if origin else ''}\nPass a Python or "
                "NumPy value (or mark the argument static).")
        return value
    if isinstance(getattr(x, "aval", None), ShapedArray):
        return np.asarray(x)
    return x

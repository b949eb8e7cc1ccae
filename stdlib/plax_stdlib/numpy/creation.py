"""Array creation: `array`/`asarray`, filled arrays, ranges and identity matrices.

Concrete inputs become `plax.Array`s placed by the runtime (`implicit_device_put`);
traced inputs stay traced. Sizes (`shape`, `num`, `N`, `arange`'s bounds) must be
concrete (or symbolic dimensions, in a shape-polymorphic export), since they fix the
shape of the result.
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from plax.extend import dtypes
from plax.extend.core import (ShapedArray, SymbolicDimension, Tracer, get_aval,
                              implicit_device_put, reject_masked)
from plax_stdlib import lax
from plax_stdlib.lax import conversion as lax_conversion
from plax_stdlib.lax.dimensions import dimension_as_value, size_scalar
from plax_stdlib.lax.out_sharding import canonical_out_sharding
from plax_stdlib.numpy import util


def _device_put(x, device=None):
    # Placing data on a device is the runtime's job, a layer above: through its seam,
    # which counts the transfer as implicit (the user asked for an array, not a move).
    return implicit_device_put(x, device)


def _is_plax_value(x) -> bool:
    return isinstance(x, Tracer) or isinstance(getattr(x, "aval", None), ShapedArray)


def _has_plax_leaf(obj) -> bool:
    if isinstance(obj, (list, tuple)):
        return any(_has_plax_leaf(o) for o in obj)
    return _is_plax_value(obj) or isinstance(obj, SymbolicDimension)  # export: its value


def _leaves(obj) -> list:
    if isinstance(obj, (list, tuple)):
        return [leaf for o in obj for leaf in _leaves(o)]
    return [obj]


def _stack_nested(obj, dtype):
    """A nested list holding traced or device values, its rows joined as JAX joins
    them (each given a leading axis, then concatenated: not the `stack` primitive)."""
    from plax_stdlib.numpy.shape_ops import concatenate
    if isinstance(obj, (list, tuple)):
        if not obj:
            return np.zeros((0,), dtype)
        return concatenate([lax.expand_dims(_stack_nested(o, dtype), (0,)) for o in obj])
    return util.convert(util.ensure_arraylike("array", obj), dtype)


def array(object: Any, dtype: Any = None, copy: bool = True, order: str | None = "K",
          ndmin: int = 0, *, device=None, out_sharding=None):
    """Converts `object` (an array, a scalar, nested lists/tuples of those) to an array.

    As in JAX (and unlike NumPy): a Python scalar gives a *weakly typed* array (its
    dtype yields to the other operand's in arithmetic), 64-bit types become 32-bit
    unless `jax_enable_x64`, and the result is immutable.

    Args:
        object: the value to convert.
        dtype: the result's dtype (default: inferred, with JAX's rules).
        copy: return a new buffer even when `object` already is an array of the
            requested dtype.
        order: accepted for NumPy compatibility; plax arrays have one layout.
        ndmin: prepend dimensions of size 1 up to this rank.
        device: a Device or Sharding to place the result on.
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        A `plax.Array`.

    Raises:
        TypeError: an object that is not array-like (e.g. a ragged list).

    Examples:
        >>> import plax.numpy as jnp
        >>> jnp.array([1, 2]), jnp.array(1.5)
        (Array([1, 2], dtype=int32), Array(1.5, dtype=float32, weak_type=True))
    """
    out_sharding = _out_sharding("array", device, out_sharding)
    if order is not None and order != "K":
        raise NotImplementedError("plax.numpy.array: only order='K' is implemented")
    if object is None:
        raise ValueError("None is not a valid value for plax.numpy.array")
    if hasattr(object, "__jax_array__") and not isinstance(object, Tracer):
        object = object.__jax_array__()  # an object standing for an array, as in JAX
    dtype = util.check_user_dtype(dtype, "array")
    if isinstance(object, SymbolicDimension):  # export: the size as a value
        object = dimension_as_value(object)
    weak = dtype is None and util.is_python_scalar(object)
    if isinstance(object, (list, tuple)) and _has_plax_leaf(object):
        leaves = [util.ensure_arraylike("array", leaf) for leaf in _leaves(object)]
        out = _stack_nested(object, dtype or dtypes.lattice_result_type(*leaves)[0])
    elif _is_plax_value(object):
        if copy and isinstance(object, Tracer) and object.to_concrete_value() is None:
            object = lax_conversion.copy(object)  # (JAX's: a traced value is copied first)
        out = util.convert(object, dtype or object.dtype, weak_type=dtype is None and
                           util.is_weak(object))
        if copy and out is object and not isinstance(out, Tracer):
            out = lax_conversion.copy(out)
    else:
        out = _from_python_or_numpy(object, dtype, weak)
    missing_dims = ndmin - len(util.shape_of(out))
    if missing_dims > 0:
        out = lax.expand_dims(out, tuple(range(missing_dims)))
    if out_sharding is not None:
        return _place(out, None, out_sharding)
    if not _is_plax_value(out) or device is not None:
        out = _device_put(out, device)
    return out


def _from_python_or_numpy(object, dtype, weak):
    """A NumPy value. Python data converted to an explicit dtype follows NumPy:
    ints out of its range are an OverflowError, complex to real a TypeError."""
    if weak:
        return object
    reject_masked(object)
    if isinstance(object, (list, tuple)) and not _leaves(object):
        np_value = np.zeros(np.shape(object), dtype or dtypes.default_float_dtype())
    elif isinstance(object, (list, tuple)):
        leaves = _leaves(object)
        util.check_arraylike("array", *leaves)
        np_value = np.asarray(object, dtype or dtypes.result_type(*leaves))
    elif dtype is not None and util.is_python_scalar(object):
        np_value = np.asarray(object, dtype)
    else:
        try:
            np_value = np.asarray(object)
        except (TypeError, ValueError) as err:
            raise TypeError(f"plax.numpy.array: cannot convert {object!r} of type "
                            f"{type(object).__name__} to an array") from err
    target = dtype or dtypes.canonicalize_dtype(np_value.dtype)
    dtypes.check_valid_dtype(np.dtype(target))
    return np_value.astype(target, copy=False)


def asarray(a: Any, dtype: Any = None, order: str | None = None, *, copy: bool | None = None,
            device=None, out_sharding=None):
    """Converts `a` to an array, reusing it when it already is one of the requested dtype.

    The same as `array(a, dtype, copy=False)`: Python scalars and lists, NumPy arrays
    and plax arrays are accepted (traced values stay traced). Unlike NumPy, the result
    lives on a device (the default one, or `device`) and is immutable. A Python scalar
    gives a weakly typed array, and Python floats become float32 unless
    `jax_enable_x64` is on.

    Args:
        a: an array, a scalar, or nested lists/tuples of them.
        dtype: the result's dtype; default inferred from `a`.
        order: only None, "K", "A" or "C" (XLA arrays are row-major).
        copy: None or False reuse `a` where possible; True always copies.
        device: a Device (or Sharding) to place the result on.
        out_sharding: a Sharding or PartitionSpec for the result.

    Returns:
        A `plax.Array` (or a tracer under a transformation).

    Examples:
        >>> jnp.asarray([1, 2, 3])
        Array([1, 2, 3], dtype=int32)
        >>> jnp.asarray(np.array([1.0, 2.0]))  # float64 data becomes float32 by default
        Array([1., 2.], dtype=float32)
        >>> jnp.asarray(2.5)
        Array(2.5, dtype=float32, weak_type=True)
    """
    return array(a, dtype=dtype, copy=bool(copy), order=order, device=device,
                 out_sharding=_out_sharding("asarray", device, out_sharding))


def astype(x: Any, dtype: Any, /, *, copy: bool = False, device=None):
    """Converts `x` to `dtype` (the array API's form of `x.astype(dtype)`; None means
    the default float dtype, as in JAX).

    Floats become integers by truncation toward zero; a complex value becomes real by
    dropping its imaginary part (with a `ComplexWarning`, as in NumPy), and bool by
    being nonzero (`1j` is True, as in NumPy and JAX).

    Args:
        x: an array or scalar.
        dtype: the target dtype.
        copy: accepted for the array API; a new array is returned either way.
        device: a Device to place the result on.

    Returns:
        An array of `x`'s shape and dtype `dtype`.

    Examples:
        >>> jnp.astype(jnp.array([1.7, -1.7]), jnp.int32)
        Array([ 1, -1], dtype=int32)
    """
    x = util.ensure_arraylike("astype", x)
    dtype = dtypes.default_float_dtype() if dtype is None else util.check_user_dtype(
        dtype, "astype")
    if util.dtype_of(x) == dtypes.float0:  # NumPy cannot convert it; lax gives zeros, as JAX
        x = lax.convert_element_type(x, dtype)
    elif util.dtype_category(util.dtype_of(x)) == "c" and dtype == np.dtype(bool):
        x = lax.ne(util.operand(x), util.convert(0, util.dtype_of(x)))  # (a convert: real part)
    return array(x, dtype=dtype, copy=copy, device=device)


def copy(a: Any, order: str | None = None):
    """A copy of `a` as a new array.

    Since plax arrays are immutable, a copy is rarely needed; it is useful to detach a
    value from a donated buffer, or to turn a NumPy array or Python list into a device
    array.

    Args:
        a: an array or array-like.
        order: only None, "K", "A" or "C".

    Returns:
        An array equal to `a`.

    Examples:
        >>> x = jnp.array([1, 2])
        >>> y = jnp.copy(x)
        >>> y, y is x
        (Array([1, 2], dtype=int32), False)
    """
    return array(a, copy=True, order=order)


# --- filled arrays -------------------------------------------------------------------

def _out_sharding(name: str, device, out_sharding):
    """`out_sharding` checked (see `canonical_out_sharding`); JAX's ValueError where
    `device` is given too."""
    if device is not None and out_sharding is not None:
        raise ValueError(f"plax.numpy.{name}: only one of `device` or `out_sharding` can be "
                         f"set, got device={device!r} and out_sharding={out_sharding!r}")
    return canonical_out_sharding(f"plax.numpy.{name}", out_sharding)


def _place(out, device, out_sharding=None):
    """`out` committed to `device`, or laid out (and, on `Explicit` axes, typed) as a
    checked `out_sharding` by `reshard` (which spells its spec with one entry per
    dimension, as JAX's result does)."""
    if out_sharding is not None:
        from plax.sharding import reshard
        return reshard(out, out_sharding)
    return out if device is None else _device_put(out, device)


def _filled(shape, fill_value, dtype, weak_type, fun_name, sharding=None):
    """`fill_value` (a checked operand) as `dtype`, broadcast to `shape` (a scalar one
    laid out as `sharding`, if given)."""
    if isinstance(dtype, dtypes.ExtendedDType):
        return dtype.full(shape, fill_value)
    if dtype == dtypes.float0:  # tangents of integers and keys: no data, a host array
        return np.zeros(shape, dtypes.float0)
    if type(fill_value) is complex and np.dtype(dtype).kind != "c":  # no silent drop, as JAX
        raise TypeError(f"{fun_name}: the Python complex {fill_value!r} cannot fill an "
                        f"array of dtype {np.dtype(dtype).name}; pass a complex dtype or "
                        "the real part")
    fill = util.convert(fill_value, dtype, weak_type)
    fill_shape = util.shape_of(fill)
    if fill_shape:
        from plax_stdlib.numpy.shape_ops import broadcast_to
        return broadcast_to(fill, shape)
    return lax.broadcast_in_dim(fill, shape, (), out_sharding=sharding)


def full(shape: Any, fill_value: Any, dtype: Any = None, *, device=None, out_sharding=None):
    """An array of `shape` filled with `fill_value`.

    `fill_value` may be an array broadcastable to `shape` (each row gets it, say).
    Without `dtype`, the dtype is `fill_value`'s: a Python scalar gives a weakly typed
    array of the default int or float type (NumPy would use int64/float64).

    Args:
        shape: an int or a sequence of ints (concrete: it fixes the result's shape).
        fill_value: a scalar or an array broadcastable to `shape`.
        dtype: the result's dtype.
        device: a Device to place the result on.
        out_sharding: a Sharding or PartitionSpec for the result.

    Returns:
        An array of `shape`.

    Raises:
        TypeError: a shape that is not concrete (e.g. traced).

    Examples:
        >>> jnp.full((2, 3), 7)
        Array([[7, 7, 7],
               [7, 7, 7]], dtype=int32, weak_type=True)
        >>> jnp.full((2, 2), jnp.array([1.0, 2.0]))
        Array([[1., 2.],
               [1., 2.]], dtype=float32)
    """
    return _full("full", shape, fill_value, dtype, device, out_sharding)


def zeros(shape: Any, dtype: Any = None, *, device=None, out_sharding=None):
    """An array of `shape` filled with zeros.

    The default dtype is the default float type (float32 unless `jax_enable_x64`;
    NumPy's is float64).

    Args:
        shape: an int or a sequence of ints (concrete).
        dtype: the result's dtype.
        device: a Device to place the result on.
        out_sharding: a Sharding or PartitionSpec for the result (with a mesh in context,
            e.g. `P("x")`).

    Returns:
        An array of zeros.

    Examples:
        >>> jnp.zeros((2, 3))
        Array([[0., 0., 0.],
               [0., 0., 0.]], dtype=float32)
        >>> jnp.zeros(2, dtype=jnp.int8)
        Array([0, 0], dtype=int8)
    """
    return _full("zeros", shape, 0, dtype or dtypes.default_float_dtype(), device,
                 out_sharding)


def ones(shape: Any, dtype: Any = None, *, device=None, out_sharding=None):
    """An array of `shape` filled with ones, of the default float type unless `dtype`
    says otherwise (float32 by default; NumPy uses float64).

    Args:
        shape: an int or a sequence of ints (concrete).
        dtype: the result's dtype.
        device: a Device to place the result on.
        out_sharding: a Sharding or PartitionSpec for the result.

    Returns:
        An array of ones.

    Examples:
        >>> jnp.ones(3)
        Array([1., 1., 1.], dtype=float32)
        >>> jnp.ones((2, 2), dtype=bool)
        Array([[ True,  True],
               [ True,  True]], dtype=bool)
    """
    return _full("ones", shape, 1, dtype or dtypes.default_float_dtype(), device,
                 out_sharding)


def empty(shape: Any, dtype: Any = None, *, device=None, out_sharding=None):
    """An array of `shape` and `dtype` whose contents the caller will overwrite.

    XLA has no uninitialized buffers, so unlike NumPy's `empty` the result is filled
    with zeros (and, since arrays are immutable, "overwriting" means building a new
    array, e.g. with `.at[...].set`).

    Args:
        shape: an int or a sequence of ints (concrete).
        dtype: the result's dtype; default the default float type.
        device: a Device to place the result on.
        out_sharding: a Sharding or PartitionSpec for the result.

    Returns:
        An array of zeros.

    Examples:
        >>> jnp.empty((2,), dtype=jnp.int32)
        Array([0, 0], dtype=int32)
    """
    return _full("empty", shape, 0, dtype or dtypes.default_float_dtype(), device,
                 out_sharding)


def _full(name: str, shape, fill_value, dtype, device, out_sharding):
    """`full`, its arguments checked once, the errors naming the function called."""
    out_sharding = _out_sharding(name, device, out_sharding)
    shape = util.canonicalize_shape(shape, name)
    dtype = util.check_user_dtype(dtype, name)
    fill_value = util.ensure_arraylike(name, _int_fill(fill_value, dtype))
    out_dtype = dtype or util.dtype_of(fill_value)
    weak = dtype is None and util.is_weak(fill_value)
    return _place(_filled(shape, fill_value, out_dtype, weak, name), device, out_sharding)


def _int_fill(fill_value, dtype):
    """A Python int fill converted to the array's `dtype` first (as JAX converts it):
    `full((2,), 2**40, dtype=float32)` is 1.0995116e12, not an int32 overflow."""
    if dtype is None or type(fill_value) is not int or dtypes.issubdtype(dtype, dtypes.extended):
        return fill_value  # a key array's zeros are filled by its own rule
    return np.asarray(fill_value).astype(dtypes.canonicalize_dtype(dtype))


def full_like(a: Any, fill_value: Any, dtype: Any = None, shape: Any = None, *, device=None,
              out_sharding=None):
    """An array like `a` (its shape and dtype, including a weak type) filled with
    `fill_value`.

    `dtype` and `shape` override `a`'s. With `a`'s shape, the result also keeps the
    sharding held in `a`'s type (over explicit mesh axes), as in JAX, unless
    `out_sharding` gives another. `a` may be anything with `.shape` and `.dtype`
    (a `ShapeDtypeStruct` too).

    Args:
        a: the prototype.
        fill_value: a scalar or an array broadcastable to the shape.
        dtype: the result's dtype instead of `a`'s.
        shape: the result's shape instead of `a`'s.
        device: a Device to place the result on.
        out_sharding: a Sharding or PartitionSpec for the result.

    Returns:
        A new array.

    Examples:
        >>> jnp.full_like(jnp.array([1, 2, 3]), 9)
        Array([9, 9, 9], dtype=int32)
        >>> jnp.full_like(jnp.array([1, 2, 3]), 0.5)  # keeps int32: 0.5 is truncated
        Array([0, 0, 0], dtype=int32)
    """
    return _full_like("full_like", a, fill_value, dtype, shape, device, out_sharding)


def zeros_like(a: Any, dtype: Any = None, shape: Any = None, *, device=None,
               out_sharding=None):
    """An array of zeros with `a`'s shape and dtype (or the `dtype`/`shape` given).

    It keeps `a`'s weak type and, with `a`'s shape, the sharding in its type; see
    `full_like`.

    Args:
        a: the prototype (an array, or anything with `.shape` and `.dtype`).
        dtype: the result's dtype instead of `a`'s.
        shape: the result's shape instead of `a`'s.
        device: a Device to place the result on.
        out_sharding: a Sharding or PartitionSpec for the result.

    Returns:
        An array of zeros.

    Examples:
        >>> jnp.zeros_like(jnp.array([[1.5, 2.5]]))
        Array([[0., 0.]], dtype=float32)
    """
    return _full_like("zeros_like", a, 0, dtype, shape, device, out_sharding)


def ones_like(a: Any, dtype: Any = None, shape: Any = None, *, device=None,
              out_sharding=None):
    """An array of ones shaped and typed like `a`, unless `dtype` or `shape` are given.

    Args:
        a: the prototype (an array, or anything with `.shape` and `.dtype`).
        dtype: the result's dtype instead of `a`'s.
        shape: the result's shape instead of `a`'s.
        device: a Device to place the result on.
        out_sharding: a Sharding or PartitionSpec for the result.

    Returns:
        An array of ones.

    Examples:
        >>> jnp.ones_like(jnp.arange(3), dtype=jnp.float32)
        Array([1., 1., 1.], dtype=float32)
    """
    return _full_like("ones_like", a, 1, dtype, shape, device, out_sharding)


def _full_like(name: str, a, fill_value, dtype, shape, device, out_sharding):
    """`full_like`, its arguments checked once, the errors naming the function called."""
    if _only_shaped(a):  # a ShapeDtypeStruct (or any object with shape and dtype), as JAX
        if device is None and out_sharding is None:
            device = getattr(a, "sharding", None)
        a = np.broadcast_to(np.zeros((), a.dtype), tuple(a.shape))
    out_sharding = _out_sharding(name, device, out_sharding)
    a = util.ensure_arraylike(name, a)
    dtype = util.check_user_dtype(dtype, name)
    fill_value = util.ensure_arraylike(name, _int_fill(fill_value, dtype or util.dtype_of(a)))
    out_shape = util.shape_of(a) if shape is None else util.canonicalize_shape(shape, name)
    weak = dtype is None and util.is_weak(a)
    typed = (getattr(get_aval(a), "typed_sharding", None)
             if shape is None and out_sharding is None else None)
    if typed is not None and not isinstance(a, Tracer):
        typed = a.sharding  # a concrete array's own devices, which eager dispatch uses
    out_dtype = dtype or util.dtype_of(a)
    if (typed is None and device is None and out_sharding is None and not weak
            and _keeps_its_sharding(a, out_shape, fill_value, out_dtype)):
        # As JAX's: a committed Array's zeros (ones...) are laid out as it is: filled on
        # a device and copied where it lives, or, split, each shard placed from a host
        # view of the fill (nothing of the whole array gathered anywhere)
        if a.sharding.is_fully_replicated:
            return _device_put(_filled(out_shape, fill_value, out_dtype, False, name),
                               a.sharding)
        fill = np.asarray(util.convert(fill_value, out_dtype, False))
        return _device_put(np.broadcast_to(fill, out_shape), a.sharding)
    out = _filled(out_shape, fill_value, out_dtype, weak, name, typed)
    return _place(out, device, out_sharding)


def _keeps_its_sharding(a, shape, fill_value, dtype) -> bool:
    """Whether `a`'s zeros (ones...) of `shape` take its sharding, as JAX's `full_like`
    rule has it: `a` is a committed Array, the result has its shape (or `a` is
    replicated), and the fill is a known scalar of a NumPy dtype."""
    return (not isinstance(a, Tracer) and getattr(a, "committed", False)
            and (shape == util.shape_of(a) or a.sharding.is_fully_replicated)
            and not isinstance(fill_value, Tracer) and not util.shape_of(fill_value)
            and isinstance(dtype, np.dtype) and dtype != dtypes.float0)


def _only_shaped(a) -> bool:
    """An object that has a shape and a dtype but no values (no `__array__`)."""
    return (hasattr(a, "shape") and hasattr(a, "dtype") and not hasattr(a, "__array__")
            and not isinstance(a, Tracer) and not hasattr(a, "__jax_array__"))


def empty_like(prototype: Any, dtype: Any = None, shape: Any = None, *, device=None):
    """An array shaped and typed like `prototype`, for the caller to fill.

    As with `empty`, XLA has no uninitialized memory: the result is zeros.

    Args:
        prototype: an array, or anything with `.shape` and `.dtype`.
        dtype: the result's dtype instead of the prototype's.
        shape: the result's shape instead of the prototype's.
        device: a Device to place the result on.

    Returns:
        An array of zeros.

    Examples:
        >>> jnp.empty_like(jnp.ones((1, 2), jnp.int16))
        Array([[0, 0]], dtype=int16)
    """
    return zeros_like(prototype, dtype, shape, device=device)


# --- ranges ------------------------------------------------------------------------

def _concrete_bound(value, name: str):
    value = util.concrete_or_error(
        value, f"plax.numpy.arange argument '{name}' fixes the size of the result")
    if np.ndim(value) != 0:
        raise ValueError(f"arange: '{name}' must be a scalar, got an array of shape "
                         f"{np.shape(value)}")
    return value


def arange(start: Any, stop: Any = None, step: Any = None, dtype: Any = None, *, device=None,
           out_sharding=None):
    """Evenly spaced values in `[start, stop)`, as NumPy's `arange`.

    The result's length depends on the bounds, so they must be concrete: Python
    numbers, or arrays outside `jit` (under `jit`, a traced bound is a
    `ConcretizationTypeError`; mark the argument static). In a shape-polymorphic
    export they may be symbolic dimensions.

    Args:
        start: the first value (or, alone, `stop` with `start=0`).
        stop: the end, excluded.
        step: the spacing (default 1).
        dtype: the result's dtype (default: from the bounds, with JAX's rules).
        device: a Device or Sharding to place the result on.
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        A 1-d array.

    Examples:
        >>> import plax.numpy as jnp
        >>> jnp.arange(5), jnp.arange(0.0, 1.0, 0.25)
        (Array([0, 1, 2, 3, 4], dtype=int32), Array([0.  , 0.25, 0.5 , 0.75], dtype=float32))
    """
    out_sharding = _out_sharding("arange", device, out_sharding)
    dtype = util.check_user_dtype(dtype, "arange")
    if any(isinstance(v, SymbolicDimension) for v in (start, stop, step)):
        return _place(_symbolic_arange(start, stop, step, dtype), device, out_sharding)
    # arange(n) is arange(0, n): a lone bound is the `stop` (the name JAX's errors use)
    names = ("stop", "start", "step") if stop is None else ("start", "stop", "step")
    bounds = [None if v is None else _concrete_bound(v, name)
              for v, name in zip((start, stop, step), names)]
    start, stop, step = bounds
    out_dtype = dtype or dtypes.result_type(*(v for v in bounds if v is not None))
    if util.dtype_category(out_dtype) == "b":  # JAX's class (NumPy takes up to 2 values)
        raise TypeError("arange does not accept dtype bool; it takes integer, floating "
                        "and complex dtypes")
    if any(np.iscomplexobj(v) for v in bounds if v is not None):  # as JAX 0.10
        raise ValueError(f"arange takes real bounds, got start={start}, stop={stop}, "
                         f"step={step}")
    if stop is None:
        start, stop = 0, start
    if step is not None and step == 0:  # NumPy's (and JAX's) class for a zero step
        raise ZeroDivisionError(f"arange: step must not be zero (start={start}, stop={stop})")
    return _place(_arange_values(start, stop, step, np.dtype(out_dtype)), device,
                  out_sharding)


def _arange_values(start, stop, step, dtype: np.dtype):
    """JAX's formulation, computed on the device as JAX computes it (so the values are
    the same bits): `start + step * iota` in float32 at least, or `start + iota`."""
    if step is None:
        iota = lax.iota(dtype, max(int(np.ceil(stop - start)), 0))
        return iota if start == 0 else lax.add(lax.convert_element_type(start, dtype), iota)
    working = dtype
    if util.dtype_category(dtype) == "f" and dtypes.finfo(dtype).bits < 32:
        working = np.dtype(np.float32)
    iota = lax.iota(working, max(int(np.ceil((stop - start) / step)), 0))
    values = lax.add(lax.convert_element_type(start, working),
                     lax.mul(lax.convert_element_type(step, working), iota))
    return lax.convert_element_type(values, dtype)


def _symbolic_arange(start, stop, step, dtype):
    """`arange` whose bounds are ints and symbolic dimensions: `start + step * iota`
    with `max(ceil((stop - start) / step), 0)` elements, as JAX counts them."""
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    for name, v in (("start", start), ("stop", stop), ("step", step)):
        if not isinstance(v, (int, np.integer, SymbolicDimension)):  # JAX's class
            raise ValueError(f"arange with a symbolic dimension takes integer bounds, got "
                             f"{name}={v!r}")
    if not isinstance(step, (int, np.integer)) or step == 0:
        raise ValueError(f"arange with a symbolic dimension needs a constant, non-zero "
                         f"step, got step={step}")
    size = max((stop - start + step - 1) // step if step > 0
               else (start - stop - step - 1) // -step, 0)
    dtype = dtype or dtypes.default_int_dtype()
    out = lax.iota(dtype, size)
    if step != 1:
        out = lax.mul(out, np.asarray(step, dtype))
    return out if start == 0 else lax.add(out, size_scalar(start, dtype))


def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
             retstep: bool = False, dtype: Any = None, axis: int = 0, *, device=None):
    """`num` evenly spaced samples from `start` to `stop` (inclusive when `endpoint`).

    `start` and `stop` may be arrays (even traced), in which case the samples run along
    a new axis `axis`. The values are computed as JAX does, to the bit: sample `i` is
    `start * (1 - t) + stop * t` with `t = i / div`, and `stop` itself ends the
    sequence when `endpoint`; integer bounds give the default float dtype.

    Args:
        start: the first value (scalar or array).
        stop: the last value (or the bound, without `endpoint`).
        num: the number of samples (concrete, non-negative).
        endpoint: include `stop`.
        retstep: also return the spacing.
        dtype: the result's dtype (integer dtypes round down the samples).
        axis: where the samples' axis goes, for array bounds.
        device: a Device to place the result on.

    Returns:
        The samples; with `retstep`, a pair `(samples, step)`.

    Raises:
        ValueError: a negative `num`.

    Examples:
        >>> jnp.linspace(0, 1, 5)
        Array([0.  , 0.25, 0.5 , 0.75, 1.  ], dtype=float32)
        >>> jnp.linspace(0, 1, 4, endpoint=False, retstep=True)
        (Array([0.  , 0.25, 0.5 , 0.75], dtype=float32), Array(0.25, dtype=float32))
    """
    num = operator.index(util.concrete_or_error(num, "linspace: 'num' fixes the result size"))
    if num < 0:
        raise ValueError(f"linspace: number of samples, {num}, must be non-negative.")
    dtype = util.check_user_dtype(dtype, "linspace")
    start, stop = util.ensure_arraylike("linspace", start, stop)
    axis = operator.index(axis)
    out = _linspace(start, stop, num, endpoint, retstep, dtype, axis)
    if retstep:
        # The step keeps the computation's (inexact) dtype, as in JAX: 2.5, not 2, for ints.
        return _place(out[0], device), out[1]
    return _place(out, device)


@util.compiled(static_argnums=(2, 3, 4, 5, 6))
def _linspace(start, stop, num: int, endpoint: bool, retstep: bool, dtype, axis: int):
    """`linspace` as one jitted call (JAX's `_linspace`): the bounds, reshaped with a
    unit axis at `axis`, are weighted by `1 - t` and `t` (`t = i / div` along that
    axis), broadcast by the arithmetic."""
    out_dtype = dtype or dtypes.to_inexact_dtype(dtypes.result_type(start, stop))
    compute_dtype = dtypes.to_inexact_dtype(out_dtype)
    start, stop = (util.convert(v, compute_dtype) for v in (start, stop))
    bounds = list(util.broadcast_shapes(util.shape_of(start), util.shape_of(stop)))
    start, stop = (util.broadcast_to_shape(v, tuple(bounds)) for v in (start, stop))
    axis = util.canonicalize_axis(axis, len(bounds) + 1, IndexError)  # JAX's class
    shape = bounds[:axis] + [1] + bounds[axis:]  # the bounds' shape with the samples' axis
    div = num - 1 if endpoint else num
    if num > 1:
        step = lax.div(lax.sub(stop, start), np.asarray(div, compute_dtype))
        real_dtype = dtypes.finfo(compute_dtype).dtype
        t_shape = [1] * len(shape)
        t_shape[axis] = div
        t = lax.div(lax.reshape(lax.iota(real_dtype, div), tuple(t_shape)),
                    np.asarray(div, real_dtype))
        t = util.convert(t, compute_dtype)
        out = lax.add(lax.mul(lax.reshape(start, tuple(shape)),
                              lax.sub(np.asarray(1, compute_dtype), t)),
                      lax.mul(lax.reshape(stop, tuple(shape)), t))
        if endpoint:
            out = lax.concatenate([out, lax.expand_dims(stop, (axis,))], axis)
    elif num == 1:  # no step: NaN, or the whole interval for one open sample
        step = (util.convert(np.asarray(np.nan), compute_dtype) if endpoint
                else lax.sub(stop, start))
        out = lax.reshape(start, tuple(shape))
    else:
        step = util.convert(np.asarray(np.nan), compute_dtype)
        shape[axis] = 0
        out = lax.full(tuple(shape), 0, out_dtype)
    if util.dtype_category(out_dtype) in "iu" and util.dtype_category(util.dtype_of(out)) \
            not in "iu":
        out = lax.floor(out)
    out = util.convert(out, out_dtype)
    return (out, step) if retstep else out


# --- identity matrices -----------------------------------------------------------------

def eye(N: int, M: int | None = None, k: Any = 0, dtype: Any = None, *, device=None):
    """A 2-D array with ones on the `k`-th diagonal and zeros elsewhere.

    Unlike NumPy, the diagonal offset `k` may be a traced integer.

    Args:
        N: the number of rows.
        M: the number of columns (default `N`).
        k: the diagonal: 0 the main one, positive above it, negative below.
        dtype: the result's dtype; default the default float type.
        device: a Device to place the result on.

    Returns:
        An `(N, M)` array.

    Raises:
        TypeError: a `k` that is not an integer.

    Examples:
        >>> jnp.eye(2, 3, k=1, dtype=jnp.int32)
        Array([[0, 1, 0],
               [0, 0, 1]], dtype=int32)
    """
    N = util.canonicalize_shape((N,), "eye")[0]
    M = N if M is None else util.canonicalize_shape((M,), "eye")[0]
    dtype = util.check_user_dtype(dtype, "eye") or dtypes.default_float_dtype()
    k = util.ensure_arraylike("eye", k)
    if util.dtype_category(util.dtype_of(k)) not in "iu":
        raise TypeError(f"eye: k must be an integer, got dtype {util.dtype_of(k)}")
    index_dtype = dtypes.default_int_dtype()
    rows = lax.broadcasted_iota(index_dtype, (N, M), 0)
    cols = lax.broadcasted_iota(index_dtype, (N, M), 1)
    on_diagonal = lax.eq(lax.add(rows, util.convert(k, index_dtype)), cols)
    return _place(lax.convert_element_type(on_diagonal, dtype), device)


def identity(n: int, dtype: Any = None):
    """The `n` × `n` identity matrix (ones on the diagonal), of the default float type
    unless `dtype` is given.

    Args:
        n: the number of rows and columns.
        dtype: the result's dtype.

    Returns:
        An `(n, n)` array.

    Examples:
        >>> jnp.identity(2)
        Array([[1., 0.],
               [0., 1.]], dtype=float32)
    """
    return eye(n, dtype=dtype)

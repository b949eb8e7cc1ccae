"""The functions behind the operators and methods of tracers and `plax.Array`s.

The kernel names the methods (`plax.extend.core.install_array_methods`) and looks
their implementations up here, through the `array_methods` entry point of the
`plax.interpreters` group: NumPy functions by their `plax.numpy` names, plus
`getitem` (`x[...]`), `at` (`x.at[...]` updates) and the methods that are no NumPy
function (`view`, `byteswap`, `to_device`, the `compress` of the array, `in`...).

The operators call `plax.numpy`'s functions, as JAX's do: `x + y` is `jnp.add(x, y)`,
the `jnp.ufunc` whose call is `jit(add, inline=True)`, so an eager operator runs as
one cached computation and a traced one puts its equations in the Jaxpr. On
`plax.Array`, `+ - * /` are C++ (plax-transforms' fast operators call `jitted`'s
functions directly).
"""
import numpy as np

import plax
from plax.extend import dtypes
from plax.extend.core import Tracer
from plax_stdlib import lax
from plax_stdlib import numpy as _jnp
from plax_stdlib.numpy import ufunc_objects, util
from plax_stdlib.numpy.index_update import _IndexUpdateHelper as at  # noqa: F401
from plax_stdlib.numpy.indexing import getitem  # noqa: F401


def jitted(name: str):
    """The `plax.jit` function behind the operator calling the NumPy function `name` (a
    value of `JITTED_OPERATORS` or `JITTED_UNARY_OPERATORS`): the function of a
    `jnp.ufunc`, else `name` itself."""
    fun = getattr(_jnp, name)
    return fun._func if isinstance(fun, ufunc_objects.ufunc) else fun


negative = jitted("negative")  # `-x` calls the jit of `jnp.negative` itself, as JAX's does
# The commonest operators' functions, bound here rather than found by `__getattr__`.
add, subtract, multiply, true_divide = _jnp.add, _jnp.subtract, _jnp.multiply, _jnp.true_divide


def compress(x, condition, axis=None, *, out=None, size=None, fill_value=0):
    """`x.compress(condition)`: `jnp.compress(condition, x)`."""
    return _jnp.compress(condition, x, axis=axis, out=out, size=size, fill_value=fill_value)


def byteswap(x):
    """`x` with the bytes of each element in reverse order, its dtype kept (complex
    numbers: of each part). NumPy would read the result as the other endianness."""
    if util.dtype_category(util.dtype_of(x)) == "c":
        return lax.complex(byteswap(lax.real(x)), byteswap(lax.imag(x)))
    if util.dtype_of(x).itemsize == 1:
        return _jnp.copy(x)
    as_bytes = lax.bitcast_convert_type(x, np.uint8)  # a new last axis of bytes
    return lax.bitcast_convert_type(lax.rev(as_bytes, (x.ndim,)), util.dtype_of(x))


def view(x, dtype=None, type=None):  # noqa: A002 - NumPy's name
    """The bits of `x` read as `dtype`: a wider dtype takes its last axis in groups of
    items, a narrower one splits each item along it (as NumPy's `view`, but never
    sharing memory). Bools count as bytes, complex numbers as their two parts."""
    if type is not None:
        raise NotImplementedError("the type argument of Array.view is not supported")
    if dtype is None:
        return x
    dtype = util.check_user_dtype(dtype, "view")
    bits_in, bits_out = dtypes.itemsize_bits(x.dtype), dtypes.itemsize_bits(dtype)
    if x.ndim == 0:
        if bits_in != bits_out:
            raise ValueError(f"view of a 0-d array needs a dtype of its itemsize: "
                             f"{x.dtype} as {dtype}")
        return view(lax.expand_dims(x, (0,)), dtype).squeeze()
    if (x.shape[-1] * bits_in) % bits_out:
        raise ValueError(f"view: the last axis of an array of shape {x.shape} and dtype "
                         f"{x.dtype} is no whole number of {dtype} items")
    if x.dtype == dtype:
        return x
    if x.dtype == np.dtype(bool):
        return view(x.astype(np.uint8), dtype)
    if util.dtype_category(x.dtype) == "c":  # real and imaginary parts interleaved
        parts = _jnp.stack([lax.real(x), lax.imag(x)], axis=-1)
        return view(parts.reshape(*x.shape[:-1], 2 * x.shape[-1]), dtype)
    if dtype == np.dtype(bool):
        return view(x, np.uint8).astype(bool)
    if util.dtype_category(dtype) == "c":  # (JAX's arithmetic: the same bits, NaNs too)
        parts = view(x, dtypes.finfo(dtype).dtype).astype(dtype)
        return parts[..., 0::2] + 1j * parts[..., 1::2]
    if bits_in < bits_out:
        factor = bits_out // bits_in
        return lax.bitcast_convert_type(
            x.reshape(*x.shape[:-1], x.shape[-1] // factor, factor), dtype)
    out = lax.bitcast_convert_type(x, dtype)
    return out if bits_in == bits_out else out.reshape(*out.shape[:-2], -1)


def to_device(x, device, *, stream=None):
    """`x` copied to `device` (a device or a sharding), as `plax.device_put`."""
    if stream is not None:
        raise NotImplementedError("the stream argument of Array.to_device is not supported")
    return plax.device_put(x, device)


def flat(x):
    """`x.flat`, which plax arrays do not have (as JAX's): the error names the way."""
    raise NotImplementedError("plax arrays have no flat property: use x.flatten() (or "
                              "x.ravel()) instead")


def contains(x, value):
    """`value in x`, for a 1-D `x` and a scalar `value` (stricter than NumPy, as JAX)."""
    if value is None or isinstance(value, str):
        raise TypeError(f"Array.__contains__: unsupported operand type {value.__class__}")
    query = util.ensure_arraylike("Array.__contains__", value)
    if x.ndim != 1:
        raise ValueError(f"Array.__contains__: the array searched must be one-dimensional, "
                         f"got shape {x.shape}")
    if util.shape_of(query):
        raise ValueError(f"Array.__contains__: the value must be a scalar, got shape "
                         f"{util.shape_of(query)}")
    return _jnp.any(x == query)


def array_namespace(x, *, api_version=None):
    """The array API namespace of plax arrays: `plax.numpy`."""
    if api_version is not None and api_version != _jnp.__array_api_version__:
        raise ValueError(f"api_version={api_version!r} is not available; available versions "
                         f"are: {[_jnp.__array_api_version__]}")
    return _jnp


def array_module(x, types):
    """NEP 37's module of plax arrays (with NumPy arrays): `plax.numpy`."""
    if all(issubclass(t, (plax.Array, Tracer, np.ndarray)) for t in types):
        return _jnp
    return NotImplemented


def __getattr__(name: str):
    return getattr(_jnp, name)

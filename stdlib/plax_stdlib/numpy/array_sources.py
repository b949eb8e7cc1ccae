"""Arrays from other sources: buffers, strings, files, DLPack capsules and
functions of the indices (frombuffer, fromstring, load, from_dlpack,
fromfunction), NumPy's save/savez, and fromfile/fromiter, which JAX declines
because reading a file or iterator is not pure (so neither does plax).
"""
from __future__ import annotations

import numpy as np
from numpy import save as save, savez as savez  # noqa: F401 - they write NumPy files

import plax
from plax.extend import dtypes
from plax_stdlib import lax
from plax_stdlib.numpy import creation, util


def frombuffer(buffer, dtype=float, count: int = -1, offset: int = 0):
    """A 1-D array of the data in a bytes-like `buffer`, read as `dtype` (a copy placed on
    the device).

    Follows `numpy.frombuffer`.

    Args:
        buffer: a bytes-like object.
        dtype: the dtype to read the bytes as (default float64, so float32 without
            x64, with a warning: pass the dtype).
        count: the number of items (-1: all).
        offset: the byte offset to start at.

    Returns:
        A 1-D array.

    Examples:
        >>> jnp.frombuffer(bytes([1, 2, 3]), dtype=jnp.uint8)
        Array([1, 2, 3], dtype=uint8)
    """
    return creation.asarray(np.frombuffer(buffer=buffer, dtype=dtype, count=count,
                                          offset=offset))


def fromstring(string, dtype=float, count: int = -1, *, sep: str):
    """A 1-D array of the numbers in the text `string`, separated by `sep`.

    Follows `numpy.fromstring` in text mode (`sep` is required; NumPy's deprecated
    binary mode is not supported).

    Args:
        string: the text.
        dtype: the dtype of the numbers.
        count: the number of items (-1: all).
        sep: the separator (whitespace around it is ignored).

    Returns:
        A 1-D array.

    Examples:
        >>> jnp.fromstring("1 2 3", dtype=jnp.int32, sep=" ")
        Array([1, 2, 3], dtype=int32)
    """
    return creation.asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def fromfile(*args, **kwargs):
    """Not provided: reading a file has effects, so it cannot be part of a traced
    program. Read it with NumPy and convert: `jnp.asarray(np.fromfile(...))`.

    Raises:
        NotImplementedError: always.

    Examples:
        >>> jnp.fromfile("data.bin")
        Traceback (most recent call last):
        NotImplementedError: ...
    """
    raise NotImplementedError("plax.numpy.fromfile() is not implemented because it may be "
                              "non-pure and thus unsafe under jit and other transformations. "
                              "Use plax.numpy.asarray(np.fromfile(...)) instead.")


def fromiter(*args, **kwargs):
    """Not provided: consuming an iterator has effects, so it cannot be part of a traced
    program. Build a NumPy array first: `jnp.asarray(np.fromiter(...))`.

    Raises:
        NotImplementedError: always.

    Examples:
        >>> jnp.fromiter(iter([1, 2]), dtype=jnp.int32)
        Traceback (most recent call last):
        NotImplementedError: ...
    """
    raise NotImplementedError("plax.numpy.fromiter() is not implemented because it may be "
                              "non-pure and thus unsafe under jit and other transformations. "
                              "Use plax.numpy.asarray(np.fromiter(...)) instead.")


def load(file, *args, **kwargs):
    """`numpy.load`, with a saved array returned as a plax array (bfloat16 and the other
    ml_dtypes types included); `.npz` archives come back as NumPy's lazy `NpzFile`.

    Args:
        file: a path or file object.
        *args: more `numpy.load` arguments.
        **kwargs: `numpy.load` keyword arguments.

    Returns:
        A plax array (or an `NpzFile`, or a pickled object).

    Examples:
        >>> import io
        >>> buffer = io.BytesIO()
        >>> np.save(buffer, np.arange(3))
        >>> _ = buffer.seek(0)
        >>> jnp.load(buffer)
        Array([0, 1, 2], dtype=int32)
    """
    out = np.load(file, *args, **kwargs)
    if not isinstance(out, np.ndarray):
        return out
    if out.dtype == np.dtype("V2"):  # NumPy saves bfloat16 as raw two-byte records
        out = out.view(dtypes.bfloat16)
    return creation.asarray(out)


def from_dlpack(x, /, *, device=None, copy: bool | None = None):
    """The array another library shares through DLPack (an object with `__dlpack__`, such
    as a NumPy array or a torch tensor), as a plax array, without a copy where the
    device and layout allow.

    Follows `numpy.from_dlpack` (see `plax.dlpack.from_dlpack`).

    Args:
        x: an object implementing `__dlpack__` and `__dlpack_device__`.
        device: the device to place the result on.
        copy: True forces a copy, False forbids one, None lets plax choose.

    Returns:
        A plax array.

    Examples:
        >>> jnp.from_dlpack(np.arange(3, dtype=np.int32))
        Array([0, 1, 2], dtype=int32)
    """
    return plax.from_dlpack(x, device=device, copy=copy)


def fromfunction(function, shape, *, dtype=float, **kwargs):
    """An array whose element at index `(i0, i1, ...)` is `function(i0, i1, ...)`, for a
    grid of `shape`.

    Follows `numpy.fromfunction`, except that `function` is mapped with `vmap` one axis
    at a time, so it receives the indices as `dtype` scalars (not whole index arrays)
    and must be traceable.

    Args:
        function: a function of `len(shape)` index scalars (and `**kwargs`).
        shape: the grid's shape (concrete).
        dtype: the dtype of the indices passed.
        **kwargs: keyword arguments for `function`.

    Returns:
        The array of results.

    Examples:
        >>> jnp.fromfunction(lambda i, j: i * 10 + j, (2, 3), dtype=jnp.int32)
        Array([[ 0,  1,  2],
               [10, 11, 12]], dtype=int32)
    """
    shape = util.canonicalize_shape(shape, "fromfunction")
    dtype = util.check_user_dtype(dtype, "fromfunction")

    def over(*prefix):
        axis = len(prefix)
        if axis == len(shape):
            return function(*prefix, **kwargs)
        return plax.vmap(lambda i: over(*prefix, i))(lax.iota(dtype, shape[axis]))

    return over()

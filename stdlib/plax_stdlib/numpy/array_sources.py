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
    """A 1-D array of the data in a bytes-like `buffer`, read as `dtype`."""
    return creation.asarray(np.frombuffer(buffer=buffer, dtype=dtype, count=count,
                                          offset=offset))


def fromstring(string, dtype=float, count: int = -1, *, sep: str):
    """A 1-D array of the numbers in the text `string`, separated by `sep`."""
    return creation.asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def fromfile(*args, **kwargs):
    """Not provided: reading a file is not pure, so it cannot be traced; read it with
    NumPy and convert (`plax.numpy.asarray(numpy.fromfile(...))`)."""
    raise NotImplementedError("plax.numpy.fromfile() is not implemented because it may be "
                              "non-pure and thus unsafe under jit and other transformations. "
                              "Use plax.numpy.asarray(np.fromfile(...)) instead.")


def fromiter(*args, **kwargs):
    """Not provided: consuming an iterator is not pure; build a NumPy array first
    (`plax.numpy.asarray(numpy.fromiter(...))`)."""
    raise NotImplementedError("plax.numpy.fromiter() is not implemented because it may be "
                              "non-pure and thus unsafe under jit and other transformations. "
                              "Use plax.numpy.asarray(np.fromiter(...)) instead.")


def load(file, *args, **kwargs):
    """`numpy.load`, with a saved array (bfloat16 included) returned as a plax array;
    `.npz` archives come back as NumPy's lazy NpzFile."""
    out = np.load(file, *args, **kwargs)
    if not isinstance(out, np.ndarray):
        return out
    if out.dtype == np.dtype("V2"):  # NumPy saves bfloat16 as raw two-byte records
        out = out.view(dtypes.bfloat16)
    return creation.asarray(out)


def from_dlpack(x, /, *, device=None, copy: bool | None = None):
    """The array shared through DLPack by another library's `x` (see
    `plax.dlpack.from_dlpack`)."""
    return plax.from_dlpack(x, device=device, copy=copy)


def fromfunction(function, shape, *, dtype=float, **kwargs):
    """`function(i0, ..., i_n, **kwargs)` at every index of a grid of `shape`, mapped
    with `vmap` one axis at a time, so it receives the indices as `dtype` scalars."""
    shape = util.canonicalize_shape(shape, "fromfunction")
    dtype = util.check_user_dtype(dtype, "fromfunction")

    def over(*prefix):
        axis = len(prefix)
        if axis == len(shape):
            return function(*prefix, **kwargs)
        return plax.vmap(lambda i: over(*prefix, i))(lax.iota(dtype, shape[axis]))

    return over()

"""NumPy's universal functions as objects: the `ufunc` class, `frompyfunc`, and the
functions of `plax.numpy` that are `jnp.ufunc` objects in JAX (add, subtract,
multiply, negative, maximum, minimum, the bitwise and logical and/or/xor, logaddexp
and logaddexp2), with `nin`, `nout`, `identity` and the methods `reduce`,
`accumulate`, `at`, `reduceat` and `outer`.

Calling one of those runs its function of ufuncs.py as `jit(inline=True)`, so what
it computes and the Jaxpr it prints are the function's. Where JAX's methods use a
dedicated operation, these do too (`add.reduce` is `sum`, `multiply.accumulate` is
`cumprod`, `add.at` is a scatter-add, `bitwise_or.reduce` a `reduce_or`...); the
others, and every method of a `frompyfunc` ufunc, apply the ufunc element after
element in a `lax` loop. As in JAX, each method is one jitted computation whose
static arguments are the ufunc itself (so it is hashable, its properties read-only)
and the axis, dtype and keepdims.
"""
from __future__ import annotations

import math
import operator
from typing import Any, Callable

import numpy as np

import plax
from plax.extend.core import ShapeDtypeStruct
from plax.extend.traceback_util import api_boundary
from plax_stdlib import lax
from plax_stdlib.numpy import array_edits, creation, float_functions, indexing, reductions
from plax_stdlib.numpy import shape_ops, ufuncs, util
from plax_stdlib.numpy.functional import vectorize

_AT_INPLACE = ("plax arrays are immutable, so ufunc.at cannot update its argument in "
               "place as numpy.ufunc.at does: pass inplace=False and use the result, e.g. "
               "`x = jnp.add.at(x, indices, values, inplace=False)`")


def _result_dtype(func: Callable, *examples) -> np.dtype:
    """The dtype `func` gives for scalars of the examples' dtypes and weak types."""
    specs = [ShapeDtypeStruct((), util.dtype_of(x), weak_type=util.is_weak(x))
             for x in examples]
    return np.dtype(plax.eval_shape(func, *specs).dtype)


class ufunc:
    """A NumPy-style universal function: `func` of `nin` arrays, returning `nout`,
    applied elementwise with broadcasting, with NumPy's ufunc methods.

    `plax.numpy`'s `add`, `multiply`, `maximum`, `logical_and`... are ufuncs, as in JAX;
    `frompyfunc` makes one of a scalar function (then calling it maps the function with
    `vmap`, so it must be traceable). Binary ufuncs of one result also `reduce`,
    `accumulate`, `reduceat` and `outer`; `at` updates elements of an array (which is
    returned: arrays are immutable, so pass `inplace=False`). Each method is jitted.

    Args:
        func: the function of `nin` arrays (or scalars).
        nin: the number of inputs.
        nout: the number of outputs.
        name: the name shown in its repr (default `func.__name__`).
        nargs: NumPy's number of arguments (default `nin`).
        identity: the value `reduce` starts from (None: the first element; an empty
            reduction then raises).
        call, reduce, accumulate, at, reduceat: functions to use instead of the
            generic implementations (`reduce` as `reduce(a, axis=, dtype=, keepdims=,
            initial=, where=)`, `accumulate(a, axis=, dtype=)`, `at(a, indices[, b])`,
            `reduceat(a, indices, axis=, dtype=)`).

    Examples:
        >>> x = jnp.array([1, 2, 3, 4])
        >>> jnp.add.nin, jnp.add.nout, jnp.add.identity
        (2, 1, 0)
        >>> jnp.add.reduce(x), jnp.add.accumulate(x)
        (Array(10, dtype=int32), Array([ 1,  3,  6, 10], dtype=int32))
        >>> jnp.multiply.outer(x[:2], x)
        Array([[1, 2, 3, 4],
               [2, 4, 6, 8]], dtype=int32)
        >>> jnp.add.at(x, jnp.array([0, 0]), 10, inplace=False)
        Array([21,  2,  3,  4], dtype=int32)
        >>> jnp.add.reduceat(x, jnp.array([0, 2]))
        Array([3, 7], dtype=int32)
    """

    def __init__(self, func: Callable, /, nin: int, nout: int, *, name: str | None = None,
                 nargs: int | None = None, identity: Any = None,
                 call: Callable | None = None, reduce: Callable | None = None,
                 accumulate: Callable | None = None, at: Callable | None = None,
                 reduceat: Callable | None = None):
        self.__doc__ = func.__doc__
        self.__name__ = name or getattr(func, "__name__", "ufunc")
        # Read through properties only: the ufunc is a static argument of its jitted
        # methods, so what its hash depends on must not change.
        self.__props = {"func": func, "nin": operator.index(nin), "nout": operator.index(nout),
                        "nargs": operator.index(nargs or nin), "identity": identity,
                        "call": call, "reduce": reduce, "accumulate": accumulate, "at": at,
                        "reduceat": reduceat}

    _func = property(lambda self: self.__props["func"])
    nin = property(lambda self: self.__props["nin"], doc="The number of inputs.")
    nout = property(lambda self: self.__props["nout"], doc="The number of outputs.")
    nargs = property(lambda self: self.__props["nargs"], doc="NumPy's number of arguments.")
    identity = property(lambda self: self.__props["identity"],
                        doc="The value reductions start from, or None.")

    def _key(self) -> tuple:
        return (self._func, self.__name__, self.identity, self.nin, self.nout, self.nargs)

    def __hash__(self) -> int:
        return hash(self._key())

    def __eq__(self, other) -> bool:
        return isinstance(other, ufunc) and self._key() == other._key()

    def __repr__(self) -> str:
        return f"<jnp.ufunc '{self.__name__}'>"

    def __reduce_ex__(self, protocol):
        """The ufuncs of `plax.numpy` pickle by name, so that unpickling gives the same
        object; others with their function and properties."""
        if globals().get(self.__name__) is self:
            return self.__name__
        return super().__reduce_ex__(protocol)

    @api_boundary
    def __call__(self, *args, out=None, where=None):
        util.check_arraylike(self.__name__, *args)
        if out is not None:
            raise NotImplementedError(f"the out argument of {self} is not supported")
        if where is not None:
            raise NotImplementedError(f"the where argument of {self} is not supported")
        return (self.__props["call"] or self._call_vectorized)(*args)

    @util.compiled(static_argnames=("self",))
    def _call_vectorized(self, *args):
        """The call of a ufunc made of a scalar function: mapped over the elements."""
        return vectorize(self._func)(*args)

    def _check_binary(self, method: str) -> None:
        """ValueError unless the ufunc has the two inputs and one output `method` needs."""
        if self.nin != 2:
            raise ValueError(f"{method} is only supported for binary ufuncs; "
                             f"{self.__name__} takes {self.nin} input(s)")
        if self.nout != 1:
            raise ValueError(f"{method} is only supported for ufuncs returning one value; "
                             f"{self.__name__} returns {self.nout}")

    @api_boundary
    @util.compiled(static_argnames=("self", "axis", "dtype", "out", "keepdims"))
    def reduce(self, a, axis: int | None = 0, dtype=None, out=None, keepdims: bool = False,
               initial=None, where=None):
        """Folds the function over `axis` of `a` (an int, or None for all axes).

        `add.reduce` is `sum`, `logical_and.reduce` is `all`, `maximum.reduce` is `max`...;
        other ufuncs apply the function left to right from `initial`, else the identity,
        else the first element. With `where` (a bool mask broadcast against `a`), only
        the selected elements count, and a ufunc without identity needs `initial`.
        """
        name = f"{self.__name__}.reduce"
        util.check_arraylike(name, a)
        self._check_binary("reduce")
        if out is not None:
            raise NotImplementedError(f"the out argument of {name}() is not supported")
        if initial is not None:
            util.check_arraylike(name, initial)
        if where is not None:
            util.check_arraylike(name, where)
            if self.identity is None and initial is None:
                raise ValueError(f"reduction operation {self.__name__!r} does not have an "
                                 "identity, so to use a where mask one has to specify "
                                 "'initial'.")
            if util.dtype_of(where) != np.dtype(bool):
                raise ValueError(f"{name}: the where argument must have dtype=bool; got "
                                 f"dtype={util.dtype_of(where)}")
        reduce = self.__props["reduce"] or self._reduce_by_loop
        return reduce(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial,
                      where=where)

    def _reduce_by_loop(self, a, *, axis, dtype, keepdims, initial, where):
        """`reduce` of a ufunc without a dedicated reduction: one step per element."""
        a = creation.asarray(a)
        initial = self.identity if initial is None else initial
        dtype = (util.check_user_dtype(dtype, f"{self.__name__}.reduce")
                 or _result_dtype(self._func, a, a))
        if isinstance(axis, tuple):
            raise NotImplementedError(f"{self.__name__}.reduce over a tuple of axes")
        shape = util.shape_of(a)
        if where is not None:
            where = shape_ops.broadcast_to(where, shape)
        if axis is None:
            final = (1,) * len(shape) if keepdims else ()
            a, axis = shape_ops.ravel(a), 0
            where = None if where is None else shape_ops.ravel(where)
        else:
            axis = util.canonicalize_axis(axis, len(shape))
            final = shape[:axis] + ((1,) if keepdims else ()) + shape[axis + 1:]
        a = shape_ops.moveaxis(a, axis, 0)
        where = None if where is None else shape_ops.moveaxis(where, axis, 0)
        n = util.shape_of(a)[0]
        if n == 0:
            if initial is None:
                raise ValueError(f"zero-size array to reduction operation {self.__name__} "
                                 "which has no identity")
            return lax.full(final, initial, dtype)

        def step(i, acc):
            new = self(acc, util.convert(a[i], dtype))
            return new if where is None else ufuncs.where(where[i], new, acc)

        start, first = (1, a[0]) if initial is None else (0, initial)
        acc = shape_ops.broadcast_to(util.convert(first, dtype), util.shape_of(a)[1:])
        return lax.reshape(lax.fori_loop(start, n, step, acc), final)

    @api_boundary
    @util.compiled(static_argnames=("self", "axis", "dtype"))
    def accumulate(self, a, axis: int = 0, dtype=None, out=None):
        """The running results of `reduce` along `axis`: element i folds elements 0..i
        (`add.accumulate` is `cumsum`, `multiply.accumulate` is `cumprod`)."""
        self._check_binary("accumulate")
        if out is not None:
            raise NotImplementedError(f"the out argument of {self.__name__}.accumulate() is "
                                      "not supported")
        accumulate = self.__props["accumulate"] or self._accumulate_by_scan
        return accumulate(a, axis=axis, dtype=dtype)

    def _accumulate_by_scan(self, a, *, axis, dtype):
        """`accumulate` of a ufunc without a dedicated scan: one step per element."""
        util.check_arraylike(f"{self.__name__}.accumulate", a)
        a = creation.asarray(a)
        dtype = (util.check_user_dtype(dtype, f"{self.__name__}.accumulate")
                 or _result_dtype(self._func, a, a))
        if axis is None or isinstance(axis, tuple):
            raise ValueError(f"{self.__name__}.accumulate does not allow multiple axes")
        axis = util.canonicalize_axis(axis, len(util.shape_of(a)))
        if not math.prod(util.shape_of(a)):
            return lax.full(util.shape_of(a), 0, dtype)
        a = shape_ops.moveaxis(a, axis, 0)

        def step(carry, _):  # (JAX's formulation: step 0 gives the first element)
            i, acc = carry
            new = ufuncs.where(i == 0, util.convert(a[0], dtype),
                               self(util.convert(acc, dtype), util.convert(a[i], dtype)))
            return (i + 1, new), new

        start = (0, util.convert(a[0], dtype))
        _, out = lax.scan(step, start, None, length=util.shape_of(a)[0])
        return shape_ops.moveaxis(out, 0, axis)

    @api_boundary
    @util.compiled(static_argnums=(0,), static_argnames=("inplace",))
    def at(self, a, indices, b=None, /, *, inplace: bool = True):
        """`a` with the function applied at `indices` (with the matching values of `b`
        for a binary ufunc), one index after another, so repeated indices compound:
        `add.at` adds every value given for an element. The indices are traced (integer
        arrays or scalars, not slices). Arrays are immutable: pass `inplace=False`."""
        if inplace:
            raise NotImplementedError(_AT_INPLACE)
        at = self.__props["at"] or self._at_by_loop
        return at(a, indices) if b is None else at(a, indices, b)

    def _at_by_loop(self, a, indices, *b):
        """`at` of a ufunc without a dedicated scatter: the flat positions `indices`
        picks, updated one after another (so a repeated one is updated again)."""
        util.check_arraylike(f"{self.__name__}.at", a, *b)
        dtype = _result_dtype(self._func, a, *b)
        a = util.convert(creation.asarray(a), dtype)
        shape = util.shape_of(a)
        positions = lax.reshape(lax.iota(np.int32, math.prod(shape)), shape)[indices]
        picked = util.shape_of(positions)
        count = math.prod(picked)
        positions = lax.reshape(positions, (count,))
        values = [lax.reshape(shape_ops.broadcast_to(util.convert(v, dtype), picked), (count,))
                  for v in b]
        flat = lax.reshape(a, (math.prod(shape),))

        def step(i, flat):
            p = positions[i]
            return flat.at[p].set(self(flat[p], *(v[i] for v in values)))

        return lax.reshape(lax.fori_loop(0, count, step, flat), shape)

    @api_boundary
    @util.compiled(static_argnames=("self", "axis", "dtype"))
    def reduceat(self, a, indices, axis: int = 0, dtype=None, out=None):
        """Reductions of the slices indices[i]:indices[i+1] of `a` along `axis` (the
        element at indices[i] alone where the next index is not larger; the last slice
        runs to the end). As JAX's, the result keeps `a`'s dtype: `dtype` is unused."""
        self._check_binary("reduceat")
        if out is not None:
            raise NotImplementedError(f"the out argument of {self.__name__}.reduceat() is "
                                      "not supported")
        reduceat = self.__props["reduceat"] or self._reduceat_by_loop
        return reduceat(a, indices, axis=axis, dtype=dtype)

    def _reduceat_by_loop(self, a, indices, *, axis, dtype):
        """`reduceat` of any ufunc: one masked step per position along `axis`."""
        del dtype  # unused, as by JAX's
        a, indices = util.ensure_arraylike(f"{self.__name__}.reduceat", a, indices)
        shape = util.shape_of(a)
        if not shape:
            raise ValueError(f"reduceat: a must have 1 or more dimension, got shape {shape}")
        if len(util.shape_of(indices)) != 1:
            raise ValueError(f"reduceat: indices must be one-dimensional, got shape "
                             f"{util.shape_of(indices)}")
        if axis is None or isinstance(axis, (tuple, list)):
            raise ValueError("reduceat requires a single integer axis.")
        axis = util.canonicalize_axis(axis, len(shape))
        out = indexing.take(a, indices, axis=axis)
        # Slice j folds in the positions i with starts[j] < i < ends[j] (its first
        # element is out's): the bounds broadcast along `axis` (JAX's formulation).
        bounds = lax.expand_dims(array_edits.append(indices, shape[axis]),
                                 [d for d in range(len(shape)) if d != axis])
        k = util.shape_of(indices)[0]
        starts = lax.slice_in_dim(bounds, 0, k, axis=axis)
        ends = lax.slice_in_dim(bounds, 1, k + 1, axis=axis)

        def step(i, out):
            inside = (i > starts) & (i < ends)
            element = indexing.take(a, lax.expand_dims(i, (0,)), axis=axis)
            return ufuncs.where(inside, self(out, element), out)

        return lax.fori_loop(0, shape[axis], step, out)

    @api_boundary
    @util.compiled(static_argnums=(0,))
    def outer(self, A, B, /):
        """The function applied to every pair (A[i...], B[j...]): an array of shape
        A.shape + B.shape."""
        self._check_binary("outer")
        util.check_arraylike(f"{self.__name__}.outer", A, B)
        sa, sb = util.shape_of(A), util.shape_of(B)
        fa, fb = lax.reshape(A, (math.prod(sa),)), lax.reshape(B, (math.prod(sb),))
        return lax.reshape(plax.vmap(plax.vmap(self, (None, 0)), (0, None))(fa, fb), sa + sb)


def frompyfunc(func: Callable, /, nin: int, nout: int, *, identity=None) -> ufunc:
    """A `ufunc` made from the function `func` of `nin` scalars returning `nout` values.

    Follows `numpy.frompyfunc`, but the result computes with plax arrays (traced, not
    Python objects: `func` must use traceable operations), and is differentiable and
    jittable.

    Args:
        func: the scalar function.
        nin: the number of inputs.
        nout: the number of outputs.
        identity: the identity of the function, for `reduce`.

    Returns:
        A `ufunc`.

    Examples:
        >>> hypot = jnp.frompyfunc(lambda a, b: jnp.sqrt(a * a + b * b), nin=2, nout=1)
        >>> hypot(jnp.array([3.0, 5.0]), jnp.array([4.0, 12.0]))
        Array([ 5., 13.], dtype=float32)
        >>> hypot.reduce(jnp.array([3.0, 4.0, 12.0]))
        Array(13., dtype=float32)
    """
    return ufunc(func, nin, nout, identity=identity)


# --- the ufuncs of plax.numpy -----------------------------------------------------------------

def _scatter_at(method: str, bools_as_ints: bool = True) -> Callable:
    """`ufunc.at` as one scatter, `a.at[indices].<method>(b)` (JAX's `add.at`,
    `multiply.at` and `subtract.at`); `bools_as_ints`: bool arrays are scattered as
    integers (of b's truth values) and the result cast back."""
    def at(a, indices, b):
        if bools_as_ints and util.dtype_of(a) == np.dtype(bool):
            b = util.convert(util.convert(b, bool), np.int32)
            a = util.convert(a, np.int32)
            return util.convert(getattr(a.at[indices], method)(b), bool)
        return getattr(a.at[indices], method)(b)
    return at


def _of(func: Callable, nin: int, identity: Any = None, **methods) -> ufunc:
    """The ufunc of plax.numpy of the function `func` of ufuncs.py, whose function and
    call are `jit(func, inline=True)`, as JAX's: an eager call (and one under eager vmap
    or jvp) runs as one compiled computation, while a Jaxpr shows the equations."""
    jitted = plax.jit(func, inline=True)
    return ufunc(jitted, nin, 1, identity=identity, call=jitted, **methods)


_r = reductions
add = _of(ufuncs.add, 2, 0, reduce=_r.sum, accumulate=_r.cumsum, at=_scatter_at("add"))
multiply = _of(ufuncs.multiply, 2, 1, reduce=_r.prod, accumulate=_r.cumprod,
               at=_scatter_at("multiply"))
subtract = _of(ufuncs.subtract, 2, at=_scatter_at("subtract", bools_as_ints=False))
negative = _of(ufuncs.negative, 1)
maximum = _of(ufuncs.maximum, 2, reduce=_r.reduce_maximum)
minimum = _of(ufuncs.minimum, 2, reduce=_r.reduce_minimum)
bitwise_and = _of(ufuncs.bitwise_and, 2, -1, reduce=_r.reduce_bitwise_and)
bitwise_or = _of(ufuncs.bitwise_or, 2, 0, reduce=_r.reduce_bitwise_or)
bitwise_xor = _of(ufuncs.bitwise_xor, 2, 0, reduce=_r.reduce_bitwise_xor)
logical_and = _of(ufuncs.logical_and, 2, True, reduce=_r.reduce_logical_and)
logical_or = _of(ufuncs.logical_or, 2, False, reduce=_r.reduce_logical_or)
logical_xor = _of(ufuncs.logical_xor, 2, False, reduce=_r.reduce_logical_xor)
logaddexp = _of(ufuncs.logaddexp, 2, -np.inf, reduce=_r.reduce_logaddexp)
logaddexp2 = _of(float_functions.logaddexp2, 2, -np.inf, reduce=_r.reduce_logaddexp2)

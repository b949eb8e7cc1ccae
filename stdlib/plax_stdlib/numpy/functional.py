"""Turning scalar or core functions into array functions: vectorize (with gufunc
signatures), apply_along_axis, apply_over_axes, and the `ufunc` class that
`frompyfunc` makes (call, reduce, accumulate, at, reduceat, outer).

All of them map with `plax.vmap` (reached through the facade: vmap lives in the
transforms layer) or loop with `lax` control flow, so they work under `jit`.
"""
from __future__ import annotations

import functools
import math
import operator
import re
from typing import Any, Callable

import numpy as np

import plax
from plax.extend.core import ShapeDtypeStruct
from plax_stdlib import lax
from plax_stdlib.numpy import creation, indexing, shape_ops, ufuncs, util

_DIMENSIONS = r"\w+"
_ARGUMENT = rf"\((?:{_DIMENSIONS}(?:,{_DIMENSIONS})*)?\)"
_ARGUMENTS = rf"{_ARGUMENT}(?:,{_ARGUMENT})*"
_SIGNATURE = re.compile(rf"^{_ARGUMENTS}->{_ARGUMENTS}$")


def _parse_signature(signature: str) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    """'(m,n),(n)->(m)' as ([('m', 'n'), ('n',)], [('m',)])."""
    signature = signature.replace(" ", "")
    if not _SIGNATURE.match(signature):
        raise ValueError(f"vectorize: not a valid gufunc signature: {signature!r}")
    inputs, outputs = signature.split("->")
    parse = lambda side: [tuple(d for d in group.split(",") if d)  # noqa: E731
                          for group in re.findall(r"\((.*?)\)", side)]
    return parse(inputs), parse(outputs)


def _core_sizes(args, core_dims, signature: str | None) -> dict[str, int]:
    """The size of each named core dimension, checked across the arguments."""
    sizes: dict[str, int] = {}
    for position, (arg, dims) in enumerate(zip(args, core_dims)):
        shape = util.shape_of(arg)
        if len(shape) < len(dims):
            raise ValueError(f"vectorize: mapped input {position} of shape {shape} has "
                             f"fewer dimensions than its core dimensions {dims} of the "
                             f"signature {signature!r}")
        for name, size in zip(dims, shape[len(shape) - len(dims):]):
            if sizes.setdefault(name, size) != size:
                raise ValueError(f"vectorize: inconsistent size for core dimension {name!r}: "
                                 f"{sizes[name]} vs {size}")
    return sizes


def vectorize(pyfunc: Callable, *, excluded=frozenset(), signature: str | None = None):
    """Turns `pyfunc`, written for scalars (or, with a gufunc `signature`, for core
    arrays such as vectors), into a function of arrays that maps it over the
    broadcast leading dimensions of its arguments.

    Follows `numpy.vectorize`, but the mapping is done with `plax.vmap`, not a Python
    loop: `pyfunc` is traced once on abstract values and must be written with
    traceable operations (no Python `if` on values). Arguments named by position or
    keyword in `excluded` are passed through unmapped. Usable as a decorator.

    Args:
        pyfunc: the function to vectorize.
        excluded: positions (ints) or keyword names (strs) of arguments not to map.
        signature: a gufunc signature such as `"(n),(n)->()"` naming the core
            dimensions of the inputs and outputs.

    Returns:
        The vectorized function.

    Raises:
        TypeError: `excluded` holding something other than ints and strings.
        ValueError: a malformed signature, or (at call time) arguments whose core
            dimensions do not match it.

    Examples:
        >>> clipped_add = jnp.vectorize(lambda a, b: jnp.minimum(a + b, 3))
        >>> clipped_add(jnp.array([[1], [2]]), jnp.array([0, 1, 2]))
        Array([[1, 2, 3],
               [2, 3, 3]], dtype=int32)
        >>> dot = jnp.vectorize(jnp.dot, signature="(n),(n)->()")
        >>> dot(jnp.ones((4, 3)), jnp.arange(3.0))
        Array([3., 3., 3., 3.], dtype=float32)
    """
    if any(not isinstance(e, (int, str)) for e in excluded):
        raise TypeError(f"vectorize: excluded must contain only ints and strings, got "
                        f"{excluded!r}")
    if any(isinstance(e, int) and e < 0 for e in excluded):
        raise ValueError(f"vectorize: excluded positions must be non-negative, got {excluded!r}")
    core_in = core_out = None
    if signature is not None:
        core_in, core_out = _parse_signature(signature)

    @functools.wraps(pyfunc)
    def wrapped(*args, **kwargs):
        fixed_args = {i: a for i, a in enumerate(args) if i in excluded}
        fixed_kwargs = {k: v for k, v in kwargs.items() if k in excluded}
        names = [k for k in kwargs if k not in excluded]
        mapped = [a for i, a in enumerate(args) if i not in excluded]
        mapped += [kwargs[k] for k in names]
        n_positional = len(args) - len(fixed_args)

        def call(*values):
            positional = list(values[:n_positional])
            full = [fixed_args[i] if i in fixed_args else positional.pop(0)
                    for i in range(len(args))]
            return pyfunc(*full, **fixed_kwargs, **dict(zip(names, values[n_positional:])))

        mapped = [creation.asarray(util.ensure_arraylike("vectorize", a)) for a in mapped]
        dims = core_in if core_in is not None else [()] * len(mapped)
        if len(dims) != len(mapped):
            raise TypeError(f"vectorize: wrong number of positional arguments: expected "
                            f"{len(dims)}, got {len(mapped)}")
        sizes = _core_sizes(mapped, dims, signature)
        loops = [util.shape_of(a)[:len(util.shape_of(a)) - len(d)] for a, d in zip(mapped, dims)]
        loop_shape = util.broadcast_shapes(*loops)
        n = math.prod(loop_shape)
        flat = [lax.reshape(shape_ops.broadcast_to(a, loop_shape + util.shape_of(a)[len(s):]),
                            (n,) + util.shape_of(a)[len(s):]) for a, s in zip(mapped, loops)]
        out = plax.vmap(call)(*flat) if loop_shape else call(*mapped)
        outs = out if isinstance(out, tuple) else (out,)
        if core_out is not None:
            _check_outputs(outs, core_out, sizes, bool(loop_shape))
        if loop_shape:
            outs = tuple(lax.reshape(o, loop_shape + util.shape_of(o)[1:]) for o in outs)
        return outs if isinstance(out, tuple) else outs[0]

    return wrapped


def _check_outputs(outs, core_out, sizes, mapped: bool) -> None:
    if len(outs) != len(core_out):
        raise ValueError(f"vectorize: wrong number of outputs from the function: expected "
                         f"{len(core_out)}, got {len(outs)}")
    for out, dims in zip(outs, core_out):
        shape = util.shape_of(out)[1:] if mapped else util.shape_of(out)
        if len(shape) != len(dims):
            raise ValueError(f"vectorize: output of shape {shape} does not have core "
                             f"dimensions {dims}")
        for name, size in zip(dims, shape):
            if sizes.setdefault(name, size) != size:
                raise ValueError(f"vectorize: inconsistent size for core dimension {name!r}: "
                                 f"{sizes[name]} vs {size}")


def apply_along_axis(func1d: Callable, axis: int, arr, *args, **kwargs):
    """`func1d` applied to every 1-D slice of `arr` along `axis`; the dimensions of its
    result replace that axis.

    Follows `numpy.apply_along_axis`, mapped with `vmap` (so `func1d` is traced once
    and must be traceable).

    Args:
        func1d: a function of a 1-D array (and `*args`, `**kwargs`).
        axis: the axis whose slices `func1d` receives.
        arr: an array.
        *args: more positional arguments for `func1d`.
        **kwargs: keyword arguments for `func1d`.

    Returns:
        The assembled results.

    Examples:
        >>> jnp.apply_along_axis(lambda v: v[0] + v[-1], 1, jnp.array([[1, 2, 3], [4, 5, 6]]))
        Array([ 4, 10], dtype=int32)
    """
    arr = creation.asarray(util.ensure_arraylike("apply_along_axis", arr))
    ndim = len(util.shape_of(arr))
    axis = util.canonicalize_axis(axis, ndim)
    moved = shape_ops.moveaxis(arr, axis, -1)
    outer = util.shape_of(moved)[:-1]
    flat = lax.reshape(moved, (math.prod(outer), util.shape_of(moved)[-1]))
    out = plax.vmap(lambda v: creation.asarray(func1d(v, *args, **kwargs)))(flat)
    core = util.shape_of(out)[1:]
    out = lax.reshape(out, outer + core)
    # The result's own dimensions go where `axis` was.
    order = (tuple(range(axis)) + tuple(range(len(outer), len(outer) + len(core)))
             + tuple(range(axis, len(outer))))
    return lax.transpose(out, order)


def apply_over_axes(func: Callable, a, axes):
    """`func(a, axis)` applied for each axis in `axes` in turn, keeping the rank: a result
    one dimension short gets the reduced axis back with size 1.

    Follows `numpy.apply_over_axes`.

    Args:
        func: a function `(array, axis) -> array`, such as `jnp.sum`.
        a: an array.
        axes: an axis or a sequence of axes.

    Returns:
        An array of `a`'s rank.

    Raises:
        ValueError: `func` returning an array of the wrong rank.

    Examples:
        >>> jnp.apply_over_axes(jnp.sum, jnp.ones((2, 3, 4)), [0, 2]).shape
        (1, 3, 1)
    """
    a = creation.asarray(util.ensure_arraylike("apply_over_axes", a))
    for axis in ([axes] if isinstance(axes, int) else axes):
        out = func(a, axis)
        if len(util.shape_of(out)) == len(util.shape_of(a)) - 1:
            out = shape_ops.expand_dims(out, axis)
        elif len(util.shape_of(out)) != len(util.shape_of(a)):
            raise ValueError("apply_over_axes: function is not returning an array of the "
                             "correct shape")
        a = out
    return a


# --- ufunc ----------------------------------------------------------------------------------

def _result_dtype(func: Callable, *examples) -> np.dtype:
    specs = [ShapeDtypeStruct((), util.dtype_of(x)) for x in examples]
    return np.dtype(plax.eval_shape(func, *specs).dtype)


class ufunc:
    """A NumPy-style universal function made from a function of `nin` scalars that
    returns `nout` values: calling it applies the function elementwise with
    broadcasting (through `vmap`), and, for binary functions of one result, `reduce`,
    `accumulate`, `at`, `reduceat` and `outer` work as NumPy's.

    Usually made with `frompyfunc`. The function is traced, so it must be written with
    traceable operations. `reduce` without an `identity` needs a non-empty axis.
    `at` returns an updated array (arrays are immutable: pass `inplace=False`).

    Args:
        func: the scalar function.
        nin: the number of inputs.
        nout: the number of outputs.
        name: the name shown in its repr (default `func.__name__`).
        nargs: NumPy's `nin + nout` (accepted).
        identity: the value `reduce` starts from (needed for empty reductions).

    Examples:
        >>> add = jnp.ufunc(lambda a, b: a + b, nin=2, nout=1, identity=0)
        >>> add(jnp.array([1, 2]), 10)
        Array([11, 12], dtype=int32)
        >>> add.reduce(jnp.array([1, 2, 3])), add.accumulate(jnp.array([1, 2, 3]))
        (Array(6, dtype=int32), Array([1, 3, 6], dtype=int32))
        >>> add.outer(jnp.array([1, 2]), jnp.array([10, 20]))
        Array([[11, 21],
               [12, 22]], dtype=int32)
    """

    def __init__(self, func: Callable, /, nin: int, nout: int, *, name: str | None = None,
                 nargs: int | None = None, identity: Any = None):
        self._func = func
        self.nin, self.nout = operator.index(nin), operator.index(nout)
        self.nargs = operator.index(nargs or nin)
        self.identity = identity
        self.__name__ = name or getattr(func, "__name__", "ufunc")
        self.__doc__ = func.__doc__

    def __repr__(self) -> str:
        return f"<plax.numpy.ufunc '{self.__name__}'>"

    def __hash__(self) -> int:
        return hash((self._func, self.__name__, self.identity, self.nin, self.nout))

    def __eq__(self, other) -> bool:
        return isinstance(other, ufunc) and (
            (self._func, self.__name__, self.identity, self.nin, self.nout)
            == (other._func, other.__name__, other.identity, other.nin, other.nout))

    def __call__(self, *args, out=None, where=None):
        util.check_arraylike(self.__name__, *args)
        if out is not None or where is not None:
            raise NotImplementedError(f"the 'out' and 'where' arguments of {self!r} are not "
                                      "supported")
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__} takes {self.nin} arguments, got {len(args)}")
        return vectorize(self._func)(*args)

    def _binary(self, method: str) -> None:
        if self.nin != 2 or self.nout != 1:
            raise ValueError(f"{method} is only supported for binary ufuncs returning one "
                             f"value; {self.__name__} has nin={self.nin}, nout={self.nout}")

    def reduce(self, a, axis=0, dtype=None, out=None, keepdims: bool = False, initial=None,
               where=None):
        """Folds the function over `axis` (an int, or None for all axes), left to
        right, starting from `initial` or the identity, else the first element."""
        self._binary("reduce")
        if out is not None:
            raise NotImplementedError(f"the 'out' argument of {self.__name__}.reduce")
        a = creation.asarray(util.ensure_arraylike(f"{self.__name__}.reduce", a))
        initial = self.identity if initial is None else initial
        if where is not None:
            where = util.ensure_arraylike(f"{self.__name__}.reduce", where)
            if initial is None:
                raise ValueError(f"reduction operation {self.__name__!r} does not have an "
                                 "identity, so to use a where mask one has to specify "
                                 "'initial'.")
            if util.dtype_of(where) != np.dtype(bool):
                raise ValueError(f"where argument must have dtype=bool; got "
                                 f"{util.dtype_of(where)}")
            where = shape_ops.broadcast_to(where, util.shape_of(a))
        if isinstance(axis, (tuple, list)):
            raise NotImplementedError(f"{self.__name__}.reduce over a tuple of axes")
        dtype = util.check_user_dtype(dtype, "reduce") or _result_dtype(self._func, a, a)
        shape = util.shape_of(a)
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
            return creation.full(final, initial, dtype)

        def step(i, acc):
            new = util.convert(self._func(acc, util.convert(a[i], dtype)), dtype)
            return new if where is None else ufuncs.where(where[i], new, acc)

        start = 1 if initial is None else 0
        first = a[0] if initial is None else initial
        acc = shape_ops.broadcast_to(util.convert(creation.asarray(first), dtype),
                                     util.shape_of(a)[1:])
        return lax.reshape(lax.fori_loop(start, n, step, acc), final)

    def accumulate(self, a, axis: int = 0, dtype=None, out=None):
        """The running results of `reduce` along `axis`."""
        self._binary("accumulate")
        if out is not None:
            raise NotImplementedError(f"the 'out' argument of {self.__name__}.accumulate")
        if axis is None or isinstance(axis, (tuple, list)):
            raise ValueError("accumulate does not allow multiple axes")
        a = creation.asarray(util.ensure_arraylike(f"{self.__name__}.accumulate", a))
        dtype = util.check_user_dtype(dtype, "accumulate") or _result_dtype(self._func, a, a)
        axis = util.canonicalize_axis(axis, len(util.shape_of(a)))
        if not math.prod(util.shape_of(a)):
            return creation.zeros(util.shape_of(a), dtype)
        moved = util.convert(shape_ops.moveaxis(a, axis, 0), dtype)

        def step(acc, x):
            new = util.convert(self._func(acc, x), dtype)
            return new, new

        _, rest = lax.scan(step, moved[0], moved[1:])
        return shape_ops.moveaxis(shape_ops.concatenate([moved[:1], rest]), 0, axis)

    def at(self, a, indices, b=None, /, *, inplace: bool = True):
        """`a` with the function applied at `indices` (with the matching values of `b`
        for binary functions), one index after another, so repeats compound."""
        if inplace:
            raise NotImplementedError("plax arrays are immutable: use "
                                      f"{self.__name__}.at(..., inplace=False)")
        extra = () if b is None else (b,)
        util.check_arraylike(f"{self.__name__}.at", a, *extra)
        dtype = _result_dtype(self._func, a, *extra)
        a = creation.asarray(util.convert(util.ensure_arraylike("at", a), dtype))
        shape = util.shape_of(a)
        size = math.prod(shape)
        positions = lax.reshape(lax.iota(np.int32, size), shape)[indices]
        picked = util.shape_of(positions)
        positions = lax.reshape(positions, (math.prod(picked),))
        values = () if b is None else (lax.reshape(shape_ops.broadcast_to(
            util.convert(util.ensure_arraylike("at", b), dtype), picked),
            (math.prod(picked),)),)
        flat = lax.reshape(a, (size,))

        def step(i, flat):
            p = positions[i]
            return flat.at[p].set(util.convert(self._func(flat[p], *(v[i] for v in values)),
                                               dtype))

        return lax.reshape(lax.fori_loop(0, util.shape_of(positions)[0], step, flat), shape)

    def reduceat(self, a, indices, axis: int = 0, dtype=None, out=None):
        """Reductions over the slices indices[i]:indices[i+1] along `axis` (the element
        at indices[i] alone where the next index is not larger; the last slice runs to
        the end)."""
        self._binary("reduceat")
        if out is not None:
            raise NotImplementedError(f"the 'out' argument of {self.__name__}.reduceat")
        a, indices = util.ensure_arraylike(f"{self.__name__}.reduceat", a, indices)
        if not util.shape_of(a):
            raise ValueError(f"reduceat: a must have 1 or more dimension, got shape "
                             f"{util.shape_of(a)}")
        if len(util.shape_of(indices)) != 1:
            raise ValueError(f"reduceat: indices must be one-dimensional, got shape "
                             f"{util.shape_of(indices)}")
        if axis is None or isinstance(axis, (tuple, list)):
            raise ValueError("reduceat requires a single integer axis.")
        a = creation.asarray(a)
        dtype = util.check_user_dtype(dtype, "reduceat") or util.dtype_of(a)
        axis = util.canonicalize_axis(axis, len(util.shape_of(a)))
        moved = util.convert(shape_ops.moveaxis(a, axis, 0), dtype)
        n, k = util.shape_of(moved)[0], util.shape_of(indices)[0]
        starts = util.convert(indices, np.int32)
        ends = shape_ops.concatenate([starts[1:], lax.full((1,), n, np.int32)])
        first = indexing.take(moved, starts, axis=0, mode="clip")
        mask_shape = (k,) + (1,) * (len(util.shape_of(moved)) - 1)
        lo, hi = lax.reshape(starts, mask_shape), lax.reshape(ends, mask_shape)

        def step(i, acc):
            inside = lax.bitwise_and(lax.gt(i, lo), lax.lt(i, hi))
            row = lax.broadcast_in_dim(moved[i], util.shape_of(acc),
                                       tuple(range(1, len(util.shape_of(acc)))))
            return ufuncs.where(inside, util.convert(self._func(acc, row), dtype), acc)

        return shape_ops.moveaxis(lax.fori_loop(0, n, step, first), 0, axis)

    def outer(self, A, B, /):
        """The function applied to every pair (A[i...], B[j...]): shape A.shape +
        B.shape."""
        self._binary("outer")
        A, B = util.ensure_arraylike(f"{self.__name__}.outer", A, B)
        sa, sb = util.shape_of(A), util.shape_of(B)
        fa, fb = lax.reshape(A, (math.prod(sa),)), lax.reshape(B, (math.prod(sb),))
        table = plax.vmap(plax.vmap(self._func, (None, 0)), (0, None))(fa, fb)
        return lax.reshape(table, sa + sb)


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

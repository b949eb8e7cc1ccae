"""Turning scalar or core functions into array functions: vectorize (with gufunc
signatures), apply_along_axis and apply_over_axes (the `ufunc` class that
`frompyfunc` makes is in ufunc_objects.py).

All of them map with `plax.vmap` (reached through the facade: vmap lives in the
transforms layer) or loop with `lax` control flow, so they work under `jit`.
"""
from __future__ import annotations

import functools
import math
import re
import warnings
from typing import Callable, Sequence

import numpy as np

import plax
from plax.extend import config
from plax_stdlib import lax
from plax_stdlib.numpy import creation, shape_ops, util

_DIMENSION = r"\w+"
_ARGUMENT = rf"\((?:{_DIMENSION}(?:,{_DIMENSION})*)?\)"
_ARGUMENTS = rf"{_ARGUMENT}(?:,{_ARGUMENT})*"
_SIGNATURE = re.compile(rf"^{_ARGUMENTS}->{_ARGUMENTS}$")

CoreDims = tuple[str, ...]


def _parse_signature(signature: str) -> tuple[list[CoreDims], list[CoreDims]]:
    """'(m,n),(n)->(m)' as ([('m', 'n'), ('n',)], [('m',)]) (no spaces allowed, as in
    JAX, which parses it at each call)."""
    if not _SIGNATURE.match(signature):
        raise ValueError(f"not a valid gufunc signature: {signature}")
    inputs, outputs = signature.split("->")
    parse = lambda side: [tuple(re.findall(_DIMENSION, arg))  # noqa: E731
                          for arg in re.findall(_ARGUMENT, side)]
    return parse(inputs), parse(outputs)


def _record_core_sizes(sizes: dict[str, int], shape, dims: CoreDims, context: str, *,
                       is_input: bool) -> None:
    """Checks the trailing (core) axes of `shape` against the sizes named so far, and
    names the new ones. An input may have loop axes before its core axes; an output
    (seen per element of the loop) has exactly its core axes."""
    if is_input and len(shape) < len(dims):
        raise ValueError(f"input with shape {shape!r} does not have enough dimensions for "
                         f"all core dimensions {dims!r} {context}")
    if not is_input and len(shape) != len(dims):
        raise ValueError(f"output shape {shape!r} does not match core dimensions {dims!r} "
                         f"{context}")
    for name, size in zip(dims, shape[len(shape) - len(dims):]):
        if sizes.setdefault(name, size) != size:
            raise ValueError(f"inconsistent size for core dimension {name!r}: {size!r} vs "
                             f"{sizes[name]!r} {context}")


def _checking_outputs(func: Callable, sizes: dict[str, int], core_out: list[CoreDims],
                      context: str) -> Callable:
    """`func`, checking that what it returns (per element of the loop) has the core
    dimensions of the signature's outputs."""
    def checked(*args):
        out = func(*args)
        if len(core_out) > 1 and not isinstance(out, tuple):
            raise TypeError(f"output must be a tuple when multiple outputs are expected, "
                            f"got: {out!r}\n{context}")
        shapes = [np.shape(o) for o in (out if isinstance(out, tuple) else [out])]
        if len(shapes) != len(core_out):
            raise TypeError(f"wrong number of output arguments: expected {len(core_out)!r}, "
                            f"got {len(shapes)!r} {context}")
        out_sizes = dict(sizes)
        for shape, dims in zip(shapes, core_out):
            _record_core_sizes(out_sizes, shape, dims, context, is_input=False)
        return out
    return checked


def _without(func: Callable, args: Sequence, positions) -> tuple[Callable, list]:
    """`func` with the arguments at the int `positions` fixed, and the arguments left."""
    fixed = [(i, args[i]) for i in sorted(p for p in positions if isinstance(p, int))
             if i < len(args)]

    def partial(*rest):
        full = list(rest)
        for i, arg in fixed:
            full.insert(i, arg)
        return func(*full)
    return partial, [a for i, a in enumerate(args) if i not in positions]


def _check_rank_promotion(args, core_in: list[CoreDims], signature) -> None:
    mode = config.numpy_rank_promotion.value
    ranks = {len(util.shape_of(a)) - len(dims) for a, dims in zip(args, core_in)
             if util.shape_of(a)}
    if mode == "allow" or len(ranks) < 2:
        return
    msg = (f"operands with shapes {[util.shape_of(a) for a in args]} require rank promotion "
           f"for jnp.vectorize function with signature {signature}. Set the "
           "jax_numpy_rank_promotion config option to 'allow' to disable this message; for "
           "more information, see https://docs.jax.dev/en/latest/rank_promotion_warning.html.")
    if mode == "warn":
        warnings.warn(msg, stacklevel=3)
    else:
        raise ValueError(msg)


def _loop(func: Callable, args, core_in: list[CoreDims], loop_shape):
    """`func` mapped over the loop axes `loop_shape` of `args`, as JAX maps it: each
    argument loses its size-1 loop axes (it is not mapped there), then one `vmap` per
    loop axis, from the last, maps the arguments that have that axis; an axis no
    argument has is added to the results at the end."""
    squeezed, filled = [], []
    for arg, dims in zip(args, core_in):
        shape = util.shape_of(arg)
        loops = shape[:len(shape) - len(dims)]
        filled.append((1,) * (len(loop_shape) - len(loops)) + loops)
        squeezed.append(shape_ops.squeeze(arg, tuple(i for i, d in enumerate(loops) if d == 1)))
    added = []
    for axis in reversed(range(len(loop_shape))):
        in_axes = tuple(None if shape[axis] == 1 else 0 for shape in filled)
        if all(a is None for a in in_axes):
            added.append(axis)
        else:
            func = plax.vmap(func, in_axes)
    out = func(*squeezed)
    if not added:
        return out
    if isinstance(out, tuple):
        return tuple(shape_ops.expand_dims(o, added) for o in out)
    return shape_ops.expand_dims(out, added)


def vectorize(pyfunc: Callable, *, excluded=frozenset(), signature: str | None = None):
    """Turns `pyfunc`, written for scalars (or, with a gufunc `signature`, for core
    arrays such as vectors), into a function of arrays that maps it over the
    broadcast leading (loop) dimensions of its arguments.

    Follows `numpy.vectorize`, but the mapping is done with `plax.vmap`, not a Python
    loop: `pyfunc` is traced once on abstract values and must be written with
    traceable operations (no Python `if` on values). As in JAX, an argument of size 1
    along a loop axis is not mapped there (one `vmap` per loop axis), positional
    arguments in `excluded` and None arguments are passed through unmapped, keyword
    arguments reach `pyfunc` only when `excluded` names them, and the signature is
    checked at each call. Usable as a decorator.

    Args:
        pyfunc: the function to vectorize.
        excluded: positions (ints) or keyword names (strs) of arguments not to map.
        signature: a gufunc signature such as `"(n),(n)->()"` naming the core
            dimensions of the inputs and outputs.

    Returns:
        The vectorized function.

    Raises:
        TypeError: `excluded` holding something other than ints and strings; (at
            call time) a number of arguments or outputs other than the signature's.
        ValueError: negative positions in `excluded`; (at call time) a malformed
            signature, or arguments or outputs whose core dimensions do not match it.

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
        raise TypeError(f"jax.numpy.vectorize can only exclude integer or string arguments, "
                        f"but excluded={excluded!r}")
    if any(isinstance(e, int) and e < 0 for e in excluded):
        raise ValueError(f"excluded={excluded!r} contains negative numbers")

    @functools.wraps(pyfunc)
    def wrapped(*args, **kwargs):
        context = f"on vectorized function with excluded={excluded!r} and signature={signature!r}"
        # (as JAX: keyword arguments that `excluded` does not name are dropped)
        static_kwargs = {k: v for k, v in kwargs.items() if k in excluded}
        func, args = _without(functools.partial(pyfunc, **static_kwargs), args, excluded)
        if signature is None:
            core_in, core_out = [()] * len(args), None
        else:
            core_in, core_out = _parse_signature(signature)
        nones = {i for i, arg in enumerate(args) if arg is None}
        if any(nones):  # (as JAX: a None first argument is not passed through)
            if any(core_in[i] != () for i in nones):
                raise ValueError(f"Cannot pass None at locations {nones} with "
                                 f"signature={signature!r}")
            func, args = _without(func, args, nones)
            core_in = [dims for i, dims in enumerate(core_in) if i not in nones]
        args = [creation.asarray(a) for a in args]
        if len(args) != len(core_in):
            raise TypeError(f"wrong number of positional arguments: expected {len(core_in)!r}, "
                            f"got {len(args)!r} {context}")
        sizes: dict[str, int] = {}
        for arg, dims in zip(args, core_in):
            _record_core_sizes(sizes, util.shape_of(arg), dims, context, is_input=True)
        loop_shape = util.broadcast_shapes(*(util.shape_of(a)[:len(util.shape_of(a)) - len(d)]
                                             for a, d in zip(args, core_in)))
        if core_out is not None:
            func = _checking_outputs(func, sizes, core_out, context)
        _check_rank_promotion(args, core_in, signature)
        return _loop(func, args, core_in, loop_shape)

    return wrapped


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

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
from typing import Callable

import plax
from plax_stdlib import lax
from plax_stdlib.numpy import creation, shape_ops, util

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


def _core_sizes(args, core_dims, context: str) -> dict[str, int]:
    """The size of each named core dimension, checked across the arguments (JAX's
    messages, ending with `context`: the function's `excluded` and signature)."""
    sizes: dict[str, int] = {}
    for arg, dims in zip(args, core_dims):
        shape = util.shape_of(arg)
        if len(shape) < len(dims):
            raise ValueError(f"input with shape {shape!r} does not have enough dimensions for "
                             f"all core dimensions {dims!r} {context}")
        for name, size in zip(dims, shape[len(shape) - len(dims):]):
            if sizes.setdefault(name, size) != size:
                raise ValueError(f"inconsistent size for core dimension {name!r}: {size!r} vs "
                                 f"{sizes[name]!r} {context}")
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
        sizes = _core_sizes(mapped, dims, f"on vectorized function with excluded="
                            f"{frozenset(excluded)!r} and signature={signature!r}")
        loops = [util.shape_of(a)[:len(util.shape_of(a)) - len(d)] for a, d in zip(mapped, dims)]
        loop_shape = util.broadcast_shapes(*loops)
        if loop_shape:  # one mapped axis: the loop dimensions broadcast and flattened
            n = math.prod(loop_shape)
            out = plax.vmap(call)(*(
                lax.reshape(shape_ops.broadcast_to(a, loop_shape + util.shape_of(a)[len(s):]),
                            (n,) + util.shape_of(a)[len(s):]) for a, s in zip(mapped, loops)))
        else:
            out = call(*mapped)
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

"""`make_jaxpr` and `typeof`: the core's public entries to tracing and types."""
from __future__ import annotations

import functools
from typing import Callable

from plax._src.traceback_util import api_boundary
from plax._src import debug_info as dbg_util
from plax._src import tree_util
from plax._src.abstract import AbstractValue, ShapeDtypeStruct
from plax._src.arguments import bind_static, check_callable, normalize_argnums, split_static
from plax._src.ir import ClosedJaxpr
from plax._src.staging import trace_to_jaxpr
from plax._src.tracing import get_aval


def make_jaxpr(fun: Callable, static_argnums=(), axis_env=None, return_shape: bool = False,
               abstracted_axes=None) -> Callable[..., ClosedJaxpr]:
    """Makes a function that traces `fun` and returns its Jaxpr, plax's program form.

    The Jaxpr lists the primitives `fun` applies to its (abstract) inputs: what
    `jit` lowers to XLA, and what the transformations rewrite. It is the quickest
    way to see what a function really does.

    Args:
        fun: the function to trace.
        static_argnums: positional arguments passed as Python values, not traced.
        axis_env: not supported (named axes come from `vmap`/`shard_map`).
        return_shape: also return the output's structure of `ShapeDtypeStruct`s.
        abstracted_axes: not supported.

    Returns:
        A function taking `fun`'s arguments (arrays, scalars or
        `ShapeDtypeStruct`s, in any pytree) and returning a `ClosedJaxpr`, or
        `(closed_jaxpr, shapes)` with `return_shape`.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> print(plax.make_jaxpr(lambda x: jnp.sin(x) * 2.0)(1.0))
        { lambda ; a:f32[]. let b:f32[] = sin a; c:f32[] = mul b 2.0:f32[] in (c,) }
    """
    check_callable(fun, "make_jaxpr")
    if axis_env is not None or abstracted_axes is not None:
        raise NotImplementedError("make_jaxpr: axis_env and abstracted_axes are not supported")
    static_argnums = normalize_argnums(static_argnums, "static_argnums")

    @api_boundary
    @functools.wraps(fun)
    def make_jaxpr_f(*args, **kwargs):
        debug_info = dbg_util.make_tracing_debug_info(
            "make_jaxpr", fun, args, kwargs, static_argnums=static_argnums)
        dyn_args, dyn_kwargs, static_args, _ = split_static(args, kwargs, static_argnums, ())
        flat, in_tree = tree_util.tree_flatten((dyn_args, dyn_kwargs))
        closed, out_tree = trace_to_jaxpr(bind_static(fun, static_args, ()), in_tree,
                                          [get_aval(x) for x in flat], debug_info)
        if not return_shape:
            return closed
        shapes = [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
                  for a in closed.out_avals]
        return closed, tree_util.tree_unflatten(out_tree, shapes)

    make_jaxpr_f.__name__ = f"make_jaxpr({getattr(fun, '__name__', 'fun')})"
    return make_jaxpr_f


def typeof(x) -> AbstractValue:
    """The abstract type plax gives a value: its shape, dtype, weak type (and, on a
    mesh with explicit axes, sharding).

    Inside a transformation, this is the type of the tracer, which is all a
    traced function knows about its argument.

    Args:
        x: an array, a tracer, a NumPy array or scalar, or a Python scalar.

    Returns:
        The value's abstract value (a `ShapedArray`).

    Raises:
        TypeError: `x` is not an array-like value.

    Examples:
        >>> import numpy as np
        >>> import plax, plax.numpy as jnp
        >>> plax.typeof(jnp.ones((2, 3)))
        ShapedArray(float32[2,3])
        >>> plax.typeof(1.0)
        ShapedArray(float32[], weak_type=True)
        >>> plax.typeof(np.int8(3))
        ShapedArray(int8[])
    """
    return get_aval(x)

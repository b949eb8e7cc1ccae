"""`custom_gradient` and `closure_convert`: custom rules written as closures.

`custom_gradient(f)`: `f(*args)` returns `(output, vjp)` where `vjp(cotangent)`
gives the arguments' cotangents. It is a `custom_vjp` whose fwd traces `vjp` into
a Jaxpr; the values `vjp` closes over are that Jaxpr's constants and travel to
the backward pass as the residuals (the Jaxpr itself as static pytree data).

`closure_convert(f, *example_args)` traces `f` and returns `(converted, consts)`:
`converted(*args, *consts)` computes `f(*args)` with the closed-over values that
may carry derivatives (tracers) as explicit trailing arguments, so a custom rule
(whose functions must not close over traced values) can take them as inputs.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from plax.extend import tree_util
from plax.extend.ad import is_differentiable_dtype, tangent_aval
from plax.extend.core import (ClosedJaxpr, StagingTracer, Tracer, check_callable, eval_jaxpr,
                              get_aval, stage_flat)
from plax_transforms.custom_derivatives import custom_vjp


class _TracedVJP:
    """A traced `vjp` closure: its Jaxpr (static) and closed-over values (leaves)."""

    def __init__(self, closed: ClosedJaxpr, in_tree, out_tree):
        self.closed, self.in_tree, self.out_tree = closed, in_tree, out_tree


tree_util.register_pytree_node(
    _TracedVJP,
    lambda r: (list(r.closed.consts), (r.closed.jaxpr, r.in_tree, r.out_tree)),
    lambda aux, consts: _TracedVJP(ClosedJaxpr(aux[0], consts), aux[1], aux[2]))


def custom_gradient(fun: Callable) -> custom_vjp:
    """Defines a function together with its gradient in one Python function.

    `fun(*args)` returns `(output, vjp)` where `vjp(output_cotangent)` returns a
    tuple of cotangents, one per argument. The result behaves as
    `fun(*args)[0]`; reverse-mode differentiation calls your `vjp` (it is a
    `custom_vjp` underneath, so forward mode is not available).

    Args:
        fun: a function returning `(output, vjp)`.

    Returns:
        A `custom_vjp` function computing `output`.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> @plax.custom_gradient
        ... def log1pexp(x):
        ...     e = jnp.exp(x)
        ...     return jnp.log1p(e), lambda g: (g * e / (1 + e),)
        >>> plax.grad(log1pexp)(0.0)
        Array(0.5, dtype=float32, weak_type=True)
    """
    check_callable(fun, "custom_gradient")

    @functools.wraps(fun)
    def primal(*args):
        out, _ = fun(*args)
        return out

    wrapped = custom_vjp(primal)

    def fwd(*args):
        out, vjp = fun(*args)
        if not callable(vjp):
            raise TypeError(f"custom_gradient function {wrapped.name} must return "
                            f"(output, vjp function), got a {type(vjp).__name__} as vjp")
        out_leaves, out_tree = tree_util.tree_flatten((out,))
        ct_avals = [tangent_aval(get_aval(x)) for x in out_leaves]
        in_tree: list = []

        def flat_vjp(*cts):
            result = vjp(*tree_util.tree_unflatten(out_tree, cts))
            leaves, tree = tree_util.tree_flatten(result)
            in_tree[:] = [tree]
            return leaves
        closed = stage_flat(flat_vjp, ct_avals)
        return out, _TracedVJP(closed, in_tree[0], out_tree)

    def bwd(res: _TracedVJP, ct):
        cts, tree = tree_util.tree_flatten((ct,))
        if tree != res.out_tree:
            raise TypeError(f"custom_gradient function {wrapped.name}: cotangent structure "
                            f"{tree} differs from the output's {res.out_tree}")
        cts_in = tree_util.tree_unflatten(
            res.in_tree, eval_jaxpr(res.closed.jaxpr, res.closed.consts, *cts))
        # A vjp of a one-argument function may return the bare cotangent.
        return (cts_in,) if res.in_tree.num_nodes == 1 else cts_in

    wrapped.defvjp(fwd, bwd)
    return wrapped


def _maybe_perturbed(x: Any) -> bool:
    """Whether a closed-over value might carry a derivative: a tracer, except a
    staged value of a dtype without tangents."""
    if not isinstance(x, Tracer):
        return False
    if isinstance(x, StagingTracer):
        return is_differentiable_dtype(x.aval.dtype)
    return True


def closure_convert(fun: Callable, *example_args) -> tuple[Callable, list[Any]]:
    """Turns the values `fun` closes over into explicit arguments.

    A `custom_vjp` or `custom_jvp` rule must not close over values that carry
    derivatives (tracers of an enclosing `grad`). `closure_convert` traces `fun`
    on the shapes of `example_args` and hoists such closed-over values out as
    `consts`, so they can be passed (and differentiated) as arguments.

    Args:
        fun: the function, possibly closing over traced values.
        *example_args: arguments with the shapes and dtypes `fun` will be called
            with.

    Returns:
        `(converted, consts)`: a list `consts` of the hoisted values and a
        function with `converted(*args, *consts) == fun(*args)`.

    Examples:
        >>> import plax
        >>> def outer(y):
        ...     converted, consts = plax.closure_convert(lambda x: x * y, 1.0)
        ...     return converted(2.0, *consts)  # consts == [y]
        >>> plax.grad(outer)(3.0)
        Array(2., dtype=float32, weak_type=True)
    """
    check_callable(fun, "closure_convert")
    flat, in_tree = tree_util.tree_flatten(example_args)
    out_tree: list = []

    def flat_fun(*leaves):
        out_leaves, tree = tree_util.tree_flatten(fun(*tree_util.tree_unflatten(in_tree,
                                                                                  leaves)))
        out_tree[:] = [tree]
        return out_leaves

    closed = stage_flat(flat_fun, [get_aval(x) for x in flat])
    hoisted_flags = [_maybe_perturbed(c) for c in closed.consts]
    hoisted = [c for c, h in zip(closed.consts, hoisted_flags) if h]
    n_hoisted = len(hoisted)

    def converted(*args_and_consts):
        n_args = len(args_and_consts) - n_hoisted
        args, consts = args_and_consts[:n_args], iter(args_and_consts[n_args:])
        leaves, tree = tree_util.tree_flatten(tuple(args))
        if tree != in_tree:
            raise TypeError(f"closure_convert'ed function {getattr(fun, '__name__', fun)} "
                            f"called with arguments of structure {tree}, but it was traced "
                            f"for {in_tree}")
        all_consts = [next(consts) if h else c for c, h in zip(closed.consts, hoisted_flags)]
        return tree_util.tree_unflatten(
            out_tree[0], eval_jaxpr(closed.jaxpr, all_consts, *leaves))

    return converted, hoisted


__all__ = ["closure_convert", "custom_gradient"]

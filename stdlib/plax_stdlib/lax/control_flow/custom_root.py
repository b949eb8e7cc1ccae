"""`custom_root`: a root of a function, differentiated implicitly.

At a root x* of f(x, θ) (θ: whatever `f` closes over), f(x*, θ) = 0 gives
∂f/∂x · ẋ = -∂f/∂θ · θ̇, so the tangent of the root is one linear solve with the
Jacobian of `f` in x, which `tangent_solve` performs. That solve goes through
`custom_linear_solve` (with `tangent_solve` for the transposed map as well), so
reverse mode never differentiates the root finder's iterations: the root is found
with gradients stopped, then passed with `f`'s constants (made explicit) through a
`custom_jvp` identity whose rule is the implicit derivative.
"""
from __future__ import annotations

from typing import Callable

import plax
from plax.extend import tree_util
from plax.extend.core import eval_jaxpr, get_aval
from plax_stdlib.lax import conversion, elementwise
from plax_stdlib.lax.control_flow.common import check_same_types, trace_function
from plax_stdlib.lax.control_flow.linear_solve import custom_linear_solve


def custom_root(f: Callable, initial_guess, solve: Callable, tangent_solve: Callable,
                has_aux: bool = False):
    """Finds a root of `f` with your own solver, and differentiates it through the
    root's defining equation rather than through the solver.

    The derivative follows from `f(x*) = 0` (implicit differentiation): it
    solves a linear system with `f`'s Jacobian at the root using
    `tangent_solve`, so the solver's iterations are never differentiated.

    Args:
        f: a function from a pytree like `initial_guess` to one like it.
        initial_guess: the solver's starting point.
        solve: `solve(f, initial_guess) -> root`.
        tangent_solve: `tangent_solve(g, y) -> x` with `g(x) == y` for a linear
            `g` (for scalars: `lambda g, y: y / g(1.0)`).
        has_aux: `solve` returns `(root, aux)`; `aux` is not differentiated.

    Returns:
        The root (and `aux` with `has_aux`).

    Examples:
        The square root of `a` as the root of `x**2 - a`, by Newton's method:

        >>> import plax
        >>> from plax import lax
        >>> def newton(f, x):
        ...     for _ in range(20):
        ...         x = x - f(x) / plax.grad(f)(x)
        ...     return x
        >>> def sqrt(a):
        ...     return lax.custom_root(lambda x: x ** 2 - a, 1.0, newton,
        ...                            lambda g, y: y / g(1.0))
        >>> sqrt(2.0)
        Array(1.4142..., dtype=float32, weak_type=True)
        >>> plax.grad(sqrt)(4.0)  # 1 / (2 sqrt(4))
        Array(0.25, dtype=float32, weak_type=True)
    """
    if has_aux:
        raise NotImplementedError("custom_root: has_aux=True is not supported yet; "
                                  "compute the auxiliary values from the root separately")
    for name, fn in (("f", f), ("solve", solve), ("tangent_solve", tangent_solve)):
        if not callable(fn):
            raise TypeError(f"custom_root: {name} must be callable, got {fn!r}")
    leaves, tree = tree_util.tree_flatten(initial_guess)
    avals = [get_aval(x) for x in leaves]
    closed, consts, out_tree = trace_function(f, (tree_util.tree_unflatten(tree, avals),),
                                              "custom_root")
    check_same_types("custom_root: f output and initial_guess", ("initial_guess", tree, avals),
                     ("f output", out_tree, closed.out_avals))

    def f_of(params, x):
        outs = eval_jaxpr(closed.jaxpr, closed.consts, *params, *tree_util.tree_leaves(x))
        return tree_util.tree_unflatten(tree, outs)

    def root_jvp(primals, tangents):
        params, x = primals
        x = implicit(params, x)  # carrying the implicit derivative for higher orders
        _, rhs = plax.jvp(lambda p: f_of(p, x), (params,), (tangents[0],))
        jacobian = lambda v: plax.jvp(lambda y: f_of(params, y), (x,), (v,))[1]  # noqa: E731
        x_dot = custom_linear_solve(jacobian, rhs, lambda g, y: tangent_solve(g, y),
                                    lambda g, y: tangent_solve(g, y))
        return x, tree_util.tree_map(elementwise.neg, x_dot)

    # The root is found without derivatives (whatever `solve` closes over), then given
    # the implicit ones by a custom_jvp identity of (f's constants, the root).
    fixed = [conversion.stop_gradient(c) for c in consts]
    x = tree_util.tree_map(conversion.stop_gradient,
                           solve(lambda y: f_of(fixed, y), initial_guess))
    implicit = plax.custom_jvp(lambda params, root: root)
    implicit.defjvp(root_jvp)
    return implicit(tuple(consts), x)

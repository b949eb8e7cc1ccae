"""`custom_linear_solve`: a linear solve differentiated implicitly, not through the
solver's iterations.

One `linear_solve` equation holds four closed Jaxprs, each taking its constants then
a vector (a flat list of arrays in the pytree of `b`): `matvec` (the linear map A),
`vecmat` (its transpose, None unless a transpose is possible), `solve` (x with
A x = b) and `transpose_solve` (None if not given). The operands are the constants
of `matvec` (shared by `vecmat`), of `solve` and of `transpose_solve`, then `b`.

Derivatives follow from A x = b alone: x' = solve(b' - A'(x)), where A' is the
tangent of `matvec` in its constants; x is linear in b, and its transpose is
`transpose_solve` of the cotangent with A replaced by its transpose. The solver is
assumed exact: its own constants get no derivative.
"""
from __future__ import annotations

from typing import Callable

from plax.extend import tree_util
from plax.extend.ad import Zero, instantiate, is_undefined_primal, jvp_jaxpr, transpose_jaxpr
from plax.extend.batching import batch_jaxpr, move_to
from plax.extend.constructors import describe
from plax.extend.core import BATCHING, JVP, TRANSPOSE, Primitive, eval_jaxpr, get_aval
from plax_stdlib.lax import elementwise
from plax_stdlib.lax.control_flow.common import check_same_types, split_list, trace_function

linear_solve_p = Primitive("lax.linear_solve", multiple_results=True)


def custom_linear_solve(matvec: Callable, b, solve: Callable,
                        transpose_solve: Callable | None = None, symmetric: bool = False,
                        has_aux: bool = False):
    """Solves a linear system with your own solver, and differentiates through the
    equation `matvec(x) == b` rather than through the solver.

    Args:
        matvec: a linear function `x -> A x` (pytrees of arrays).
        b: the right-hand side, a pytree like `matvec`'s output.
        solve: `solve(matvec, b) -> x` with `matvec(x) == b`.
        transpose_solve: `transpose_solve(vecmat, b) -> x` solving with the
            transposed map; needed for reverse mode unless `symmetric`.
        symmetric: `A` is its own transpose, so `solve` serves for both.
        has_aux: `solve` returns `(x, aux)`.

    Returns:
        The solution `x` (and `aux` with `has_aux`).

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> from plax import lax
        >>> a = jnp.array([[2.0, 1.0], [1.0, 3.0]])
        >>> matvec = lambda x: a @ x
        >>> solve = lambda mv, b: jnp.linalg.solve(a, b)
        >>> lax.custom_linear_solve(matvec, jnp.array([3.0, 5.0]), solve, symmetric=True)
        Array([0.8, 1.4], dtype=float32)
    """
    if has_aux:
        raise NotImplementedError("custom_linear_solve: has_aux=True is not supported yet; "
                                  "return the auxiliary values from a separate call")
    for name, fn in (("matvec", matvec), ("solve", solve)):
        if not callable(fn):
            raise TypeError(f"custom_linear_solve: {name} must be callable, got {fn!r}")
    b_leaves, tree = tree_util.tree_flatten(b)
    b_avals = [get_aval(x) for x in b_leaves]
    example = tree_util.tree_unflatten(tree, b_avals)
    b_side = ("b", tree, b_avals)

    def traced(fn, what, *args):
        jaxpr, consts, out_tree = trace_function(fn, args, "custom_linear_solve")
        check_same_types(f"custom_linear_solve: {what} output and b", b_side,
                         (f"{what} output", out_tree, jaxpr.out_avals))
        return jaxpr, consts

    matvec_jaxpr, matvec_consts = traced(matvec, "matvec", example)
    solve_jaxpr, solve_consts = traced(lambda v: solve(matvec, v), "solve", example)
    vecmat_jaxpr = tsolve_jaxpr = None
    tsolve_consts = []
    if symmetric or transpose_solve is not None:
        if symmetric:
            vecmat_jaxpr, vecmat, tsolve = matvec_jaxpr, matvec, solve
        else:
            vecmat_jaxpr = transpose_jaxpr(matvec_jaxpr, [False] * len(matvec_consts) +
                                           [True] * len(b_avals))
            vecmat, tsolve = _as_function(vecmat_jaxpr, matvec_consts, tree), transpose_solve
        tsolve_jaxpr, tsolve_consts = traced(lambda v: tsolve(vecmat, v), "transpose_solve",
                                             example)
    outs = linear_solve_p.bind(
        *matvec_consts, *solve_consts, *tsolve_consts, *b_leaves,
        jaxprs=(matvec_jaxpr, vecmat_jaxpr, solve_jaxpr, tsolve_jaxpr),
        const_counts=(len(matvec_consts), len(solve_consts), len(tsolve_consts)))
    return tree_util.tree_unflatten(tree, outs)


def _as_function(closed, consts, tree):
    """The map `closed` (constants, then a vector) as a function of a pytree like `b`."""
    def fn(v):
        return tree_util.tree_unflatten(tree, _apply(closed, consts, tree_util.tree_leaves(v)))
    return fn


def _split(args, const_counts):
    return split_list(args, const_counts)  # matvec, solve, transpose_solve consts; b


def _apply(closed, consts, vector):
    return eval_jaxpr(closed.jaxpr, closed.consts, *consts, *vector)


# --- the primitive's rules --------------------------------------------------------------

@linear_solve_p.def_abstract_eval
def _abstract_eval(*avals, jaxprs, const_counts):
    b = _split(avals, const_counts)[3]
    matvec, _, solve, _ = jaxprs
    for name, closed in (("matvec", matvec), ("solve", solve)):
        outs = closed.out_avals
        if [(a.shape, a.dtype) for a in outs] != [(a.shape, a.dtype) for a in b]:
            raise TypeError(f"linear_solve: {name} returns {[describe(a) for a in outs]} "
                            f"for b of types {[describe(a) for a in b]}")
    return [a.update(weak_type=False) for a in solve.out_avals]


@linear_solve_p.def_impl
def _impl(*args, jaxprs, const_counts):
    _, solve_consts, _, b = _split(args, const_counts)
    return _apply(jaxprs[2], solve_consts, b)


def _lower(ctx, *args, jaxprs, const_counts):
    _, solve_consts, _, b = _split(args, const_counts)
    return ctx.lower_subjaxpr(jaxprs[2], *solve_consts, *b, name="solve")


linear_solve_p.def_lowering(_lower)


def _jvp(primals, tangents, *, jaxprs, const_counts):
    params = dict(jaxprs=jaxprs, const_counts=const_counts)
    x = linear_solve_p.bind(*primals, **params)
    matvec_consts, _, _, _ = _split(primals, const_counts)
    mv_dots, _, _, b_dots = _split(tangents, const_counts)
    nonzero = [not isinstance(t, Zero) for t in mv_dots]
    rhs = [instantiate(t) for t in b_dots]
    if any(nonzero):  # A'(x): the tangent of matvec in its constants, at the solution
        jvp, _ = jvp_jaxpr(jaxprs[0], nonzero + [False] * len(x), instantiate=True)
        outs = eval_jaxpr(jvp.jaxpr, jvp.consts, *matvec_consts, *x,
                          *(t for t, nz in zip(mv_dots, nonzero) if nz))
        rhs = [elementwise.sub(r, a) for r, a in zip(rhs, outs[len(x):])]
    consts = primals[:len(primals) - len(x)]
    return x, linear_solve_p.bind(*consts, *rhs, **params)


def _transpose(cts, *args, jaxprs, const_counts):
    matvec_consts, solve_consts, tsolve_consts, b = _split(args, const_counts)
    if any(is_undefined_primal(c) for c in (*matvec_consts, *solve_consts, *tsolve_consts)):
        raise ValueError("linear_solve: cannot transpose with respect to the constants of "
                         "matvec or solve (the solution is linear only in b)")
    matvec, vecmat, solve, tsolve = jaxprs
    if tsolve is None:
        raise TypeError("transpose_solve required for backwards mode automatic "
                        "differentiation of custom_linear_solve")
    cts = [instantiate(ct) for ct in cts]
    ct_b = linear_solve_p.bind(*matvec_consts, *tsolve_consts, *solve_consts, *cts,
                               jaxprs=(vecmat, matvec, tsolve, solve),
                               const_counts=(const_counts[0], const_counts[2], const_counts[1]))
    return [None] * (len(args) - len(b)) + list(ct_b)


def _batching(axis_data, args, dims, *, jaxprs, const_counts):
    """Every vector (b, x and the maps' results) batched at 0; constants where they are."""
    *const_dims, b_dims = _split(dims, const_counts)
    *consts, b = _split(args, const_counts)
    b = [move_to(x, d, 0, axis_data.size) for x, d in zip(b, b_dims)]
    vector_dims = [0] * len(b)
    matvec_dims, solve_dims, tsolve_dims = const_dims

    def batched(closed, in_dims):
        return None if closed is None else batch_jaxpr(closed, axis_data,
                                                       list(in_dims) + vector_dims, True)[0]
    matvec, vecmat, solve, tsolve = jaxprs
    new = (batched(matvec, matvec_dims), batched(vecmat, matvec_dims),
           batched(solve, solve_dims), batched(tsolve, tsolve_dims))
    outs = linear_solve_p.bind(*(c for group in consts for c in group), *b, jaxprs=new,
                               const_counts=const_counts)
    return outs, [0] * len(outs)


linear_solve_p.define_rule(JVP, _jvp)
linear_solve_p.define_rule(TRANSPOSE, _transpose)
linear_solve_p.define_rule(BATCHING, _batching)
linear_solve_p.define_rule("effects", lambda *, jaxprs, const_counts: frozenset().union(
    *(j.effects for j in jaxprs if j is not None)))

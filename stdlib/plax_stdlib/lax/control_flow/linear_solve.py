"""`custom_linear_solve`: a linear solve differentiated implicitly, not through the
solver's iterations.

One `custom_linear_solve` equation holds, as JAX's, four closed Jaxprs in a
`_LinearSolveTuple`, each taking its constants then a vector (a flat list of arrays
in the pytree of `b`): `matvec` (the linear map A), `vecmat` (its transpose, traced
as a function of its own constants; None without a transpose solve), `solve` (x with
A x = b) and `transpose_solve`. The operands are the constants of the four, in that
order (`const_lengths` counts them), then `b`.

Derivatives follow from A x = b alone: x' = solve(b' - A'(x)), where A' is the
tangent of `matvec` in its constants; x is linear in b, and its transpose is
`transpose_solve` of the cotangent, the four Jaxprs swapped pairwise. The solver is
assumed exact: its own constants get no derivative.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

from plax.extend import tree_util
from plax.extend.ad import Zero, add_tangents, instantiate, is_undefined_primal, jvp_jaxpr
from plax.extend.batching import batch_jaxpr, move_to
from plax.extend.constructors import describe
from plax.extend.core import BATCHING, JVP, TRANSPOSE, Primitive, eval_jaxpr, get_aval
from plax_stdlib.lax import elementwise
from plax_stdlib.lax.control_flow.common import check_same_types, split_list, trace_function

linear_solve_p = Primitive("lax.custom_linear_solve", multiple_results=True)


class _LinearSolveTuple(NamedTuple):
    """One entry for each of the four maps (JAX's name: Jaxprs print it)."""
    matvec: Any
    vecmat: Any
    solve: Any
    transpose_solve: Any

    def transpose(self) -> "_LinearSolveTuple":
        """The entries of the transposed system: vecmat and matvec, the two solves
        swapped."""
        return _LinearSolveTuple(self.vecmat, self.matvec, self.transpose_solve, self.solve)


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
    if transpose_solve is None and symmetric:
        transpose_solve = solve
    b_leaves, tree = tree_util.tree_flatten(b)
    b_avals = [get_aval(x) for x in b_leaves]
    example = tree_util.tree_unflatten(tree, b_avals)
    b_side = ("b", tree, b_avals)

    def traced(fn, what):
        jaxpr, consts, out_tree = trace_function(fn, (example,), "custom_linear_solve")
        check_same_types(f"custom_linear_solve: {what} output and b", b_side,
                         (f"{what} output", out_tree, jaxpr.out_avals))
        return jaxpr, list(consts)

    matvec_jaxpr, matvec_consts = traced(matvec, "matvec")
    solve_jaxpr, solve_consts = traced(lambda v: solve(matvec, v), "solve")
    vecmat_jaxpr = tsolve_jaxpr = None
    vecmat_consts, tsolve_consts = [], []
    if transpose_solve is not None:
        if symmetric:
            vecmat, vecmat_jaxpr, vecmat_consts = matvec, matvec_jaxpr, matvec_consts
        else:
            vecmat = _transpose_one_output(matvec, b)
            vecmat_jaxpr, vecmat_consts = traced(vecmat, "vecmat")
        tsolve_jaxpr, tsolve_consts = traced(lambda v: transpose_solve(vecmat, v),
                                             "transpose_solve")
    consts = _LinearSolveTuple(matvec_consts, vecmat_consts, solve_consts, tsolve_consts)
    outs = linear_solve_p.bind(
        *_flatten(consts), *b_leaves,
        const_lengths=_LinearSolveTuple(*map(len, consts)),
        jaxprs=_LinearSolveTuple(matvec_jaxpr, vecmat_jaxpr, solve_jaxpr, tsolve_jaxpr))
    return tree_util.tree_unflatten(tree, outs)


def _transpose_one_output(matvec: Callable, b) -> Callable:
    """`matvec`'s transpose (`plax.linear_transpose`, as JAX's) as a map of one vector."""
    import plax
    transposed = plax.linear_transpose(matvec, b)
    return lambda v: transposed(v)[0]


def _split(args, const_lengths) -> tuple[_LinearSolveTuple, list]:
    """The operands (or their avals, tangents, dims) as the four maps' constants, and b."""
    *consts, b = split_list(args, list(const_lengths))
    return _LinearSolveTuple(*consts), b


def _flatten(groups) -> list:
    return [x for group in groups for x in group]


def _apply(closed, consts, vector):
    return eval_jaxpr(closed.jaxpr, closed.consts, *consts, *vector)


# --- the primitive's rules --------------------------------------------------------------

@linear_solve_p.def_abstract_eval
def _abstract_eval(*avals, const_lengths, jaxprs):
    """x has b's types."""
    _, b = _split(avals, const_lengths)
    for name in ("matvec", "solve"):
        outs = getattr(jaxprs, name).out_avals
        if [(a.shape, a.dtype) for a in outs] != [(a.shape, a.dtype) for a in b]:
            raise TypeError(f"custom_linear_solve: {name} returns "
                            f"{[describe(a) for a in outs]} for b of types "
                            f"{[describe(a) for a in b]}")
    return list(b)


@linear_solve_p.def_impl
def _impl(*args, const_lengths, jaxprs):
    consts, b = _split(args, const_lengths)
    return _apply(jaxprs.solve, consts.solve, b)


def _lower(ctx, *args, const_lengths, jaxprs):
    consts, b = _split(args, const_lengths)
    return ctx.lower_subjaxpr(jaxprs.solve, *consts.solve, *b, name="solve")


linear_solve_p.def_lowering(_lower)


def _jvp(primals, tangents, *, const_lengths, jaxprs):
    """x' = solve(b' - A'(x)), A' the tangent of matvec in its constants."""
    params = dict(const_lengths=const_lengths, jaxprs=jaxprs)
    x = linear_solve_p.bind(*primals, **params)
    consts, _ = _split(primals, const_lengths)
    const_dots, b_dots = _split(tangents, const_lengths)
    nonzero = [not isinstance(t, Zero) for t in const_dots.matvec]
    rhs = list(b_dots)
    if any(nonzero):  # A'(x), evaluated where the derivative is taken
        jvp, _ = jvp_jaxpr(jaxprs.matvec, nonzero + [False] * len(x), instantiate=True)
        outs = eval_jaxpr(jvp.jaxpr, jvp.consts, *consts.matvec, *x,
                          *(t for t, nz in zip(const_dots.matvec, nonzero) if nz))
        rhs = [add_tangents(r, elementwise.neg(a)) for r, a in zip(rhs, outs[len(x):])]
    rhs = [instantiate(r) for r in rhs]
    return x, linear_solve_p.bind(*_flatten(consts), *rhs, **params)


def _transpose(cts, *args, const_lengths, jaxprs):
    """The cotangent of b: the transposed system solved for the cotangent of x."""
    consts, b = _split(args, const_lengths)
    if any(is_undefined_primal(c) for c in _flatten(consts)):
        raise ValueError("custom_linear_solve: cannot transpose with respect to the "
                         "constants of matvec or solve (the solution is linear only in b)")
    if jaxprs.transpose_solve is None:
        raise TypeError("transpose_solve required for backwards mode automatic "
                        "differentiation of custom_linear_solve")
    ct_b = linear_solve_p.bind(*_flatten(consts.transpose()), *map(instantiate, cts),
                               const_lengths=const_lengths.transpose(),
                               jaxprs=jaxprs.transpose())
    return [None] * sum(const_lengths) + list(ct_b)


def _batch_at_front(closed, axis_data, in_batched, instantiate_out):
    """`closed` batched at axis 0 of the inputs in `in_batched`; every output that is
    batched (or in `instantiate_out`) is batched at 0. → (Jaxpr, which outputs are)."""
    in_dims = [0 if b else None for b in in_batched]
    forced = [0 if f else None for f in instantiate_out]
    batched, out_dims = batch_jaxpr(closed, axis_data, in_dims, forced)
    if any(d not in (None, 0) for d in out_dims):
        forced = [0 if d is not None else None for d in out_dims]
        batched, out_dims = batch_jaxpr(closed, axis_data, in_dims, forced)
    return batched, [d is not None for d in out_dims]


def _batching(axis_data, args, dims, *, const_lengths, jaxprs):
    """Which parts of x and b are batched is found as a fixpoint over the four maps
    (each of b and x batched in all of them, or in none), as JAX's."""
    consts, b = _split(args, const_lengths)
    const_dims, b_dims = _split(dims, const_lengths)
    const_bat = _LinearSolveTuple(*([d is not None for d in ds] for ds in const_dims))
    orig_b_bat = [d is not None for d in b_dims]
    b_bat, x_bat = orig_b_bat, [False] * len(b)
    for _ in range(1 + 2 * len(b)):
        solve, x_bat_out = _batch_at_front(jaxprs.solve, axis_data, const_bat.solve + b_bat,
                                           x_bat)
        vecmat = None
        if jaxprs.vecmat is not None:
            vecmat, vecmat_bat = _batch_at_front(jaxprs.vecmat, axis_data,
                                                 const_bat.vecmat + b_bat, b_bat)
            x_bat_out = [v or s for v, s in zip(vecmat_bat, x_bat_out)]
        matvec, b_bat_out = _batch_at_front(jaxprs.matvec, axis_data,
                                            const_bat.matvec + x_bat_out, b_bat)
        b_bat_out = [m or o for m, o in zip(b_bat_out, orig_b_bat)]
        tsolve = None
        if jaxprs.transpose_solve is not None:
            tsolve, tsolve_bat = _batch_at_front(jaxprs.transpose_solve, axis_data,
                                                 const_bat.transpose_solve + x_bat_out,
                                                 x_bat_out)
            b_bat_out = [t or o for t, o in zip(tsolve_bat, b_bat_out)]
        if x_bat_out == x_bat and b_bat_out == b_bat:
            break
        x_bat, b_bat = x_bat_out, b_bat_out
    consts = [c if d is None else move_to(c, d, 0, axis_data.size)
              for c, d in zip(_flatten(consts), _flatten(const_dims))]
    b = [move_to(x, d, 0, axis_data.size) if now else x for x, d, now in zip(b, b_dims, b_bat)]
    outs = linear_solve_p.bind(*consts, *b, const_lengths=const_lengths,
                               jaxprs=_LinearSolveTuple(matvec, vecmat, solve, tsolve))
    return outs, [0 if bat else None for bat in x_bat_out]


linear_solve_p.define_rule(JVP, _jvp)
linear_solve_p.define_rule(TRANSPOSE, _transpose)
linear_solve_p.define_rule(BATCHING, _batching)
linear_solve_p.define_rule("effects", lambda *, const_lengths, jaxprs: frozenset().union(
    *(j.effects for j in jaxprs if j is not None)))

"""`optimization_barrier`: values the compiler may not move computations across
(for example to keep a rematerialised computation from being merged with the
original). It returns its operands unchanged, and is its own jvp and transpose."""
from __future__ import annotations

from plax.extend import tree_util
from plax.extend.ad import Zero, instantiate, tangent_aval
from plax.extend.constructors import standard_primitive
from plax.extend.core import get_aval
from plax.extend.mlir import hlo


def _barrier_jvp(primals, tangents):
    out = optimization_barrier_p.bind(*primals)
    nonzero = [i for i, t in enumerate(tangents) if not isinstance(t, Zero)]
    t_out = [Zero(tangent_aval(get_aval(p))) for p in out]
    if nonzero:
        for i, t in zip(nonzero, optimization_barrier_p.bind(*(tangents[i] for i in nonzero))):
            t_out[i] = t
    return out, t_out


def _barrier_transpose(cts, *operands):
    return list(optimization_barrier_p.bind(*(instantiate(ct) for ct in cts)))


optimization_barrier_p = standard_primitive(
    "lax.optimization_barrier", lambda *avals: list(avals),
    lambda ctx, *xs: list(hlo.OptimizationBarrierOp(list(xs)).results) if xs else [],
    multiple_results=True, jvp=_barrier_jvp, transpose=_barrier_transpose,
    batching=lambda axis_data, args, dims: (optimization_barrier_p.bind(*args), list(dims)))


def optimization_barrier(operand, /):
    """Returns its argument unchanged, behind a barrier that the compiler does not
    move operations across.

    Use it to control scheduling and memory: for example, to stop XLA from
    fusing a recomputation (rematerialization) back into the forward pass, or
    from hoisting work across a point.

    Args:
        operand: a pytree of arrays.

    Returns:
        `operand`'s values.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> plax.jit(lambda x: plax.lax.optimization_barrier(x * 2) + 1)(jnp.ones(2))
        Array([3., 3.], dtype=float32)
    """
    leaves, tree = tree_util.tree_flatten(operand)
    return tree_util.tree_unflatten(tree, optimization_barrier_p.bind(*leaves))

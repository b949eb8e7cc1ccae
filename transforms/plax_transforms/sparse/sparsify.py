"""`sparsify`: run a function written for dense arrays on BCOO arguments.

The function is traced with each BCOO standing in as a dense array of its shape and
dtype, and the Jaxpr is then evaluated with the BCOO values themselves: equations
that touch a BCOO use its sparse rule (products with dense operands, sums,
transposes, reductions, and elementwise operations that keep zeros zero), all
others run as they are. A primitive without a sparse rule is an error naming it,
rather than a silent densification.
"""
from __future__ import annotations

import functools
from typing import Callable

from plax.extend import tree_util
from plax.extend.core import ShapedArray, get_aval, trace_to_jaxpr
from plax_transforms.interpreting import interpret
from plax_transforms.jit_primitive import jit_p
from plax_transforms.sparse.bcoo import (_SCALAR_DIVISION_ONLY, BCOO, add, bcoo_dot_general,
                                         bcoo_reduce_sum, bcoo_transpose, dense_dot_bcoo,
                                         multiply)

# Elementwise primitives with f(0) = 0, applied to the stored elements.
_ZERO_PRESERVING = frozenset({
    "neg", "sin", "tan", "tanh", "abs", "sqrt", "sign", "expm1", "log1p", "asin", "atan",
    "sinh", "asinh", "atanh", "real", "imag", "conj", "copy", "convert_element_type",
    "square", "cbrt", "stop_gradient"})


def _dot_general(lhs, rhs, *, dimension_numbers, precision=None, preferred_element_type=None,
                 **_):
    options = dict(dimension_numbers=dimension_numbers, precision=precision,
                   preferred_element_type=preferred_element_type)
    if isinstance(lhs, BCOO):
        return bcoo_dot_general(lhs, rhs.todense() if isinstance(rhs, BCOO) else rhs,
                                **options)
    return dense_dot_bcoo(lhs, rhs, **options)


def _integer_pow(x, *, y):
    if y <= 0:
        raise NotImplementedError(f"sparsify: integer_pow with exponent {y} does not keep "
                                  "zeros zero")
    return x._with_data(x.data ** y)


def _div(x, y):
    if not isinstance(x, BCOO):
        raise NotImplementedError(f"sparsify: {_SCALAR_DIVISION_ONLY}")
    return x / y


_RULES: dict[str, Callable] = {
    "dot_general": _dot_general,
    "mul": lambda x, y: multiply(x, y),
    "add": lambda x, y: add(x, y),
    "sub": lambda x, y: add(x, -y),
    "div": _div,
    "transpose": lambda x, *, permutation: bcoo_transpose(x, permutation),
    "reduce_sum": lambda x, *, axes, **_: bcoo_reduce_sum(x, axes),
    "integer_pow": _integer_pow,
}


def _apply(eqn, invals: list) -> list:
    prim, params = eqn.primitive, eqn.params
    if not any(isinstance(v, BCOO) for v in invals):
        outs = prim.bind(*invals, **params)
    elif prim is jit_p:
        return interpret(params["jaxpr"], invals, _apply)
    elif prim.name in _ZERO_PRESERVING:
        (x,) = invals
        outs = x._with_data(prim.bind(x.data, **params))
    elif prim.name in _RULES:
        outs = _RULES[prim.name](*invals, **params)
    else:
        raise NotImplementedError(f"sparsify: no sparse rule for the primitive {prim.name!r} "
                                  "applied to a BCOO array")
    return outs if prim.multiple_results else [outs]


def sparsify(f: Callable) -> Callable:
    """`f` taking BCOO arrays where it takes dense ones (and giving BCOO results where
    the sparse rules keep them sparse)."""
    is_bcoo = lambda x: isinstance(x, BCOO)  # noqa: E731

    @functools.wraps(f)
    def sparsified(*args, **kwargs):
        leaves, in_tree = tree_util.tree_flatten((args, kwargs), is_leaf=is_bcoo)
        avals = [ShapedArray(x.shape, x.dtype) if is_bcoo(x) else get_aval(x) for x in leaves]
        closed, out_tree = trace_to_jaxpr(f, in_tree, avals, None)
        return tree_util.tree_unflatten(out_tree, interpret(closed, leaves, _apply))

    return sparsified

"""What the three solvers share: A and M as linear maps on b's pytree, the checks on
b and x0, SciPy's default iteration count, and the implicit differentiation (the
solve is a `lax.custom_linear_solve`, so derivatives are solves of the same kind, not
derivatives of the iterations)."""
from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

import numpy as np

import plax
from plax.extend import dtypes, tree_util
from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.numpy import util


class System(NamedTuple):
    """A x = b with the starting guess x0, A and the preconditioner M as functions."""
    A: Callable
    b: Any
    x0: Any
    M: Callable | None
    size: int


def _identity(x):
    return x


def linear_map(name: str, what: str, op) -> Callable:
    """`op` as a function: itself if callable, else x ↦ op @ x for a square matrix (or
    any object with `__matmul__`)."""
    if callable(op):
        return op
    shape = getattr(op, "shape", None)
    if shape is not None or hasattr(op, "__matmul__"):
        if shape is not None and (len(shape) != 2 or shape[0] != shape[1]):
            raise ValueError(f"{name}: linear operator {what} must be a square matrix, but "
                             f"has shape: {tuple(shape)}")
        if util.is_arraylike(op):
            return functools.partial(jnp.dot, op, precision=lax.Precision.HIGHEST)
        return lambda x: op @ x  # e.g. a sparse matrix
    raise TypeError(f"{name}: linear operator {what} must be either a function or ndarray, "
                    f"got {type(op).__name__}: {op!r}")


def _check_matrix_fits(name, what, op, b):
    """A TypeError naming both shapes when the matrix cannot multiply b."""
    shape = getattr(op, "shape", None)
    if callable(op) or shape is None or len(shape) != 2:
        return
    leaves = tree_util.tree_leaves(b)
    if len(leaves) != 1 or np.ndim(leaves[0]) == 0 or np.shape(leaves[0])[0] != shape[1]:
        raise TypeError(f"{name}: {what} of shape {tuple(shape)} cannot multiply b of "
                        f"shape(s) {[np.shape(x) for x in leaves]}")


def _shapes(tree):
    return [np.shape(x) for x in tree_util.tree_leaves(tree)]


def system(name: str, A, b, x0, M) -> System:
    """The checked system: b and x0 as arrays of matching structure, shapes and inexact
    dtypes (x0 zeros by default), A and M as functions (M None when not given)."""
    matvec = linear_map(name, "A", A)
    precondition = None if M is None else linear_map(name, "M", M)
    if x0 is None:
        x0 = tree_util.tree_map(jnp.zeros_like, b)
    b, x0 = plax.device_put((b, x0))
    if tree_util.tree_structure(x0) != tree_util.tree_structure(b):
        raise ValueError(f"{name}: x0 and b must have matching tree structure: "
                         f"{tree_util.tree_structure(x0)} vs {tree_util.tree_structure(b)}")
    if _shapes(x0) != _shapes(b):
        raise ValueError(f"{name}: arrays in x0 and b must have matching shapes: "
                         f"{_shapes(x0)} vs {_shapes(b)}")
    for leaf in tree_util.tree_leaves(b):
        if not dtypes.issubdtype(leaf.dtype, np.inexact):
            raise TypeError(f"{name}: b must have floating or complex dtypes, got "
                            f"{leaf.dtype}; convert it with .astype first")
    _check_matrix_fits(name, "A", A, b)
    if M is not None:
        _check_matrix_fits(name, "M", M, b)
    size = sum(int(np.size(leaf)) for leaf in tree_util.tree_leaves(b))
    return System(matvec, b, x0, precondition, size)


def default_maxiter(maxiter, size: int) -> int:
    """SciPy's default: ten iterations per unknown."""
    return 10 * size if maxiter is None else maxiter


def preconditioner(M):
    return _identity if M is None else M


def scalar_dtype(tree):
    """The dtype in which the solver's coefficients live: b's, complex if b is."""
    return dtypes.result_type(*tree_util.tree_leaves(tree))


def solve_implicitly(system: System, solve: Callable, symmetric: bool):
    """x with A x = b by `solve(A, b)`, differentiated through that equation; the
    transposed system is solved the same way."""
    return lax.custom_linear_solve(system.A, system.b, solve=solve, transpose_solve=solve,
                                   symmetric=symmetric)


def all_real(tree) -> bool:
    return not any(jnp.iscomplexobj(leaf) for leaf in tree_util.tree_leaves(tree))

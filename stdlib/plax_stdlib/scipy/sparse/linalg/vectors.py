"""Vector-space arithmetic on pytrees of arrays: the solvers' vectors have the
structure of b, and their inner products sum over all its leaves."""
from __future__ import annotations

import functools
import operator

from plax.extend import tree_util
from plax_stdlib import lax
from plax_stdlib import numpy as jnp

_HIGHEST = lax.Precision.HIGHEST

add = functools.partial(tree_util.tree_map, operator.add)
sub = functools.partial(tree_util.tree_map, operator.sub)


def scale(a, x):
    """The scalar a times each leaf of x."""
    return tree_util.tree_map(lambda leaf: a * leaf, x)


def where(condition, x, y):
    """x where the scalar condition holds, else y, leaf by leaf."""
    return tree_util.tree_map(functools.partial(jnp.where, condition), x, y)


def vdot(x, y):
    """<x, y> = Σ conj(x)·y over every leaf."""
    return sum(jnp.vdot(a, b, precision=_HIGHEST)
               for a, b in zip(tree_util.tree_leaves(x), tree_util.tree_leaves(y)))


def real_vdot(x, y):
    """Re <x, y>, a real scalar even for complex leaves."""
    def part(a, b):
        out = jnp.vdot(jnp.real(a), jnp.real(b), precision=_HIGHEST)
        if jnp.iscomplexobj(a) or jnp.iscomplexobj(b):
            out = out + jnp.vdot(jnp.imag(a), jnp.imag(b), precision=_HIGHEST)
        return out
    return sum(part(a, b) for a, b in zip(tree_util.tree_leaves(x), tree_util.tree_leaves(y)))


def norm(x):
    """The 2-norm of x over all its leaves."""
    return jnp.sqrt(real_vdot(x, x))

"""Lowering a primitive by tracing a plax function on its operands' data.

The key primitives (`random_split`, `random_bits`...) compute with their PRNG
implementation's functions, which are ordinary `plax.lax` code on uint32 key data.
Their lowering rules trace that code, on the physical avals of the operands, into
a Jaxpr (once per implementation, avals, parameters and config), and emit it as a
private function of the module being lowered.
"""
from __future__ import annotations

import functools
from collections.abc import Callable

import plax
from plax.extend import config
from plax.extend.core import ClosedJaxpr, physical_aval, stage_flat


def vmap_n(fun: Callable, n: int) -> Callable:
    """`fun` mapped over `n` leading axes of all its arguments."""
    for _ in range(n):
        fun = plax.vmap(fun)
    return fun


@functools.lru_cache(maxsize=1024)
def _traced(build: Callable, in_avals: tuple, params: tuple, context: tuple) -> ClosedJaxpr:
    kwargs = dict(params)
    return stage_flat(lambda *xs: [build(*xs, **kwargs)], in_avals)


def lower_traced(ctx, build: Callable, *operands, **params):
    """Lower by `build(*operand_data, **params)`, a plax function of the operands'
    physical data that returns the output's physical data."""
    in_avals = tuple(physical_aval(a) for a in ctx.avals_in)
    closed = _traced(build, in_avals, tuple(sorted(params.items())), config.trace_context())
    return ctx.lower_subjaxpr(closed, *operands, name=ctx.primitive.name)

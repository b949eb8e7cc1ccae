"""Lowering rules of the primitives plax-transforms defines (entry point
`plax.lowering: standard`).

`jit` lowers to a `func.call` of a private function holding its Jaxpr; the
function is emitted once per distinct Jaxpr in a module, so repeated calls of the
same inner jit share it. The standard `lax` primitives carry their own rules.
"""
from __future__ import annotations

from plax_transforms.jit_primitive import jit_p


@jit_p.def_lowering
def _jit_lowering(ctx, *args, jaxpr, name: str, **_):
    return ctx.lower_subjaxpr(jaxpr, *args, name=name)

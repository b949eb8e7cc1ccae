"""`jax.extend.core` on `plax.extend.core`: JAX's `Primitive` (a plain name, rules
set as attributes), the current trace as libraries ask for it, and mapped avals."""
from __future__ import annotations

import itertools
import sys
import weakref

import plax.extend.core as pcore
from plax.extend.core import current_trace
from plax_transforms.partial_eval import PartialEvalTrace

PLAX_MODULE = "plax.extend.core"
# Primitives defined through this module are credited to the library's module.
__plax_rule_helper__ = True
_serial = itertools.count(1)


class Primitive(pcore.Primitive):
    """JAX's constructor: `Primitive("name")`, a plain name, not unique. plax ids are
    namespaced and unique, so the id is `<defining module>.<name>` (a counter keeps
    two primitives of one name in one module apart); the Jaxpr shows `name`."""

    def __init__(self, name: str):
        if not isinstance(name, str) or not name:
            raise TypeError(f"Primitive takes a non-empty name; got {name!r}")
        frame = sys._getframe(1)
        while frame.f_back is not None and frame.f_globals.get("__plax_rule_helper__"):
            frame = frame.f_back  # a subclass's constructor in a helper module
        module = frame.f_globals.get("__name__", "jax_extension")
        namespace = module
        while f"{namespace}.{name}" in _taken():
            namespace = f"{module}.{next(_serial)}"
        super().__init__(f"{namespace}.{name}")

    def def_effectful_abstract_eval(self, rule):
        """`rule(*avals, **params) -> (aval(s), effects)`; plax reads effects from an
        effects rule, evaluated on the params."""
        self.def_abstract_eval(lambda *avals, **params: rule(*avals, **params)[0])
        return rule


def _taken() -> set[str]:
    return {p.id for p in pcore.all_primitives()}


class OpaqueTraceState:
    """Which trace is current, comparable for identity (flax checks that a Module is
    used under the trace it was made in); holds the trace weakly."""

    def __init__(self, trace):
        self._trace_ref = weakref.ref(trace)

    def __eq__(self, other):
        return isinstance(other, OpaqueTraceState) and self._trace_ref() is not None \
            and self._trace_ref() is other._trace_ref()

    def __hash__(self):
        return id(self._trace_ref())


def get_opaque_trace_state(convention=None) -> OpaqueTraceState:
    """The current trace, the level values are made at (flax's Variables remember it).
    A linearization's partial-evaluation trace counts as its parent, which computes
    its known values: JAX computes a linearized function's primal values on the parent
    trace itself, so under `grad` a custom_vjp's fwd and the function it calls are
    one level, as in JAX."""
    del convention
    trace = current_trace()
    while isinstance(trace, PartialEvalTrace):
        trace = trace.parent
    return OpaqueTraceState(trace)


def find_top_trace(_xs):
    """The current trace (JAX 0.10's answer whatever the arguments)."""
    return current_trace()


def mapped_aval(size: int, axis: int | None, aval):
    """`aval` with its mapped axis `axis` (of `size`) removed."""
    if axis is None:
        return aval
    if aval.shape[axis] != size:
        raise ValueError(f"mapped_aval: axis {axis} of {aval.str_short()} is not of size {size}")
    return aval.update(shape=aval.shape[:axis] + aval.shape[axis + 1:])


def unmapped_aval(size: int, axis: int | None, aval, explicit_mesh_axis=None):
    """`aval` with a new axis of `size` inserted at `axis`."""
    del explicit_mesh_axis
    if axis is None:
        return aval
    return aval.update(shape=aval.shape[:axis] + (size,) + aval.shape[axis:])

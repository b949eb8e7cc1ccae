"""Eager dispatch: applying a primitive outside every transformation.

`apply_primitive` is the default implementation of every primitive (entry point
`plax.transforms: eager_dispatch`). It lowers a one-equation Jaxpr, compiles it
for the device the arguments decide, and runs it. Executables are cached by
(primitive, parameters, argument signatures incl. weak types, device, config), so
a repeated operation costs a signature, a dictionary lookup and an execution.
Arguments may be plax Arrays, NumPy values or Python scalars; non-Arrays are put
on the device by the executable in one batch.
"""
from __future__ import annotations

from typing import Any, Sequence

from plax._src.ir import ClosedJaxpr, Jaxpr, JaxprEqn, Var
from plax._src.primitive import Primitive
from plax._src.sharding import Device
from plax._src.tracing import get_aval

from plax_transforms.executing import CompiledJaxpr, call_device, lowering_platform
from plax_transforms.lowering import lower_jaxpr_to_module
from plax_transforms.signature import arg_signature, trace_context

_MAX_ENTRIES = 8192
_executables: dict[tuple, CompiledJaxpr] = {}


def apply_primitive(prim: Primitive, args: Sequence[Any], params: dict):
    """Compute `prim(*args, **params)` with a compiled single-primitive executable."""
    device, committed = call_device(args)
    try:
        key = (prim, tuple(params.items()), arg_signature(args), device, trace_context())
        compiled = _executables.get(key)
    except TypeError:  # an unhashable parameter: compile without caching
        key, compiled = None, None
    if compiled is None:
        compiled = _compile_primitive(prim, args, params, device)
        if key is not None:
            if len(_executables) >= _MAX_ENTRIES:
                _executables.clear()
            _executables[key] = compiled
    outs = compiled(args, committed)
    return outs if prim.multiple_results else outs[0]


def _compile_primitive(prim: Primitive, args: Sequence[Any], params: dict,
                       device: Device) -> CompiledJaxpr:
    invars = [Var(get_aval(x)) for x in args]
    out = prim.abstract_eval(*(v.aval for v in invars), **params)
    outvars = [Var(aval) for aval in (out if prim.multiple_results else (out,))]
    effects = prim.get_rule("effects")
    effects = frozenset(effects(**params)) if effects else frozenset()
    eqn = JaxprEqn(invars, outvars, prim, params, effects)
    jaxpr = Jaxpr([], invars, outvars, [eqn], effects)
    lowering = lower_jaxpr_to_module(ClosedJaxpr(jaxpr, []), name=prim.name,
                                     platform=lowering_platform(device), keep_unused=True)
    return CompiledJaxpr(lowering, device)


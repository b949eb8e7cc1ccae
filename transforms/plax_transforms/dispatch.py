"""Eager dispatch: applying a primitive outside every transformation.

`apply_primitive` is the default implementation of every primitive (entry point
`plax.transforms: eager_dispatch`). It lowers a one-equation Jaxpr, compiles it
for the devices the arguments decide (sharded Arrays give an SPMD computation
over their devices), and runs it. Executables are cached by (primitive,
parameters, avals incl. weak types, devices, the arguments' layouts, config); in
front of them,
a call's exact signature (with the placement of each Array) finds a prepared
caller, so a repeated operation costs a signature, a dictionary lookup and an
execution.
Arguments may be plax Arrays, NumPy values or Python scalars; non-Arrays are put
on the device by the executable in one batch.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from plax.extend.core import ClosedJaxpr, Jaxpr, JaxprEqn, Primitive, Var, get_aval
from plax.extend.sharding import concrete_mesh
from plax_transforms.executing import (CallPlacement, CompiledJaxpr, abstract_layout,
                                       lower_module, lowering_platform, place_call)
from plax_transforms.signature import arg_signature, trace_context

_MAX_ENTRIES = 8192
# Two levels: a call's exact signature (placements and the context mesh included) → a
# prepared caller, in front of the executables, which depend only on avals and devices.
_callers: dict[tuple, Callable[[Sequence[Any]], list]] = {}
_executables: dict[tuple, CompiledJaxpr] = {}


def apply_primitive(prim: Primitive, args: Sequence[Any], params: dict):
    """Compute `prim(*args, **params)` with a compiled single-primitive executable."""
    try:
        key = (prim, tuple(params.items()), arg_signature(args), trace_context(),
               concrete_mesh())
        call = _callers.get(key)
    except TypeError:  # an unhashable parameter: compile without caching
        key, call = None, None
    if call is None:
        call = _prepare(prim, args, params)
        if key is not None:
            _remember(_callers, key, call)
    outs = call(args)
    return outs if prim.multiple_results else outs[0]


def _prepare(prim: Primitive, args: Sequence[Any], params: dict):
    closed = _one_equation(prim, args, params)
    # Higher-order primitives may run where their Jaxprs say (a shard_map's mesh).
    placement = place_call(args, jaxpr=closed.jaxpr)
    avals = tuple(map(get_aval, args))
    n = len(placement.devices)
    try:
        key = (prim, tuple(params.items()), avals, placement.devices,
               tuple(abstract_layout(s, a.ndim, n) for s, a in zip(placement.in_shardings,
                                                                    avals)),
               trace_context())
        compiled = _executables.get(key)
    except TypeError:
        key, compiled = None, None
    if compiled is None:
        compiled = _compile_primitive(prim, closed, placement)
        if key is not None:
            _remember(_executables, key, compiled)
    return compiled.caller_for(args, placement.committed)


def _remember(cache: dict, key: tuple, value) -> None:
    if len(cache) >= _MAX_ENTRIES:
        cache.clear()
    cache[key] = value


def _one_equation(prim: Primitive, args: Sequence[Any], params: dict) -> ClosedJaxpr:
    invars = [Var(get_aval(x)) for x in args]
    out = prim.abstract_eval(*(v.aval for v in invars), **params)
    outvars = [Var(aval) for aval in (out if prim.multiple_results else (out,))]
    effects = prim.get_rule("effects")
    effects = frozenset(effects(**params)) if effects else frozenset()
    eqn = JaxprEqn(invars, outvars, prim, params, effects)
    return ClosedJaxpr(Jaxpr([], invars, outvars, [eqn], effects), [])


def _compile_primitive(prim: Primitive, closed: ClosedJaxpr,
                       placement: CallPlacement) -> CompiledJaxpr:
    lowering = lower_module(closed, prim.name,
                            platform=lowering_platform(placement.devices[0]), keep_unused=True,
                            num_partitions=len(placement.devices),
                            in_shardings=placement.in_shardings)
    return CompiledJaxpr(lowering, placement)


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

Both caches are bounded by entries and bytes. Parameters that are Jaxprs (the
branches of an eager `cond`, the body of a `while_loop`) enter keys by identity
and are held weakly, so their entries go when the user's functions do.
"""
from __future__ import annotations

from typing import Any, Sequence

from plax.extend import config
from plax.extend.core import (EVAL_TRACE, ClosedJaxpr, Jaxpr, JaxprEqn, Primitive, Var,
                              current_frontend_attributes, get_aval, register_cache)
from plax.extend.sharding import concrete_mesh
from plax_runtime import _fastpath
from plax_transforms import debug_nans, key_reuse
from plax_runtime.caches import BoundedCache
from plax_transforms.executing import (CallPlacement, CompiledJaxpr, abstract_layout,
                                       lower_module, lowering_platform, place_call)
from plax_transforms.ref_discharge import apply_with_refs, has_cells
from plax_transforms.signature import arg_signature, trace_context

# Two levels: a call's exact signature (placements and the context mesh included) → a
# prepared caller, in front of the executables, which depend only on avals and devices.
# A caller holds its executable, so both count its bytes.
_callers = BoundedCache("eager callers", max_entries=8192, max_bytes=512 << 20)
_executables = BoundedCache("eager executables", max_entries=8192, max_bytes=512 << 20)
register_cache(_callers.clear)
register_cache(_executables.clear)

_JAXPR_TYPES = (ClosedJaxpr, Jaxpr)


def _holds_jaxpr(value) -> bool:
    kind = type(value)
    return kind in _JAXPR_TYPES or (kind is tuple and bool(value)
                                    and type(value[0]) in _JAXPR_TYPES)


def _params_key(params: dict) -> tuple[tuple, list]:
    """`params` as a hashable key naming Jaxpr parameters by identity, and those Jaxprs."""
    items = tuple(params.items())
    if not any(_holds_jaxpr(value) for _, value in items):
        return items, []
    jaxprs: list = []

    def part(value):
        if type(value) in _JAXPR_TYPES:
            jaxprs.append(value)
            return ("jaxpr", id(value))
        return tuple(map(part, value)) if _holds_jaxpr(value) else value

    return tuple([(name, part(value)) for name, value in items]), jaxprs


# A repeated operation without Jaxpr parameters finds its caller under the key
# (prim, tuple(params.items()), signature, trace context, mesh) in the callers' front,
# and runs it, in one C++ call.
_front_call = _fastpath.EagerFront(_callers.front, trace_context, concrete_mesh,
                                   config.enable_x64)


def apply_primitive(prim: Primitive, args: Sequence[Any], params: dict):
    """Compute `prim(*args, **params)` with a compiled single-primitive executable."""
    outs = _front_call(prim, params, args)
    if outs is None:
        return _apply_uncached(prim, args, params)
    return outs if prim.multiple_results else outs[0]


def _apply_uncached(prim: Primitive, args: Sequence[Any], params: dict):
    """`apply_primitive` when the caller is not at hand: found in the cache under the
    key that names Jaxpr parameters by identity, or prepared (and compiled) now."""
    params_key, jaxprs = _params_key(params)
    try:
        key = (prim, params_key, arg_signature(args), trace_context(), concrete_mesh())
        call = _callers.get(key)
    except TypeError:  # an unhashable parameter: compile without caching
        if has_cells(args, EVAL_TRACE):  # control flow using a reference: discharge it
            return apply_with_refs(prim, args, params)
        key, call = None, None
    if call is None:
        call, nbytes = _prepare(prim, args, params, params_key, jaxprs)
        if key is not None:
            _callers.put(key, call, nbytes=nbytes, owners=jaxprs)
    outs = call(args)
    return outs if prim.multiple_results else outs[0]


def _prepare(prim: Primitive, args: Sequence[Any], params: dict, params_key: tuple,
             jaxprs: list):
    closed = _one_equation(prim, args, params)
    # Higher-order primitives may run where their Jaxprs say (a shard_map's mesh).
    placement = place_call(args, jaxpr=closed.jaxpr)
    avals = tuple(map(get_aval, args))
    n = len(placement.devices)
    try:
        key = (prim, params_key, avals, placement.devices,
               tuple(abstract_layout(s, a.ndim, n) for s, a in zip(placement.in_shardings,
                                                                    avals)),
               placement.in_layouts, trace_context())
        compiled = _executables.get(key)
    except TypeError:
        key, compiled = None, None
    if compiled is None:
        compiled = _compile_primitive(prim, closed, placement)
        if key is not None:
            _executables.put(key, compiled, nbytes=compiled.nbytes, owners=jaxprs)
    call = compiled.caller_for(args, placement.committed)
    if debug_nans.enabled():  # a key of its own: the trace context includes the options
        call = debug_nans.checked_primitive(call, prim)
    if key_reuse.enabled():  # the same: the option is in the trace context
        call = key_reuse.checked_primitive(call, prim, closed)
    return call, compiled.nbytes


def _one_equation(prim: Primitive, args: Sequence[Any], params: dict) -> ClosedJaxpr:
    invars = [Var(get_aval(x)) for x in args]
    out = prim.abstract_eval(*(v.aval for v in invars), **params)
    outvars = [Var(aval) for aval in (out if prim.multiple_results else (out,))]
    effects = prim.get_rule("effects")
    effects = frozenset(effects(**params)) if effects else frozenset()
    eqn = JaxprEqn(invars, outvars, prim, params, effects,
                   frontend_attributes=current_frontend_attributes())
    return ClosedJaxpr(Jaxpr([], invars, outvars, [eqn], effects), [])


def _compile_primitive(prim: Primitive, closed: ClosedJaxpr,
                       placement: CallPlacement) -> CompiledJaxpr:
    if config.no_tracing.value:  # a new eager operation is traced and compiled, as in JAX
        raise RuntimeError(f"re-tracing function {prim.name} for `jit`, but 'no_tracing' "
                           "is set")
    lowering = lower_module(closed, prim.name,
                            platform=lowering_platform(placement.devices[0]), keep_unused=True,
                            num_partitions=len(placement.devices),
                            in_shardings=placement.in_shardings,
                            in_layouts=placement.in_layouts)
    return CompiledJaxpr(lowering, placement)


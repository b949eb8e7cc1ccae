"""`jax_debug_key_reuse` at run time: which concrete keys are consumed.

A typed key Array remembers (in a table keyed weakly on the Array) which of its keys
have been consumed and where. An eager primitive with a declared key-reuse signature
(`plax_stdlib.key_reuse`) and a call of a jitted function (whose signature is
its Jaxpr's) check their arguments before running and mark them after: consumed
inputs, fresh or consumed outputs, outputs that inherit an input's state. Each
jitted function's Jaxpr is checked when it is traced.

The option is in the trace context, so checking callers are cached apart from the
plain ones: while it is off, nothing here runs.
"""
from __future__ import annotations

import weakref
from typing import Any, Callable, Sequence

import numpy as np
from jaxlib import _jax

from plax.errors import KeyReuseError
from plax.extend import config
from plax.extend.core import ClosedJaxpr, Primitive, user_frame
from plax_stdlib import key_reuse as signatures

# id(key array) -> (weak reference, consumed mask, where it was consumed)
_consumed: dict[int, tuple[weakref.ref, Any, str]] = {}


def enabled() -> bool:
    return config.debug_key_reuse.value


def _state(x) -> tuple[Any, str]:
    entry = _consumed.get(id(x))
    return (False, "") if entry is None else entry[1:]


def _set(x, mask, where: str) -> None:
    mask = signatures.normalize_mask(mask)
    key = id(x)
    if mask is False:
        _consumed.pop(key, None)
        return
    entry = _consumed.get(key)
    ref = entry[0] if entry is not None else weakref.ref(x, lambda _, k=key: _consumed.pop(k, None))
    _consumed[key] = (ref, mask, where)


def _is_key_value(x) -> bool:
    return signatures.is_key_dtype(getattr(x, "dtype", None))


def _caller_frame() -> str:
    return user_frame(_jax.Traceback.get_traceback())


def checked(call: Callable, sig, funcname: str, consts: Sequence[Any] = ()) -> Callable:
    """`call` (flat inputs → flat outputs) checking and marking keys by `sig`, whose
    input indices run over the inputs followed by `consts`."""
    if not sig.sinks and not sig.sources and not sig.forwards:
        return call

    def run(args):
        ins = [*args, *consts]
        for sink in sig.sinks:
            x = ins[sink.idx]
            if not _is_key_value(x):
                continue
            mask, where = _state(x)
            if np.any(np.logical_and(mask, sink.mask)):
                first = f"; it was consumed at {where}" if where else ""
                raise KeyReuseError(f"Previously-consumed key passed to {funcname} at index "
                                    f"{sink.idx}{first}")
        outs = call(args)
        _mark(sig, ins, outs)
        return outs
    return run


def _mark(sig, ins: list, outs: Sequence[Any]) -> None:
    where = None
    for sink in sig.sinks:
        x = ins[sink.idx]
        if _is_key_value(x) and np.any(sink.mask):
            where = where or _caller_frame()
            _set(x, np.logical_or(_state(x)[0], sink.mask), where)
    inherited = {f.out_idx: _state(ins[f.in_idx]) for f in sig.forwards}
    fresh = {s.idx: s.mask for s in sig.sources}
    for j, out in enumerate(outs):
        if not _is_key_value(out):
            continue
        if j in inherited:
            _set(out, *inherited[j])
        elif j in fresh:
            _set(out, np.logical_not(fresh[j]), "")
        else:  # a key made by an operation that does not say it is fresh
            _set(out, True, where or _caller_frame())


def checked_primitive(call: Callable, prim: Primitive, closed: ClosedJaxpr) -> Callable:
    """An eager primitive's caller (its one-equation Jaxpr given) that checks keys, if
    the primitive declares what it does to them (undeclared ones are not checked)."""
    sig = signatures.registered_signature(closed.jaxpr.eqns[0])
    return call if sig is None else checked(call, sig, prim.name)


def checked_jit(call: Callable, closed: ClosedJaxpr) -> Callable:
    """A jitted computation's caller that checks keys by its Jaxpr's signature (keys
    among its constants included)."""
    return checked(call, signatures.jaxpr_signature(closed), "jit-compiled function",
                   closed.consts)


def check_traced(closed: ClosedJaxpr) -> None:
    """KeyReuseError if a freshly traced Jaxpr consumes a key twice."""
    signatures.check_key_reuse_jaxpr(closed)

"""MLIR contexts for lowering, and printing/serializing the modules built in them.

A context is made the way XLA's own Python front end expects: it skips the
generic `ir.Context` constructor (which loads every linked dialect and enables
per-context threads), loads the dialects jaxlib registers for StableHLO programs,
shares one thread pool, and registers `stablehlo`, `chlo`, `mhlo` and `sdy`, so
modules print in their pretty form and parse back identically.

A context with its dialects costs about a megabyte and two milliseconds, so
lowerings share one per thread (`shared_ir_context`). Types and attributes
interned in a context live as long as it does; a context is therefore retired
after a bounded number of lowerings or bytes of modules, and freed when the last
module built in it dies.
"""
from __future__ import annotations

import functools
import io
import threading

from jaxlib.mlir import ir
from jaxlib.mlir._mlir_libs import _jax_mlir_ext
from jaxlib.mlir._mlir_libs._mlir import ir as _raw_ir
from jaxlib.mlir.dialects import chlo, mhlo, sdy, stablehlo


class _LoweringContext(ir.Context):
    """An `ir.Context` built without the site hooks of `ir.Context.__init__`."""

    def __init__(self):
        _raw_ir.Context.__init__(self)


@functools.cache
def _thread_pool() -> ir.ThreadPool:
    return ir.ThreadPool()


def make_ir_context() -> ir.Context:
    """A fresh context with the dialects a lowered plax program uses."""
    context = _LoweringContext()
    registry = ir.DialectRegistry()
    _jax_mlir_ext.register_dialects(registry)
    context.append_dialect_registry(registry)
    context.load_all_available_dialects()
    context.set_thread_pool(_thread_pool())
    sdy.register_dialect(context)
    mhlo.register_mhlo_dialect(context)
    chlo.register_dialect(context)
    stablehlo.register_dialect(context)
    return context


# A thread's shared context is replaced after this many lowerings, or once the
# modules built in it reach this many bytes of bytecode (their interned attributes).
_LOWERINGS_PER_CONTEXT = 512
_BYTES_PER_CONTEXT = 64 << 20


class _SharedContext(threading.local):
    context: ir.Context | None = None
    lowerings = 0
    nbytes = 0


_shared = _SharedContext()


def shared_ir_context() -> ir.Context:
    """This thread's lowering context (a fresh one when the previous one retired)."""
    if _shared.context is None:
        _shared.context = make_ir_context()
        _shared.lowerings = _shared.nbytes = 0
    return _shared.context


def note_lowering(context: ir.Context, nbytes: int) -> None:
    """Account a module of `nbytes` built in `context`; retire it when it is full."""
    if context is not _shared.context:
        return
    _shared.lowerings += 1
    _shared.nbytes += nbytes
    if _shared.lowerings >= _LOWERINGS_PER_CONTEXT or _shared.nbytes >= _BYTES_PER_CONTEXT:
        _shared.context = None


def module_to_string(module: ir.Module, *, debug_info: bool = False) -> str:
    """The module's text; `debug_info=True` adds the source and argument-name locations."""
    out = io.StringIO()
    module.operation.print(file=out, enable_debug_info=debug_info)
    return out.getvalue()


def module_to_bytecode(module: ir.Module) -> bytes:
    """The module as MLIR bytecode (what is handed to the compiler)."""
    out = io.BytesIO()
    module.operation.write_bytecode(file=out)
    return out.getvalue()

"""MLIR contexts for lowering, and printing/serializing the modules built in them.

Contexts come from `plax.extend.mlir.make_ir_context` (the dialects of a lowered
program, made as XLA's own Python front end expects).

A context with its dialects costs about a megabyte and two milliseconds, so
lowerings share one per thread (`shared_ir_context`). Types and attributes
interned in a context live as long as it does; a context is therefore retired
after a bounded number of lowerings or bytes of modules, and freed when the last
module built in it dies.
"""
from __future__ import annotations

import contextlib
import io
import threading
from typing import Iterator

from jaxlib.mlir import ir

from plax.extend.mlir import make_ir_context


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


@contextlib.contextmanager
def own_ir_context() -> Iterator[None]:
    """Lowerings in the block use a fresh context of their own. A custom partitioner's
    callback lowers a module while XLA compiles one: doing that in the shared context
    crashes XLA (jaxlib 0.10.2)."""
    previous = _shared.context, _shared.lowerings, _shared.nbytes
    _shared.context = make_ir_context()
    try:
        yield
    finally:
        _shared.context, _shared.lowerings, _shared.nbytes = previous


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

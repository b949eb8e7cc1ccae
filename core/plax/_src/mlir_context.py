"""MLIR contexts with the dialects a lowered plax program uses, made the way XLA's
own Python front end expects: the generic `ir.Context` constructor (which loads
every linked dialect and enables per-context threads) is skipped, the dialects
jaxlib registers for StableHLO programs are loaded, one thread pool is shared,
and `stablehlo`, `chlo`, `mhlo` and `sdy` are registered, so modules print in
their pretty form and parse back identically. Lowering builds modules in them;
the runtime parses compiled modules back in them (the persistent cache's key).

`jaxlib.mlir` is imported on the first call, so importing this module costs nothing.
"""
from __future__ import annotations

import functools


@functools.cache
def _context_class() -> type:
    from jaxlib.mlir import ir
    from jaxlib.mlir._mlir_libs._mlir import ir as raw_ir

    class LoweringContext(ir.Context):
        """An `ir.Context` built without the site hooks of `ir.Context.__init__`."""

        def __init__(self):
            raw_ir.Context.__init__(self)

    return LoweringContext


@functools.cache
def _thread_pool():
    from jaxlib.mlir import ir
    return ir.ThreadPool()


def make_ir_context():
    """A fresh `ir.Context` with the dialects a lowered plax program uses."""
    from jaxlib.mlir import ir
    from jaxlib.mlir._mlir_libs import _jax_mlir_ext
    from jaxlib.mlir.dialects import chlo, mhlo, sdy, stablehlo
    context = _context_class()()
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

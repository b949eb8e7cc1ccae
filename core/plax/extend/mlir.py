"""Writing lowering rules: the MLIR modules (`ir`, `hlo` for StableHLO, `chlo`) and
plax's builders (`mu`: element types of dtypes, constants, broadcasts, comparisons,
reductions...), all loaded on first use so that defining primitives never imports
`jaxlib.mlir`.

A lowering rule is `rule(ctx, *operands, **params)`: `ctx.avals_in`/`ctx.avals_out`
are the equation's abstract values, `ctx.platform` the target,
`ctx.lower_subjaxpr(closed_jaxpr, *values)` calls a private function computing a
carried Jaxpr (for higher-order primitives), and `ctx.emit_function(name, in_avals,
out_avals, body)` emits a function for a custom call to name. It emits ops at the
current insertion point and returns the result value(s).

`make_ir_context()` is a fresh context with the dialects of a lowered program (for
building or parsing modules outside a lowering).
"""
from plax._src.lazy_mlir import LazyModule, chlo, hlo, ir, mu
from plax._src.mlir_context import make_ir_context

__all__ = ["LazyModule", "chlo", "hlo", "ir", "make_ir_context", "mu"]

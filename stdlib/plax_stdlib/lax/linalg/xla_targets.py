"""XLA's own linear-algebra custom calls, which XLA expands itself on TPU: where the CPU
lowering calls LAPACK, a TPU program names the operation (`Qr`,
`ProductOfElementaryHouseholderReflectors`, `LuDecomposition`, `Eigh`) and XLA's TPU compiler
substitutes its implementation (as JAX lowers them for TPU).
"""
from __future__ import annotations

from collections.abc import Sequence

from plax.extend.core import ShapedArray
from plax.extend.mlir import hlo, ir, mu


def call(target: str, operands: Sequence[ir.Value], avals_out: Sequence[ShapedArray],
         backend_config: str = "") -> list[ir.Value]:
    """Emit a custom call of XLA's `target` (the original API: default layouts, the
    options as a string); its results."""
    i32 = ir.IntegerType.get_signless(32)
    op = hlo.CustomCallOp.build_generic(
        results=mu.ir_types(avals_out), operands=list(operands),
        attributes={"call_target_name": ir.StringAttr.get(target),
                    "has_side_effect": ir.BoolAttr.get(False),
                    "api_version": ir.IntegerAttr.get(i32, 1),
                    "backend_config": ir.StringAttr.get(backend_config),
                    "called_computations": ir.ArrayAttr.get([])})
    return list(op.results)


def lowering(target: str):
    """A lowering rule calling XLA's `target` on the equation's operands."""
    def rule(ctx, *operands):
        return call(target, operands, ctx.avals_out)
    rule.__name__ = f"_lower_to_xla_{target}"
    return rule

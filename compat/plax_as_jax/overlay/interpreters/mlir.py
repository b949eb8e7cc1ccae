"""`jax.interpreters.mlir` on `plax.extend.mlir`: `register_lowering` and `lower_fun`
(a lowering rule made by tracing a function written with other primitives)."""
from __future__ import annotations

from plax.extend.core import LOWERING, stage_flat
from plax.extend.mlir import hlo, ir  # noqa: F401

from plax_as_jax._rules import RuleTable

PLAX_MODULE = "plax.extend.mlir"
__plax_rule_helper__ = True

_tables: dict[str | None, RuleTable] = {}


def register_lowering(prim, rule, platform: str | None = None) -> None:
    """`rule(ctx, *operands, **params)` lowers `prim` (on `platform`, or everywhere)."""
    if platform is not None and platform not in ("cpu", "cuda", "rocm", "tpu", "gpu"):
        raise ValueError(f"register_lowering: unknown platform {platform!r}")
    table = _tables.setdefault(platform, RuleTable(LOWERING, platform=platform))
    table[prim] = rule


def lower_fun(fun, multiple_results: bool = True):
    """The lowering rule that lowers `fun(*operands, **params)`, traced on the
    equation's input types, as a call to a private function."""
    def lowering(ctx, *operands, **params):
        def flat(*xs):
            out = fun(*xs, **params)
            return list(out) if multiple_results else [out]
        closed = stage_flat(flat, list(ctx.avals_in))
        outs = ctx.lower_subjaxpr(closed, *operands, name=ctx.primitive.name)
        return outs if multiple_results else outs[0]
    lowering.__name__ = f"lower_{getattr(fun, '__name__', 'fun')}"
    return lowering

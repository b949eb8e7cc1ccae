"""`jax.interpreters.mlir` on `plax.extend.mlir`: `register_lowering`, `lower_fun`
(a lowering rule made by tracing a function written with other primitives) and
`emit_python_callback` (a call of Python from the compiled code, equinox's noinline)."""
from __future__ import annotations

import dataclasses

import numpy as np

from plax.extend.core import LOWERING, abstract_token, stage_flat
from plax.extend.mlir import hlo, ir  # noqa: F401
from plax_transforms import host_callback

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


def emit_python_callback(ctx, callback, token, operands, operand_avals, result_avals, *,
                         has_side_effect: bool, partitioned: bool = False, sharding=None,
                         operand_layouts=None, result_layouts=None, returns_token=True):
    """JAX's: emit a call of `callback(*numpy operands) -> numpy results` (of
    `result_avals`) from the compiled code; `(results, token, keepalive)`. With a
    `token`, the call is chained after what produced it and returns the next one.
    plax places the call on one device (`partitioned` and `sharding` ask for no more)
    in the default layouts."""
    del partitioned, sharding, returns_token
    if operand_layouts is not None or result_layouts is not None:
        raise NotImplementedError("emit_python_callback: plax lays host callback operands "
                                  "and results out in the default (row-major) layout only")
    operands, avals_in, avals_out = list(operands), list(operand_avals), list(result_avals)

    def host(*args):  # XLA's callback handler takes a tuple of arrays
        tok = args[:1] if token is not None else ()  # the token, threaded through
        return (*tok, *(np.asarray(x) for x in callback(*args[len(tok):])))
    if token is not None:
        operands, avals_in = [token, *operands], [abstract_token, *avals_in]
        avals_out = [abstract_token, *avals_out]
    sub = dataclasses.replace(ctx, avals_in=tuple(avals_in), avals_out=tuple(avals_out))
    results = host_callback.emit_python_callback(sub, host, operands,
                                                 has_side_effect=has_side_effect)
    if token is not None:
        token, results = results[0], results[1:]
    return list(results), token, None

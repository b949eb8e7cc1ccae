"""`dce_sink(val)`: keep the computation of `val` (any pytree of arrays) in a staged
program although nothing uses it.

Each leaf becomes an equation of `lax.dce_sink`, which has no outputs and the
unordered effect `NoDCE`, so Jaxpr dead-code elimination keeps it and what it reads.
Lowered, it emits nothing, and XLA may still drop the value; with
`prevent_mlir_dce=True` it is a side-effecting custom call `@dce_sink` on the value,
which the MLIR passes keep too (XLA removes that call when it compiles). Eagerly it
does nothing; under vmap it sinks the batched value, under differentiation the
primal one.
"""
from __future__ import annotations

import numpy as np

from plax.extend import tree_util
from plax.extend.core import Effect, Primitive, get_aval
from plax.extend.mlir import hlo, ir

NO_DCE = Effect("NoDCE")
"""The effect that keeps an equation through dead-code elimination, and nothing else."""

dce_sink_p = Primitive("lax.dce_sink", multiple_results=True)
dce_sink_p.def_abstract_eval(lambda aval, *, prevent_mlir_dce: [])
dce_sink_p.define_rule("effects", lambda *, prevent_mlir_dce: frozenset({NO_DCE}))
dce_sink_p.def_impl(lambda x, *, prevent_mlir_dce: [])


@dce_sink_p.def_lowering
def _lower(ctx, x, *, prevent_mlir_dce):
    if prevent_mlir_dce:
        rank = len(ctx.avals_in[0].shape)
        layout = ir.DenseElementsAttr.get(np.arange(rank - 1, -1, -1, dtype=np.int64),
                                          type=ir.IndexType.get())
        op = hlo.CustomCallOp([], [x], call_target_name="dce_sink", has_side_effect=True,
                              backend_config=ir.StringAttr.get(""),
                              operand_layouts=ir.ArrayAttr.get([layout]),
                              result_layouts=ir.ArrayAttr.get([]))
        op.attributes["mhlo.backend_config"] = ir.DictAttr.get({})
    return []


def _batching(axis_data, args, dims, *, prevent_mlir_dce):
    dce_sink_p.bind(*args, prevent_mlir_dce=prevent_mlir_dce)
    return [], []


dce_sink_p.define_rule("batching", _batching)
dce_sink_p.define_rule("jvp", lambda primals, tangents, **params: (
    dce_sink_p.bind(*primals, **params), []))
dce_sink_p.define_rule("transpose", lambda cts, x, **params: [None])


def dce_sink(val, *, prevent_mlir_dce: bool = False) -> None:
    """Keeps values computed even though nothing uses them: dead-code elimination
    does not remove the operations producing them.

    Useful in benchmarks and tests that compute something only for its
    presence in the program.

    Args:
        val: a pytree of arrays.
        prevent_mlir_dce: also keep them through MLIR's dead-code elimination.

    Returns:
        None.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> def f(x):
        ...     plax.lax.dce_sink(jnp.sin(x))  # kept in the program
        ...     return x
        >>> "sin" in str(plax.make_jaxpr(f)(1.0))
        True
    """
    for i, leaf in enumerate(tree_util.tree_leaves(val)):
        try:
            get_aval(leaf)
        except TypeError:
            raise TypeError(f"dce_sink: leaf {i} of its argument is not an array (got a value "
                            f"of type {type(leaf).__name__})") from None
        dce_sink_p.bind(leaf, prevent_mlir_dce=bool(prevent_mlir_dce))

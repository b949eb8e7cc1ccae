"""`composite(decomposition, name, version)`: a function that lowers to one
`stablehlo.composite` op, so that a backend recognising `name` may implement it
its own way, and any other runs `decomposition`.

    @functools.partial(lax.composite, name="my.tangent")
    def tangent(x, *, scale=1.0):
        return lax.tan(x) * scale

A call traces `decomposition` (its positional arguments, pytrees of arrays, become
the op's operands; values it closes over are operands ahead of them) and binds one
`lax.composite` equation carrying the Jaxpr, the name, the version and the keyword
arguments as the op's `composite_attributes` (see `_attribute`: numbers, bools,
strings, NumPy arrays and dtypes, and lists/tuples/dicts of those; None values are
left out). The decomposition is a private function `@<name>` of the module.

Under differentiation and vmap the composite dissolves into its decomposition
(whose ops those transformations handle); JAX 0.10.2 refuses both instead. Eagerly
the one-op program runs as any primitive does.
"""
from __future__ import annotations

import functools
import re
from typing import Callable

import numpy as np

from plax.errors import UnexpectedTracerError
from plax.extend import tree_util
from plax.extend.ad import instantiate, jvp_jaxpr
from plax.extend.batching import batch_jaxpr
from plax.extend.core import Primitive, Tracer, eval_jaxpr, ordered_effects
from plax.extend.mlir import hlo, ir, mu
from plax_stdlib.lax.control_flow.common import expand_tangents, nonzero_flags, trace_function

composite_p = Primitive("lax.composite", multiple_results=True)

# StableHLO's rule for a composite's name: a dotted, namespaced identifier.
_NAME = re.compile(r"^[a-zA-Z][a-zA-Z0-9_]*([.][a-zA-Z0-9_$]+)+$")


# --- attributes ----------------------------------------------------------------------------

class CompositeAttributes:
    """The keyword arguments of a composite call, as an equation parameter: compared
    and hashed by value (arrays by dtype, shape and bytes), kept in call order."""
    __slots__ = ("items", "_key")

    def __init__(self, name: str, kwargs: dict):
        self.items = tuple((k, _checked(name, k, v)) for k, v in kwargs.items()
                           if v is not None)
        self._key = tuple((k, _frozen(v)) for k, v in self.items)

    def __eq__(self, other):
        return isinstance(other, CompositeAttributes) and self._key == other._key

    def __hash__(self):
        return hash(self._key)

    def __repr__(self):
        return "{" + ", ".join(f"{k}={v!r}" for k, v in self.items) + "}"


def _checked(name: str, key: str, value):
    """`value` as a composite attribute may hold it (NumPy arrays copied), else the
    error JAX raises: UnexpectedTracerError for traced values, TypeError otherwise."""
    if isinstance(value, Tracer):
        raise UnexpectedTracerError(
            f"Found a traced value as the attribute {key!r} of the composite op {name!r}: "
            "attributes must be known when the program is compiled; pass traced values "
            "as positional arguments of the composite instead.")
    if isinstance(value, (bool, int, float, str, np.generic, np.dtype)):
        return value
    if isinstance(value, np.ndarray):
        return np.array(value)
    if isinstance(value, (list, tuple)):
        return [_checked(name, key, v) for v in value]
    if isinstance(value, dict):
        return {str(k): _checked(name, key, v) for k, v in value.items()}
    hint = (" (an array of plax: pass a NumPy array instead)"
            if hasattr(value, "aval") else "")
    raise TypeError(f"composite {name!r}: attribute {key!r} has type {type(value).__name__}"
                    f"{hint}; attributes may be bool, int, float, str, NumPy scalars, arrays "
                    "and dtypes, or lists, tuples and dicts of those")


def _frozen(value):
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, list):
        return ("list", tuple(_frozen(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((k, _frozen(v)) for k, v in value.items())))
    return (type(value).__name__, value)


def _attribute(value) -> ir.Attribute:
    """The MLIR attribute of an attribute value: Python ints i64 and floats f64, NumPy
    scalars their own type, arrays dense elements, dtypes types, sequences arrays."""
    if isinstance(value, (bool, np.bool_)):
        return ir.BoolAttr.get(bool(value))
    if isinstance(value, int):
        return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)
    if isinstance(value, float):
        return ir.FloatAttr.get(ir.F64Type.get(), value)
    if isinstance(value, str):
        return ir.StringAttr.get(value)
    if isinstance(value, np.dtype):
        return ir.TypeAttr.get(mu.ir_element_type(value))
    if isinstance(value, np.integer):
        kind = (ir.IntegerType.get_unsigned if value.dtype.kind == "u"
                else ir.IntegerType.get_signless)
        return ir.IntegerAttr.get(kind(value.dtype.itemsize * 8), int(value))
    if isinstance(value, np.floating):
        return ir.FloatAttr.get(mu.ir_element_type(value.dtype), float(value))
    if isinstance(value, np.ndarray):
        return ir.DenseElementsAttr.get(np.ascontiguousarray(value),
                                        type=mu.ir_element_type(value.dtype), shape=value.shape)
    if isinstance(value, list):
        return ir.ArrayAttr.get([_attribute(v) for v in value])
    if isinstance(value, dict):
        return ir.DictAttr.get({k: _attribute(v) for k, v in value.items()})
    raise TypeError(f"no composite attribute for {value!r}")  # _checked admits no other


# --- the API ---------------------------------------------------------------------------------

def composite(decomposition: Callable, name: str, version: int = 0) -> Callable:
    """Wraps a function so that it lowers to a single named `stablehlo.composite`
    operation, whose body is the function (its decomposition).

    Backends that know the named op may replace the body with a kernel of their
    own; others inline the decomposition. Keyword arguments of the wrapped
    function become the op's attributes (they must be static).

    Args:
        decomposition: the function computing the op.
        name: the op's name, dotted (`"my_namespace.my_op"`).
        version: the op's version number.

    Returns:
        A function with `decomposition`'s signature.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> from plax import lax
        >>> hard_tanh = lax.composite(lambda x: jnp.clip(x, -1.0, 1.0), "my_ops.hard_tanh")
        >>> hard_tanh(jnp.array([-3.0, 0.5]))
        Array([-1. ,  0.5], dtype=float32)
        >>> "stablehlo.composite \\"my_ops.hard_tanh\\"" in plax.jit(hard_tanh).lower(1.0).as_text()
        True
    """
    if not callable(decomposition):
        raise TypeError(f"composite: decomposition must be callable, got {decomposition!r}")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"composite: name must be a namespaced op name such as "
                         f"'my_namespace.my_op' (letters, digits and '_', with at least one "
                         f"'.'), got {name!r}")
    if isinstance(version, bool) or not isinstance(version, (int, np.integer)) or not (
            0 <= version < 2**31):
        raise TypeError(f"composite {name!r}: version must be a non-negative int32, got "
                        f"{version!r}")

    @functools.wraps(decomposition)
    def call(*args, **kwargs):
        attributes = CompositeAttributes(name, kwargs)
        closed, consts, out_tree = trace_function(
            functools.partial(decomposition, **kwargs), args, f"composite {name}")
        outs = composite_p.bind(*consts, *tree_util.tree_leaves(args), jaxpr=closed,
                                name=name, attributes=attributes, version=int(version))
        return tree_util.tree_unflatten(out_tree, outs)
    return call


# --- the primitive's rules --------------------------------------------------------------------

@composite_p.def_abstract_eval
def _abstract_eval(*avals, jaxpr, name, attributes, version):
    return list(jaxpr.out_avals)


composite_p.define_rule("effects", lambda *, jaxpr, **_: jaxpr.effects)


@composite_p.def_lowering
def _lower(ctx, *args, jaxpr, name, attributes, version):
    if ordered_effects(jaxpr.effects):
        raise NotImplementedError(f"composite {name!r}: a decomposition with ordered effects "
                                  f"({', '.join(map(repr, ordered_effects(jaxpr.effects)))}) "
                                  "cannot be lowered")
    symbol = ctx.emit_function(name, ctx.avals_in, ctx.avals_out,
                               lambda *xs: ctx.lower_inline(jaxpr, *xs, name=name))
    attrs = {k: _attribute(v) for k, v in attributes.items}
    op = hlo.CompositeOp(mu.ir_types(ctx.avals_out), list(args), name, symbol,
                         composite_attributes=ir.DictAttr.get(attrs) if attrs else None,
                         version=version or None)
    return list(op.results)


def _jvp(primals, tangents, *, jaxpr, **_):
    """The jvp of the decomposition, inline: the composite does not survive it."""
    nonzeros = nonzero_flags(tangents)
    jvp, out_nonzeros = jvp_jaxpr(jaxpr, nonzeros)
    outs = eval_jaxpr(jvp.jaxpr, jvp.consts, *primals,
                      *(instantiate(t) for t, nz in zip(tangents, nonzeros) if nz))
    n = len(jaxpr.out_avals)
    return outs[:n], expand_tangents(out_nonzeros, outs[n:], jaxpr.out_avals)


def _batching(axis_data, args, dims, *, jaxpr, **_):
    """The decomposition batched, inline."""
    batched, out_dims = batch_jaxpr(jaxpr, axis_data, dims)
    return eval_jaxpr(batched.jaxpr, batched.consts, *args), out_dims


composite_p.define_rule("jvp", _jvp)
composite_p.define_rule("batching", _batching)

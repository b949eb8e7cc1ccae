"""`plax.experimental.compute_on`: run the operations of a region on another kind of
compute unit (the host of the device, a GPU stream), as JAX 0.10.2 does.

`with compute_on("device_host"):` tags the ops staged inside (in jit or eager code)
with `_xla_compute_type = "host"`, which XLA's host offloader honours on GPU and TPU
(on CPU the host is the device). The innermost block wins. `compute_on2(f, ...)`
instead stages `f` as one `compute_on` equation, lowered as a call to a private
function that the attributes mark, its results placed in `out_memory_spaces`.
"""
from __future__ import annotations

import contextlib
import functools
import json
from typing import Iterator

from jaxlib.mlir import ir

from plax.extend import tree_util
from plax.extend.core import (BATCHING, JVP, PARTIAL_EVAL, PARTIAL_EVAL_JAXPR, TRANSPOSE,
                              ClosedJaxpr, Jaxpr, Primitive, current_frontend_attributes,
                              frontend_attributes, get_aval, make_tracing_debug_info,
                              subjaxprs)
from plax.extend.mlir import hlo
from plax_runtime.memory import Space, memory_kind_of
from plax_transforms.batching import batch_jaxpr
from plax_transforms.call_rules import (call_dce, call_jvp, call_partial_eval,
                                        call_partial_eval_jaxpr, call_transpose)
from plax_transforms.custom_derivatives import closure_convert_flat, named_hoisted
from plax_transforms.frontend_tags import FRONTEND_ATTRIBUTES, PLACEMENT_KEYS, emitting_apart

__all__ = ["compute_on", "compute_on2"]

_XLA_COMPUTE_TYPES = {"device_host": "host", "device": "dense", "tpu_sparsecore": "sparseoffload"}


def _check_compute_type(compute_type) -> None:
    if not isinstance(compute_type, str):
        raise TypeError("`compute_on`'s compute_type argument must be a string.")
    if compute_type not in _XLA_COMPUTE_TYPES and not compute_type.startswith("gpu_stream:"):
        raise ValueError(
            f"Invalid compute type {compute_type}. Current supported values are "
            "`device_host`, `device`, `tpu_sparsecore`, and `gpu_stream:#`.")


def placement_attributes(compute_type: str) -> dict[str, str]:
    """The frontend attributes that send an op to `compute_type`."""
    if compute_type.startswith("gpu_stream:"):
        return {"_xla_stream_annotation": compute_type.split(":", 1)[1], "inlineable": "false"}
    return {"_xla_compute_type": _XLA_COMPUTE_TYPES[compute_type]}


@contextlib.contextmanager
def compute_on(compute_type: str) -> Iterator[None]:
    """Run the operations staged inside on `compute_type` (`device_host`, `device`,
    `tpu_sparsecore` or `gpu_stream:N`)."""
    _check_compute_type(compute_type)
    others = {k: v for k, v in current_frontend_attributes() if k not in PLACEMENT_KEYS}
    with frontend_attributes({**others, **placement_attributes(compute_type)}):
        yield


# --- compute_on2: one equation, lowered as a marked call ----------------------------------

def compute_on2(f=None, *, compute_type: str, out_memory_spaces, compiler_options=None):
    """`f` staged as one `compute_on` equation running on `compute_type`, its results
    in `out_memory_spaces` (a pytree prefix of them); `compiler_options` (a JSON-able
    dict) go to XLA as the call's backend config. Usable as a decorator."""
    options = dict(compute_type=compute_type, out_memory_spaces=out_memory_spaces,
                   compiler_options=compiler_options)
    if f is None:
        return lambda g: _compute_on2(g, **options)
    return _compute_on2(f, **options)


def _compute_on2(f, *, compute_type, out_memory_spaces, compiler_options):
    _check_compute_type(compute_type)
    options_json = None if compiler_options is None else json.dumps(compiler_options)

    @functools.wraps(f)
    def on_compute_type(*args):
        flat, in_tree = tree_util.tree_flatten(args)
        dbg = make_tracing_debug_info("compute_on", f, args, {})
        out_tree: list = []

        def flat_fun(*leaves):
            out_leaves, tree = tree_util.tree_flatten(f(*tree_util.tree_unflatten(in_tree,
                                                                                  leaves)))
            out_tree.append(tree)
            return out_leaves
        in_avals = [get_aval(x) for x in flat]
        with compute_on(compute_type):
            closed, consts = closure_convert_flat(flat_fun, in_avals)
        closed = named_hoisted(closed, len(consts), dbg, out_tree[0])
        spaces = _flat_memory_spaces(out_memory_spaces, out_tree[0])
        outs = compute_on_p.bind(*consts, *flat, jaxpr=closed, compute_type=compute_type,
                                 out_memory_spaces=spaces, compiler_options_json=options_json)
        return tree_util.tree_unflatten(out_tree[0], outs)
    return on_compute_type


def _flat_memory_spaces(out_memory_spaces, out_tree) -> tuple[Space, ...]:
    outputs = tree_util.tree_unflatten(out_tree, [0] * out_tree.num_leaves)
    try:
        spaces = tree_util.broadcast_prefix(out_memory_spaces, outputs)
    except ValueError as err:
        raise ValueError("compute_on out_memory_spaces specification must be a tree prefix "
                         f"of the corresponding value: {err}") from None
    for space in spaces:
        if not isinstance(space, Space):
            raise TypeError(f"compute_on: out_memory_spaces must be plax.memory.Space "
                            f"values, got {space!r}")
        if space is not Space.Device:
            raise NotImplementedError(
                f"compute_on: results in {space!r} need abstract values that carry a "
                "memory space, which plax's do not yet; only Space.Device is supported")
    return tuple(spaces)


compute_on_p = Primitive("compute_on.compute_on", multiple_results=True)


@compute_on_p.def_abstract_eval
def _abstract_eval(*avals, jaxpr: ClosedJaxpr, **_):
    return list(jaxpr.out_avals)


compute_on_p.define_rule("effects", lambda *, jaxpr, **_: jaxpr.effects)


def _has_compute_on(jaxpr: Jaxpr) -> bool:
    return any(eqn.primitive is compute_on_p or any(map(_has_compute_on, subjaxprs(eqn)))
               for eqn in jaxpr.eqns)


@compute_on_p.def_lowering
def _lower(ctx, *args, jaxpr: ClosedJaxpr, compute_type, out_memory_spaces,
           compiler_options_json):
    if _has_compute_on(jaxpr.jaxpr):
        raise ValueError("Nesting `compute_on` with different compute types is not allowed.")
    with emitting_apart() as emitted:
        outs = ctx.lower_subjaxpr(jaxpr, *args, name="compute_on")
    call, = (op for op in emitted if op.name == "func.call")
    attributes = placement_attributes(compute_type)
    if compiler_options_json is not None:
        attributes["backend_config"] = compiler_options_json
    elif compute_type == "device":
        attributes["inlineable"] = "false"
    call.attributes[FRONTEND_ATTRIBUTES] = ir.DictAttr.get(
        {k: ir.StringAttr.get(v) for k, v in attributes.items()})
    return [_placed(v, memory_kind_of(space)) for v, space in zip(outs, out_memory_spaces)]


def _placed(value: ir.Value, memory_kind: str) -> ir.Value:
    op = hlo.CustomCallOp([value.type], [value], call_target_name="annotate_device_placement",
                          has_side_effect=ir.BoolAttr.get(True),
                          backend_config=ir.StringAttr.get(""))
    op.attributes[FRONTEND_ATTRIBUTES] = ir.DictAttr.get(
        {"_xla_buffer_placement": ir.StringAttr.get(memory_kind)})
    return op.result


def _rebind(closed: ClosedJaxpr, params: dict, role: str) -> dict:
    """A transformed call runs on the same compute type; its results (residuals
    included) in device memory, the only space supported."""
    return dict(params, jaxpr=closed, out_memory_spaces=(Space.Device,) * len(closed.out_avals))


def _batching(axis_data, args, dims, *, jaxpr: ClosedJaxpr, **params):
    batched, out_dims = batch_jaxpr(jaxpr, axis_data, dims, False)
    return compute_on_p.bind(*args, **dict(params, jaxpr=batched)), out_dims


compute_on_p.define_rule(JVP, call_jvp(compute_on_p, _rebind))
compute_on_p.define_rule(PARTIAL_EVAL, call_partial_eval(compute_on_p, _rebind))
compute_on_p.define_rule(PARTIAL_EVAL_JAXPR, call_partial_eval_jaxpr(_rebind))
compute_on_p.define_rule(TRANSPOSE, call_transpose(compute_on_p, _rebind))
compute_on_p.define_rule(BATCHING, _batching)
compute_on_p.define_rule("dce", call_dce(_rebind))

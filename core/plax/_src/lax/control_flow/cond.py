"""`cond` and `switch`: choose one of several functions by a traced index.

Both become one `cond` equation: its first operand is an int32 index, the others
are the closed-over values of every branch followed by the operands; `branches`
holds one closed Jaxpr per branch, all taking every operand (each ignores the
other branches' constants) and returning values of one type. It lowers to
`stablehlo.case`. The differentiation and batching rules live in
`plax_transforms.control_flow_rules`.
"""
from __future__ import annotations

import numpy as np

from plax._src import tree_util
from plax._src.abstract import ShapedArray
from plax._src.ir import ClosedJaxpr, JaxprEqn
from plax._src.jaxpr_util import dce_jaxpr
from plax._src.lax import comparison, conversion
from plax._src.lax.constructors import describe, kind_of
from plax._src.lax.control_flow.common import (check_same_types, ensure_rules_loaded,
                                               join_weak, trace_function, with_extra_invars)
from plax._src.lax.mlir import hlo, ir, mu
from plax._src.primitive import Primitive
from plax._src.tracing import get_aval

cond_p = Primitive("cond", multiple_results=True)


# --- the API -------------------------------------------------------------------------

def cond(pred, true_fun, false_fun, *operands):
    """`true_fun(*operands)` if `pred` else `false_fun(*operands)`, decided when the
    program runs. `pred` is a scalar bool, or a scalar number (nonzero is true)."""
    if not callable(true_fun) or not callable(false_fun):
        raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
    aval = _scalar_aval(pred, "cond", "Pred")
    if kind_of(aval.dtype) not in ("bool", "signed", "unsigned", "float"):
        raise TypeError(f"Pred type must be either boolean or number, got {describe(aval)}.")
    if kind_of(aval.dtype) != "bool":
        pred = comparison.ne(pred, np.zeros((), aval.dtype)[()])
    index = conversion.convert_element_type(pred, np.int32)
    return _bind_branches(index, (false_fun, true_fun), operands, "cond",
                          ("false_fun", "true_fun"))


def switch(index, branches, *operands):
    """`branches[index](*operands)`, with `index` clamped to `[0, len(branches) - 1]`."""
    branches = tuple(branches)
    if not branches:
        raise ValueError("Empty branch sequence")
    for i, b in enumerate(branches):
        if not callable(b):
            raise TypeError(f"lax.switch: branches[{i}] is not callable: {b!r}")
    aval = _scalar_aval(index, "switch", "Branch index")
    if kind_of(aval.dtype) not in ("signed", "unsigned"):
        raise TypeError(f"Index type must be an integer, got {describe(aval)}.")
    if len(branches) == 1:
        return branches[0](*operands)
    index = conversion.convert_element_type(index, np.int32)
    index = comparison.clamp(np.int32(0), index, np.int32(len(branches) - 1))
    return _bind_branches(index, branches, operands, "switch",
                          tuple(f"branches[{i}]" for i in range(len(branches))))


def _scalar_aval(x, api: str, what: str) -> ShapedArray:
    try:
        aval = get_aval(x)
    except TypeError:
        raise TypeError(f"lax.{api}: {what.lower()} must be a scalar array, got {x!r} "
                        f"of type {type(x).__name__}") from None
    if aval.shape != ():
        raise TypeError(f"{what} must be a scalar, got {describe(aval)}.")
    return aval


def _bind_branches(index, funs, operands, api: str, names):
    ensure_rules_loaded()
    traced = [trace_function(f, operands, api) for f in funs]
    ref = len(funs) - 1 if api == "cond" else 0  # cond's messages show true_fun first
    what = "true_fun and false_fun output" if api == "cond" else "branch outputs"
    ref_side = (f"{names[ref]} output", traced[ref][2], traced[ref][0].out_avals)
    for k, ((jaxpr, _, out_tree), name) in enumerate(zip(traced, names)):
        if k != ref:
            check_same_types(what, ref_side, (f"{name} output", out_tree, jaxpr.out_avals))
    out_tree0 = traced[0][2]
    all_consts = [c for _, consts, _ in traced for c in consts]
    const_avals = [get_aval(c) for c in all_consts]
    branches, start = [], 0
    for jaxpr, consts, _ in traced:
        n = len(consts)
        widened = with_extra_invars(jaxpr, after=(), before=const_avals[start + n:], at=n)
        branches.append(with_extra_invars(widened, before=const_avals[:start], at=0))
        start += n
    op_leaves = tree_util.tree_leaves(tuple(operands))
    outs = cond_p.bind(index, *all_consts, *op_leaves, branches=tuple(branches))
    return tree_util.tree_unflatten(out_tree0, outs)


# --- the primitive's rules --------------------------------------------------------------

@cond_p.def_abstract_eval
def _cond_abstract_eval(index, *avals, branches):
    if index.shape != () or np.dtype(index.dtype) != np.int32:
        raise TypeError(f"cond: the branch index must be an int32 scalar, got "
                        f"{describe(index)}")
    for k, br in enumerate(branches):
        if len(br.in_avals) != len(avals) or any(
                (a.shape, a.dtype) != (b.shape, b.dtype) for a, b in zip(avals, br.in_avals)):
            raise TypeError(f"cond: branch {k} takes {[describe(a) for a in br.in_avals]} "
                            f"but is applied to {[describe(a) for a in avals]}")
    outs = list(branches[0].out_avals)
    for k, br in enumerate(branches[1:], 1):
        if [(a.shape, a.dtype) for a in br.out_avals] != [(a.shape, a.dtype) for a in outs]:
            raise TypeError(f"cond: branch {k} returns {[describe(a) for a in br.out_avals]} "
                            f"but branch 0 returns {[describe(a) for a in outs]}")
        outs = join_weak(outs, br.out_avals)
    return outs


cond_p.define_rule("effects",
                   lambda *, branches: frozenset().union(*(b.effects for b in branches)))


def _branch_name(k: int, br: ClosedJaxpr) -> str:
    dbg = br.jaxpr.debug_info
    return dbg.func_name if dbg is not None and dbg.func_name != "<unknown>" else f"branch{k}"


def _cond_lower(ctx, index, *args, branches):
    op = hlo.CaseOp(mu.ir_types(ctx.avals_out), index, len(branches))
    for k, (region, br) in enumerate(zip(op.regions, branches)):
        block = region.blocks.append()
        with ir.InsertionPoint(block):
            hlo.return_(ctx.lower_subjaxpr(br, *args, name=_branch_name(k, br)))
    return list(op.results)


cond_p.def_lowering(_cond_lower)


def _cond_dce(used_outputs, eqn: JaxprEqn):
    branches = eqn.params["branches"]
    if not any(used_outputs) and not eqn.effects:
        return [False] * len(eqn.invars), None
    used_inputs = [False] * (len(eqn.invars) - 1)
    for br in branches:
        _, used = dce_jaxpr(br.jaxpr, used_outputs)
        used_inputs = [a or b for a, b in zip(used_inputs, used)]
    new_branches = tuple(ClosedJaxpr(dce_jaxpr(br.jaxpr, used_outputs, used_inputs)[0],
                                     br.consts) for br in branches)
    invars = [eqn.invars[0]] + [v for v, u in zip(eqn.invars[1:], used_inputs) if u]
    outvars = [v for v, u in zip(eqn.outvars, used_outputs) if u]
    return [True, *used_inputs], eqn.replace(invars=invars, outvars=outvars,
                                             params=dict(branches=new_branches))


cond_p.define_rule("dce", _cond_dce)

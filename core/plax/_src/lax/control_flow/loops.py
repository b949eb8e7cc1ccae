"""`while_loop` and `fori_loop`.

A `while` equation holds two closed Jaxprs: `cond_jaxpr` taking
`(*cond_consts, *carry)` to a bool scalar and `body_jaxpr` taking
`(*body_consts, *carry)` to the next carry; its operands are the cond consts, the
body consts and the initial carry. It lowers to `stablehlo.while`.

`fori_loop` with bounds known at trace time becomes a `scan` (so reverse-mode
differentiation works); with traced bounds it becomes a `while`, whose reverse
mode raises JAX's error.
"""
from __future__ import annotations

import operator

import numpy as np

from plax._src import tree_util
from plax._src.ir import ClosedJaxpr, JaxprEqn
from plax._src.jaxpr_util import dce_jaxpr
from plax._src.lax import elementwise
from plax._src.lax.constructors import describe
from plax._src.lax.control_flow.common import (ensure_rules_loaded, split_list,
                                               trace_function)
from plax._src.lax.control_flow.scan import scan, trace_carry_function
from plax._src.lax.mlir import hlo, ir, mu
from plax._src.primitive import Primitive
from plax._src.tracing import Tracer, get_aval

while_p = Primitive("while", multiple_results=True)


# --- the API -------------------------------------------------------------------------

def while_loop(cond_fun, body_fun, init_val):
    """`val = init_val; while cond_fun(val): val = body_fun(val); return val`."""
    if not callable(cond_fun) or not callable(body_fun):
        raise TypeError("lax.while_loop: cond_fun and body_fun arguments should be callable.")
    init_leaves, init_tree = tree_util.tree_flatten(init_val)
    body_jaxpr, body_consts, _, init_leaves = trace_carry_function(
        body_fun, init_val, init_leaves, init_tree, (), "while_loop",
        carry_of=lambda out_tree: out_tree)
    init_example = tree_util.tree_unflatten(init_tree, [get_aval(x) for x in init_leaves])
    cond_jaxpr, cond_consts, _ = trace_function(cond_fun, (init_example,), "while_loop")
    outs = cond_jaxpr.out_avals
    if len(outs) != 1 or outs[0].shape != () or np.dtype(outs[0].dtype) != np.bool_:
        raise TypeError("cond_fun must return a boolean scalar, but got output type(s) "
                        f"{[describe(a) for a in outs]}.")
    ensure_rules_loaded()
    result = while_p.bind(*cond_consts, *body_consts, *init_leaves, cond_jaxpr=cond_jaxpr,
                          body_jaxpr=body_jaxpr, cond_nconsts=len(cond_consts),
                          body_nconsts=len(body_consts))
    return tree_util.tree_unflatten(init_tree, result)


def _concrete_int(x):
    """`x` as a Python int if it is known at trace time, else None."""
    if isinstance(x, Tracer):
        value = x.to_concrete_value()
        return None if value is None else int(value)
    try:
        return operator.index(x) if not hasattr(x, "shape") or x.shape == () else None
    except TypeError:
        return int(x) if np.ndim(x) == 0 and np.issubdtype(np.asarray(x).dtype,
                                                            np.integer) else None


def fori_loop(lower, upper, body_fun, init_val, *, unroll: int | bool | None = None):
    """`val = init_val; for i in range(lower, upper): val = body_fun(i, val)`."""
    if not callable(body_fun):
        raise TypeError("lax.fori_loop: body_fun argument should be callable.")
    for name, bound in (("lower", lower), ("upper", upper)):
        aval = get_aval(bound)
        if aval.shape != () or not np.issubdtype(aval.dtype, np.integer):
            raise TypeError(f"fori_loop {name} bound must be an integer scalar, got "
                            f"{describe(aval)}")
    index_dtype = np.result_type(get_aval(lower).dtype, get_aval(upper).dtype)
    lo, hi = _concrete_int(lower), _concrete_int(upper)
    if lo is not None and hi is not None:
        def step(carry, _):
            i, val = carry
            return (elementwise.add(i, np.asarray(1, index_dtype)[()]), body_fun(i, val)), None
        start = np.asarray(lo, index_dtype)[()]
        (_, result), _ = scan(step, (start, init_val), None, length=max(hi - lo, 0),
                              unroll=1 if unroll is None else unroll)
        return result
    if unroll is not None and unroll is not False and unroll != 1:
        raise ValueError("fori_loop: unroll requires lower and upper bounds known at "
                         "trace time")

    def cond(carry):
        i, hi_, _ = carry
        return i < hi_

    def body(carry):
        i, hi_, val = carry
        return (elementwise.add(i, np.asarray(1, index_dtype)[()]), hi_, body_fun(i, val))

    from plax._src.lax import conversion
    start = conversion.convert_element_type(lower, index_dtype)
    stop = conversion.convert_element_type(upper, index_dtype)
    return while_loop(cond, body, (start, stop, init_val))[2]


# --- the primitive's rules --------------------------------------------------------------

@while_p.def_abstract_eval
def _while_abstract_eval(*avals, cond_jaxpr: ClosedJaxpr, body_jaxpr: ClosedJaxpr,
                         cond_nconsts: int, body_nconsts: int):
    cconsts, bconsts, carry = split_list(avals, [cond_nconsts, body_nconsts])
    sig = lambda xs: [(a.shape, a.dtype) for a in xs]  # noqa: E731
    if sig(cond_jaxpr.in_avals) != sig([*cconsts, *carry]):
        raise TypeError(f"while: cond takes {[describe(a) for a in cond_jaxpr.in_avals]} but "
                        f"is applied to {[describe(a) for a in (*cconsts, *carry)]}")
    if sig(body_jaxpr.in_avals) != sig([*bconsts, *carry]):
        raise TypeError(f"while: body takes {[describe(a) for a in body_jaxpr.in_avals]} but "
                        f"is applied to {[describe(a) for a in (*bconsts, *carry)]}")
    if sig(body_jaxpr.out_avals) != sig(carry):
        raise TypeError(f"while: body returns {[describe(a) for a in body_jaxpr.out_avals]} "
                        f"for a carry of {[describe(a) for a in carry]}")
    return list(carry)


while_p.define_rule("effects", lambda *, cond_jaxpr, body_jaxpr, **_:
                    cond_jaxpr.effects | body_jaxpr.effects)


def _func_name(closed: ClosedJaxpr, default: str) -> str:
    dbg = closed.jaxpr.debug_info
    return dbg.func_name if dbg is not None and dbg.func_name != "<unknown>" else default


def _while_lower(ctx, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cconsts, bconsts, init = split_list(args, [cond_nconsts, body_nconsts])
    types = mu.ir_types(ctx.avals_out)
    loop = hlo.WhileOp(types, init)
    cond_block = loop.cond.blocks.append(*types)
    with ir.InsertionPoint(cond_block):
        pred = ctx.lower_subjaxpr(cond_jaxpr, *cconsts, *cond_block.arguments,
                                  name=_func_name(cond_jaxpr, "cond_fun"))
        hlo.return_(pred)
    body_block = loop.body.blocks.append(*types)
    with ir.InsertionPoint(body_block):
        hlo.return_(ctx.lower_subjaxpr(body_jaxpr, *bconsts, *body_block.arguments,
                                       name=_func_name(body_jaxpr, "body_fun")))
    return list(loop.results)


while_p.def_lowering(_while_lower)


def _while_dce(used_outputs, eqn: JaxprEqn):
    """Carries are kept (the loop's trip count may depend on any of them); unused
    body constants are pruned."""
    params = eqn.params
    nc, nb = params["cond_nconsts"], params["body_nconsts"]
    body: ClosedJaxpr = params["body_jaxpr"]
    n_carry = len(body.out_avals)
    pruned, used = dce_jaxpr(body.jaxpr, [True] * n_carry, instantiate=[False] * nb
                             + [True] * n_carry)
    if all(used):
        return [True] * len(eqn.invars), eqn
    used_inputs = [True] * nc + used
    new_params = dict(params, body_jaxpr=ClosedJaxpr(pruned, body.consts),
                      body_nconsts=sum(used[:nb]))
    return used_inputs, eqn.replace(invars=[v for v, u in zip(eqn.invars, used_inputs) if u],
                                    params=new_params)


while_p.define_rule("dce", _while_dce)

"""`while_loop` and `fori_loop`.

A `while` equation holds two closed Jaxprs: `cond_jaxpr` taking
`(*cond_consts, *carry)` to a bool scalar and `body_jaxpr` taking
`(*body_consts, *carry)` to the next carry; its operands are the cond consts, the
body consts and the initial carry. It lowers to `stablehlo.while`.

`fori_loop` with bounds known at trace time becomes a `scan` (so reverse-mode
differentiation works); with traced bounds (or symbolic sizes of export) it
becomes a `while`, whose reverse mode raises JAX's error.
"""
from __future__ import annotations

import operator

import numpy as np

from plax.extend import config, tree_util
from plax.extend.ad import (
    Zero,
    instantiate,
    jvp_jaxpr,
    partial_eval_jaxpr,
    tangent_aval,
)
from plax.extend.batching import batch_jaxpr, move_to, not_mapped
from plax.extend.constructors import describe
from plax.extend.core import (
    BATCHING,
    JVP,
    PARTIAL_EVAL,
    PARTIAL_EVAL_JAXPR,
    TRANSPOSE,
    ClosedJaxpr,
    DropVar,
    JaxprEqn,
    Primitive,
    ShapedArray,
    SymbolicDimension,
    Tracer,
    dce_closed_jaxpr,
    dce_jaxpr,
    get_aval,
    ordered_effects,
)
from plax.extend.mlir import hlo, ir, mu
from plax_stdlib.lax import comparison, elementwise
from plax_stdlib.lax.control_flow.common import (
    cached_on_jaxpr,
    python_value_if_disabled,
    expand_tangents,
    nonzero_flags,
    or_flags,
    permute,
    region_tokens,
    split_list,
    trace_function,
    with_extra_invars,
)
from plax_stdlib.lax.control_flow.scan import scan, trace_carry_function

while_p = Primitive("lax.while", multiple_results=True)


# --- the API -------------------------------------------------------------------------

def while_loop(cond_fun, body_fun, init_val):
    """Repeats `val = body_fun(val)` while `cond_fun(val)` is true, as a compiled loop.

    In Python terms: `val = init_val; while cond_fun(val): val = body_fun(val);
    return val`, but the condition is evaluated on device, so it may depend on
    traced values. The number of iterations is not known when tracing, so reverse
    mode cannot differentiate it (use `scan` or `fori_loop` with static bounds);
    forward mode can.

    Args:
        cond_fun: `val -> scalar bool`.
        body_fun: `val -> val`, keeping the structure, shapes and dtypes of `val`.
        init_val: the initial value, a pytree of arrays.

    Returns:
        The value once `cond_fun` is false.

    Raises:
        TypeError: `body_fun` changes the value's structure, shapes or dtypes, or
            `cond_fun` does not return a scalar bool.

    Examples:
        >>> import plax
        >>> plax.lax.while_loop(lambda x: x < 100, lambda x: x * 3, 1)
        Array(243, dtype=int32, weak_type=True)
    """
    if not callable(cond_fun) or not callable(body_fun):
        raise TypeError("lax.while_loop: cond_fun and body_fun arguments should be callable.")
    if config.disable_jit.value:
        unrolled = _python_while(cond_fun, body_fun, init_val)
        if unrolled is not _ABSTRACT:
            return unrolled
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
    result = while_p.bind(*cond_consts, *body_consts, *init_leaves, cond_jaxpr=cond_jaxpr,
                          body_jaxpr=body_jaxpr, cond_nconsts=len(cond_consts),
                          body_nconsts=len(body_consts))
    return tree_util.tree_unflatten(init_tree, result)


_ABSTRACT = object()


def _python_while(cond_fun, body_fun, val):
    """The loop in Python (`jax_disable_jit`); `_ABSTRACT` if a predicate is abstract
    (then the loop is staged after all)."""
    while True:
        value = python_value_if_disabled(cond_fun(val))
        if value is None:
            return _ABSTRACT
        if not bool(value):
            return val
        val = body_fun(val)


def _concrete_int(x):
    """`x` as a Python int if it is known at trace time, else None (a symbolic size of
    export is known only when the module runs)."""
    if isinstance(x, SymbolicDimension):
        return None
    if isinstance(x, Tracer):
        value = x.to_concrete_value()
        return None if value is None else int(value)
    try:
        return operator.index(x) if not hasattr(x, "shape") or x.shape == () else None
    except TypeError:
        return int(x) if np.ndim(x) == 0 and np.issubdtype(np.asarray(x).dtype,
                                                            np.integer) else None


def fori_loop(lower, upper, body_fun, init_val, *, unroll: int | bool | None = None):
    """Runs `val = body_fun(i, val)` for `i` from `lower` to `upper - 1`.

    With bounds that are Python ints (or concrete values) it is a `scan`, so it can
    be differentiated in reverse mode; with traced bounds it is a `while_loop`.

    Args:
        lower: the first index (an int or a scalar integer array).
        upper: one past the last index.
        body_fun: `(i, val) -> val`, keeping the structure, shapes and dtypes of
            `val`.
        init_val: the initial value, a pytree of arrays.
        unroll: iterations per step of the compiled loop (concrete bounds only).

    Returns:
        The final value.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> plax.lax.fori_loop(1, 5, lambda i, acc: acc * i, 1.0)  # 4!
        Array(24., dtype=float32, weak_type=True)
    """
    if not callable(body_fun):
        raise TypeError("lax.fori_loop: body_fun argument should be callable.")
    for name, bound in (("lower", lower), ("upper", upper)):
        aval = get_aval(bound)
        if aval.shape != () or not np.issubdtype(aval.dtype, np.integer):
            raise TypeError(f"fori_loop {name} bound must be an integer scalar, got "
                            f"{describe(aval)}")
    index_dtype = np.result_type(get_aval(lower).dtype, get_aval(upper).dtype)
    # The index starts as `lower` unconverted where the dtypes agree, as in JAX: a
    # Python int lower bound makes it weak (an int8 carry plus the index stays int8).
    weak = get_aval(lower).weak_type and get_aval(lower).dtype == index_dtype
    one = 1 if weak else np.asarray(1, index_dtype)[()]
    lo, hi = _concrete_int(lower), _concrete_int(upper)
    if lo is not None and hi is not None:
        def step(loop_carry, _):  # JAX's name, which messages about the carry show
            i, val = loop_carry
            return (elementwise.add(i, one), body_fun(i, val)), None
        start = lo if weak else np.asarray(lo, index_dtype)[()]
        (_, result), _ = scan(step, (start, init_val), None, length=max(hi - lo, 0),
                              unroll=1 if unroll is None else unroll)
        return result
    if unroll is not None and unroll is not False and unroll != 1:
        raise ValueError("fori_loop: unroll requires lower and upper bounds known at "
                         "trace time")

    def cond(carry):
        i, hi_, _ = carry
        return comparison.lt(i, hi_)  # (lax's: a weak index is compared unconverted)

    def body(loop_carry):
        i, hi_, val = loop_carry
        return (elementwise.add(i, one), hi_, body_fun(i, val))

    from plax_stdlib.lax import conversion
    start = lower if weak else conversion.convert_element_type(lower, index_dtype)
    # (a bound of the index's dtype is kept as it is, a weak one too, as JAX's)
    stop = (upper if get_aval(upper).dtype == index_dtype
            else conversion.convert_element_type(upper, index_dtype))
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
    return list(body_jaxpr.out_avals)  # (their weak types are the body's, as JAX's)


while_p.define_rule("effects", lambda *, cond_jaxpr, body_jaxpr, **_:
                    cond_jaxpr.effects | body_jaxpr.effects)


def _while_lower(ctx, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    """As JAX lowers it: the consts are carried through the loop unchanged, ahead
    of the carry (and the tokens of ordered effects ahead of them), and the condition
    and body are emitted inline in its regions."""
    if ordered_effects(cond_jaxpr.effects):
        raise NotImplementedError(
            f"while_loop: ordered effects ({list(ordered_effects(cond_jaxpr.effects))}) in "
            "the loop's cond_fun are not supported; move them into body_fun")
    effects, tokens, token_types = region_tokens(ctx, body_jaxpr)  # carried first
    n = len(effects)
    types = [*token_types, *mu.ir_types(ctx.avals_in)]
    loop = hlo.WhileOp(types, [*tokens, *args])
    pred_aval = cond_jaxpr.out_avals[0]

    def predicate(operands, name="while/cond"):
        cconsts, _, carry = split_list(operands, [cond_nconsts, body_nconsts])
        with ctx.module_context.inlining_calls():
            return ctx.lower_inline(cond_jaxpr, *cconsts, *carry, name=name)[0]

    cond_block = loop.cond.blocks.append(*types)
    with ir.InsertionPoint(cond_block):
        pred = predicate(list(cond_block.arguments)[n:])
        if pred_aval.shape:  # batched (vmap): loop while any lane's predicate holds
            (pred,) = mu.reduce([pred], [mu.dense_constant(False)], [ShapedArray((), np.bool_)],
                              range(pred_aval.ndim), lambda a, b: [hlo.or_(a, b)])
        hlo.return_([pred])
    body_block = loop.body.blocks.append(*types)
    with ir.InsertionPoint(body_block):
        body_tokens = dict(zip(effects, body_block.arguments))
        operands = list(body_block.arguments)[n:]
        consts, carry = split_list(operands, [cond_nconsts + body_nconsts])[:2]
        outs = ctx.lower_inline(body_jaxpr, *consts[cond_nconsts:], *carry, name="while/body",
                                tokens=body_tokens)
        if pred_aval.shape:  # lanes whose predicate is false keep their carry
            pred = predicate(operands, "while/body_pred")
            outs = [hlo.select(mu.broadcast_in_dim(pred, mu.physical_aval(a).shape,
                                                   range(pred_aval.ndim)), new, old)
                    for new, old, a in zip(outs, carry, ctx.avals_out)]
        hlo.return_([*body_tokens.values(), *consts, *outs])
    results = list(loop.results)
    ctx.tokens.update(zip(effects, results))
    return results[n + cond_nconsts + body_nconsts:]


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


# --- differentiation and batching -------------------------------------------------------

def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cconsts, bconsts, init = split_list(primals, [cond_nconsts, body_nconsts])
    _, bconst_t, init_t = split_list(tangents, [cond_nconsts, body_nconsts])
    nb, nk = len(bconsts), len(init)
    body, cond, carry_nz, nbt = _while_jvp_jaxprs(body_jaxpr, cond_jaxpr, nonzero_flags(bconst_t),
                                                 nonzero_flags(init_t))
    carry_avals = body_jaxpr.out_avals
    init_dots = [instantiate(t, tangent_aval(a)) for t, a, nz in zip(init_t, carry_avals,
                                                                      carry_nz) if nz]
    outs = while_p.bind(*cconsts, *bconsts, *(t for t in bconst_t if not isinstance(t, Zero)),
                        *init, *init_dots, cond_jaxpr=cond, body_jaxpr=body,
                        cond_nconsts=cond_nconsts, body_nconsts=nb + nbt)
    return outs[:nk], expand_tangents(carry_nz, outs[nk:], carry_avals)


@cached_on_jaxpr
def _while_jvp_jaxprs(body_jaxpr, cond_jaxpr, bconst_nz, carry_nz):
    bconst_nz, carry_nz = list(bconst_nz), list(carry_nz)
    nb, nk = len(bconst_nz), len(carry_nz)
    while True:
        out_nz = jvp_jaxpr(body_jaxpr, bconst_nz + carry_nz, instantiate=carry_nz)[1]
        grown = or_flags(carry_nz, out_nz)
        if grown == carry_nz:
            break
        carry_nz = grown
    body_jvp, _ = jvp_jaxpr(body_jaxpr, bconst_nz + carry_nz, instantiate=carry_nz)
    nbt, nkt = sum(bconst_nz), sum(carry_nz)
    p = nb + nk
    body = permute(body_jvp, [*range(nb), *range(p, p + nbt), *range(nb, p),
                              *range(p + nbt, p + nbt + nkt)])
    carry_avals = body_jaxpr.out_avals
    cond = with_extra_invars(cond_jaxpr, after=[tangent_aval(a) for a, nz in
                                               zip(carry_avals, carry_nz) if nz])
    return body, cond, carry_nz, nbt


@cached_on_jaxpr
def _while_split(body_jaxpr, cond_jaxpr, cond_nconsts, bc_uk, carry_uk):
    """→ (carry unknowns, known cond, known body), the Jaxprs None when the loop
    cannot be split (its predicate is unknown, or every carry is)."""
    bc_uk, carry_uk = list(bc_uk), list(carry_uk)
    cc_uk = [False] * cond_nconsts
    while True:
        out_uk = partial_eval_jaxpr(body_jaxpr, bc_uk + carry_uk, instantiate=carry_uk)[2]
        grown = or_flags(carry_uk, out_uk)
        if grown == carry_uk:
            break
        carry_uk = grown
    if partial_eval_jaxpr(cond_jaxpr, cc_uk + carry_uk)[2][0] or all(carry_uk):
        return carry_uk, None, None
    known_body, _, _, n_res = partial_eval_jaxpr(body_jaxpr, bc_uk + carry_uk,
                                                 instantiate=carry_uk)
    n_known = len(known_body.out_avals) - n_res
    known_body, _ = dce_closed_jaxpr(known_body, [True] * n_known + [False] * n_res,
                                     instantiate=True)
    # DCE keeps exactly the inputs asked for: the known cond reads no unknown carry.
    known_cond, _ = dce_closed_jaxpr(cond_jaxpr, [True],
                                     instantiate=[True] * cond_nconsts
                                     + [not u for u in carry_uk])
    return carry_uk, known_cond, known_body


def _while_partial_eval(trace, args, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    """The known carries do not depend on the unknown ones: loop over them alone, and
    stage the whole loop for the unknown ones (it recomputes the known part)."""
    params = dict(cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr, cond_nconsts=cond_nconsts,
                  body_nconsts=body_nconsts)
    unknowns = [trace.is_unknown(a) for a in args]
    cc_uk, bc_uk, carry_uk = split_list(unknowns, [cond_nconsts, body_nconsts])
    if any(cc_uk):
        return trace.stage(while_p, args, params)
    carry_uk, known_cond, known_body = _while_split(body_jaxpr, cond_jaxpr, cond_nconsts,
                                                    bc_uk, carry_uk)
    if known_cond is None:
        return trace.stage(while_p, args, params)
    cconsts, bconsts, init = split_list(args, [cond_nconsts, body_nconsts])
    known_outs = trace.bind_known(
        while_p, [*cconsts, *(c for c, u in zip(bconsts, bc_uk) if not u),
                  *(x for x, u in zip(init, carry_uk) if not u)],
        dict(cond_jaxpr=known_cond, body_jaxpr=known_body, cond_nconsts=cond_nconsts,
             body_nconsts=sum(not u for u in bc_uk)))
    staged = trace.stage(while_p, args, params)
    k = iter(known_outs)
    return [s if u else next(k) for s, u in zip(staged, carry_uk)]


def _while_partial_eval_jaxpr(eqn: JaxprEqn, unknowns):
    """`_while_partial_eval` for an equation of a Jaxpr (under `jit`): a loop over the
    known carries, and the whole loop staged for the unknown ones."""
    params = eqn.params
    nc, nb = params["cond_nconsts"], params["body_nconsts"]
    cc_uk, bc_uk, carry_uk = split_list(list(unknowns), [nc, nb])
    everything_unknown = None, eqn, [True] * len(eqn.outvars), []
    if any(cc_uk):
        return everything_unknown
    carry_uk, known_cond, known_body = _while_split(
        params["body_jaxpr"], params["cond_jaxpr"], nc, bc_uk, carry_uk)
    if known_cond is None:
        return everything_unknown
    cconsts, bconsts, init = split_list(eqn.invars, [nc, nb])
    known_eqn = eqn.replace(
        invars=[*cconsts, *(c for c, u in zip(bconsts, bc_uk) if not u),
                *(x for x, u in zip(init, carry_uk) if not u)],
        outvars=[v for v, u in zip(eqn.outvars, carry_uk) if not u],
        params=dict(params, cond_jaxpr=known_cond, body_jaxpr=known_body,
                    body_nconsts=sum(not u for u in bc_uk)))
    staged_eqn = eqn.replace(outvars=[v if u else DropVar(v.aval)
                                      for v, u in zip(eqn.outvars, carry_uk)])
    return known_eqn, staged_eqn, list(carry_uk), []


def _while_transpose(cts, *args, **params):
    raise ValueError("Reverse-mode differentiation does not work for lax.while_loop or "
                     "lax.fori_loop with dynamic start/stop values. Try using lax.scan, or "
                     "using fori_loop with static start/stop.")


def _while_batching(axis_data, args, dims, *, cond_jaxpr, body_jaxpr, cond_nconsts,
                    body_nconsts):
    size = axis_data.size
    cconsts, bconsts, init = split_list(args, [cond_nconsts, body_nconsts])
    cdims, bdims, idims = split_list(dims, [cond_nconsts, body_nconsts])
    carry_b = [d is not not_mapped for d in idims]
    while True:
        _, out_dims = batch_jaxpr(body_jaxpr, axis_data,
                                  bdims + [0 if b else not_mapped for b in carry_b], carry_b)
        grown = or_flags(carry_b, [d is not not_mapped for d in out_dims])
        if grown == carry_b:
            break
        carry_b = grown
    _, (pred_dim,) = batch_jaxpr(cond_jaxpr, axis_data,
                                 cdims + [0 if b else not_mapped for b in carry_b], False)
    # A batched predicate stays batched, as in JAX: the lowering loops while any lane's
    # holds and keeps the carry of the lanes whose predicate is false; so every carry
    # is batched, and its leading dimensions are the predicate's (an unbatched
    # predicate of rank r, from an inner vmap, puts this batch dimension at r).
    if pred_dim is not not_mapped:
        carry_dims = [0] * len(init)
    else:
        rank = cond_jaxpr.out_avals[0].ndim
        carry_dims = [rank if b else not_mapped for b in carry_b]
    init = [x if c is not_mapped else move_to(x, d, c, size)
            for x, d, c in zip(init, idims, carry_dims)]
    body_b, _ = batch_jaxpr(body_jaxpr, axis_data, bdims + carry_dims, carry_dims)
    cond_b, _ = batch_jaxpr(cond_jaxpr, axis_data, cdims + carry_dims, [pred_dim])
    outs = while_p.bind(*cconsts, *bconsts, *init, cond_jaxpr=cond_b, body_jaxpr=body_b,
                        cond_nconsts=cond_nconsts, body_nconsts=body_nconsts)
    return outs, carry_dims


while_p.define_rule(JVP, _while_jvp)
while_p.define_rule(PARTIAL_EVAL, _while_partial_eval)
while_p.define_rule(PARTIAL_EVAL_JAXPR, _while_partial_eval_jaxpr)
while_p.define_rule(TRANSPOSE, _while_transpose)
while_p.define_rule(BATCHING, _while_batching)

"""`cond` and `switch`: choose one of several functions by a traced index.

Both become one `cond` equation: its first operand is an int32 index, the others
are the closed-over values of every branch followed by the operands; `branches`
holds one closed Jaxpr per branch, all taking every operand (each ignores the
other branches' constants) and returning values of one type. It lowers to
`stablehlo.case`. Its differentiation and batching rules follow the lowering. A
`platform_dependent` cond also has `branches_platforms` (each branch's platforms,
None for the default), which its rules keep and its lowering reads.
"""
from __future__ import annotations

import collections

import numpy as np

from plax.extend import tree_util
from plax.extend.ad import (
    instantiate,
    is_undefined_primal,
    jvp_jaxpr,
    partial_eval_jaxpr,
    transpose_jaxpr,
)
from plax.extend.batching import batch_jaxpr, bdim_at_front, not_mapped
from plax.extend.constructors import describe, kind_of
from plax.extend.core import (
    BATCHING,
    JVP,
    PARTIAL_EVAL,
    PARTIAL_EVAL_JAXPR,
    TRANSPOSE,
    ClosedJaxpr,
    JaxprEqn,
    Primitive,
    ShapedArray,
    Var,
    dce_jaxpr,
    derived_debug_info,
    eval_jaxpr,
    get_aval,
    residual_name,
    stage_flat,
)
from plax.extend.mlir import hlo, ir, mu
from plax_stdlib.lax import comparison, conversion, shape_ops
from plax_stdlib.lax.creation import empty_like_aval
from plax_stdlib.lax.control_flow.common import (
    cached_on_jaxpr,
    check_branch_types,
    common_consts,
    debug_names,
    expand_tangents,
    forwarded_inputs,
    nonzero_flags,
    or_flags,
    over_common_consts,
    python_value_if_disabled,
    region_tokens,
    trace_function,
)

cond_p = Primitive("lax.cond", multiple_results=True)


# --- the API -------------------------------------------------------------------------

_NO_OPERAND = object()


def _with_operand(api: str, operands: tuple, operand) -> tuple:
    """The branches' operands: JAX's older single `operand=` keyword, if given, is the
    only one."""
    if operand is _NO_OPERAND:
        return operands
    if operands:
        raise TypeError(f"lax.{api}: if 'operand' keyword is passed then no positional "
                        f"operands can be passed, got operand={operand!r} and positional "
                        f"operands {operands!r}")
    return (operand,)


def cond(pred, true_fun, false_fun, *operands, operand=_NO_OPERAND):
    """Applies `true_fun` or `false_fun` to `operands`, chosen when the program runs.

    Unlike a Python `if`, `pred` may be a traced value; both branches are traced
    (so both must return the same structure, shapes and dtypes), and only the one
    chosen runs. Under `vmap` with a batched `pred`, both run and the results are
    selected per example.

    Args:
        pred: a scalar bool, or a scalar number (nonzero is true).
        true_fun: the branch taken when `pred` is true.
        false_fun: the branch taken otherwise.
        *operands: the arguments passed to the branch (pytrees of arrays).

    Returns:
        The chosen branch's result.

    Raises:
        TypeError: the branches return different structures, shapes or dtypes, or
            `pred` is not a scalar.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> safe_log = plax.jit(lambda x: plax.lax.cond(x > 0, jnp.log, lambda x: -jnp.inf, x))
        >>> safe_log(1.0), safe_log(0.0)
        (Array(0., dtype=float32, weak_type=True), Array(-inf, dtype=float32, weak_type=True))
    """
    operands = _with_operand("cond", operands, operand)
    if not callable(true_fun) or not callable(false_fun):
        raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
    aval = _scalar_aval(pred, "cond", "Pred")
    if kind_of(aval.dtype) not in ("bool", "signed", "unsigned", "float"):
        raise TypeError(f"Pred type must be either boolean or number, got {describe(aval)}.")
    value = python_value_if_disabled(pred)
    if value is not None:
        return true_fun(*operands) if bool(value) else false_fun(*operands)
    if kind_of(aval.dtype) != "bool":
        pred = comparison.ne(pred, np.zeros((), aval.dtype)[()])
    index = conversion.convert_element_type(pred, np.int32)
    return _bind_branches(index, (false_fun, true_fun), operands, "cond",
                          ("false_fun", "true_fun"))


def switch(index, branches, *operands, operand=_NO_OPERAND):
    """Applies `branches[index]` to `operands`, the branch chosen when the program runs.

    The generalization of `cond` to several branches; every branch is traced and
    must return the same structure, shapes and dtypes.

    Args:
        index: a scalar integer, clamped to `[0, len(branches) - 1]`.
        branches: a sequence of functions of `operands`.
        *operands: the arguments passed to the chosen branch.

    Returns:
        The chosen branch's result.

    Examples:
        >>> import plax
        >>> branches = [lambda x: x + 1, lambda x: x * 10, lambda x: -x]
        >>> plax.lax.switch(1, branches, 2.0)
        Array(20., dtype=float32, weak_type=True)
    """
    operands = _with_operand("switch", operands, operand)
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
    value = python_value_if_disabled(index)
    if value is not None:
        return branches[min(max(int(value), 0), len(branches) - 1)](*operands)
    index = conversion.convert_element_type(index, np.int32)
    index = comparison.clamp(np.int32(0), index, np.int32(len(branches) - 1))
    return _bind_branches(index, branches, operands, "switch", _switch_names(len(branches)))


def _switch_names(n: int) -> tuple[str, ...]:
    return ("branch 0", *(f"branch{i}" for i in range(1, n)))  # JAX's names


def platform_switch(index, branches, operands, platforms):
    """`switch` on `platform_index`'s result, which is in range (no clamp): the `cond`
    says which platforms each branch is for (JAX's `branches_platforms`, None for the
    default), so that a lowering keeps its platform's branch alone."""
    return _bind_branches(index, branches, operands, "switch", _switch_names(len(branches)),
                          branches_platforms=platforms)


def _scalar_aval(x, api: str, what: str) -> ShapedArray:
    try:
        aval = get_aval(x)
    except TypeError:
        raise TypeError(f"lax.{api}: {what.lower()} must be a scalar array, got {x!r} "
                        f"of type {type(x).__name__}") from None
    if aval.shape != ():
        raise TypeError(f"{what} must be a scalar, got {describe(aval)}.")
    return aval


def _bind_branches(index, funs, operands, api: str, names, **params):
    traced = [trace_function(f, operands, api) for f in funs]
    ref = len(funs) - 1 if api == "cond" else 0  # cond's messages show true_fun first
    sides = [(name, f, out_tree, jaxpr.out_avals)
             for name, f, (jaxpr, _, out_tree) in zip(names, funs, traced)]
    for k, side in enumerate(sides):
        if k != ref:
            check_branch_types(api, sides[ref], side)
    out_tree0 = traced[0][2]
    all_consts, positions = common_consts([consts for _, consts, _ in traced])
    const_avals = [get_aval(c) for c in all_consts]
    branches = [over_common_consts(jaxpr, where, const_avals)
                for (jaxpr, _, _), where in zip(traced, positions)]
    inputs = [*all_consts, *tree_util.tree_leaves(tuple(operands))]
    # As JAX's: an output that every branch returns as the same input, unchanged, is
    # that input rather than an output of the equation (so under `vmap` it stays
    # unbatched when the input is, and under `grad` it costs no select).
    forwarded = _forwarded_inputs(branches)
    kept = [f is None for f in forwarded]
    branches = [ClosedJaxpr(dce_jaxpr(b.jaxpr, kept, instantiate=True)[0], b.consts)
                for b in branches]
    outs = iter(cond_p.bind(index, *inputs, branches=tuple(branches), **params))
    return tree_util.tree_unflatten(out_tree0, [next(outs) if f is None else _as_array(inputs[f])
                                                for f in forwarded])


def _forwarded_inputs(branches) -> list[int | None]:
    """Per output, the input every branch returns there unchanged (None if any
    branch computes it or returns another input)."""
    return [f[0] if len(set(f)) == 1 else None
            for f in zip(*map(forwarded_inputs, branches))]


def _as_array(x):
    """`x` as the Array an output would be: an Array or tracer as it is, a NumPy value
    or Python scalar (weakly typed) put on the device."""
    if hasattr(x, "aval"):
        return x
    aval = get_aval(x)
    return conversion.convert_with_weak_type(x, aval.dtype, aval.weak_type)


# --- the primitive's rules --------------------------------------------------------------

@cond_p.def_abstract_eval
def _cond_abstract_eval(index, *avals, branches, **_):
    if index.shape != () or np.dtype(index.dtype) != np.int32:
        raise TypeError(f"cond: the branch index must be an int32 scalar, got "
                        f"{describe(index)}")
    for k, br in enumerate(branches):
        if len(br.in_avals) != len(avals) or any(
                (a.shape, a.dtype) != (b.shape, b.dtype) for a, b in zip(avals, br.in_avals)):
            raise TypeError(f"cond: branch {k} takes {[describe(a) for a in br.in_avals]} "
                            f"but is applied to {[describe(a) for a in avals]}")
    outs = list(branches[0].out_avals)  # weak types too: branch 0's, as in JAX
    for k, br in enumerate(branches[1:], 1):
        if [(a.shape, a.dtype) for a in br.out_avals] != [(a.shape, a.dtype) for a in outs]:
            raise TypeError(f"cond: branch {k} returns {[describe(a) for a in br.out_avals]} "
                            f"but branch 0 returns {[describe(a) for a in outs]}")
    return outs


cond_p.define_rule("effects",
                   lambda *, branches, **_: frozenset().union(*(b.effects for b in branches)))


def _branch_name(k: int, br: ClosedJaxpr) -> str:
    dbg = br.jaxpr.debug_info
    return dbg.func_name if dbg is not None and dbg.func_name != "<unknown>" else f"branch{k}"


def _cond_lower(ctx, index, *args, branches, branches_platforms=None):
    if branches_platforms is not None:
        index, branches = _platform_branches(ctx, index, branches, branches_platforms)
    effects, tokens, token_types = region_tokens(ctx, *branches)
    op = hlo.CaseOp([*token_types, *mu.ir_types(ctx.avals_out)], index, len(branches))
    for k, (region, br) in enumerate(zip(op.regions, branches)):
        block = region.blocks.append()
        with ir.InsertionPoint(block):
            branch_tokens = dict(zip(effects, tokens))
            if effects:  # (a call threads the tokens)
                outs = ctx.lower_subjaxpr(br, *args, name=_branch_name(k, br),
                                          tokens=branch_tokens)
            else:  # in the region, its ops named as JAX's: `cond/branch_0_fun/...`
                outs = ctx.lower_inline(br, *args, name=f"cond/branch_{k}_fun")
            hlo.return_([*branch_tokens.values(), *outs])
    results = list(op.results)
    ctx.tokens.update(zip(effects, results))
    return results[len(effects):]


def _platform_branches(ctx, index, branches, platforms):
    """As JAX lowers a `platform_dependent` cond: the branch for the lowering's platform
    (or the default) alone, the index mapped onto it by a case."""
    kept = next(i for i, names in enumerate(platforms)
                if names is None or ctx.platform in names)
    i32 = mu.ir_types([ShapedArray((), np.dtype(np.int32))])
    op = hlo.CaseOp(i32, index, len(branches))
    for region in op.regions:
        with ir.InsertionPoint(region.blocks.append()):
            hlo.return_([mu.dense_constant(np.int32(0), np.int32)])
    return op.result, [branches[kept]]


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
                                             params={**eqn.params, "branches": new_branches})


cond_p.define_rule("dce", _cond_dce)


# --- differentiation and batching -------------------------------------------------------

# The Jaxpr-building functions below are memoized weakly on the first branch; they
# take the other branches apart, since an argument holding the first would keep it alive.

@cached_on_jaxpr
def _cond_jvp_branches(first, others, nonzeros):
    branches = (first, *others)
    out_nz = [False] * len(first.out_avals)
    for br in branches:
        out_nz = or_flags(out_nz, jvp_jaxpr(br, nonzeros)[1])
    return tuple(jvp_jaxpr(br, nonzeros, instantiate=out_nz)[0] for br in branches), out_nz


def _cond_jvp(primals, tangents, *, branches, **params):
    index, ops = primals[0], primals[1:]
    nonzeros = nonzero_flags(tangents[1:])
    new, out_nz = _cond_jvp_branches(branches[0], branches[1:], nonzeros)
    outs = cond_p.bind(index, *ops, *(t for t, nz in zip(tangents[1:], nonzeros) if nz),
                       branches=new, **params)
    n = len(out_nz)
    return outs[:n], expand_tangents(out_nz, outs[n:], branches[0].out_avals)


def _split_branches(branches, unknowns):
    return _split_branches_cached(branches[0], branches[1:], unknowns)


@cached_on_jaxpr
def _split_branches_cached(first, others, unknowns):
    """Partial evaluation of every branch, with one set of unknown outputs and one
    residual list shared by all: → (known branches, unknown branches, out_unknowns,
    residual avals). As JAX's, branches share residual slots by type (the k-th
    residual of a type of every branch goes in one slot); a branch fills the slots it
    does not use with `empty_like_aval`."""
    branches = (first, *others)
    out_uk = [False] * len(branches[0].out_avals)
    for br in branches:
        out_uk = or_flags(out_uk, partial_eval_jaxpr(br, unknowns)[2])
    splits = [partial_eval_jaxpr(br, unknowns, instantiate=out_uk) for br in branches]
    own_avals = [known.out_avals[len(known.out_avals) - n:] for known, _, _, n in splits]
    res_avals, slots = _merged_slots(own_avals)
    res_names = [residual_name(i) for i in range(len(res_avals))]
    n_known_out = sum(not u for u in out_uk)
    known_branches, unknown_branches = [], []
    for (known, unknown, _, n), own_slots in zip(splits, slots):
        def fill(*args, known=known, own_slots=own_slots):
            outs = eval_jaxpr(known.jaxpr, known.consts, *args)
            residuals = [empty_like_aval(a) for a in res_avals]
            for slot, r in zip(own_slots, outs[n_known_out:]):
                residuals[slot] = r
            return [*outs[:n_known_out], *residuals]

        paths = debug_names(known, "results")
        known_branches.append(stage_flat(fill, known.in_avals, derived_debug_info(
            known.jaxpr.debug_info, debug_names(known, "args"),
            None if paths is None else [*paths[:n_known_out], *res_names])))
        invars = [Var(a) for a in res_avals]
        for slot, var in zip(own_slots, unknown.jaxpr.invars[:n]):
            invars[slot] = var
        dbg, names = unknown.jaxpr.debug_info, debug_names(unknown, "args")
        if names is not None:
            dbg = dbg.with_arg_names([*res_names, *names[n:]])
        unknown_branches.append(unknown.replace(jaxpr=unknown.jaxpr.replace(
            invars=[*invars, *unknown.jaxpr.invars[n:]], debug_info=dbg)))
    return tuple(known_branches), tuple(unknown_branches), out_uk, res_avals


def _merged_slots(avals_per_branch):
    """The residual slots of branches sharing them by type: → (slot avals, each
    branch's slot for each of its residuals)."""
    slot_of: dict = {}
    slots = []
    for avals in avals_per_branch:
        seen = collections.Counter()
        own = []
        for a in avals:
            key = (a, seen[a])
            seen[a] += 1
            own.append(slot_of.setdefault(key, len(slot_of)))
        slots.append(own)
    return [a for a, _ in slot_of], slots


def _cond_partial_eval(trace, args, *, branches, **params):
    unknowns = [trace.is_unknown(a) for a in args]
    if unknowns[0]:
        return trace.stage(cond_p, args, dict(branches=branches, **params))
    index, ops = args[0], args[1:]
    known, unknown, out_uk, res_avals = _split_branches(branches, list(unknowns[1:]))
    known_outs = trace.bind_known(cond_p, [index, *(x for x, u in zip(ops, unknowns[1:])
                                                    if not u)], dict(branches=known, **params))
    n_known = len(known_outs) - len(res_avals)
    residuals = known_outs[n_known:]
    unknown_outs = trace.stage(cond_p, [index, *residuals,
                                        *(x for x, u in zip(ops, unknowns[1:]) if u)],
                               dict(branches=unknown, **params))
    k, u = iter(known_outs[:n_known]), iter(unknown_outs)
    return [next(u) if is_uk else next(k) for is_uk in out_uk]


def _cond_partial_eval_jaxpr(eqn: JaxprEqn, unknowns):
    if unknowns[0]:
        return None, eqn, [True] * len(eqn.outvars), []
    index, ops = eqn.invars[0], eqn.invars[1:]
    known, unknown, out_uk, res_avals = _split_branches(eqn.params["branches"],
                                                        list(unknowns[1:]))
    residuals = [Var(a) for a in res_avals]
    known_eqn = eqn.replace(invars=[index, *(x for x, u in zip(ops, unknowns[1:]) if not u)],
                            outvars=[*(v for v, u in zip(eqn.outvars, out_uk) if not u),
                                     *residuals], params={**eqn.params, "branches": known})
    unknown_eqn = eqn.replace(invars=[index, *residuals,
                                      *(x for x, u in zip(ops, unknowns[1:]) if u)],
                              outvars=[v for v, u in zip(eqn.outvars, out_uk) if u],
                              params={**eqn.params, "branches": unknown})
    return known_eqn, unknown_eqn, out_uk, residuals


@cached_on_jaxpr
def _transpose_branches(first, others, linear, ct_avals):
    branches = (first, *others)
    return tuple(transpose_jaxpr(br, linear, ct_avals) for br in branches)


def _cond_transpose(cts, index, *ops, branches, **params):
    if is_undefined_primal(index):
        raise ValueError("cond: cannot transpose with respect to the branch index")
    linear = [is_undefined_primal(x) for x in ops]
    cts = [instantiate(ct) for ct in cts]
    new = _transpose_branches(branches[0], branches[1:], linear, tuple(map(get_aval, cts)))
    outs = iter(cond_p.bind(index, *(x for x, lin in zip(ops, linear) if not lin), *cts,
                            branches=new, **params))
    return [None] + [next(outs) if lin else None for lin in linear]


def _lanes(pred, x):
    """A predicate per lane (batched at the front) broadcast to `x`'s shape."""
    shape = get_aval(x).shape
    return pred if len(shape) == 1 else shape_ops.broadcast_in_dim(pred, shape, (0,))


def _cond_batching(axis_data, args, dims, *, branches, **params):
    index, ops = args[0], args[1:]
    idim, odims = dims[0], list(dims[1:])
    if idim is not not_mapped:
        # Every lane may take a different branch: run them all (on operands batched at
        # the front) and select, as JAX's rule does. Branch i sees a lane's operands
        # through `stop_gradient` where the lane takes another branch, so that branch's
        # derivative (a NaN, say) cannot reach them.
        which, *ops = (bdim_at_front(x, d, axis_data.size) for x, d in zip(args, dims))
        results = []
        for i, br in enumerate(branches):
            new, _ = batch_jaxpr(br, axis_data, [0] * len(ops), True)
            taken = comparison.eq(which, np.asarray(i, get_aval(which).dtype)[()])
            guarded = [comparison.select_n(_lanes(taken, x), conversion.stop_gradient(x), x)
                       for x in ops]
            results.append(eval_jaxpr(new.jaxpr, new.consts, *guarded))
        return [comparison.select_n(_lanes(which, cases[0]), *cases)
                for cases in zip(*results)], [0] * len(results[0])
    out_b = [False] * len(branches[0].out_avals)
    for br in branches:
        _, out_dims = batch_jaxpr(br, axis_data, odims, False)
        out_b = or_flags(out_b, [d is not not_mapped for d in out_dims])
    new = tuple(batch_jaxpr(br, axis_data, odims, out_b)[0] for br in branches)
    outs = cond_p.bind(index, *ops, branches=new, **params)
    return outs, [0 if b else not_mapped for b in out_b]


cond_p.define_rule(JVP, _cond_jvp)
cond_p.define_rule(PARTIAL_EVAL, _cond_partial_eval)
cond_p.define_rule(PARTIAL_EVAL_JAXPR, _cond_partial_eval_jaxpr)
cond_p.define_rule(TRANSPOSE, _cond_transpose)
cond_p.define_rule(BATCHING, _cond_batching)

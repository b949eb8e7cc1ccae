"""Differentiation and batching rules of the control-flow primitives (`cond`,
`while`, `scan`), written with the Jaxpr-to-Jaxpr transformations: `jvp_jaxpr`,
`partial_eval_jaxpr`, `transpose_jaxpr` and `batch_jaxpr`.

* cond: jvp of each branch; partial evaluation splits every branch, each known
  branch returning its own residuals and zeros for the others'; transpose
  transposes every branch; a batched index evaluates all branches and selects.
* while: jvp carries tangents through the loop; partial evaluation runs the known
  carries in their own loop and stages the rest (so `jacfwd`/`linearize` work);
  transpose raises JAX's error; a batched predicate keeps looping while any lane
  is live, each lane's carry frozen once its own predicate is false.
* scan: jvp; partial evaluation into a forward scan that stacks only the
  loop-varying residuals the backward scan reads (loop-invariant ones are
  computed once, outside; residuals that are scanned inputs are not copied);
  transpose is a scan in the other direction over the transposed body; batching
  of consts, carries and xs.

Loaded through the `plax.lowering: standard` entry point, which control-flow API
functions make sure is loaded before they bind.
"""
from __future__ import annotations

from typing import Sequence

from jaxlib import weakref_lru_cache as _weakref_lru_cache

from plax._src.ad_util import (Zero, instantiate, is_undefined_primal, tangent_aval,
                               zeros_like_aval)
from plax._src.batching_util import move_to, moveaxis, not_mapped
from plax._src.ir import ClosedJaxpr, JaxprEqn, Var
from plax._src.jaxpr_util import dce_closed_jaxpr, eval_jaxpr
from plax._src.lax import comparison, elementwise, reductions, shape_ops
from plax._src.lax.control_flow.common import permute, split_list, with_extra_invars
from plax._src.lax.control_flow.cond import cond_p
from plax._src.lax.control_flow.loops import while_p
from plax._src.lax.control_flow.scan import scan_p
from plax._src.primitive import BATCHING, JVP, PARTIAL_EVAL, TRANSPOSE
from plax._src.tracing import get_aval, set_current_trace

from plax_transforms.ad import derived_debug_info, jvp_jaxpr, stage
from plax_transforms.batching import batch_jaxpr
from plax_transforms.partial_eval import PARTIAL_EVAL_JAXPR, partial_eval_jaxpr, residual_name
from plax_transforms.signature import trace_context
from plax_transforms.transpose import transpose_jaxpr


def _cached(fn):
    """Memoize a Jaxpr-building function on its first argument (a ClosedJaxpr, held
    weakly) and its other (hashable) arguments: rules applied again to the same
    equation build the same Jaxprs, so eager execution reuses compiled code."""
    cache = _weakref_lru_cache.weakref_lru_cache(trace_context, fn, 256)

    def call(closed, *args):
        return cache(closed, *(tuple(a) if isinstance(a, list) else a for a in args))
    call.__name__ = fn.__name__
    return call


def _or(a: Sequence[bool], b: Sequence[bool]) -> list[bool]:
    return [x or y for x, y in zip(a, b, strict=True)]


def _nonzero(tangents) -> list[bool]:
    return [not isinstance(t, Zero) for t in tangents]


def _expand_tangents(flags, values, avals) -> list:
    it = iter(values)
    return [next(it) if f else Zero(tangent_aval(a)) for f, a in zip(flags, avals)]


def _rename_args(closed: ClosedJaxpr, names) -> ClosedJaxpr:
    dbg = closed.jaxpr.debug_info
    if dbg is None:
        return closed
    return closed.replace(jaxpr=closed.jaxpr.replace(debug_info=dbg.with_arg_names(names)))


def _names(closed: ClosedJaxpr, kind: str):
    dbg = closed.jaxpr.debug_info
    if dbg is None:
        return None
    return dbg.arg_names if kind == "args" else dbg.result_paths


# ======================================================================================
# cond
# ======================================================================================

@_cached
def _cond_jvp_branches(first, branches, nonzeros):
    out_nz = [False] * len(first.out_avals)
    for br in branches:
        out_nz = _or(out_nz, jvp_jaxpr(br, nonzeros)[1])
    return tuple(jvp_jaxpr(br, nonzeros, instantiate=out_nz)[0] for br in branches), out_nz


def _cond_jvp(primals, tangents, *, branches):
    index, ops = primals[0], primals[1:]
    nonzeros = _nonzero(tangents[1:])
    new, out_nz = _cond_jvp_branches(branches[0], branches, nonzeros)
    outs = cond_p.bind(index, *ops, *(t for t, nz in zip(tangents[1:], nonzeros) if nz),
                       branches=new)
    n = len(out_nz)
    return outs[:n], _expand_tangents(out_nz, outs[n:], branches[0].out_avals)


def _split_branches(branches, unknowns):
    return _split_branches_cached(branches[0], branches, unknowns)


@_cached
def _split_branches_cached(_, branches, unknowns):
    """Partial evaluation of every branch, with one set of unknown outputs and one
    residual list shared by all: → (known branches, unknown branches, out_unknowns,
    residual avals)."""
    out_uk = [False] * len(branches[0].out_avals)
    for br in branches:
        out_uk = _or(out_uk, partial_eval_jaxpr(br, unknowns)[2])
    splits = [partial_eval_jaxpr(br, unknowns, instantiate=out_uk) for br in branches]
    res_avals = [a for known, _, _, n in splits for a in known.out_avals[len(known.out_avals) - n:]]
    res_names = [residual_name(i) for i in range(len(res_avals))]
    n_known_out = sum(not u for u in out_uk)
    known_branches, unknown_branches, start = [], [], 0
    for known, unknown, _, n in splits:
        before, after = res_avals[:start], res_avals[start + n:]

        def fill(*args, known=known, before=before, after=after):
            outs = eval_jaxpr(known.jaxpr, known.consts, *args)
            return [*outs[:n_known_out], *map(zeros_like_aval, before),
                    *outs[n_known_out:], *map(zeros_like_aval, after)]

        paths = _names(known, "results")
        known_branches.append(stage(fill, known.in_avals, derived_debug_info(
            known.jaxpr.debug_info, _names(known, "args"),
            None if paths is None else [*paths[:n_known_out], *res_names])))
        widened = with_extra_invars(unknown, before=after, at=n)
        widened = with_extra_invars(widened, before=before, at=0)
        names = _names(widened, "args")
        if names is not None:
            widened = _rename_args(widened, [*res_names, *names[len(res_avals):]])
        unknown_branches.append(widened)
        start += n
    return tuple(known_branches), tuple(unknown_branches), out_uk, res_avals


def _cond_partial_eval(trace, args, *, branches):
    unknowns = [trace.is_unknown(a) for a in args]
    if unknowns[0]:
        return trace.stage(cond_p, args, dict(branches=branches))
    index, ops = args[0], args[1:]
    known, unknown, out_uk, res_avals = _split_branches(branches, list(unknowns[1:]))
    known_outs = trace.bind_known(cond_p, [index, *(x for x, u in zip(ops, unknowns[1:])
                                                    if not u)], dict(branches=known))
    n_known = len(known_outs) - len(res_avals)
    residuals = known_outs[n_known:]
    unknown_outs = trace.stage(cond_p, [index, *residuals,
                                        *(x for x, u in zip(ops, unknowns[1:]) if u)],
                               dict(branches=unknown))
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
                                     *residuals], params=dict(branches=known))
    unknown_eqn = eqn.replace(invars=[index, *residuals,
                                      *(x for x, u in zip(ops, unknowns[1:]) if u)],
                              outvars=[v for v, u in zip(eqn.outvars, out_uk) if u],
                              params=dict(branches=unknown))
    return known_eqn, unknown_eqn, out_uk, residuals


@_cached
def _transpose_branches(_, branches, linear):
    return tuple(transpose_jaxpr(br, linear) for br in branches)


def _cond_transpose(cts, index, *ops, branches):
    if is_undefined_primal(index):
        raise ValueError("cond: cannot transpose with respect to the branch index")
    linear = [is_undefined_primal(x) for x in ops]
    new = _transpose_branches(branches[0], branches, linear)
    cts = [instantiate(ct) for ct in cts]
    outs = iter(cond_p.bind(index, *(x for x, lin in zip(ops, linear) if not lin), *cts,
                            branches=new))
    return [None] + [next(outs) if lin else None for lin in linear]


def _cond_batching(axis_data, args, dims, *, branches):
    index, ops = args[0], args[1:]
    idim, odims = dims[0], list(dims[1:])
    if idim is not not_mapped:
        # Every lane may take a different branch: run them all and select.
        results = []
        for br in branches:
            new, _ = batch_jaxpr(br, axis_data, odims, True)
            results.append(eval_jaxpr(new.jaxpr, new.consts, *ops))
        which = moveaxis(index, idim, 0)
        outs = []
        for cases in zip(*results):
            shape = get_aval(cases[0]).shape
            outs.append(comparison.select_n(shape_ops.broadcast_in_dim(which, shape, (0,)),
                                            *cases))
        return outs, [0] * len(outs)
    out_b = [False] * len(branches[0].out_avals)
    for br in branches:
        _, out_dims = batch_jaxpr(br, axis_data, odims, False)
        out_b = _or(out_b, [d is not not_mapped for d in out_dims])
    new = tuple(batch_jaxpr(br, axis_data, odims, out_b)[0] for br in branches)
    outs = cond_p.bind(index, *ops, branches=new)
    return outs, [0 if b else not_mapped for b in out_b]


cond_p.define_rule(JVP, _cond_jvp)
cond_p.define_rule(PARTIAL_EVAL, _cond_partial_eval)
cond_p.define_rule(PARTIAL_EVAL_JAXPR, _cond_partial_eval_jaxpr)
cond_p.define_rule(TRANSPOSE, _cond_transpose)
cond_p.define_rule(BATCHING, _cond_batching)


# ======================================================================================
# while
# ======================================================================================

def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cconsts, bconsts, init = split_list(primals, [cond_nconsts, body_nconsts])
    _, bconst_t, init_t = split_list(tangents, [cond_nconsts, body_nconsts])
    nb, nk = len(bconsts), len(init)
    body, cond, carry_nz, nbt = _while_jvp_jaxprs(body_jaxpr, cond_jaxpr, _nonzero(bconst_t),
                                                 _nonzero(init_t))
    carry_avals = body_jaxpr.out_avals
    init_dots = [instantiate(t, tangent_aval(a)) for t, a, nz in zip(init_t, carry_avals,
                                                                      carry_nz) if nz]
    outs = while_p.bind(*cconsts, *bconsts, *(t for t in bconst_t if not isinstance(t, Zero)),
                        *init, *init_dots, cond_jaxpr=cond, body_jaxpr=body,
                        cond_nconsts=cond_nconsts, body_nconsts=nb + nbt)
    return outs[:nk], _expand_tangents(carry_nz, outs[nk:], carry_avals)


@_cached
def _while_jvp_jaxprs(body_jaxpr, cond_jaxpr, bconst_nz, carry_nz):
    bconst_nz, carry_nz = list(bconst_nz), list(carry_nz)
    nb, nk = len(bconst_nz), len(carry_nz)
    while True:
        out_nz = jvp_jaxpr(body_jaxpr, bconst_nz + carry_nz, instantiate=carry_nz)[1]
        grown = _or(carry_nz, out_nz)
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
                                               zip(carry_avals, carry_nz) if nz],
                             at=len(cond_jaxpr.in_avals))
    return body, cond, carry_nz, nbt


@_cached
def _while_split(body_jaxpr, cond_jaxpr, cond_nconsts, bc_uk, carry_uk):
    """→ (carry unknowns, known cond, known body), the Jaxprs None when the loop
    cannot be split (its predicate is unknown, or every carry is)."""
    bc_uk, carry_uk = list(bc_uk), list(carry_uk)
    cc_uk = [False] * cond_nconsts
    while True:
        out_uk = partial_eval_jaxpr(body_jaxpr, bc_uk + carry_uk, instantiate=carry_uk)[2]
        grown = _or(carry_uk, out_uk)
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
        grown = _or(carry_b, [d is not not_mapped for d in out_dims])
        if grown == carry_b:
            break
        carry_b = grown
    carry_dims = [0 if b else not_mapped for b in carry_b]
    _, (pred_dim,) = batch_jaxpr(cond_jaxpr, axis_data, cdims + carry_dims, False)
    if pred_dim is not not_mapped:
        carry_b = [True] * len(init)
        carry_dims = [0] * len(init)
    init = [move_to(x, d, 0, size) if b else x for x, d, b in zip(init, idims, carry_b)]
    body_b, _ = batch_jaxpr(body_jaxpr, axis_data, bdims + carry_dims, carry_b)
    cond_b, _ = batch_jaxpr(cond_jaxpr, axis_data, cdims + carry_dims, pred_dim is not None)
    if pred_dim is not_mapped:
        outs = while_p.bind(*cconsts, *bconsts, *init, cond_jaxpr=cond_b, body_jaxpr=body_b,
                            cond_nconsts=cond_nconsts, body_nconsts=body_nconsts)
        return outs, carry_dims
    new_cond, new_body = _lane_freezing_loop(cond_b, body_b, cond_nconsts, body_nconsts)
    outs = while_p.bind(*cconsts, *cconsts, *bconsts, *init, cond_jaxpr=new_cond,
                        body_jaxpr=new_body, cond_nconsts=cond_nconsts,
                        body_nconsts=cond_nconsts + body_nconsts)
    return outs, carry_dims


@_cached
def _lane_freezing_loop(cond_b, body_b, nc, nb):
    """For a batched predicate: loop while any lane is live; the body takes the cond's
    consts too and keeps the carry of lanes whose predicate is false."""
    def any_live(*xs):
        (pred,) = eval_jaxpr(cond_b.jaxpr, cond_b.consts, *xs)
        return [reductions.reduce_or(pred, (0,))]

    def step_live_lanes(*xs):
        cc, bc, carry = split_list(xs, [nc, nb])
        (pred,) = eval_jaxpr(cond_b.jaxpr, cond_b.consts, *cc, *carry)
        new = eval_jaxpr(body_b.jaxpr, body_b.consts, *bc, *carry)
        return [comparison.select(shape_ops.broadcast_in_dim(pred, get_aval(n).shape, (0,)),
                                  n, old) for n, old in zip(new, carry)]

    carry_avals = body_b.in_avals[nb:]
    cond_names, body_names = _names(cond_b, "args"), _names(body_b, "args")
    new_cond = stage(any_live, cond_b.in_avals, cond_b.jaxpr.debug_info)
    new_body = stage(step_live_lanes, [*cond_b.in_avals[:nc], *body_b.in_avals[:nb],
                                       *carry_avals], derived_debug_info(
        body_b.jaxpr.debug_info,
        None if cond_names is None or body_names is None else [*cond_names[:nc], *body_names],
        _names(body_b, "results")))
    return new_cond, new_body


while_p.define_rule(JVP, _while_jvp)
while_p.define_rule(PARTIAL_EVAL, _while_partial_eval)
while_p.define_rule(TRANSPOSE, _while_transpose)
while_p.define_rule(BATCHING, _while_batching)


# ======================================================================================
# scan
# ======================================================================================

@_cached
def _scan_jvp_body(jaxpr, nc, nk, nonzeros):
    nx, ny = len(jaxpr.in_avals) - nc - nk, len(jaxpr.out_avals) - nk
    const_nz, carry_nz, xs_nz = split_list(nonzeros, [nc, nk])
    while True:
        out_nz = jvp_jaxpr(jaxpr, const_nz + carry_nz + xs_nz,
                           instantiate=carry_nz + [False] * ny)[1]
        grown = _or(carry_nz, out_nz[:nk])
        if grown == carry_nz:
            break
        carry_nz = grown
    body, out_nz = jvp_jaxpr(jaxpr, const_nz + carry_nz + xs_nz,
                             instantiate=carry_nz + [False] * ny)
    ys_nz = out_nz[nk:]
    nct, nkt, nxt, nyt = sum(const_nz), sum(carry_nz), sum(xs_nz), sum(ys_nz)
    p, q = nc + nk + nx, nk + ny
    body = permute(
        body,
        [*range(nc), *range(p, p + nct), *range(nc, nc + nk), *range(p + nct, p + nct + nkt),
         *range(nc + nk, p), *range(p + nct + nkt, p + nct + nkt + nxt)],
        [*range(nk), *range(q, q + nkt), *range(nk, q), *range(q + nkt, q + nkt + nyt)])
    return body, carry_nz, ys_nz


def _scan_jvp(primals, tangents, *, jaxpr, num_consts, num_carry, **params):
    nc, nk = num_consts, num_carry
    ny = len(jaxpr.out_avals) - nk
    body, carry_nz, ys_nz = _scan_jvp_body(jaxpr, nc, nk, _nonzero(tangents))
    consts, init, xs = split_list(primals, [nc, nk])
    const_t, init_t, xs_t = split_list(tangents, [nc, nk])
    carry_avals = jaxpr.out_avals[:nk]
    nz = lambda ts: [t for t in ts if not isinstance(t, Zero)]  # noqa: E731
    outs = scan_p.bind(
        *consts, *nz(const_t),
        *init, *(instantiate(t, tangent_aval(a)) for t, a, nz_ in zip(init_t, carry_avals,
                                                                      carry_nz) if nz_),
        *xs, *nz(xs_t),
        jaxpr=body, num_consts=nc + len(nz(const_t)), num_carry=nk + sum(carry_nz), **params)
    carry, carry_t, ys, ys_t = split_list(outs, [nk, sum(carry_nz), ny])
    out_avals = [get_aval(x) for x in (*carry, *ys)]
    return ([*carry, *ys], [*_expand_tangents(carry_nz, carry_t, out_avals[:nk]),
                            *_expand_tangents(ys_nz, ys_t, out_avals[nk:])])


def _scan_unknowns(jaxpr, num_consts, num_carry, unknowns):
    """Unknown carries: those unknown initially, or made unknown by the body."""
    const_uk, carry_uk, xs_uk = split_list(unknowns, [num_consts, num_carry])
    ny = len(jaxpr.out_avals) - num_carry
    while True:
        out_uk = partial_eval_jaxpr(jaxpr, const_uk + carry_uk + xs_uk,
                                    instantiate=carry_uk + [False] * ny)[2]
        grown = _or(carry_uk, out_uk[:num_carry])
        if grown == carry_uk:
            return const_uk, carry_uk, xs_uk
        carry_uk = grown


def _loop_invariant(known: ClosedJaxpr, n_consts: int, outputs: Sequence) -> list[bool]:
    """Which of `outputs` (outvars of `known`) depend only on its first `n_consts` inputs."""
    varying = {id(v) for v in known.jaxpr.invars[n_consts:]}
    for eqn in known.jaxpr.eqns:
        if any(isinstance(a, Var) and id(a) in varying for a in eqn.invars):
            varying.update(id(v) for v in eqn.outvars)
    return [not (isinstance(v, Var) and id(v) in varying) for v in outputs]


@_cached
def _scan_split(jaxpr, nc, nk, unknowns):
    """The Jaxprs of a scan's partial evaluation (see `_scan_partial_eval`)."""
    ny = len(jaxpr.out_avals) - nk
    const_uk, carry_uk, xs_uk = _scan_unknowns(jaxpr, nc, nk, list(unknowns))
    known, unknown, out_uk, n_res = partial_eval_jaxpr(jaxpr, const_uk + carry_uk + xs_uk,
                                                       instantiate=carry_uk + [False] * ny)
    n_kc, n_kk = nc - sum(const_uk), nk - sum(carry_uk)
    n_kout = len(known.out_avals) - n_res
    res_vars = known.jaxpr.outvars[n_kout:]
    invariant = _loop_invariant(known, n_kc, res_vars)
    # Residuals that are scanned inputs themselves are read from those inputs.
    xs_invars = {id(v): i for i, v in enumerate(known.jaxpr.invars[n_kc + n_kk:])}
    forwarded = [None if inv else xs_invars.get(id(v)) for v, inv in zip(res_vars, invariant)]
    stacked = [not inv and f is None for inv, f in zip(invariant, forwarded)]
    hoist, hoist_used = dce_closed_jaxpr(known, [False] * n_kout + invariant)
    forward, _ = dce_closed_jaxpr(known, [True] * n_kout + stacked, instantiate=True)
    # The unknown body takes (residuals, consts, carry, xs): the invariant residuals
    # become consts and the others scanned inputs.
    ncu, nku = sum(const_uk), sum(carry_uk)
    inv_idx = [i for i, inv in enumerate(invariant) if inv]
    var_idx = [i for i, inv in enumerate(invariant) if not inv]
    rest = n_res + ncu + nku
    body = permute(unknown, [*inv_idx, *range(n_res, rest), *var_idx,
                             *range(rest, len(unknown.in_avals))])
    return (const_uk, carry_uk, xs_uk, out_uk, n_kout, hoist, hoist_used, forward, forwarded,
            invariant, inv_idx, var_idx, body)


def _scan_partial_eval(trace, args, *, jaxpr, num_consts, num_carry, **params):
    """Known scan (run now) stacking the loop-varying residuals; unknown scan (staged)."""
    nc, nk = num_consts, num_carry
    (const_uk, carry_uk, xs_uk, out_uk, n_kout, hoist, hoist_used, forward, forwarded,
     invariant, inv_idx, var_idx, body) = _scan_split(jaxpr, nc, nk,
                                                      [trace.is_unknown(a) for a in args])
    consts, init, xs = split_list(args, [nc, nk])
    kc = [c for c, u in zip(consts, const_uk) if not u]
    kk = [x for x, u in zip(init, carry_uk) if not u]
    kx = [x for x, u in zip(xs, xs_uk) if not u]
    with set_current_trace(trace.parent):
        hoisted = iter(eval_jaxpr(hoist.jaxpr, hoist.consts,
                                  *(x for x, u in zip([*kc, *kk, *kx], hoist_used) if u)))
    known_outs = trace.bind_known(scan_p, [*kc, *kk, *kx], dict(
        params, jaxpr=forward, num_consts=len(kc), num_carry=len(kk)))
    stacked_res = iter(known_outs[n_kout:])
    res_values = [next(hoisted) if inv else (kx[f] if f is not None else next(stacked_res))
                  for inv, f in zip(invariant, forwarded)]
    unknown_outs = trace.stage(scan_p, [
        *(res_values[i] for i in inv_idx), *(c for c, u in zip(consts, const_uk) if u),
        *(x for x, u in zip(init, carry_uk) if u), *(res_values[i] for i in var_idx),
        *(x for x, u in zip(xs, xs_uk) if u)],
        dict(params, jaxpr=body, num_consts=len(inv_idx) + sum(const_uk),
             num_carry=sum(carry_uk)))
    k, u = iter(known_outs[:n_kout]), iter(unknown_outs)
    return [next(u) if is_uk else next(k) for is_uk in out_uk]


def _scan_partial_eval_jaxpr(eqn: JaxprEqn, unknowns):
    """The equation-level split (inside `jit` or another scan): every residual is
    stacked by the known scan."""
    params = dict(eqn.params)
    jaxpr, nc, nk = params.pop("jaxpr"), params.pop("num_consts"), params.pop("num_carry")
    ny = len(jaxpr.out_avals) - nk
    const_uk, carry_uk, xs_uk = _scan_unknowns(jaxpr, nc, nk, unknowns)
    unknowns = const_uk + carry_uk + xs_uk
    known, unknown, out_uk, n_res = partial_eval_jaxpr(jaxpr, unknowns,
                                                       instantiate=carry_uk + [False] * ny)
    length = params["length"]
    from plax._src.abstract import ShapedArray
    residuals = [Var(ShapedArray((length, *a.shape), a.dtype, a.weak_type))
                 for a in unknown.in_avals[:n_res]]
    consts, init, xs = split_list(eqn.invars, [nc, nk])
    ncu, nku = sum(const_uk), sum(carry_uk)
    known_eqn = eqn.replace(
        invars=[a for a, u in zip(eqn.invars, unknowns) if not u],
        outvars=[*(v for v, u in zip(eqn.outvars, out_uk) if not u), *residuals],
        params=dict(params, jaxpr=known, num_consts=nc - ncu, num_carry=nk - nku))
    body = permute(unknown, [*range(n_res, n_res + ncu + nku), *range(n_res),
                             *range(n_res + ncu + nku, len(unknown.in_avals))])
    unknown_eqn = eqn.replace(
        invars=[*(c for c, u in zip(consts, const_uk) if u),
                *(x for x, u in zip(init, carry_uk) if u), *residuals,
                *(x for x, u in zip(xs, xs_uk) if u)],
        outvars=[v for v, u in zip(eqn.outvars, out_uk) if u],
        params=dict(params, jaxpr=body, num_consts=ncu, num_carry=nku))
    return known_eqn, unknown_eqn, out_uk, residuals


@_cached
def _scan_transpose_body(jaxpr, nc, nk, const_lin, xs_lin):
    """The backward scan's body: (residual consts; accumulated const cotangents, carry
    cotangents; output cotangents, residual xs) → (consts, carry, xs cotangents)."""
    transposed = transpose_jaxpr(jaxpr, [*const_lin, *[True] * nk, *xs_lin])
    const_avals, carry_avals, x_avals = split_list(jaxpr.in_avals, [nc, nk])
    res_c_avals = [a for a, lin in zip(const_avals, const_lin) if not lin]
    lin_c_avals = [a for a, lin in zip(const_avals, const_lin) if lin]
    res_x_avals = [a for a, lin in zip(x_avals, xs_lin) if not lin]
    y_avals = jaxpr.out_avals[nk:]
    n_rc, n_cl, ny = len(res_c_avals), len(lin_c_avals), len(y_avals)

    def backward_step(*a):
        rc, acc, ck, cy, rx = split_list(a, [n_rc, n_cl, nk, ny])
        outs = eval_jaxpr(transposed.jaxpr, transposed.consts, *rc, *rx, *ck, *cy)
        d_consts, d_carry, d_xs = split_list(outs, [n_cl, nk])
        return [*map(elementwise.add, acc, d_consts), *d_carry, *d_xs]

    t_names, t_paths = _names(transposed, "args"), _names(transposed, "results")
    names = None
    if t_names is not None and t_paths is not None:
        nonlin, ct_names = t_names[:n_rc + len(res_x_avals)], t_names[n_rc + len(res_x_avals):]
        names = [*nonlin[:n_rc], *t_paths[:n_cl], *ct_names, *nonlin[n_rc:]]
    return stage(backward_step, [*res_c_avals, *lin_c_avals, *carry_avals, *y_avals,
                                 *res_x_avals],
                 derived_debug_info(transposed.jaxpr.debug_info, names, t_paths))


def _scan_transpose(cts, *args, jaxpr, length, reverse, unroll, num_consts, num_carry):
    nc, nk = num_consts, num_carry
    consts, init, xs = split_list(args, [nc, nk])
    const_lin = [is_undefined_primal(c) for c in consts]
    xs_lin = [is_undefined_primal(x) for x in xs]
    body = _scan_transpose_body(jaxpr, nc, nk, const_lin, xs_lin)
    ct_carry, ct_ys = split_list(cts, [nk])[:2]
    lin_const_avals = [a for a, lin in zip(jaxpr.in_avals[:nc], const_lin) if lin]
    carry_avals = jaxpr.in_avals[nc:nc + nk]
    n_cl = len(lin_const_avals)
    outs = scan_p.bind(
        *(c for c, lin in zip(consts, const_lin) if not lin),
        *map(zeros_like_aval, lin_const_avals),
        *(instantiate(ct, a) for ct, a in zip(ct_carry, carry_avals)),
        *(instantiate(ct) for ct in ct_ys), *(x for x, lin in zip(xs, xs_lin) if not lin),
        jaxpr=body, length=length, reverse=not reverse, unroll=unroll,
        num_consts=nc - n_cl, num_carry=n_cl + nk)
    ct_consts, ct_init, ct_xs = split_list(outs, [n_cl, nk])
    it_c, it_x = iter(ct_consts), iter(ct_xs)
    return ([next(it_c) if lin else None for lin in const_lin]
            + [ct if is_undefined_primal(x) else None for x, ct in zip(init, ct_init)]
            + [next(it_x) if lin else None for lin in xs_lin])


def _scan_batching(axis_data, args, dims, *, jaxpr, num_consts, num_carry, **params):
    size = axis_data.size
    nc, nk = num_consts, num_carry
    ny = len(jaxpr.out_avals) - nk
    consts, init, xs = split_list(args, [nc, nk])
    cdims, kdims, xdims = split_list(dims, [nc, nk])
    # Batched xs carry their batch dimension at 1, so each slice has it at 0.
    xs = [x if d is not_mapped else moveaxis(x, d, 1) for x, d in zip(xs, xdims)]
    x_body_dims = [not_mapped if d is not_mapped else 0 for d in xdims]
    carry_b = [d is not not_mapped for d in kdims]
    while True:
        _, out_dims = batch_jaxpr(jaxpr, axis_data, cdims + [0 if b else not_mapped
                                                             for b in carry_b] + x_body_dims,
                                  carry_b + [False] * ny)
        grown = _or(carry_b, [d is not not_mapped for d in out_dims[:nk]])
        if grown == carry_b:
            break
        carry_b = grown
    carry_dims = [0 if b else not_mapped for b in carry_b]
    body, out_dims = batch_jaxpr(jaxpr, axis_data, cdims + carry_dims + x_body_dims,
                                 carry_b + [False] * ny)
    init = [move_to(x, d, 0, size) if b else x for x, d, b in zip(init, kdims, carry_b)]
    outs = scan_p.bind(*consts, *init, *xs, jaxpr=body, num_consts=nc, num_carry=nk, **params)
    y_dims = [not_mapped if d is not_mapped else d + 1 for d in out_dims[nk:]]
    return outs, carry_dims + y_dims


scan_p.define_rule(JVP, _scan_jvp)
scan_p.define_rule(PARTIAL_EVAL, _scan_partial_eval)
scan_p.define_rule(PARTIAL_EVAL_JAXPR, _scan_partial_eval_jaxpr)
scan_p.define_rule(TRANSPOSE, _scan_transpose)
scan_p.define_rule(BATCHING, _scan_batching)

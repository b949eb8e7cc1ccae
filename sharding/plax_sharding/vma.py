"""Varying manual axes: which mesh axes each value of a shard_map body may differ over.

`shard_map(..., check_vma=True)` checks that an output whose `out_specs` leave a
manual axis unmentioned (claiming the value is the same on every member of that
axis) does not vary over it. The body's inputs vary over the axes their `in_specs`
name; a collective changes that (a `psum` over an axis removes it, `axis_index` and
`pvary` add theirs, the data-moving collectives vary over theirs, an
`all_gather(..., to='invarying')` removes its own); every other operation varies over
the union of its operands'. Higher-order primitives are followed into their Jaxprs
(loops to a fixed point). The same rules type values while the body is traced
(`stage_vma`: `aval.manual_axis_type`, printed `f32[4]{V:i}` as JAX's) and, over the
traced Jaxpr, check the outputs (`infer_vma`). The types are informative (avals
compare equal without them), so the check at the outputs stays the authority.
"""
from __future__ import annotations

import contextlib
import math
import threading
from typing import Callable, Iterator, Sequence

import numpy as np

from plax.extend import config
from plax.extend.sharding import ManualAxisType, mat_axis_order
from plax.extend.core import AXIS_NAMES, ClosedJaxpr, Jaxpr, JaxprEqn, Literal, get_aval, stage_flat
from plax_stdlib.lax import elementwise, parallel, send_recv
from plax_stdlib.lax.ragged_all_to_all import ragged_all_to_all_p
from plax_stdlib.lax.control_flow.cond import cond_p
from plax_stdlib.lax.control_flow.loops import while_p
from plax_stdlib.lax.control_flow.scan import scan_p

Vma = frozenset
_NONE: Vma = frozenset()
EMPTY_MAT = ManualAxisType()


def _union(vmas) -> Vma:
    return _NONE.union(*vmas)


def infer_vma(jaxpr: Jaxpr, in_vma: Sequence[Vma]) -> list[Vma]:
    """The axes each output of `jaxpr` may vary over, given its inputs'."""
    env: dict[int, Vma] = {}

    def read(atom) -> Vma:
        return _NONE if isinstance(atom, Literal) else env.get(id(atom), _NONE)

    for var, vma in zip(jaxpr.invars, in_vma, strict=True):
        env[id(var)] = vma
    for eqn in jaxpr.eqns:
        outs = _eqn_vma(eqn, [read(a) for a in eqn.invars])
        for var, vma in zip(eqn.outvars, outs):
            env[id(var)] = vma
    return [read(v) for v in jaxpr.outvars]


def _eqn_vma(eqn: JaxprEqn, ins: list[Vma]) -> list[Vma]:
    rule = _RULES.get(eqn.primitive)
    if rule is not None:
        return rule(eqn, ins)
    names = eqn.primitive.get_rule(AXIS_NAMES)
    if names is not None:  # another package's collective: it may vary over its axes
        return [_union(ins) | set(names(**eqn.params))] * len(eqn.outvars)
    subs = [p for p in eqn.params.values() if isinstance(p, (ClosedJaxpr, Jaxpr))]
    if len(subs) == 1:
        sub = subs[0].jaxpr if isinstance(subs[0], ClosedJaxpr) else subs[0]
        if len(sub.invars) == len(ins) and len(sub.outvars) == len(eqn.outvars):
            return infer_vma(sub, ins)  # a call (jit, checkpoint, custom_jvp/vjp...)
    if getattr(_matching, "required", False) and len(set(ins)) > 1:
        raise ValueError(
            f"Primitive {eqn.primitive.name} requires varying manual axes to match, but got "
            f"{[set(v) for v in ins]}: with jax_auto_pcast off, make the operands "
            "vary over the same axes first (lax.pvary), or turn it on (the default)")
    return [_union(ins)] * len(eqn.outvars)


_matching = threading.local()  # .required: operands' axes must match (auto_pcast off)


@contextlib.contextmanager
def matching_required(required: bool) -> Iterator[None]:
    """Inside, an ordinary operation whose operands vary over different manual axes
    is an error instead of varying over their union (what `jax_auto_pcast=False`
    asks of the user's shard_map bodies)."""
    previous = getattr(_matching, "required", False)
    _matching.required = required
    try:
        yield
    finally:
        _matching.required = previous


def _removing(eqn, ins):
    if eqn.params.get("axis_index_groups") is not None:  # each group reduces apart
        return [ins[0]]
    return [ins[0] - set(eqn.params["axes"])]


def _adding(eqn, ins):
    names = eqn.primitive.get_rule(AXIS_NAMES)(**eqn.params)
    return [_union(ins) | set(names)] * len(eqn.outvars)


def _gathered_invariant(eqn, ins):
    """all_gather(..., to='invarying'): the same on every member of its axes."""
    return [ins[0] - set(eqn.params["axis_name"])]


def _like_output(eqn, ins):
    """ragged_all_to_all is typed as its `output` operand (JAX's typing)."""
    return [ins[1]]


def _invariant(eqn, ins):
    """A token, or what precv receives: typed as the same on every member (JAX's
    typing; a check_vma=True shard_map accepts it under any out_specs)."""
    return [_NONE]


def _cond(eqn, ins):
    index, ops = ins[0], ins[1:]
    outs = [_union(vs) for vs in zip(*(infer_vma(b.jaxpr, ops) for b in eqn.params["branches"]))]
    return [v | index for v in outs]


def _fixed_point(step: Callable[[list[Vma]], list[Vma]], carry: list[Vma]) -> list[Vma]:
    while True:
        new = [a | b for a, b in zip(carry, step(carry))]
        if new == carry:
            return carry
        carry = new


def _scan(eqn, ins):
    nc, nk = eqn.params["num_consts"], eqn.params["num_carry"]
    body = eqn.params["jaxpr"].jaxpr
    consts, init, xs = ins[:nc], ins[nc:nc + nk], ins[nc + nk:]
    carry = _fixed_point(lambda c: infer_vma(body, [*consts, *c, *xs])[:nk], list(init))
    return carry + infer_vma(body, [*consts, *carry, *xs])[nk:]


def _while(eqn, ins):
    cn, bn = eqn.params["cond_nconsts"], eqn.params["body_nconsts"]
    cond, body = eqn.params["cond_jaxpr"].jaxpr, eqn.params["body_jaxpr"].jaxpr
    cconsts, bconsts, init = ins[:cn], ins[cn:cn + bn], ins[cn + bn:]

    def step(carry):
        # Members whose predicate differs run different trip counts.
        pred = infer_vma(cond, [*cconsts, *carry])[0]
        return [v | pred for v in infer_vma(body, [*bconsts, *carry])]
    return _fixed_point(step, list(init))


def _nested_shard_map(eqn, ins):
    """An inner shard_map: its body's inputs also vary over the inner axes their
    specs name; those axes are not manual outside it."""
    params = eqn.params
    inner = set(params["manual_axes"])
    body_in = [v | (set(s.mesh_axes()) & inner) for v, s in zip(ins, params["in_specs"])]
    return [v - inner for v in infer_vma(params["jaxpr"].jaxpr, body_in)]


_RULES: dict = {
    parallel.psum_p: _removing, parallel.psum_invariant_p: _removing,
    parallel.pmax_p: _removing, parallel.pmin_p: _removing,
    parallel.all_gather_p: _adding, parallel.all_gather_invariant_p: _gathered_invariant,
    parallel.pvary_p: _adding, parallel.axis_index_p: _adding,
    parallel.reduce_scatter_p: _adding, parallel.all_to_all_p: _adding,
    parallel.ppermute_p: _adding, parallel.pbroadcast_p: _adding,
    ragged_all_to_all_p: _like_output,
    send_recv.psend_p: _invariant, send_recv.precv_p: _invariant,
    cond_p: _cond, scan_p: _scan, while_p: _while,
}


class _Staged:
    """What the rules read of an equation being staged (its results not made yet)."""
    __slots__ = ("primitive", "params", "outvars")

    def __init__(self, primitive, params, n_out: int):
        self.primitive, self.params, self.outvars = primitive, params, (None,) * n_out


def stage_vma(trace, primitive, params, atoms, out_avals):
    """The operands and results of a staged equation typed with their varying manual
    axes (the rules above, over the operands' `manual_axis_type`): what `typeof` and
    printed Jaxprs show inside a shard_map body with check_vma, as JAX's types do.
    With `jax_auto_pcast` on, an ordinary operation's operands that vary over fewer
    axes than the others are first cast with `pvary` (JAX's implicit cast); with it
    off, the mismatch is refused at shard_map's outputs (`matching_required`)."""
    ins = [getattr(a.aval, "manual_axis_type", EMPTY_MAT).varying for a in atoms]
    if len(set(ins)) > 1 and config.auto_pcast.value and _ordinary(primitive, params):
        want = _union(ins)
        atoms = [a if v == want else trace.stage_atoms(
            parallel.pvary_p, [a], {"axes": mat_axis_order(want - v)})._var
            for a, v in zip(atoms, ins)]
        ins = [want] * len(ins)
    outs = list(out_avals) if primitive.multiple_results else [out_avals]
    vmas = _eqn_vma(_Staged(primitive, params, len(outs)), ins)
    typed = [o.update_manual_axis_type(o.manual_axis_type.update(varying=v))
             if hasattr(o, "update_manual_axis_type") else o for o, v in zip(outs, vmas)]
    return atoms, (typed if primitive.multiple_results else typed[0])


def _ordinary(primitive, params) -> bool:
    """An operation without a rule of its own here (no collective, no nested Jaxpr),
    whose result varies over the union of its operands' axes."""
    return (primitive not in _RULES and primitive.get_rule(AXIS_NAMES) is None
            and not any(isinstance(p, (ClosedJaxpr, Jaxpr)) for p in params.values()))


def register_nested(prim) -> None:
    """Follow `prim` (shard_map) as a nested manual region."""
    _RULES[prim] = _nested_shard_map


def fold_invariant_psums(closed: ClosedJaxpr, in_vma: Sequence[Vma],
                         sizes: dict) -> ClosedJaxpr:
    """`closed` with each psum over axes its operand does not vary over replaced by a
    multiplication by their sizes (every member holds the same value): no collective,
    and no wait for one (a psum within axis_index_groups is kept). shard_map's
    transposes need this: a replicated output's
    cotangent is shared out over the members and psum'd back in the body."""
    jaxpr = closed.jaxpr
    env: dict[int, Vma] = {}

    def read(atom) -> Vma:
        return _NONE if isinstance(atom, Literal) else env.get(id(atom), _NONE)

    for var, vma in zip(jaxpr.invars, in_vma, strict=True):
        env[id(var)] = vma
    folds: dict[int, tuple[tuple, int]] = {}  # equation index → (axes kept, factor)
    for k, eqn in enumerate(jaxpr.eqns):
        ins = [read(a) for a in eqn.invars]
        if (eqn.primitive in (parallel.psum_p, parallel.psum_invariant_p)
                and eqn.params.get("axis_index_groups") is None):
            axes = eqn.params["axes"]
            kept = tuple(a for a in axes if isinstance(a, int) or a in ins[0])
            if kept != axes:
                folds[k] = (kept, math.prod(sizes[a] for a in axes if a not in kept))
        for var, vma in zip(eqn.outvars, _eqn_vma(eqn, ins)):
            env[id(var)] = vma
    if not folds:
        return closed

    def fun(*args):
        values: dict[int, object] = {}

        def value(atom):
            return atom.val if isinstance(atom, Literal) else values[id(atom)]

        for var, c in zip(jaxpr.constvars, closed.consts):
            values[id(var)] = c
        for var, x in zip(jaxpr.invars, args):
            values[id(var)] = x
        for k, eqn in enumerate(jaxpr.eqns):
            operands = [value(a) for a in eqn.invars]
            if k in folds:
                kept, factor = folds[k]
                (x,) = operands
                x = (parallel.psum_p.bind(x, axes=kept, axis_index_groups=None) if kept
                     else x)
                outs = [elementwise.mul(x, np.asarray(factor, get_aval(x).dtype)[()])]
            else:
                outs = eqn.primitive.bind(*operands, **eqn.params)
                outs = outs if eqn.primitive.multiple_results else [outs]
            for var, out in zip(eqn.outvars, outs):
                values[id(var)] = out
        return [value(v) for v in jaxpr.outvars]
    return stage_flat(fun, closed.in_avals, jaxpr.debug_info)

"""`plax.custom_batching`: functions with a user-defined batching rule.

`custom_vmap(f)` with `f.def_vmap(rule)`: calling `f` traces it into a closed
Jaxpr and binds `custom_vmap_call[call_jaxpr, rule, num_consts]`. Evaluated,
lowered or differentiated in forward mode it is `call_jaxpr`; under `vmap` its
batching rule calls `rule(axis_size, in_batched, *args)`, where `in_batched`
has the arguments' pytree structure with one bool per leaf and batched leaves
carry the batch dimension first, and the rule returns `(outputs,
out_batched)` in the same form. Its jvp is again a `custom_vmap_call`, of the
jvp of `call_jaxpr`, whose rule is the jvp of the user's rule (an argument whose
primal or tangent alone is batched is broadcast, so both are). As in JAX 0.10,
reverse mode (`grad`, `vjp`, `linearize`) of a `custom_vmap` function raises.

Values the function closes over are hoisted into leading operands; the user's
rule sees them through its own closure, and differentiating with respect to one
raises, since the rule does not say how.

`sequential_vmap(f)` is `f` batched by looping over the batch (`lax.map`).
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from plax.extend import tree_util
from plax.extend.ad import Zero, instantiate, jvp_jaxpr
from plax.extend.batching import bdim_at_front, not_mapped
from plax.extend.core import (
    BATCHING,
    JVP,
    PARTIAL_EVAL,
    PARTIAL_EVAL_JAXPR,
    ClosedJaxpr,
    Primitive,
    check_callable,
    eval_jaxpr,
    get_aval,
    make_tracing_debug_info,
)
from plax_stdlib.lax.control_flow.map import map as lax_map
from plax_transforms.ad import jvp_flat
from plax_transforms.custom_derivatives import (closure_convert_flat, named_hoisted,
                                                 positional_args)

custom_vmap_call_p = Primitive("plax.custom_vmap_call", multiple_results=True)


def _rule_name(rule) -> str:
    return getattr(rule, "__name__", type(rule).__name__)


class custom_vmap:
    """A function whose batching rule is given by `def_vmap` (JAX's
    `jax.custom_batching.custom_vmap`)."""

    def __init__(self, fun: Callable):
        check_callable(fun, "custom_vmap")
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.vmap_rule: Callable | None = None

    def def_vmap(self, vmap_rule: Callable) -> Callable:
        """Set the rule `vmap_rule(axis_size, in_batched, *args) -> (out, out_batched)`."""
        check_callable(vmap_rule, "custom_vmap.def_vmap")
        self.vmap_rule = vmap_rule
        return vmap_rule

    @property
    def name(self) -> str:
        return getattr(self.fun, "__name__", repr(self.fun))

    def __get__(self, instance, owner=None):
        return self if instance is None else functools.partial(self, instance)

    def __call__(self, *args, **kwargs):
        if self.vmap_rule is None:
            raise AttributeError(f"No batching rule defined for custom_vmap function "
                                 f"{self.name} using def_vmap.")
        args = positional_args(self.fun, f"custom_vmap function {self.name}", args, kwargs)
        flat, in_tree = tree_util.tree_flatten(args)
        try:
            in_avals = [get_aval(x) for x in flat]
        except TypeError as err:
            raise TypeError(f"custom_vmap function {self.name}: {err}") from None
        out_tree: list = []

        def flat_fun(*leaves):
            out_leaves, tree = tree_util.tree_flatten(self.fun(*in_tree.unflatten(leaves)))
            out_tree[:] = [tree]
            return out_leaves

        closed, consts = closure_convert_flat(flat_fun, in_avals)
        dbg = make_tracing_debug_info("custom_vmap", self.fun, args, {})
        closed = named_hoisted(closed, len(consts), dbg, out_tree[0])
        rule = _flat_rule(self, in_tree, out_tree[0], closed.out_avals)
        outs = custom_vmap_call_p.bind(*consts, *flat, call_jaxpr=closed, rule=rule,
                                       num_consts=len(consts))
        return out_tree[0].unflatten(outs)



def _flat_rule(f: custom_vmap, in_tree, out_tree, out_avals):
    """The user's rule on flat values: `rule(axis_size, in_batched, args) -> (outs,
    out_batched)`, flat lists, with the rule's outputs checked against the function's."""
    rule = f.vmap_rule
    name = _rule_name(rule)

    def flat_rule(axis_size: int, in_batched: Sequence[bool], args: Sequence[Any]):
        result = rule(axis_size, list(in_tree.unflatten(list(in_batched))),
                      *in_tree.unflatten(args))
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise TypeError(f"custom vmap rule {name} for function {f.name} must return a "
                            f"pair (outputs, out_batched), got {type(result).__name__}")
        out, out_batched = result
        outs, tree = tree_util.tree_flatten(out)
        batched, batched_tree = tree_util.tree_flatten(out_batched)
        if tree != batched_tree:
            raise ValueError("structure of output value and output batching specification "
                             f"returned by custom vmap rule ({name}) do not match.\n"
                             f"Output values: {tree}\nBatching spec: {batched_tree}")
        if tree != out_tree:
            raise ValueError(f"custom vmap rule {name} for function {f.name} must return "
                             f"outputs with the function's pytree structure {out_tree}, "
                             f"got {tree}")
        flags = []
        for i, (o, b, want) in enumerate(zip(outs, batched, out_avals)):
            if not isinstance(b, (bool, np.bool_, int)) or b not in (0, 1):
                raise TypeError(f"custom vmap rule {name}: out_batched entries must be "
                                f"bools, got {b!r} for output {i}")
            got = get_aval(o)
            shape = (axis_size, *want.shape) if b else want.shape
            if got.shape != shape or np.dtype(got.dtype) != np.dtype(want.dtype):
                raise ValueError(
                    f"custom vmap rule {name} for function {f.name} returned output {i} of "
                    f"type {got.str_short()}, but {'a batched' if b else 'an unbatched'} "
                    f"output of {want.str_short()} over an axis of size {axis_size} must "
                    f"have shape {shape} and dtype {np.dtype(want.dtype).name}")
            flags.append(bool(b))
        return outs, flags

    flat_rule.__name__ = name
    return flat_rule


# --- the primitive's rules ----------------------------------------------------------------

@custom_vmap_call_p.def_abstract_eval
def _abstract_eval(*avals, call_jaxpr: ClosedJaxpr, **_):
    return list(call_jaxpr.out_avals)


@custom_vmap_call_p.def_impl
def _impl(*args, call_jaxpr: ClosedJaxpr, **_):
    return eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *args)


@custom_vmap_call_p.def_lowering
def _lowering(ctx, *args, call_jaxpr: ClosedJaxpr, **_):
    return ctx.lower_subjaxpr(call_jaxpr, *args, name=_called(call_jaxpr))


def _called(call_jaxpr: ClosedJaxpr) -> str:
    dbg = call_jaxpr.jaxpr.debug_info
    return dbg.func_name if dbg is not None else "custom_vmap"


custom_vmap_call_p.define_rule("effects", lambda *, call_jaxpr, **_: call_jaxpr.effects)


def _batching(axis_data, args, dims, *, call_jaxpr, rule, num_consts):
    size = axis_data.size
    explicit = [bdim_at_front(x, d, size) if d is not not_mapped else x
                for x, d in zip(args[num_consts:], dims[num_consts:])]
    outs, out_batched = rule(size, [d is not not_mapped for d in dims[num_consts:]], explicit)
    return outs, [0 if b else not_mapped for b in out_batched]


custom_vmap_call_p.define_rule(BATCHING, _batching)


def _jvp(primals, tangents, *, call_jaxpr: ClosedJaxpr, rule, num_consts):
    if any(not isinstance(t, Zero) for t in tangents[:num_consts]):
        raise TypeError(
            f"Detected differentiation of custom_vmap function {_called(call_jaxpr)} with "
            "respect to a closed-over value. That isn't supported because the custom vmap "
            "rule only sees the function's explicit arguments; pass the value as an "
            "argument instead.")
    n = len(primals) - num_consts
    nonzeros = [False] * num_consts + [True] * n
    jvp_call, _ = jvp_jaxpr(call_jaxpr, nonzeros, instantiate=True)
    arg_tangents = [instantiate(t) for t in tangents[num_consts:]]
    outs = custom_vmap_call_p.bind(*primals, *arg_tangents, call_jaxpr=jvp_call,
                                   rule=_jvp_of_rule(rule, n), num_consts=num_consts)
    n_out = len(call_jaxpr.out_avals)
    return outs[:n_out], outs[n_out:]


def _jvp_of_rule(rule, n: int):
    """The batching rule of the jvp: the user's rule differentiated in forward mode,
    with primals and tangents made batched alike."""
    def jvp_rule(axis_size: int, in_batched: Sequence[bool], args: Sequence[Any]):
        batched = [p or t for p, t in zip(in_batched[:n], in_batched[n:])]
        args = [bdim_at_front(x, not_mapped, axis_size) if b and not was else x
                for x, b, was in zip(args, batched * 2, in_batched)]
        out_batched: list = []

        def primal_rule(*primals):
            outs, flags = rule(axis_size, batched, list(primals))
            out_batched[:] = flags
            return outs

        outs, t_outs = jvp_flat(primal_rule, args[:n], args[n:])
        return [*outs, *t_outs], out_batched * 2

    jvp_rule.__name__ = f"jvp({_rule_name(rule)})"
    return jvp_rule


custom_vmap_call_p.define_rule(JVP, _jvp)


def _no_reverse_mode(*_, call_jaxpr: ClosedJaxpr, **__):
    raise ValueError(
        "Linearization failed to produce known values for all output primals: reverse-mode "
        f"differentiation (grad, vjp, linearize) of custom_vmap function "
        f"{_called(call_jaxpr)} is not supported (as in JAX); apply vmap before grad, or "
        "give the function a custom_vjp.")


custom_vmap_call_p.define_rule(PARTIAL_EVAL, lambda trace, args, **params:
                               _no_reverse_mode(**params))
custom_vmap_call_p.define_rule(PARTIAL_EVAL_JAXPR, lambda eqn, unknowns:
                               _no_reverse_mode(**eqn.params))


# --- sequential_vmap -------------------------------------------------------------------------

def sequential_vmap(f: Callable) -> custom_vmap:
    """`f` whose batching loops over the batch, one example at a time (`lax.map`),
    instead of batching its operations (each example calls `f` again, so nested
    vmaps nest loops)."""
    f = custom_vmap(f)

    @f.def_vmap
    def rule(axis_size, in_batched, *args):
        leaves, tree = tree_util.tree_flatten(args)
        flags = tree_util.tree_leaves(in_batched)

        def one(batched_leaves):
            it = iter(batched_leaves)
            return f(*tree.unflatten([next(it) if b else x
                                          for x, b in zip(leaves, flags)]))
        outs = lax_map(one, [x for x, b in zip(leaves, flags) if b])
        return outs, tree_util.tree_map(lambda _: True, outs)

    rule.__name__ = f"sequential_vmap({f.name})"
    return f


__all__ = ["custom_vmap", "sequential_vmap"]

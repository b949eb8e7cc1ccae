"""What the control-flow primitives share: tracing a user's function into a closed
Jaxpr whose constants are explicit inputs, the type checks that compare the
structures, shapes and dtypes of two pytrees of values (branches, carries), and the
tokens of ordered effects their lowerings thread through regions.

Closed-over values become *operands* of the control-flow equation rather than
constants of its Jaxprs, so every transformation sees them: a branch that closes
over a value being differentiated or batched is differentiated or batched too.
"""
from __future__ import annotations

import weakref
from typing import Any, Callable, Sequence

from jaxlib import weakref_lru_cache as _weakref_lru_cache
from jaxlib._jax import config as _jaxlib_config

import numpy as np

from plax.extend import config, tree_util
from plax.extend.ad import Zero, tangent_aval
from plax.extend.core import (
    ClosedJaxpr,
    Jaxpr,
    ShapedArray,
    Tracer,
    abstract_token,
    get_aval,
    make_tracing_debug_info,
    ordered_effects,
    register_cache,
    result_paths_from_tree,
    trace_to_jaxpr,
)
from plax.extend.mlir import mu


def _trace(fun: Callable, in_tree, in_avals: tuple, traced_for: str, arg_tree_example):
    dbg = make_tracing_debug_info(traced_for, fun, arg_tree_example, {})
    closed, out_tree = trace_to_jaxpr(fun, in_tree, list(in_avals), dbg)
    jaxpr = closed.jaxpr
    n_consts = len(jaxpr.constvars)
    jdbg = jaxpr.debug_info
    if jdbg is not None and jdbg.arg_names is not None:
        jdbg = jdbg.with_arg_names(("",) * n_consts + jdbg.arg_names)
    opened = Jaxpr([], [*jaxpr.constvars, *jaxpr.invars], jaxpr.outvars, jaxpr.eqns,
                   jaxpr.effects, jdbg)
    return ClosedJaxpr(opened, []), tuple(closed.consts), out_tree


_trace_cache: "weakref.WeakKeyDictionary[Callable, dict]" = weakref.WeakKeyDictionary()


def trace_function(fun: Callable, args: Sequence[Any], traced_for: str):
    """Trace `fun(*args)` (args are pytrees of arrays or avals).

    Returns `(jaxpr, consts, out_tree)`: `jaxpr` takes the closed-over `consts`
    first (unnamed), then the flattened `args` (named after `fun`'s parameters).
    Tracings that close over no tracer are cached per function and signature, so
    calling `lax.cond(p, f, g, x)` eagerly twice traces and compiles once.
    """
    leaves, in_tree = tree_util.tree_flatten((tuple(args), {}))
    in_avals = tuple(get_aval(x) for x in leaves)
    key = (in_tree, in_avals, traced_for, _jaxlib_config.trace_context())
    try:
        per_fun = _trace_cache.setdefault(fun, {})
    except TypeError:  # `fun` cannot be weakly referenced
        per_fun = {}
    hit = per_fun.get(key)
    if hit is not None:
        return hit
    example = tree_util.tree_unflatten(in_tree, list(in_avals))[0]
    result = _trace(fun, in_tree, in_avals, traced_for, example)
    if not any(isinstance(c, Tracer) for c in result[1]):
        if len(per_fun) > 64:
            per_fun.clear()
        per_fun[key] = result
    return result


# --- jax_disable_jit: control flow as plain Python ------------------------------------

def python_value_if_disabled(x):
    """With `jax_disable_jit` on, `x`'s concrete value (so that cond, switch, while_loop
    and scan run their functions as plain Python, as in JAX); else, or when `x` is
    abstract, None."""
    if not config.disable_jit.value:
        return None
    if isinstance(x, Tracer):
        return x.to_concrete_value()
    return np.asarray(x)


# --- what the rules of control-flow primitives share ---------------------------------

def cached_on_jaxpr(fn):
    """Memoize a Jaxpr-building function on its first argument (a ClosedJaxpr, held
    weakly) and its other (hashable) arguments: rules applied again to the same
    equation build the same Jaxprs, so eager execution reuses compiled code."""
    cache = _weakref_lru_cache.weakref_lru_cache(_jaxlib_config.trace_context, fn, 256)
    register_cache(cache.cache_clear)

    def call(closed, *args):
        return cache(closed, *(tuple(a) if isinstance(a, list) else a for a in args))
    call.__name__ = fn.__name__
    return call


def or_flags(a: Sequence[bool], b: Sequence[bool]) -> list[bool]:
    return [x or y for x, y in zip(a, b, strict=True)]


def nonzero_flags(tangents) -> list[bool]:
    return [not isinstance(t, Zero) for t in tangents]


def expand_tangents(flags, values, avals) -> list:
    it = iter(values)
    return [next(it) if f else Zero(tangent_aval(a)) for f, a in zip(flags, avals)]


def rename_args(closed: ClosedJaxpr, names) -> ClosedJaxpr:
    dbg = closed.jaxpr.debug_info
    if dbg is None:
        return closed
    return closed.replace(jaxpr=closed.jaxpr.replace(debug_info=dbg.with_arg_names(names)))


def debug_names(closed: ClosedJaxpr, kind: str):
    dbg = closed.jaxpr.debug_info
    if dbg is None:
        return None
    return dbg.arg_names if kind == "args" else dbg.result_paths


# --- comparing two pytrees of types ---------------------------------------------------

def leaf_paths(tree_def, prefix: str) -> list[str]:
    """`prefix` + the key path of each leaf of `tree_def` (`init[0]`, `x['a']`)."""
    paths = result_paths_from_tree(tree_def)
    if paths is None:
        return [f"{prefix}<leaf {i}>" for i in range(tree_def.num_leaves)]
    return [prefix + p[len("result"):] for p in paths]


def _type_str(aval) -> str:
    from plax.extend.constructors import describe
    return describe(aval)


def _splits(aval) -> tuple:
    """The mesh axes splitting each dimension in `aval`'s type (None: not split)."""
    typed = getattr(aval, "typed_sharding", None)
    return (None,) * aval.ndim if typed is None else tuple(typed.spec.partitions)


def check_same_types(what: str, left: tuple[str, Any, Sequence],
                     right: tuple[str, Any, Sequence]) -> None:
    """TypeError unless two pytrees of avals agree in structure, shapes and dtypes.

    `left`/`right` are `(description, treedef, avals)`; the message names each
    differing leaf by its path on both sides and says what differs, JAX style.
    """
    (lname, ltree, lavals), (rname, rtree, ravals) = left, right
    if ltree != rtree:
        raise TypeError(f"{what} must have identical types, but {lname} has pytree structure "
                        f"{ltree} and {rname} has pytree structure {rtree}.")
    lpaths, rpaths = leaf_paths(ltree, ""), leaf_paths(rtree, "")
    problems = []
    for lp, rp, la, ra in zip(lpaths, rpaths, lavals, ravals):
        if la.shape != ra.shape or la.dtype != ra.dtype:
            diff = ("the shapes do not match" if la.shape != ra.shape
                    else "the dtypes do not match")
            problems.append(f"  * {lname}{lp} has type {_type_str(la)} but {rname}{rp} has "
                            f"type {_type_str(ra)}, so {diff}")
        elif _splits(la) != _splits(ra):  # explicit mesh axes in the types (as in JAX)
            problems.append(f"  * {lname}{lp} has type {la.str_short(la.dtype.name)} but "
                            f"{rname}{rp} has type {ra.str_short(ra.dtype.name)}, so the "
                            "shardings do not match")
    if problems:
        raise TypeError(f"{what} must have identical types, but they differ:\n"
                        + "\n".join(problems))


# --- reshaping Jaxprs --------------------------------------------------------------------

def with_extra_invars(closed: ClosedJaxpr, before: Sequence[ShapedArray] = (),
                      after: Sequence[ShapedArray] = (), at: int = 0) -> ClosedJaxpr:
    """`closed` taking (and ignoring) extra inputs of types `before` at position
    `at` and `after` at the end; the new inputs are unnamed."""
    from plax.extend.core import Var
    jaxpr = closed.jaxpr
    new_before = [Var(a) for a in before]
    new_after = [Var(a) for a in after]
    invars = [*jaxpr.invars[:at], *new_before, *jaxpr.invars[at:], *new_after]
    dbg = jaxpr.debug_info
    if dbg is not None and dbg.arg_names is not None:
        names = dbg.arg_names
        dbg = dbg.with_arg_names((*names[:at], *[""] * len(before), *names[at:],
                                  *[""] * len(after)))
    return closed.replace(jaxpr=jaxpr.replace(invars=invars, debug_info=dbg))


def permute(closed: ClosedJaxpr, in_order: Sequence[int] | None = None,
            out_order: Sequence[int] | None = None) -> ClosedJaxpr:
    """`closed` with inputs (outputs) reordered: new input `k` is old input
    `in_order[k]`. Debug-info names move with their variables."""
    jaxpr = closed.jaxpr
    dbg = jaxpr.debug_info
    invars, outvars = jaxpr.invars, jaxpr.outvars
    if in_order is not None:
        invars = [jaxpr.invars[i] for i in in_order]
        if dbg is not None and dbg.arg_names is not None:
            dbg = dbg.with_arg_names([dbg.arg_names[i] for i in in_order])
    if out_order is not None:
        outvars = [jaxpr.outvars[i] for i in out_order]
        if dbg is not None and dbg.result_paths is not None:
            dbg = dbg.with_result_paths([dbg.result_paths[i] for i in out_order])
    return closed.replace(jaxpr=jaxpr.replace(invars=invars, outvars=outvars, debug_info=dbg))


def split_list(values: Sequence, sizes: Sequence[int]) -> list[list]:
    """`values` cut into consecutive pieces of `sizes` (and the rest)."""
    out, start = [], 0
    for n in sizes:
        out.append(list(values[start:start + n]))
        start += n
    out.append(list(values[start:]))
    return out


def region_tokens(ctx, *jaxprs: ClosedJaxpr) -> tuple[tuple, list, list]:
    """For a lowering whose regions call `jaxprs`: their ordered effects, those
    effects' current tokens (to pass into the op, ahead of its other operands or
    carries) and the tokens' MLIR types. The op's first results are the new tokens:
    store them with `ctx.tokens.update(zip(effects, results))`."""
    effects = ordered_effects(frozenset().union(*(j.effects for j in jaxprs)))
    return effects, [ctx.tokens[e] for e in effects], mu.ir_types([abstract_token] * len(effects))

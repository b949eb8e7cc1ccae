"""What the control-flow primitives share: tracing a user's function into a closed
Jaxpr whose constants are explicit inputs, the type checks that compare the
structures, shapes and dtypes of two pytrees of values (branches, carries), and the
tokens of ordered effects their lowerings thread through regions.

Closed-over values become *operands* of the control-flow equation rather than
constants of its Jaxprs, so every transformation sees them: a branch that closes
over a value being differentiated or batched is differentiated or batched too.
"""
from __future__ import annotations

import inspect
import weakref
from typing import Any, Callable, Sequence

from jaxlib import weakref_lru_cache as _weakref_lru_cache
from jaxlib._jax import config as _jaxlib_config

import numpy as np

from plax.extend import config, tree_util
from plax.extend.ad import Zero, tangent_aval
from plax.extend.core import (
    AbstractValue,
    ClosedJaxpr,
    Jaxpr,
    ShapedArray,
    Tracer,
    abstract_token,
    fun_sourceinfo,
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
register_cache(_trace_cache.clear)


def trace_function(fun: Callable, args: Sequence[Any], traced_for: str):
    """Trace `fun(*args)` (args are pytrees of arrays or avals).

    Returns `(jaxpr, consts, out_tree)`: `jaxpr` takes the closed-over `consts`
    first (unnamed), then the flattened `args` (named after `fun`'s parameters).
    Tracings that close over no tracer are cached per function and signature, so
    calling `lax.cond(p, f, g, x)` eagerly twice traces and compiles once.
    """
    leaves, in_tree = tree_util.tree_flatten((tuple(args), {}))
    in_avals = tuple(x if isinstance(x, AbstractValue) else get_aval(x) for x in leaves)
    key = (in_tree, in_avals, traced_for,
           tuple(getattr(a, "manual_axis_type", None) for a in in_avals))  # (not in ==)
    return cached_trace(fun, key, lambda: _trace(
        fun, in_tree, in_avals, traced_for, tree_util.tree_unflatten(in_tree, list(in_avals))[0]))


def cached_trace(fun: Callable, key: tuple, trace: Callable[[], tuple]) -> tuple:
    """`trace()`, a tracing of `fun` that `key` (hashable) and the trace context tell
    apart, kept per function (held weakly) unless it closes over tracers (the consts,
    second in what it returns), whose trace ends: as JAX's, a function traced again
    with the same signature is not run again (nor sees globals it read since)."""
    key = (*key, _jaxlib_config.trace_context())
    try:
        per_fun = _trace_cache.setdefault(fun, {})
        hit = per_fun.get(key)
    except TypeError:  # `fun` cannot be weakly referenced, or `key` is not hashable
        return trace()
    if hit is not None:
        return hit
    result = trace()
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


def _mismatch(a, b, manual: bool = False) -> str:
    """JAX's reason two leaf types differ (`, so the dtypes do not match`), or "";
    with `manual`, also the manual axes they vary over (a loop carry's)."""
    reasons = [why for differs, why in ((a.dtype != b.dtype, "the dtypes do not match"),
                                        (a.shape != b.shape, "the shapes do not match"))
               if differs]
    if not reasons and _splits(a) != _splits(b):  # explicit mesh axes in the types
        reasons = ["the shardings do not match"]
    if not reasons and manual and _vma(a) != _vma(b):
        reasons = ["the manual axis types do not match"]
    if not reasons:
        return ""
    return ", so " + (reasons[0] if len(reasons) == 1
                      else ", ".join(reasons[:-1]) + ", and " + reasons[-1])


def _shown(aval, other) -> str:
    """`aval`'s type as a message shows it: with its mesh axes where only they differ."""
    if aval.shape == other.shape and aval.dtype == other.dtype:
        return aval.str_short(aval.dtype.name)
    return _type_str(aval)


def _listed(differences: list[str], capitalize: bool = True) -> str:
    """One difference as a sentence, several as a list (JAX's layout)."""
    if len(differences) == 1:
        first = differences[0][0].upper() if capitalize else differences[0][0]
        return first + differences[0][1:] + ".\n"
    return "".join(f"  * {d};\n" for d in differences[:-1]) + f"  * {differences[-1]}.\n"


def tree_differences(tree1, tree2, path: str = ""):
    """Where two pytree structures first differ, as JAX says it: (path, what the first
    has, what the second has, why), for each differing subtree."""
    node1, node2 = tree1.node_data(), tree2.node_data()
    if node1 is None and node2 is None:
        return
    type1, type2 = (type(None) if n is None else n[0] for n in (node1, node2))
    if type1 is not type2:
        yield path, str(type1), str(type2), "their Python types differ"
        return
    kids1, kids2 = tree1.children(), tree2.children()
    if len(kids1) != len(kids2):
        if type1 in (list, tuple):
            yield (path, f"{type1.__name__} of length {len(kids1)}",
                   f"{type2.__name__} of length {len(kids2)}", "the lengths do not match")
        else:
            yield (path, f"{type1} with {len(kids1)} children",
                   f"{type2} with {len(kids2)} children",
                   "the numbers of children do not match")
        return
    if node1[1] != node2[1]:
        yield (path, f"{type1} with pytree metadata {node1[1]}",
               f"{type2} with pytree metadata {node2[1]}",
               "the pytree node metadata does not match")
        return
    keys = [repr(k) for k in node1[1]] if type1 is dict else map(str, range(len(kids1)))
    for key, kid1, kid2 in zip(keys, kids1, kids2):
        yield from tree_differences(kid1, kid2, f"{path}[{key}]")


def _vma(aval) -> frozenset:
    return getattr(aval, "vma", frozenset())


def _leaf_differences(tree, avals1, avals2, sentence, manual: bool = False,
                      hint=None) -> list[str]:
    """`sentence(path, type1, type2)` plus JAX's reason, for each leaf whose types
    differ (and `hint(path, axes)` where only the varying manual axes do)."""
    return [sentence(p, _shown(a, b), _shown(b, a)) + why
            + (hint(p, _vma(b) - _vma(a)) if hint and why.endswith("axis types do not match")
               else "")
            for p, a, b in zip(leaf_paths(tree, ""), avals1, avals2)
            if (why := _mismatch(a, b, manual))]


def _first_parameter(fun) -> str | None:
    try:
        return next(iter(inspect.signature(fun).parameters), None)
    except (TypeError, ValueError):
        return None


def check_carry_types(api: str, body_fun, init_tree, init_avals: Sequence,
                      out_tree, out_avals: Sequence) -> None:
    """JAX's TypeError unless a loop body's carry output has its input's structure,
    shapes and dtypes; each differing leaf is named by the body's carry parameter and
    its path (`the input carry component c[1]`)."""
    what = f"{api} function carry input and carry output"
    name = _first_parameter(body_fun)

    def component(path: str) -> str:
        if name:
            return f"the input carry component {name}{path}" if path else f"the input carry {name}"
        return f"the input carry at path {path}" if path else "the input carry"

    if init_tree != out_tree:
        differences = [f"{component(p)} is a {a} but the corresponding component of the "
                       f"carry output is a {b}, so {why}"
                       for p, a, b, why in tree_differences(init_tree, out_tree)]
        raise TypeError(
            f"{what} must have the same pytree structure, but they differ:\n\n"
            f"{_listed(differences)}\nRevise the function so that the carry output has the "
            "same pytree structure as the carry input.")

    def hint(path, axes) -> str:  # JAX's advice: make the initial carry vary alike
        names = tuple(sorted(axes, key=str))
        return (f".\n\nThis might be fixed by applying `plax.lax.pcast(..., {names!r}, "
                f"to='varying')`, to the initial carry value corresponding to "
                f"{component(path)}.\nSee JAX's shard_map documentation "
                "(#scan-vma) for more information")

    differences = _leaf_differences(
        init_tree, init_avals, out_avals, lambda p, a, b: f"{component(p)} has type {a} but "
        f"the corresponding output carry component has type {b}", manual=True, hint=hint)
    if differences:
        raise TypeError(f"{what} must have equal types, but they differ:\n\n"
                        f"{_listed(differences)}\nRevise the function so that all output "
                        "types match the corresponding input types.")


def check_branch_types(api: str, first: tuple, other: tuple) -> None:
    """JAX's TypeError unless two branches of `cond`/`switch` return the same
    structure, shapes and dtypes. `first`/`other` are (name, function, treedef,
    output avals); the message says where each function is defined."""
    (name1, fun1, tree1, avals1), (name2, fun2, tree2, avals2) = first, other
    where = (f"{name1} is {fun_sourceinfo(fun1)}\n"
             f"{name2} is {fun_sourceinfo(fun2)}\n\n")
    if tree1 != tree2:
        differences = [f"{name1} output{f' at path {p}' if p else ''} is a {a} but {name2} "
                       f"output{f' at path {p}' if p else ''} is a {b}, so {why}"
                       for p, a, b, why in tree_differences(tree1, tree2)]
        raise TypeError(
            f"{api} branch outputs must have the same pytree structure, but they differ:"
            f"\n\n{where}{_listed(differences, capitalize=False)}\n"
            f"Revise {name1} and/or {name2} so that they have the same pytree structure.")
    differences = _leaf_differences(
        tree1, avals1, avals2, lambda p, a, b: f"the output of {name1}"
        f"{f' at path {p}' if p else ''} has type {a} but the corresponding output of "
        f"{name2} has type {b}")
    if differences:
        raise TypeError(f"{api} branches must have equal output types but they differ.\n\n"
                        f"{where}{_listed(differences)}\nRevise {name1} and/or {name2} so "
                        "that all output types match.")


# --- reshaping Jaxprs --------------------------------------------------------------------

def with_extra_invars(closed: ClosedJaxpr, after: Sequence[ShapedArray]) -> ClosedJaxpr:
    """`closed` taking (and ignoring) extra inputs of types `after` at the end; the
    new inputs are unnamed."""
    from plax.extend.core import Var
    jaxpr = closed.jaxpr
    invars = [*jaxpr.invars, *(Var(a) for a in after)]
    dbg = jaxpr.debug_info
    if dbg is not None and dbg.arg_names is not None:
        dbg = dbg.with_arg_names((*dbg.arg_names, *[""] * len(after)))
    return closed.replace(jaxpr=jaxpr.replace(invars=invars, debug_info=dbg))


def common_consts(consts_per_fun: Sequence[Sequence]) -> tuple[list, list[list[int]]]:
    """The constants of several traced functions as one list, each value once (by
    identity, as JAX shares a value closed over by two branches), and each function's
    constants' positions in it. A value a function holds twice keeps two entries."""
    common: list = []
    where: dict[tuple[int, int], int] = {}
    positions = []
    for consts in consts_per_fun:
        seen: dict[int, int] = {}
        mine = []
        for c in consts:
            key = (id(c), seen.get(id(c), 0))
            seen[id(c)] = key[1] + 1
            if key not in where:
                where[key] = len(common)
                common.append(c)
            mine.append(where[key])
        positions.append(mine)
    return common, positions


def over_common_consts(closed: ClosedJaxpr, positions: Sequence[int],
                       avals: Sequence[ShapedArray]) -> ClosedJaxpr:
    """`closed`, whose first inputs are its own constants, taking `common_consts`'
    whole list (of types `avals`) instead; the ones it does not use are unnamed."""
    from plax.extend.core import Var
    jaxpr = closed.jaxpr
    n = len(positions)
    own = dict(zip(positions, range(n)))
    invars = [jaxpr.invars[own[u]] if u in own else Var(a) for u, a in enumerate(avals)]
    dbg = jaxpr.debug_info
    if dbg is not None and dbg.arg_names is not None:
        names = dbg.arg_names
        dbg = dbg.with_arg_names((*[names[own[u]] if u in own else "" for u in range(len(avals))],
                                  *names[n:]))
    return closed.replace(jaxpr=jaxpr.replace(invars=[*invars, *jaxpr.invars[n:]],
                                              debug_info=dbg))


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


def forwarded_inputs(closed: ClosedJaxpr) -> list[int | None]:
    """Per output, the input it is, unchanged (None if it is computed)."""
    position = {id(v): i for i, v in enumerate(closed.jaxpr.invars)}
    return [position.get(id(v)) for v in closed.jaxpr.outvars]


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

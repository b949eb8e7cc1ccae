"""`plax.ad_checkpoint`: rematerialization (`checkpoint`/`remat`), value names, the
policies that say which values reverse mode may save (`checkpoint_policies`), and
`saved_residuals`/`print_saved_residuals`, which list what it does save.
"""
from __future__ import annotations

from typing import Any, Callable

from plax.extend import tree_util
from plax.extend.core import (ClosedJaxpr, Jaxpr, JaxprEqn, Var, get_aval,
                              make_tracing_debug_info, stage_flat, user_frame)
from plax_stdlib.lax.naming import checkpoint_name, name_p
from plax_transforms import checkpoint_policies
from plax_transforms.autodiff_api import linearize_flat
from plax_transforms.checkpoint_policies import Offloadable, Recompute, Saveable
from plax_transforms.remat import checkpoint, remat


def saved_residuals(f: Callable, *args, **kwargs) -> list[tuple[Any, str]]:
    """The values reverse mode of `f(*args, **kwargs)` saves for the backward pass,
    as `(aval, where it comes from)`: an argument, or the output of a primitive at
    the user's line."""
    flat, in_tree = tree_util.tree_flatten((args, kwargs))
    dbg = make_tracing_debug_info("saved_residuals", f, args, kwargs)

    def residuals(*leaves):
        a, kw = tree_util.tree_unflatten(in_tree, leaves)

        def flat_f(*xs):
            x_args, x_kwargs = tree_util.tree_unflatten(in_tree, xs)
            return tree_util.tree_leaves(f(*x_args, **x_kwargs)), {}
        _, linear, _ = linearize_flat(flat_f, list(leaves))
        return list(linear.jaxpr.consts)

    closed = stage_flat(residuals, [get_aval(x) for x in flat])
    names = dbg.arg_names or ()
    return [(v.aval if isinstance(v, Var) else get_aval(v.val),
             _origin(closed.jaxpr, v, names)) for v in closed.jaxpr.outvars]


def _origin(jaxpr: Jaxpr, atom, arg_names) -> str:
    """Where `atom` of `jaxpr` comes from, looking inside the calls (jit, checkpoint)
    whose outputs are their Jaxpr's outputs."""
    if not isinstance(atom, Var):
        return "from a literal"
    for i, v in enumerate(jaxpr.invars):
        if v is atom:
            name = arg_names[i] if i < len(arg_names) and arg_names[i] else f"args[{i}]"
            return f"from the argument {name}"
    if any(v is atom for v in jaxpr.constvars):
        return "from a constant"
    for eqn in jaxpr.eqns:
        for k, v in enumerate(eqn.outvars):
            if v is atom:
                return _eqn_origin(eqn, k, jaxpr, arg_names)
    return "from an unknown value"


def _eqn_origin(eqn: JaxprEqn, k: int, jaxpr: Jaxpr, arg_names) -> str:
    inner = _called_jaxpr(eqn)
    if inner is not None:
        out = inner.outvars[k]
        for i, v in enumerate(inner.invars):
            if v is out:  # the call passes an operand through
                return _origin(jaxpr, eqn.invars[i], arg_names)
        if isinstance(out, Var) and not any(v is out for v in inner.constvars):
            return _origin(inner, out, ())
    where = user_frame(eqn.source_info)
    return f"output of {eqn.primitive.name}" + (f" from {where}" if where else "")


def _called_jaxpr(eqn: JaxprEqn) -> Jaxpr | None:
    """The Jaxpr a call-like equation runs, if it has one with matching inputs and
    outputs."""
    jaxprs = [p.jaxpr if isinstance(p, ClosedJaxpr) else p for p in eqn.params.values()
              if isinstance(p, (ClosedJaxpr, Jaxpr))]
    if len(jaxprs) == 1 and len(jaxprs[0].outvars) == len(eqn.outvars) \
            and len(jaxprs[0].invars) == len(eqn.invars):
        return jaxprs[0]
    return None


def print_saved_residuals(f: Callable, *args, **kwargs) -> None:
    """Print `saved_residuals(f, *args, **kwargs)`, one residual a line."""
    for aval, origin in saved_residuals(f, *args, **kwargs):
        print(aval.str_short(), origin)


__all__ = ["Offloadable", "Recompute", "Saveable", "checkpoint", "checkpoint_name",
           "checkpoint_policies", "name_p", "print_saved_residuals", "remat",
           "saved_residuals"]

"""`plax.ad_checkpoint`: rematerialization (`checkpoint`/`remat`), value names, the
policies that say which values reverse mode may save (`checkpoint_policies`), and
`saved_residuals`/`print_saved_residuals`, which list what it does save.
"""
from __future__ import annotations

from typing import Any, Callable

from plax.extend import tree_util
from plax.extend.core import (Jaxpr, Var, get_aval, make_tracing_debug_info, stage_flat,
                              user_frame)
from plax_stdlib.lax.naming import checkpoint_name, name_p
from plax_stdlib.lax.reduce_precision import reduce_precision_p
from plax_transforms import checkpoint_policies
from plax_transforms.autodiff_api import vjp
from plax_transforms.checkpoint_policies import Offloadable, Recompute, Saveable
from plax_transforms.jit_primitive import jit_p
from plax_transforms.remat import checkpoint, remat


def saved_residuals(f: Callable, *args, **kwargs) -> list[tuple[Any, str]]:
    """The values reverse mode of `f(*args, **kwargs)` saves for the backward pass,
    as `(aval, where it comes from)`, in JAX's order: literals, constants, the
    arguments, then what the program computes (the output of a primitive at the
    user's line, a `checkpoint_name`d value, a jitted function's output)."""
    flat, in_tree = tree_util.tree_flatten((args, kwargs))
    dbg = make_tracing_debug_info("saved_residuals", f, args, kwargs)

    def f_(*leaves):
        a, kw = tree_util.tree_unflatten(in_tree, leaves)
        return f(*a, **kw)
    closed = stage_flat(lambda *leaves: tree_util.tree_leaves(vjp(f_, *leaves)[1]),
                        [get_aval(x) for x in flat])
    return _origins(closed.jaxpr, dbg.arg_names or ("",) * len(flat))


def _origins(jaxpr: Jaxpr, arg_names) -> list[tuple[Any, str]]:
    """Where each output of `jaxpr` (a residual) comes from; a `reduce_precision`
    (which a checkpoint puts after the values it saves) is looked through."""
    rounded = {e.outvars[0]: e.invars[0] for e in jaxpr.eqns
               if e.primitive is reduce_precision_p}
    res = {rounded.get(v, v) for v in jaxpr.outvars if isinstance(v, Var)}
    out = [(v.aval, "from a literal") for v in jaxpr.outvars if not isinstance(v, Var)]
    out += [(v.aval, "from a constant") for v in jaxpr.constvars if v in res]
    out += [(v.aval, f"from the argument {arg_names[i]}" if arg_names[i] else
             f"from the argument at flattened index {i}")
            for i, v in enumerate(jaxpr.invars) if v in res]
    for eqn in jaxpr.eqns:
        where = user_frame(eqn.source_info)
        what = (f"named '{eqn.params['name']}'" if eqn.primitive is name_p else
                f"output of jitted function '{eqn.params['name']}'"
                if eqn.primitive is jit_p else f"output of {eqn.primitive.name}")
        out += [(v.aval, f"{what} from {where}") for v in eqn.outvars if v in res]
    return out


def print_saved_residuals(f: Callable, *args, **kwargs) -> None:
    """Print `saved_residuals(f, *args, **kwargs)`, one residual a line."""
    for aval, origin in saved_residuals(f, *args, **kwargs):
        print(aval.str_short(), origin)


__all__ = ["Offloadable", "Recompute", "Saveable", "checkpoint", "checkpoint_name",
           "checkpoint_policies", "name_p", "print_saved_residuals", "remat",
           "saved_residuals"]

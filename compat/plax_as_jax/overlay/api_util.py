"""`jax.api_util`: the flattening wrappers and debug info libraries build traced
functions with (flax)."""
from __future__ import annotations

import inspect

from plax.extend.core import make_tracing_debug_info
from plax.tree_util import tree_flatten, tree_unflatten

from plax_as_jax.overlay.extend.linear_util import Store, WrappedFun

PLAX_MODULE = None


def debug_info(traced_for: str, fun, args, kwargs, *, static_argnums=(), static_argnames=(),
               result_paths_thunk=None, sourceinfo=None, signature=None):
    """Debug info for tracing `fun(*args, **kwargs)` for `traced_for`."""
    del result_paths_thunk, sourceinfo, signature
    return make_tracing_debug_info(traced_for, fun, args, kwargs,
                                   static_argnums=static_argnums,
                                   static_argnames=static_argnames)


def _flattening(in_tree, store: Store, with_kwargs: bool):
    def transform(call, *args_flat):
        tree = tree_unflatten(in_tree, args_flat)
        out = call(*tree[0], **tree[1]) if with_kwargs else call(*tree)
        leaves, out_tree = tree_flatten(out)
        store.store(out_tree)
        return leaves
    return transform


def flatten_fun(f: WrappedFun, in_tree) -> tuple[WrappedFun, Store]:
    """`f` taking the leaves of `(args, kwargs)` (of `in_tree`) and returning its
    outputs' leaves; the store gives their treedef once it ran."""
    store = Store()
    return f.wrap(_flattening(in_tree, store, True)), store


def flatten_fun_nokwargs(f: WrappedFun, in_tree) -> tuple[WrappedFun, Store]:
    """As `flatten_fun`, for `in_tree` of the positional arguments alone."""
    store = Store()
    return f.wrap(_flattening(in_tree, store, False)), store


def fun_signature(fun) -> inspect.Signature | None:
    try:
        return inspect.signature(fun)
    except (ValueError, TypeError):
        return None

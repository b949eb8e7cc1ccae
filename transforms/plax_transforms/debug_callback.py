"""`plax.debug.callback`: call a Python function for its side effects from staged code.

The primitive `debug.debug_callback` has no outputs and the effect `Debug` (or
`OrderedDebug` with `ordered=True`), so dead-code elimination keeps it and ordered
calls run in program order. It changes the computation as little as possible:

* eagerly it calls the function at once;
* under `jit` it lowers to a host callback (`host_callback.emit_python_callback`);
* under `vmap` it is unrolled: one call per batch member, each on its slices;
* under differentiation it sees the primal values only (its tangent is nothing), and
  as it reads no linear value it stays in the forward pass.

Arguments that are not arrays (strings, None, Python objects) are passed through to
the function as they are, outside the Jaxpr.
"""
from __future__ import annotations

from typing import Any, Callable

import plax
from plax.extend import tree_util
from plax.extend.core import Primitive, Tracer, get_aval
from plax_transforms.host_callback import (DEBUG, ORDERED_DEBUG, call_user, lower_call,
                                           now_or_later)

debug_callback_p = Primitive("debug.debug_callback", multiple_results=True)
debug_callback_p.def_abstract_eval(lambda *avals, callback, effect: [])
debug_callback_p.define_rule("effects", lambda *, callback, effect: frozenset({effect}))


@debug_callback_p.def_impl
def _impl(*args, callback, effect):
    call_user(callback, args, (), "plax.debug.callback")
    return []


debug_callback_p.def_lowering(lambda ctx, *args, callback, effect: lower_call(
    ctx, callback, args, (), "plax.debug.callback", has_side_effect=True, effect=effect))


def _batching(axis_data, args, dims, *, callback, effect):
    """One call per batch member, in order."""
    for i in range(axis_data.size):
        members = [x if d is None else plax.lax.index_in_dim(x, i, d, keepdims=False)
                   for x, d in zip(args, dims)]
        debug_callback_p.bind(*members, callback=callback, effect=effect)
    return [], []


debug_callback_p.define_rule("batching", _batching)
debug_callback_p.define_rule("jvp", lambda primals, tangents, **params: (
    debug_callback_p.bind(*primals, **params), []))
debug_callback_p.define_rule("transpose", lambda cts, *args, **params: [None] * len(args))


def split_static(args: tuple, kwargs: dict) -> tuple[Any, list, dict[int, Any]]:
    """Flatten `(args, kwargs)`; → (treedef, the array leaves, {position: other leaf})."""
    leaves, tree = tree_util.tree_flatten((args, kwargs))
    dynamic, static = [], {}
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, Tracer) or _is_array_value(leaf):
            dynamic.append(leaf)
        else:
            static[i] = leaf
    return tree, dynamic, static


def _is_array_value(x) -> bool:
    try:
        get_aval(x)
        return True
    except TypeError:
        return False


class _WithStatics:
    """The user's function called on the dynamic leaves merged with the static ones."""
    __slots__ = ("fun", "tree", "static")

    def __init__(self, fun: Callable, tree, static: dict[int, Any]):
        self.fun, self.tree, self.static = fun, tree, static

    def __call__(self, *dynamic):
        it = iter(dynamic)
        leaves = [self.static[i] if i in self.static else next(it)
                  for i in range(len(self.static) + len(dynamic))]
        args, kwargs = tree_util.tree_unflatten(self.tree, leaves)
        self.fun(*args, **kwargs)
        return ()

    @property
    def __name__(self):
        return getattr(self.fun, "__name__", type(self.fun).__name__)


def debug_callback(callback: Callable[..., None] | None = None, *args: Any,
                   ordered: bool = False, partitioned: bool = False, **kwargs: Any):
    """Call `callback(*args, **kwargs)` from staged code, for its side effects only.

    `ordered=True` keeps the calls in program order (and in call order across
    computations). Also usable in two calls: `debug.callback(ordered=True)(f, x)`.
    `partitioned` is accepted for JAX's signature; callbacks always see whole values.
    """
    def bind(fun: Callable[..., None], *c_args: Any, **c_kwargs: Any) -> None:
        if not callable(fun):
            raise TypeError("first argument to plax.debug.callback must be callable, but got "
                            f"an object of type {type(fun)}")
        tree, dynamic, static = split_static(c_args, c_kwargs)
        debug_callback_p.bind(*dynamic, callback=_WithStatics(fun, tree, static),
                              effect=ORDERED_DEBUG if ordered else DEBUG)

    return now_or_later(bind, callback, args, kwargs, "plax.debug.callback")


__all__ = ["DEBUG", "ORDERED_DEBUG", "debug_callback", "debug_callback_p"]

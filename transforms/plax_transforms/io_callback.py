"""`plax.experimental.io_callback`: call an impure Python function from staged code.

The primitive `callbacks.io_callback` has the effect `IO` (`OrderedIO` with
`ordered=True`): it is never pruned, and ordered calls run in program order and in
call order across computations. Eagerly it calls the function at once; under `jit`
it lowers to a host callback; under `vmap` an unordered one is called once per
batch member in a loop (an ordered one cannot be batched); it cannot be
differentiated.
"""
from __future__ import annotations

from typing import Any, Callable

from plax.extend import tree_util
from plax.extend.core import Primitive
from plax_transforms.host_callback import (IO, ORDERED_IO, FlatCallback, eager_call,
                                           lower_call, result_avals as flat_result_avals)
from plax_transforms.vmap_methods import batch_call

API = "plax.experimental.io_callback"

io_callback_p = Primitive("callbacks.io_callback", multiple_results=True)
io_callback_p.def_abstract_eval(lambda *avals, result_avals, **_: list(result_avals))
io_callback_p.define_rule("effects", lambda *, ordered, **_: frozenset(
    {ORDERED_IO if ordered else IO}))


io_callback_p.def_impl(lambda *args, callback, result_avals, ordered: eager_call(
    callback, args, result_avals, API))
io_callback_p.def_lowering(lambda ctx, *args, callback, result_avals, ordered: lower_call(
    ctx, callback, args, result_avals, API, has_side_effect=True,
    effect=ORDERED_IO if ordered else IO))


def _batching(axis_data, args, dims, *, callback, result_avals, ordered):
    if ordered:
        raise ValueError("Cannot `vmap` ordered IO callback.")

    def rebind(new_args, avals, leading_batch):
        return io_callback_p.bind(*new_args, callback=callback, result_avals=avals,
                                  ordered=False)
    return batch_call(rebind, axis_data.size, args, dims, vmap_method="sequential",
                      result_avals=result_avals, what="io_callback")


def _not_differentiable(*args, **params):
    raise ValueError("IO callbacks do not support JVP.")


def _not_transposable(*args, **params):
    raise ValueError("IO callbacks do not support transpose.")


io_callback_p.define_rule("batching", _batching)
io_callback_p.define_rule("jvp", _not_differentiable)
io_callback_p.define_rule("transpose", _not_transposable)


def io_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                sharding=None, ordered: bool = False, **kwargs: Any):
    """`callback(*args, **kwargs)`, a function with side effects returning arrays shaped
    like `result_shape_dtypes`, callable from staged code; `ordered=True` keeps the
    calls in program order."""
    if not callable(callback):
        raise TypeError(f"{API}: callback must be callable, got {type(callback).__name__}")
    if sharding is not None:
        raise NotImplementedError(f"{API}: the sharding argument is not supported")
    avals, out_tree = flat_result_avals(result_shape_dtypes, API)
    flat_args, in_tree = tree_util.tree_flatten((args, kwargs))
    outs = io_callback_p.bind(*flat_args, callback=FlatCallback(callback, in_tree),
                              result_avals=avals, ordered=bool(ordered))
    return tree_util.tree_unflatten(out_tree, outs)

"""`plax.pure_callback`: call a pure Python function on values of a staged program.

The primitive `callbacks.pure_callback` has no effect: like any pure operation it
may be pruned when its results are unused, and computed again under
transformations. Eagerly it calls the function at once; under `jit` it lowers to a
host callback; under `vmap` its `vmap_method` decides (`vmap_methods`); it cannot be
differentiated (wrap it in `custom_jvp`/`custom_vjp`).
"""
from __future__ import annotations

from typing import Any, Callable

from plax.extend import tree_util
from plax.extend.core import Primitive
from plax_transforms.host_callback import (FlatCallback, eager_call, lower_call,
                                           result_avals as flat_result_avals)
from plax_transforms.vmap_methods import batch_call, check_vmap_method

API = "plax.pure_callback"

pure_callback_p = Primitive("callbacks.pure_callback", multiple_results=True)
pure_callback_p.def_abstract_eval(lambda *avals, result_avals, **_: list(result_avals))


pure_callback_p.def_impl(lambda *args, callback, result_avals, vmap_method: eager_call(
    callback, args, result_avals, API))
pure_callback_p.def_lowering(lambda ctx, *args, callback, result_avals, vmap_method: lower_call(
    ctx, callback, args, result_avals, API, has_side_effect=False))


def _batching(axis_data, args, dims, *, callback, result_avals, vmap_method):
    def rebind(new_args, avals, leading_batch):
        return pure_callback_p.bind(*new_args, callback=callback, result_avals=avals,
                                    vmap_method=vmap_method)
    return batch_call(rebind, axis_data.size, args, dims, vmap_method=vmap_method,
                      result_avals=result_avals, what="pure_callback")


def _not_differentiable(*args, **params):
    raise ValueError("Pure callbacks do not support JVP. Please use `plax.custom_jvp` to use "
                     "callbacks while taking gradients.")


def _not_transposable(*args, **params):
    raise ValueError("Pure callbacks do not support transpose. Please use "
                     "`plax.custom_vjp` to use callbacks while taking gradients.")


pure_callback_p.define_rule("batching", _batching)
pure_callback_p.define_rule("jvp", _not_differentiable)
pure_callback_p.define_rule("transpose", _not_transposable)


def pure_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                  sharding=None, vmap_method: str | None = None, **kwargs: Any):
    """`callback(*args, **kwargs)`, a pure function of arrays returning arrays shaped like
    `result_shape_dtypes` (a pytree of objects with `shape` and `dtype`), callable
    from staged code. It sees plax Arrays on the CPU; under `vmap` it is batched by
    `vmap_method` ("sequential", "sequential_unrolled", "expand_dims",
    "broadcast_all" or "legacy_vectorized")."""
    if not callable(callback):
        raise TypeError(f"{API}: callback must be callable, got {type(callback).__name__}")
    check_vmap_method(vmap_method, API)
    if sharding is not None:
        raise NotImplementedError(f"{API}: the sharding argument is not supported")
    avals, out_tree = flat_result_avals(result_shape_dtypes, API)
    flat_args, in_tree = tree_util.tree_flatten((args, kwargs))
    outs = pure_callback_p.bind(*flat_args, callback=FlatCallback(callback, in_tree),
                                result_avals=avals, vmap_method=vmap_method)
    return tree_util.tree_unflatten(out_tree, outs)

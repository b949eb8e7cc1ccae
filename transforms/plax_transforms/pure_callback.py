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
    """Calls a Python function on the host from inside staged (jitted,
    vmapped...) code.

    The callback must be pure: plax may call it several times, or not at all if
    its result is unused. It receives plax Arrays (on the CPU) and must return
    values shaped like `result_shape_dtypes`. Under `vmap`, `vmap_method` says
    how a batch is handled: `"sequential"` (one call per example),
    `"sequential_unrolled"`, `"expand_dims"` (one call, unbatched arguments
    given a size-1 axis), `"broadcast_all"` (one call, every argument
    broadcast to the batch) or `"legacy_vectorized"`. It has no derivative:
    wrap it in `custom_jvp`/`custom_vjp` to differentiate.

    Args:
        callback: the host function, called as `callback(*args, **kwargs)`.
        result_shape_dtypes: a pytree of objects with `shape` and `dtype`
            (`ShapeDtypeStruct`s, arrays) describing the callback's results.
        *args: the arguments (pytrees of arrays).
        sharding: the sharding of the results.
        vmap_method: how the callback is batched under `vmap` (see above); with
            None, batching it is an error.
        **kwargs: more keyword arguments for `callback`.

    Returns:
        The callback's results as plax arrays, shaped as `result_shape_dtypes`.

    Raises:
        JaxRuntimeError: (when the program runs) the callback's results do not
            match `result_shape_dtypes`.
        NotImplementedError: batched by `vmap` without a `vmap_method`.

    Examples:
        >>> import numpy as np
        >>> import plax, plax.numpy as jnp
        >>> def host_sort(x):
        ...     return np.sort(np.asarray(x))
        >>> @plax.jit
        ... def f(x):
        ...     spec = plax.ShapeDtypeStruct(x.shape, x.dtype)
        ...     return plax.pure_callback(host_sort, spec, x)
        >>> f(jnp.array([3.0, 1.0, 2.0]))
        Array([1., 2., 3.], dtype=float32)
    """
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

"""`check`: a user's assertion on traced values, as the primitive `check`.

Outside `checkify`, a check runs eagerly and raises at once when its predicate is
false; staged without `checkify` (under `jit`, in a loop body) it is an error, as
in JAX, because nothing could report it. Inside `checkify`'s trace it is recorded
(its effect keeps it through DCE), and checkify's interpreter turns it into an
update of the error state.
"""
from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
from jaxlib._jax import config as _jaxlib_config

from plax.extend import tree_util
from plax.extend.core import Primitive, Tracer, get_aval
from plax_stdlib import numpy as jnp
from plax_transforms.checkify.errors import Error, FailedCheckError, JaxRuntimeError

# Whether checkify is tracing the function: part of the trace context, so that jit
# caches keep what was traced for checkify (with checks inside) apart.
_functionalizing = _jaxlib_config.Config("plax_checkify_functionalizing", False,
                                         include_in_jit_key=True,
                                         include_in_trace_context=True)


@contextlib.contextmanager
def functionalizing():
    previous = _functionalizing.swap_local(True)
    try:
        yield
    finally:
        _functionalizing.set_local(previous)


def is_functionalizing() -> bool:
    return bool(_functionalizing.value)


class CheckEffect:
    """The effect of a check: it must not be removed as dead code."""

    def __repr__(self):
        return "Check"


check_effect = CheckEffect()

check_p = Primitive("checkify.check", multiple_results=True)
check_p.define_rule("effects", lambda **_: {check_effect})


def describe_check(fmt: str, fmt_tree, values) -> str:
    args, kwargs = tree_util.tree_unflatten(fmt_tree, list(values))
    return fmt.format(*args, **kwargs) + " (`check` failed)"


def _not_functionalized(*_, **__):
    if not is_functionalizing():
        raise ValueError("Cannot abstractly evaluate a checkify.check which was not "
                         "functionalized. This probably means you tried to stage "
                         "(jit/scan/...) a `check` without functionalizing it through "
                         "`checkify.checkify`.")
    return []


def _check_primals(prim: Primitive):
    """The jvp rule of a check: it checks the primals; it has no outputs to have
    tangents."""
    return lambda primals, tangents, **params: (prim.bind(*primals, **params), [])


@check_p.def_impl
def _check_impl(pred, *values, fmt, fmt_tree):
    if not np.all(np.asarray(pred)):
        raise JaxRuntimeError(describe_check(fmt, fmt_tree, [np.asarray(v) for v in values]))
    return []


check_p.def_abstract_eval(_not_functionalized)
check_p.def_jvp(_check_primals(check_p))


@check_p.def_batching
def _check_batching(axis_data, args, dims, **params):
    pred, *values = args
    if dims[0] is not None:
        pred = jnp.all(pred)
    return check_p.bind(pred, *values, **params), []


def check(pred: Any, msg: str, *fmt_args: Any, **fmt_kwargs: Any) -> None:
    """Asserts the scalar boolean `pred`. Under `checkify` a false `pred` becomes the
    error `msg.format(*fmt_args, **fmt_kwargs)`; run eagerly, it raises at once."""
    if not isinstance(msg, str):
        raise TypeError(f"check: msg must be a str, got {msg!r}")
    try:
        aval = get_aval(pred)
    except TypeError:
        raise TypeError(f"check takes a scalar boolean pred as argument, got {pred!r}") from None
    if aval.shape != () or aval.dtype != np.bool_:
        raise TypeError(f"check takes a scalar boolean pred as argument, got "
                        f"{aval.str_short()}")
    leaves, fmt_tree = tree_util.tree_flatten((fmt_args, fmt_kwargs))
    for leaf in leaves:
        if not (isinstance(leaf, (Tracer, np.ndarray, np.generic)) or hasattr(leaf, "aval")):
            raise TypeError("Formatting arguments to checkify.check need to be PyTrees of "
                            f"arrays, but got {leaf!r} of type {type(leaf)}.")
    check_p.bind(pred, *leaves, fmt=msg, fmt_tree=fmt_tree)


def debug_check(pred: Any, msg: str, *fmt_args: Any, **fmt_kwargs: Any) -> None:
    """A `check` that only `checkify` evaluates; anywhere else it does nothing."""
    if is_functionalizing():
        check(pred, msg, *fmt_args, **fmt_kwargs)


# --- merging an Error value into the enclosing checkify --------------------------------

check_error_p = Primitive("checkify.check_error", multiple_results=True)
check_error_p.define_rule("effects", lambda **_: {check_effect})
check_error_p.def_abstract_eval(_not_functionalized)
check_error_p.def_jvp(_check_primals(check_error_p))


@check_error_p.def_impl
def _check_error_impl(*leaves, error_tree):
    tree_util.tree_unflatten(error_tree, list(leaves)).throw()
    return []


def check_error(error: Error) -> None:
    """Raises `error` if it holds one; inside `checkify`, makes it that function's
    error (if it has none before)."""
    if not isinstance(error, Error):
        raise TypeError(f"check_error takes a checkify Error, got {type(error).__name__}")
    leaves, error_tree = tree_util.tree_flatten(error)
    if leaves:
        check_error_p.bind(*leaves, error_tree=error_tree)


__all__ = ["FailedCheckError", "check", "check_error", "debug_check"]

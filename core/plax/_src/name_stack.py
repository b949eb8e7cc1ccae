"""Name stacks: the `named_scope`s an equation was staged under (and its source: the
traceback of the user's line, kept when the equation is staged again).

`named_scope("layer")` pushes a name for the equations staged inside it; each
equation records the stack (`eqn.name_stack`, `"layer/dense"`) relative to the
Jaxpr it belongs to: tracing a Jaxpr starts from an empty stack, and re-binding an
equation (inlining, transformations) pushes its names onto the current ones.
Lowering prefixes them to each op's location name (`jit(f)/layer/dense/sin`), which
XLA keeps as the op's name in compiled HLO and in profiles.
"""
from __future__ import annotations

import contextlib
import functools
import threading
from typing import Callable, Iterator

from jaxlib import _jax

_state = threading.local()


def current_name_stack() -> str:
    """The names of the scopes being staged in now, joined by `/` ("" outside any)."""
    return getattr(_state, "stack", "")


@contextlib.contextmanager
def _name_stack_set(stack: str) -> Iterator[None]:
    previous, _state.stack = current_name_stack(), stack
    try:
        yield
    finally:
        _state.stack = previous


def extend_name_stack(names: str) -> contextlib.AbstractContextManager:
    """Push `names` (one name, or several joined by `/`) for the duration."""
    previous = current_name_stack()
    return _name_stack_set(f"{previous}/{names}" if previous and names else previous or names)


def fresh_name_stack() -> contextlib.AbstractContextManager:
    """An empty stack while tracing a new Jaxpr (its names are relative to it)."""
    return _name_stack_set("")


def current_source_info():
    """Where the user applied a primitive: a cheap C++ traceback, filtered when shown;
    while a Jaxpr is evaluated, the traceback its equation was staged with, so that
    what its transformations stage points at the user's line (as JAX's)."""
    return getattr(_state, "source", None) or _jax.Traceback.get_traceback()


def swap_source_info(traceback):
    """Make `traceback` (None: each primitive's own) the source of what is staged from
    now on; → the one it replaces."""
    previous, _state.source = getattr(_state, "source", None), traceback
    return previous


class named_scope(contextlib.ContextDecorator):
    """Names the operations staged inside a block or function.

    The name prefixes each operation's location in the lowered program
    (`jit(f)/scale/mul`), so it shows in profiles, HLO dumps and compiler error
    messages. It changes nothing about what is computed.

    Args:
        name: the scope's name (a string).

    Raises:
        TypeError: `name` is not a string.

    Examples:
        >>> import plax
        >>> def f(x):
        ...     with plax.named_scope("scale"):
        ...         return x * 2.0
        >>> "jit(f)/scale/mul" in plax.jit(f).lower(1.0).as_text(debug_info=True)
        True
    """

    def __init__(self, name: str):
        if not isinstance(name, str):
            raise TypeError("named_scope name argument must be a string.")
        self.name = name
        self._contexts: list = []

    def __enter__(self):
        context = extend_name_stack(self.name)
        context.__enter__()
        self._contexts.append(context)
        return self

    def __exit__(self, *exc):
        return self._contexts.pop().__exit__(*exc)


def named_call(fun: Callable, *, name: str | None = None) -> Callable:
    """Wraps `fun` so that the operations it stages are under a name scope.

    Equivalent to running `fun`'s body inside `with plax.named_scope(name):`.

    Args:
        fun: the function to wrap.
        name: the scope's name (default: `fun.__name__`).

    Returns:
        A function computing the same as `fun`.

    Examples:
        >>> import plax
        >>> inc = plax.named_call(lambda x: x + 1, name="inc")
        >>> "jit(<lambda>)/inc/add" in plax.jit(inc).lower(1.0).as_text(debug_info=True)
        True
    """
    scope_name = name if name is not None else getattr(fun, "__name__", "fun")

    @functools.wraps(fun)
    def named(*args, **kwargs):
        with extend_name_stack(scope_name):
            return fun(*args, **kwargs)
    return named

"""Splitting a call's arguments into static and dynamic parts, shared by the APIs
that trace (`make_jaxpr`, `jit`, `eval_shape`...).

Dynamic arguments are flattened in one order everywhere: positional arguments
first, then keyword arguments sorted by name (a dict flattens sorted). Debug-info
argument names follow the same order.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence


def split_static(args: Sequence[Any], kwargs: dict, static_argnums: Sequence[int],
                 static_argnames: Sequence[str]):
    """→ (dynamic args, dynamic kwargs, static args as (index, value), static kwargs)."""
    statics = {i if i >= 0 else i + len(args) for i in static_argnums}
    dyn_args = tuple(a for i, a in enumerate(args) if i not in statics)
    static_args = tuple((i, a) for i, a in enumerate(args) if i in statics)
    dyn_kwargs = {k: v for k, v in kwargs.items() if k not in static_argnames}
    static_kwargs = tuple(sorted((k, v) for k, v in kwargs.items() if k in static_argnames))
    return dyn_args, dyn_kwargs, static_args, static_kwargs


def bind_static(fun: Callable, static_args, static_kwargs) -> Callable:
    """`fun` with its static arguments put back around the dynamic ones."""
    if not static_args and not static_kwargs:
        return fun

    @functools.wraps(fun)
    def with_statics(*dyn_args, **dyn_kwargs):
        args, dyn = [], iter(dyn_args)
        positions = dict(static_args)
        for i in range(len(dyn_args) + len(static_args)):
            args.append(positions[i] if i in positions else next(dyn))
        return fun(*args, **dyn_kwargs, **dict(static_kwargs))
    return with_statics


def check_callable(fun, api: str) -> None:
    """The TypeError every transformation raises when given something to call that
    is not callable (at decoration time, not at the first call)."""
    if not callable(fun):
        raise TypeError(f"Expected a callable value, got {fun!r} of type "
                        f"{type(fun).__name__}, as the function to {api}")


def normalize_argnums(argnums, name: str) -> tuple[int, ...]:
    """An int or a sequence of ints, validated."""
    if argnums is None:
        return ()
    if isinstance(argnums, int):
        return (argnums,)
    try:
        nums = tuple(argnums)
    except TypeError:
        raise TypeError(f"{name} must be an int or a sequence of ints, got {argnums!r}") from None
    if not all(isinstance(i, int) for i in nums):
        raise TypeError(f"{name} must be an int or a sequence of ints, got {argnums!r}")
    return nums

"""`jax.extend.linear_util`: JAX's wrapped functions, as far as libraries build them
(flax's `partial_eval_by_shape` and `lazy_init`): a function with its params and
debug info, and transformations stacked on it (`api_util.flatten_fun*`)."""
from __future__ import annotations

from collections.abc import Callable

PLAX_MODULE = None


class Store:
    """A value a transformation sets while the function runs (an output treedef)."""
    __slots__ = ("_value",)
    _EMPTY = object()

    def __init__(self):
        self._value = Store._EMPTY

    def store(self, value) -> None:
        if self._value is not Store._EMPTY:
            raise ValueError("Store occupied: the wrapped function ran twice")
        self._value = value

    @property
    def val(self):
        if self._value is Store._EMPTY:
            raise ValueError("Store empty: the wrapped function has not run yet")
        return self._value

    def __call__(self):
        return self.val


class WrappedFun:
    """`f` with keyword `params`, and the transformations applied to it, innermost
    first: each is `transform(call, *args)` wrapping the call below it."""

    def __init__(self, f: Callable, params: dict, transforms: tuple = (), debug_info=None):
        self.f, self.params, self.transforms = f, dict(params), transforms
        self.debug_info = debug_info

    @property
    def __name__(self):
        return getattr(self.f, "__name__", "<unnamed function>")

    def wrap(self, transform: Callable) -> WrappedFun:
        return WrappedFun(self.f, self.params, (*self.transforms, transform), self.debug_info)

    def call_wrapped(self, *args):
        call = lambda *xs: self.f(*xs, **self.params)
        for transform in self.transforms:
            call = (lambda t, inner: lambda *xs: t(inner, *xs))(transform, call)
        return call(*args)

    def __repr__(self):
        return f"Wrapped function: {self.__name__} ({len(self.transforms)} transformations)"


def wrap_init(f: Callable, params=None, *, debug_info=None) -> WrappedFun:
    return WrappedFun(f, params or {}, (), debug_info)

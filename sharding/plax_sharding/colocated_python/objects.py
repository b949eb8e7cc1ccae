"""`colocated_python_class(cls)`: a wrapper class whose methods run on a real instance
of `cls` made on the hosts of the arguments' devices.

The wrapper keeps the constructor's arguments; each method is a colocated function
that ships them with `cls` and the method's name (`_MethodCall`). The first method
call makes the instance on its host (once, whichever method comes first), and the
instance lives in this process's `_INSTANCES` while the wrapper or one of its methods
does.
"""
from __future__ import annotations

import functools
import inspect
import itertools
import threading
from collections.abc import Callable
from typing import Any

from plax.extend.tree_util import tree_leaves
from plax_sharding.colocated_python.functions import colocated_python, spec_of


def colocated_python_class(cls: type) -> type:
    """A class like `cls` whose instances run their methods as colocated Python.

    `Wrapper(*args, **kwargs)` only keeps the arguments: the real `cls(*args,
    **kwargs)` is made on the first method call, on the hosts of that call's arguments'
    devices, and dropped when the wrapper is. Methods take and return Arrays as
    colocated functions do, and each has `specialize`.

    Examples:
        >>> import plax
        >>> from plax.experimental.colocated_python import colocated_python_class
        >>> class Adder:
        ...     def __init__(self, increment):
        ...         self.increment = increment
        ...     def add(self, x):
        ...         return x + self.increment
        >>> adder = colocated_python_class(Adder)(1)
        >>> adder.add(plax.device_put(1, plax.devices()[0]))
        Array(2, dtype=int32, weak_type=True)
    """

    class WrappedClass:
        @functools.wraps(cls.__init__)
        def __init__(self, *init_args, **init_kwargs) -> None:
            self._colocated_python_uid = uid = next(_uids)
            lifetime = _Lifetime(uid)
            for name, original in _methods(cls):
                call = colocated_python(_MethodCall(uid, cls, init_args, init_kwargs, name))
                setattr(self, name, _method(call, original, lifetime))

    WrappedClass.__name__ = cls.__name__
    WrappedClass.__doc__ = cls.__doc__
    return WrappedClass


def _methods(cls: type) -> list[tuple[str, Callable[..., Any]]]:
    """The functions of `cls` a wrapper forwards: all but construction, deletion and
    pickling, which the wrapper does itself."""
    return [(name, member) for name in dir(cls)
            if inspect.isfunction(member := getattr(cls, name))
            and name not in ("__init__", "__del__", "__reduce__", "__reduce_ex__")]


def _method(call: Callable[..., Any], original: Callable[..., Any],
            lifetime: _Lifetime) -> Callable[..., Any]:
    """The wrapper's method: arguments must be Arrays (their devices say where the
    instance lives), and so must the results of a call without arguments. It holds
    `lifetime` (through its `specialize`)."""

    def method(*args, **kwargs):
        arguments = tree_leaves((args, kwargs))
        for x in arguments:
            spec_of(x)
        result = call(*args, **kwargs)
        if not arguments:
            for x in tree_leaves(result):
                spec_of(x)
        return result

    functools.update_wrapper(method, original)
    method.specialize = lambda *args, **kwargs: _method(call.specialize(*args, **kwargs),
                                                        original, lifetime)
    return method


class _Lifetime:
    """Held by a wrapper's methods: the real instance is dropped with the last."""

    def __init__(self, uid: int):
        self.uid = uid

    def __del__(self):
        _INSTANCES.drop(self.uid)


class _MethodCall:
    """`<instance>.<name>(...)`, the instance made by `cls(*init_args, **init_kwargs)`
    the first time: what a method ships to its host."""
    __slots__ = ("uid", "cls", "init_args", "init_kwargs", "name")

    def __init__(self, uid: int, cls: type, init_args: tuple, init_kwargs: dict, name: str):
        self.uid, self.cls, self.name = uid, cls, name
        self.init_args, self.init_kwargs = init_args, init_kwargs

    def __call__(self, *args, **kwargs):
        instance = _INSTANCES.get_or_make(
            self.uid, lambda: self.cls(*self.init_args, **self.init_kwargs))
        return getattr(instance, self.name)(*args, **kwargs)


class _Instance:
    """One instance's slot: made once (or its constructor's exception kept)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.made = False
        self.value: Any = None
        self.error: Exception | None = None


class _Instances:
    """The real instances living in this process, by their wrappers' ids."""

    def __init__(self):
        self._lock = threading.Lock()
        self._slots: dict[int, _Instance] = {}

    def get_or_make(self, uid: int, make: Callable[[], Any]) -> Any:
        with self._lock:
            slot = self._slots.setdefault(uid, _Instance())
        with slot.lock:  # concurrent first calls wait for one construction
            if not slot.made:
                try:
                    slot.value = make()
                except Exception as err:
                    slot.error = err
                slot.made = True
        if slot.error is not None:
            raise slot.error
        return slot.value

    def drop(self, uid: int) -> None:
        with self._lock:
            self._slots.pop(uid, None)


_INSTANCES = _Instances()
_uids = itertools.count()

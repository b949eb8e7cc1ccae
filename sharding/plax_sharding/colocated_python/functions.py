"""`colocated_python(fun)`: a callable that runs `fun` on the hosts of its arguments'
devices, specializable with the input specs, an output-spec function and the devices.

A specialization is the function shipped (pickled, `pickling.py`) for one input
signature: its arguments' shapes, dtypes, shardings and pytree structure, or the one
`in_specs` fixes. JAX's runtime needs the outputs' specs before it can run a call
asynchronously, so a call with none learns them by running a copy of the function once,
synchronously (its outputs must then be Arrays); later calls run a second copy. This
process is the only host, so every call runs here, synchronously, on the arguments
themselves, and returns what the function returns, as JAX's runtime without a
colocated-Python backend does.
"""
from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Callable, Sequence
from typing import Any

from plax.extend.core import ShapeDtypeStruct
from plax.extend.tree_util import tree_flatten, tree_leaves, tree_map
from plax_runtime.array import Array
from plax_sharding.colocated_python.pickling import roundtrip


def colocated_python(fun: Callable[..., Any]) -> Callable[..., Any]:
    """`fun` run on the same devices' hosts as its arguments (Arrays, in any pytree).

    The result calls like `fun` and has `specialize(in_specs=None, out_specs_fn=None,
    devices=None)`, which returns a callable that also knows the input specs (a
    pytree of `ShapeDtypeStruct`s for `(args, kwargs)`), a function from the input
    specs to the output specs, or the devices to run on (needed by a function
    without arguments). `fun` is pickled with cloudpickle to be shipped.

    Raises (when called):
        ValueError: no devices (no arguments and no specialized devices); arguments on
            different device lists; a first call without output specs whose outputs
            are not all Arrays.
        AttributeError: an argument that is not an Array (unless `in_specs` is given).
        ModuleNotFoundError: cloudpickle is not installed.

    Examples:
        >>> import plax
        >>> from plax.experimental.colocated_python import colocated_python
        >>> add_one = colocated_python(lambda x: x + 1)
        >>> add_one(plax.device_put(1, plax.devices()[0]))
        Array(2, dtype=int32, weak_type=True)
    """
    return _make_callable(fun, _Specialization())


@dataclasses.dataclass(frozen=True)
class _Specialization:
    """What `specialize` was told; each can be told once."""
    in_specs: Any = None
    out_specs_fn: Callable[..., Any] | None = None
    devices: tuple | None = None

    def update(self, **given) -> _Specialization:
        given = {name: value for name, value in given.items() if value is not None}
        for name in given:
            if getattr(self, name) is not None:
                raise ValueError(f"{name} already specified")
        return dataclasses.replace(self, **given)


def _make_callable(fun: Callable[..., Any], specialization: _Specialization):
    runs: dict[Any, _Run] = {}  # by input signature (None: the one `in_specs` fixes)
    lock = threading.Lock()

    def specialize(in_specs: Any = None, out_specs_fn: Callable[..., Any] | None = None,
                   devices: Sequence | None = None):
        """This callable, also specialized with the input specs (a pytree of
        `ShapeDtypeStruct`s for `(args, kwargs)`), the function giving the output
        specs from the input specs, or the devices to run on."""
        return _make_callable(fun, specialization.update(
            in_specs=in_specs, out_specs_fn=out_specs_fn,
            devices=None if devices is None else tuple(devices)))

    def call(*args, **kwargs):
        leaves, treedef = tree_flatten((args, kwargs))
        fixed = specialization.in_specs is not None or not leaves
        key = None if fixed else (treedef, tuple(_signature(x) for x in leaves))
        with lock:
            run = runs.get(key)
            if run is None:
                if specialization.devices is None and _argument_devices(leaves) is None:
                    raise ValueError("No devices found. colocated_python function without "
                                     "input arguments must be first specialized with devices.")
                run = runs[key] = _Run(fun, specialization.out_specs_fn)
        return run(*args, **kwargs)

    functools.update_wrapper(call, fun)
    call.specialize = specialize
    return call


class _Run:
    """`fun` specialized to one input signature: the copy of it a host received."""

    def __init__(self, fun: Callable[..., Any], out_specs_fn: Callable[..., Any] | None):
        self._fun, self._out_specs_fn = fun, out_specs_fn
        self._received: Callable[..., Any] | None = None
        self._lock = threading.Lock()

    def __call__(self, *args, **kwargs):
        with self._lock:
            if self._received is None:
                if self._out_specs_fn is None:
                    result = roundtrip(self._fun)(*args, **kwargs)
                    for leaf in tree_leaves(result):
                        spec_of(leaf)
                    self._received = roundtrip(self._fun)
                    return result
                _check_specs(self._out_specs_fn(*tree_map(spec_of, args),
                                                **tree_map(spec_of, kwargs)))
                self._received = roundtrip(self._fun)
        return self._received(*args, **kwargs)  # outside the lock: threads run concurrently


def spec_of(x: Any) -> ShapeDtypeStruct:
    """The `ShapeDtypeStruct` of an Array that goes in or out of a colocated call."""
    if not isinstance(x, Array):
        raise ValueError("colocated_python only supports jax.Array as input and output, "
                         f"but got {type(x)}.")
    return ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding)


def _signature(x: Any) -> tuple:
    # JAX's reads the attributes first, so a non-Array raises its AttributeError.
    if not isinstance(x, Array):
        raise AttributeError("colocated_python only supports jax.Array as input, but got "
                             f"{type(x)}; specialize it with in_specs to pass other values")
    return x.shape, x.dtype, x.sharding


def _argument_devices(leaves: Sequence[Any]) -> tuple | None:
    """The device list the arguments share (None if none has a sharding)."""
    device_lists = {tuple(x.sharding._device_assignment) for x in leaves
                    if getattr(x, "sharding", None) is not None}
    if len(device_lists) > 1:
        raise ValueError("All arguments must use the same device list, but got multiple "
                         f"device lists: {device_lists}.")
    return device_lists.pop() if device_lists else None


def _check_specs(out_specs: Any) -> None:
    for leaf in tree_leaves(out_specs):
        if not (hasattr(leaf, "shape") and hasattr(leaf, "dtype")):
            raise AttributeError("colocated_python's out_specs_fn must return a pytree of "
                                 f"jax.ShapeDtypeStruct, but got {leaf!r}")

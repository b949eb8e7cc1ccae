"""`pmap`: map a function over an array axis, one slice per device, on shard_map + jit.

`pmap(f, axis_name='i')(x)` is `jit` of a `shard_map` over a 1-D mesh `('i',)` of
the first `x.shape[0]` devices: each mapped argument is split along its `in_axes`
axis (`P(None, ..., 'i')`), the body squeezes that axis off each block, calls `f`,
and puts the axis back at `out_axes`, whose specs assemble the results, which are
sharded Arrays over those devices. Collectives in `f` name `'i'` (`check_vma` is off,
as in JAX: psum transposes to psum).

The jitted function has `f`'s signature and `static_broadcasted_argnums` as static
arguments, so traces are cached per signature and `pmap(f).lower(x)` names `f`'s
arguments and results (JAX 0.10.2 names them `args[0]`...): the names survive
`pmap(grad(f))`, `jit(pmap(f))`, and `make_jaxpr(pmap(f))` holds the inner Jaxpr with
them.

A pmap called while an outer pmap's body is traced maps over a further axis of one
device grid: each level's shard_map runs on the mesh of all levels' axes (the
outermost level's devices), manual over its own axis; the inner levels' axes are
known once the body is traced, which is when each level binds.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import math
import threading
from typing import Any, Callable, Hashable, Sequence

import numpy as np

from plax.extend.traceback_util import api_boundary
from plax.extend import tree_util
from plax.extend.core import (
    check_callable,
    get_aval,
    make_tracing_debug_info,
    normalize_argnums,
)
from plax_runtime import api as runtime_api
from plax_stdlib.lax import shape_ops
from plax_transforms.jit import jit
from plax_sharding import multihost_utils
from plax_sharding.mesh import AbstractMesh, Mesh
from plax_sharding.partition_spec import PartitionSpec
from plax_sharding.shard_map import apply_shard_map

_DEFAULT_AXIS_NAME = "_internal_pmap_axis_name"


@dataclasses.dataclass
class _Level:
    """One pmap whose body is being traced: its axis, and the axes of pmaps inside it
    (filled in by the first inner pmap that binds)."""
    name: Hashable
    size: int
    devices: tuple
    inner: tuple | None = None


class _Levels(threading.local):
    def __init__(self):
        self.stack: list[_Level] = []


_levels = _Levels()


def pmap(fun: Callable, axis_name: Hashable | None = None, *, in_axes: Any = 0,
         out_axes: Any = 0, static_broadcasted_argnums: int | Sequence[int] = (),
         devices: Sequence | None = None, backend: str | None = None,
         axis_size: int | None = None, donate_argnums: int | Sequence[int] = ()):
    """Maps `fun` over a leading axis of its arguments, running each slice on its
    own device, in parallel.

    The mapped axis's size must not exceed the number of devices. Inside `fun`,
    collectives such as `lax.psum(x, axis_name)` combine values across the
    slices. plax implements `pmap` on top of `shard_map`; new code may prefer
    `shard_map` or `jit` with shardings, which JAX recommends too.

    Args:
        fun: the function to map; it sees one slice (without the mapped axis).
        axis_name: a name for the mapped axis, for collectives inside `fun`.
        in_axes: which axis of each argument to map over (an int, None for an
            argument broadcast to every device, or a pytree prefix of the
            arguments).
        out_axes: where the mapped axis goes in each output.
        static_broadcasted_argnums: arguments that are Python values, passed
            unchanged to every device (a new value recompiles).
        devices: the devices to use (default: the first ones of the default
            backend).
        backend: a platform name to run on.
        axis_size: the mapped size, needed when no argument is mapped.
        donate_argnums: arguments whose buffers the outputs may reuse.

    Returns:
        The mapped function; its outputs are Arrays with the mapped axis at
        `out_axes`, one slice on each device.

    Raises:
        ValueError: the mapped axis is larger than the number of devices, or the
            mapped arguments have different sizes along their mapped axes.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> plax.pmap(lambda x: x * 2)(jnp.arange(4.0))
        Array([0., 2., 4., 6.], dtype=float32)
        >>> center = plax.pmap(lambda x: x - plax.lax.pmean(x, "i"), axis_name="i")
        >>> center(jnp.arange(4.0))
        Array([-1.5, -0.5,  0.5,  1.5], dtype=float32)
    """
    check_callable(fun, "pmap")
    for what, axes in (("in_axes", in_axes), ("out_axes", out_axes)):
        if not all(type(a) is int for a in tree_util.tree_leaves(axes)):
            raise TypeError(f"pmap {what} must be an int, None, or (nested) container with "
                            f"those types as leaves, but got {axes}.")
    if devices is not None:
        devices = tuple(devices)
        if not devices:
            raise ValueError("'devices' argument to pmap must be non-empty, or None.")
    statics = normalize_argnums(static_broadcasted_argnums, "static_broadcasted_argnums")
    donated = normalize_argnums(donate_argnums, "donate_argnums")
    return PmapFunction(fun, _DEFAULT_AXIS_NAME if axis_name is None else axis_name,
                        in_axes, out_axes, statics, donated, devices, backend, axis_size)


class PmapFunction:
    """A pmapped function: call it, or `.lower(...)` it."""

    def __init__(self, fun, axis_name, in_axes, out_axes, statics, donated, devices, backend,
                 axis_size):
        self._fun, self._axis_name = fun, axis_name
        self._in_axes, self._out_axes = in_axes, out_axes
        self._statics, self._devices, self._backend = statics, devices, backend
        self._axis_size = axis_size

        # JAX's pmap jits a function of its own, `_fun`, whatever `fun` is named: Jaxprs
        # and lowered modules (jit__fun) print that name; its arguments keep `fun`'s.
        def _fun(*args, **kwargs):
            return self._map(args, kwargs)
        with contextlib.suppress(ValueError, TypeError):  # (a builtin may have none)
            _fun.__signature__ = inspect.signature(fun)
        self._jitted = jit(_fun, static_argnums=statics, donate_argnums=donated)
        functools.update_wrapper(self, fun, updated=())  # not __dict__: it holds our fields

    @api_boundary
    def __call__(self, *args, **kwargs):
        if _levels.stack:  # inside an outer pmap's body: one more axis of its grid
            return self._map(args, kwargs)
        self._check_statics(args)
        if runtime_api.process_count(self._backend) > 1:
            return self._call_across_processes(args, kwargs)
        return self._jitted(*args, **kwargs)

    def _call_across_processes(self, args, kwargs):
        """In a multi-process run each process passes and gets back its own slices (a
        mapped axis as long as its local device count), as in JAX: they are joined into
        global arrays over every process's devices for the call, and the results are
        split back into this process's part."""
        positions = [i for i in range(len(args)) if i not in self._statics]
        dyn_args = tuple(args[i] for i in positions)
        leaves, tree = tree_util.tree_flatten((dyn_args, kwargs))
        axes = self._flat_in_axes(args, positions, dyn_args, kwargs)
        mesh = Mesh(np.array(self._devices_in_order()), (self._axis_name,))
        specs = [PartitionSpec() if a is None else
                 PartitionSpec(*[None] * (a % get_aval(x).ndim), self._axis_name)
                 for x, a in zip(leaves, axes)]
        dyn, kw = tree_util.tree_unflatten(tree, [
            multihost_utils.host_local_array_to_global_array(x, mesh, spec)
            for x, spec in zip(leaves, specs)])
        full = list(args)
        for i, value in zip(positions, dyn):
            full[i] = value
        outs, out_tree = tree_util.tree_flatten(self._jitted(*full, **kw))
        return tree_util.tree_unflatten(out_tree, [
            multihost_utils.global_array_to_host_local_array(o, o.sharding.mesh,
                                                             o.sharding.spec)
            for o in outs])

    def lower(self, *args, **kwargs):
        """The jitted shard_map lowered for these arguments (names from `fun`)."""
        self._check_statics(args)
        return self._jitted.lower(*args, **kwargs)

    def _check_statics(self, args) -> None:
        if self._statics and max(self._statics) >= len(args):
            raise ValueError(
                f"pmapped function has static_broadcasted_argnums={self._statics} but was "
                f"called with only {len(args)} positional argument"
                f"{'s' if len(args) != 1 else ''}. All static broadcasted arguments must be "
                "passed positionally.")

    # --- one call (traced by the jit, or inside an outer pmap) -------------------------

    def _map(self, args, kwargs):
        fun, name = self._fun, self._axis_name
        dbg = make_tracing_debug_info("pmap", fun, args, kwargs,
                                      static_argnums=self._statics)
        positions = [i for i in range(len(args)) if i not in self._statics]
        dyn_args = tuple(args[i] for i in positions)
        leaves, tree = tree_util.tree_flatten((dyn_args, kwargs))
        axes = self._flat_in_axes(args, positions, dyn_args, kwargs)
        names = dbg.arg_names or ("",) * len(leaves)
        size, axes = self._mapped_size(leaves, axes, names)
        level = _Level(name, size, self._level_devices(size))
        specs = tuple(PartitionSpec() if a is None else PartitionSpec(*[None] * a, name)
                      for a in axes)
        out_axes, out_where = self._out_axes, []

        def body(*blocks):
            flat = [b if a is None else shape_ops.squeeze(b, (a,)) for b, a in zip(blocks, axes)]
            dyn, kw = tree_util.tree_unflatten(tree, flat)
            full = list(args)
            for i, value in zip(positions, dyn):
                full[i] = value
            _levels.stack.append(level)
            try:
                out = fun(*full, **kw)
            finally:
                _levels.stack.pop()
            outs, out_tree = tree_util.tree_flatten(out)
            out_where[:] = [None if a is None else a % (get_aval(o).ndim + 1)
                            for o, a in zip(outs, _out_axes_flat(out_axes, out_tree))]
            outs = [o if a is None else shape_ops.expand_dims(o, (a,))
                    for o, a in zip(outs, out_where)]
            return tree_util.tree_unflatten(out_tree, outs)

        def out_specs(out_tree):
            return [PartitionSpec() if a is None else PartitionSpec(*[None] * a, name)
                    for a in out_where]

        return apply_shard_map(body, tuple(leaves), mesh=AbstractMesh((size,), (name,)),
                               manual_axes=(name,), in_specs=specs, out_specs=out_specs,
                               check_vma=False, debug_info=dbg,
                               bind_mesh=lambda: _grid_mesh(level))

    def _flat_in_axes(self, args, positions, dyn_args, kwargs) -> list:
        in_axes = self._in_axes
        if isinstance(in_axes, list):
            in_axes = tuple(in_axes)
        if isinstance(in_axes, tuple):
            if len(in_axes) != len(args):
                raise ValueError(f"pmap in_axes specification must be a tree prefix of the "
                                 f"corresponding value, got specification {in_axes} for "
                                 f"value tree with {len(args)} positional arguments")
            in_axes = tuple(in_axes[i] for i in positions)
        try:
            return tree_util.broadcast_prefix((in_axes, 0), (dyn_args, kwargs),
                                              is_leaf=lambda x: x is None)
        except ValueError as err:
            raise ValueError(f"pmap in_axes must be a tree prefix of the tuple of positional "
                             f"arguments (arguments passed by keyword are mapped over their "
                             f"leading axis): {err}") from None

    def _mapped_size(self, leaves, axes, names) -> tuple[int, list]:
        """The mapped axis's size and each leaf's mapped axis (non-negative, or None)."""
        found, normal = [], []
        for x, a, n in zip(leaves, axes, names):
            if a is None:
                normal.append(None)
                continue
            aval = get_aval(x)
            if not -aval.ndim <= a < aval.ndim:
                raise ValueError(
                    f"pmap was requested to map its argument {n or '?'} along axis {a}, which "
                    f"implies that its rank should be at least {a + 1 if a >= 0 else -a}, but "
                    f"is only {aval.ndim} (its shape is {aval.shape})")
            normal.append(a % aval.ndim)
            found.append((n, aval.shape, a, aval.shape[a]))
        sizes = {s for *_, s in found}
        if len(sizes) > 1:
            lines = "\n".join(f"  * argument {n or '?'} has shape {shape} and axis {a} is to "
                              f"be mapped" for n, shape, a, _ in found)
            raise ValueError(f"pmap got inconsistent sizes for array axes to be mapped:\n"
                             f"{lines}")
        if not found:
            if self._axis_size is None:
                raise ValueError("pmap requires at least one argument with a mapped axis "
                                 "(or axis_size=)")
            return self._axis_size, normal
        size = found[0][3]
        if self._axis_size is not None and self._axis_size != size:
            raise ValueError(f"Specified axis_size {self._axis_size} doesn't match received "
                             f"axis_size {size}.")
        return size, normal

    def _devices_in_order(self) -> tuple:
        """The devices to map over: those given, or all, grouped by process."""
        return self._devices if self._devices is not None else tuple(
            sorted(runtime_api.devices(self._backend), key=lambda d: (d.process_index, d.id)))

    def _level_devices(self, size: int) -> tuple:
        if _levels.stack:
            if self._devices is not None:
                raise ValueError("Nested pmaps with explicit devices argument.")
            return _levels.stack[0].devices
        devices = self._devices_in_order()
        if size > len(devices):
            raise ValueError(
                f"compiling computation that requires {size} logical devices, but only "
                f"{len(devices)} XLA devices are available (num_replicas={size})")
        return devices


def _out_axes_flat(out_axes, out_tree) -> list:
    example = tree_util.tree_unflatten(out_tree, [0] * out_tree.num_leaves)
    try:
        return tree_util.broadcast_prefix(out_axes, example, is_leaf=lambda x: x is None)
    except ValueError as err:
        raise ValueError(f"pmap out_axes must be a tree prefix of the output: {err}") from None


def _grid_mesh(level: _Level) -> Mesh:
    """The mesh a pmap level runs on: the axes of the enclosing levels, its own, and
    those of the pmaps traced inside it, over the outermost level's devices."""
    outer = [(lv.name, lv.size) for lv in _levels.stack]
    axes = [*outer, (level.name, level.size), *(level.inner or ())]
    if _levels.stack:
        parent = _levels.stack[-1]
        mine = ((level.name, level.size), *(level.inner or ()))
        if parent.inner is not None and parent.inner != mine:
            raise NotImplementedError(f"pmaps nested side by side with different axes "
                                      f"({parent.inner} and {mine}) in one pmap body")
        parent.inner = mine
    names = [n for n, _ in axes]
    if len(set(names)) != len(names):
        raise ValueError(f"nested pmaps reuse an axis name: {names}")
    total = math.prod(s for _, s in axes)
    devices = (_levels.stack[0] if _levels.stack else level).devices
    if total > len(devices):
        raise ValueError(f"nested pmaps over axes {dict(axes)} require {total} devices, but "
                         f"only {len(devices)} are available")
    grid = np.empty(total, dtype=object)
    grid[:] = devices[:total]
    return Mesh(grid.reshape([s for _, s in axes]), names)

"""`plax.smap`: `shard_map` over one mesh axis at a time, with vmap-style axes.

`smap(f, in_axes=0, out_axes=0, axis_name="x")` is `shard_map` of `f` over the
context mesh (`plax.set_mesh`) with only `axis_name` manual: `in_axes`/`out_axes`
say which array axis is split over it, as `vmap`'s do (None: not split, the value
is the same on every member). Nesting smaps over different axes maps a function
over several mesh axes one at a time.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Hashable

from plax.extend import tree_util
from plax.extend.core import check_callable, get_aval, make_tracing_debug_info
from plax.extend.sharding import abstract_mesh
from plax_sharding.mesh import AxisType
from plax_sharding.partition_spec import PartitionSpec
from plax_sharding.shard_map import Infer, apply_shard_map, resolve_mesh

_is_none = lambda x: x is None  # noqa: E731


def smap(f: Callable | None = None, /, *, in_axes: Any = Infer, out_axes: Any,
         axis_name: Hashable):
    """Maps `f` over the blocks of its arguments along one axis of the mesh in
    context: `shard_map` over a single mesh axis, written with `vmap`-style
    axes.

    `in_axes`/`out_axes` say which array dimension is split over `axis_name`
    (None: not split, the same on every member); inside `f`, collectives over
    `axis_name` combine the blocks. The other mesh axes stay automatic, so
    nested `smap`s map over several mesh axes one at a time. Needs a mesh set
    with `plax.set_mesh`.

    Args:
        f: the function applied to each block (without it, `smap(...)` returns
            a decorator).
        in_axes: the split dimension of each argument (an int, None, or a pytree
            prefix of the arguments; default: inferred from their shardings).
        out_axes: the split dimension of each output.
        axis_name: the mesh axis to map over.

    Returns:
        The mapped function.

    Raises:
        ValueError: no mesh is set, or an argument's sharding does not match
            `in_axes`.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> from plax.sharding import PartitionSpec as P
        >>> mesh = plax.make_mesh((4,), ("x",))
        >>> with plax.set_mesh(mesh):
        ...     x = plax.reshard(jnp.arange(8.0), P("x"))  # 2 elements per device
        ...     center = plax.smap(lambda b: b - b.mean(), in_axes=0, out_axes=0, axis_name="x")
        ...     center(x)
        Array([-0.5,  0.5, -0.5,  0.5, -0.5,  0.5, -0.5,  0.5], dtype=float32)
    """
    if f is None:
        return lambda g: smap(g, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name)
    check_callable(f, "smap")
    _check_axes(in_axes, out_axes, axis_name)
    out_specs = tree_util.tree_map(lambda a: _spec(axis_name, a, None), out_axes,
                                   is_leaf=_is_none)

    @functools.wraps(f)
    def wrapped(*args):
        specs = _in_specs(in_axes, args, axis_name)
        mesh, manual = resolve_mesh(None, {axis_name}, specs, out_specs)
        dbg = make_tracing_debug_info("smap", f, args, {})
        return apply_shard_map(f, args, mesh=mesh, manual_axes=manual, in_specs=specs,
                               out_specs=out_specs, check_vma=True, debug_info=dbg, eager=True)
    return wrapped


def _check_axes(in_axes, out_axes, axis_name) -> None:
    if isinstance(axis_name, (list, tuple)):
        raise TypeError(f"smap axis_name should be a `str` or a `Hashable`, but got "
                        f"{axis_name}")
    if in_axes is not Infer:
        if in_axes is not None and not isinstance(in_axes, (int, tuple)):
            raise TypeError("smap in_axes must be an int, None, plax.sharding.Infer, or a "
                            "tuple of entries corresponding to the positional arguments "
                            f"passed to the function, but got {in_axes}.")
        if not all(_is_axis(a) for a in tree_util.tree_leaves(in_axes)):
            raise TypeError("smap in_axes must be an int, None, plax.sharding.Infer, or "
                            f"(nested) container with those types as leaves, but got "
                            f"{in_axes}.")
    leaves = tree_util.tree_leaves(out_axes)
    if not all(_is_axis(a) for a in leaves):
        raise TypeError("smap out_axes must be an int, None, or (nested) container with "
                        f"those types as leaves, but got {out_axes}.")
    if any(a < 0 for a in leaves):
        raise ValueError(f"smap out_axes must be non-negative (the outputs' ranks are not "
                         f"known before f is traced), but got {out_axes}")


def _is_axis(a) -> bool:
    return isinstance(a, int) and not isinstance(a, bool)


def _spec(axis_name, axis: int | None, ndim: int | None) -> PartitionSpec:
    """The PartitionSpec splitting array axis `axis` over `axis_name` (a negative one
    counts from the end of `ndim` dimensions)."""
    if axis is None:
        return PartitionSpec()
    if axis < 0:
        if axis < -ndim:
            raise ValueError(f"smap in_axes entry {axis} is out of range for an argument of "
                             f"rank {ndim}")
        axis += ndim
    return PartitionSpec(*[None] * axis, axis_name)


def _in_specs(in_axes, args: tuple, axis_name):
    if in_axes is Infer:
        return _inferred_specs(args, axis_name)
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    if len(axes) != len(args):
        raise ValueError(f"smap in_axes has {len(axes)} entries but the function was called "
                         f"with {len(args)} positional arguments")
    try:
        flat_axes = tree_util.broadcast_prefix(axes, args, is_leaf=_is_none)
    except ValueError as err:
        raise ValueError(f"smap in_axes must be a pytree prefix of the arguments: {err}"
                         ) from None
    leaves, treedef = tree_util.tree_flatten(args)
    specs = [_spec(axis_name, a, len(get_aval(x).shape)) for a, x in zip(flat_axes, leaves)]
    return tree_util.tree_unflatten(treedef, specs)


def _inferred_specs(args: tuple, axis_name):
    """Without in_axes, each argument is split as its type says (an Explicit axis)."""
    mesh = abstract_mesh()
    if mesh is None or mesh.empty or axis_name not in mesh.axis_names:
        return None  # resolve_mesh reports the missing mesh or axis
    kind = dict(zip(mesh.axis_names, mesh.axis_types))[axis_name]
    if kind is not AxisType.Explicit:
        raise TypeError(f"in_axes was not specified when axis_name={ {axis_name} } was of "
                        f"type {kind}")
    leaves, treedef = tree_util.tree_flatten(args)
    return tree_util.tree_unflatten(treedef, [_manual_part(get_aval(x), axis_name)
                                              for x in leaves])


def _manual_part(aval, axis_name) -> PartitionSpec:
    """The dimension of `aval`'s type sharding that names `axis_name`, as a spec."""
    spec = getattr(getattr(aval, "typed_sharding", None), "spec", None) or PartitionSpec()
    for dim in range(len(spec)):
        if axis_name in spec.axes_of(dim):
            return _spec(axis_name, dim, None)
    return PartitionSpec()

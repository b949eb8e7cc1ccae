"""Moving values between layouts in their types: `reshard`, and the decorators
`auto_axes` / `explicit_axes` that switch mesh axes' types inside a function.

On a mesh with `Explicit` axes a value's sharding is part of its type
(`plax.typeof(x).sharding`); `reshard` changes it (a transfer outside jit, a
sharding constraint that retypes the value inside). `auto_axes` runs a function with
some explicit axes made `Auto` (the partitioner chooses layouts over them there) and
gives its results the `out_sharding` asked for; `explicit_axes` does the reverse,
typing the inputs with `in_sharding`. As in JAX, called outside jit they run their
function eagerly (each operation on its own, so the values are those the same
operations give unsharded), with the inputs and results moved by transfers.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from plax.extend import tree_util
from plax.extend.core import EVAL_TRACE, current_trace, get_aval
from plax.extend.sharding import Sharding, abstract_mesh, concrete_mesh, meshes_in_context
from plax_sharding.constraint import sharding_constraint_p
from plax_sharding.mesh import AxisType
from plax_sharding.named_sharding import NamedSharding
from plax_sharding.partition_spec import PartitionSpec


def _is_target(s) -> bool:
    return s is None or isinstance(s, (Sharding, PartitionSpec))


def _context_mesh(what: str, fallback: Any = None) -> Any:
    """The mesh bare PartitionSpecs refer to: the concrete one in context outside jit
    (it places data), the abstract one inside; as in JAX, there must be one (or a
    NamedSharding `fallback` whose mesh is used)."""
    mesh = concrete_mesh() if current_trace() is EVAL_TRACE else abstract_mesh()
    if (mesh is None or mesh.empty) and isinstance(fallback, NamedSharding):
        return fallback.mesh
    if mesh is None or mesh.empty:
        raise ValueError(f"{what}: using a PartitionSpec outside a mesh context is not "
                         "allowed; pass a NamedSharding, or enter a mesh with "
                         "`plax.set_mesh(mesh)`")
    return mesh


def reshard(xs: Any, out_shardings: Any) -> Any:
    """Lays the arrays of `xs` out as `out_shardings` (moving data between devices as
    needed); over explicit mesh axes the new layout becomes part of the result's type.

    Inside `jit` it is an operation of the program (the compiler inserts the
    communication); outside, it runs eagerly. With explicit axes, this is how a value
    changes its sharding type (operations never do so implicitly).

    Args:
        xs: a pytree of arrays.
        out_shardings: a `Sharding` or `PartitionSpec` (resolved against the mesh in
            context), or a pytree prefix of `xs` holding them.

    Returns:
        `xs`'s pytree, each array laid out as asked.

    Raises:
        ValueError: a bare `PartitionSpec` without a mesh in context, or a split that
            does not divide an array's dimension.

    Examples:
        >>> mesh = plax.make_mesh((2, 4), ("x", "y"))
        >>> with plax.set_mesh(mesh):
        ...     y = plax.sharding.reshard(jnp.arange(8.0), plax.sharding.PartitionSpec("y"))
        ...     plax.typeof(y)
        ShapedArray(float32[8@y])
    """
    leaves, treedef = tree_util.tree_flatten(xs)
    targets = tree_util.broadcast_prefix(out_shardings, xs, is_leaf=_is_target)
    outs = [_resharded(leaf, target) for leaf, target in zip(leaves, targets)]
    return tree_util.tree_unflatten(treedef, outs)


def _resharded(x, target):
    """`x` laid out as `target`; a NamedSharding's spec is spelled with one entry per
    dimension, as the result's type (and JAX's result) spells it."""
    if isinstance(target, PartitionSpec):
        target = NamedSharding(_context_mesh("reshard"), target)
    if isinstance(target, NamedSharding):
        target = target.update(spec=_spec_for_rank(target.spec, get_aval(x).ndim))
    return sharding_constraint_p.bind(x, sharding=target)


def _retyped(x, mesh, spec: PartitionSpec):
    """`x` typed (and laid out) as `spec` on `mesh`, one entry per dimension as JAX's
    types spell it (a spec may name more dimensions than `x` has if they are None);
    a ValueError where its splits do not divide `x`'s dimensions."""
    shape = get_aval(x).shape
    sharding = NamedSharding(mesh, _spec_for_rank(spec, len(shape)))
    sharding.shard_shape(shape)
    return sharding_constraint_p.bind(x, sharding=sharding)


def _spec_for_rank(spec: PartitionSpec, ndim: int) -> PartitionSpec:
    """`spec` with one entry per dimension of a rank-`ndim` value: padded with None,
    or cut where the entries past `ndim` are None (left as it is otherwise, for the
    sharding's own rank error)."""
    parts = spec.partitions
    if len(parts) > ndim and not any(e is not None for e in parts[ndim:]):
        return spec.update(partitions=parts[:ndim])
    return spec.for_rank(ndim)


def _switch_axes(fun: Callable, axes, new_type: AxisType, old_type: AxisType,
                 shardings_in: Any, shardings_out: Any, name: str) -> Callable:
    """`fun` run with `axes` of the mesh (all of type `old_type`; default: every such
    axis) switched to `new_type`; inputs laid out as `shardings_in` (None: as they
    are), results as `shardings_out`, each in the mesh their side of the call uses."""

    @functools.wraps(fun)
    def switched(*args, **kwargs):
        leaves, treedef = tree_util.tree_flatten((args, kwargs))
        outer = _context_mesh(name, shardings_out).abstract_mesh
        chosen = outer._axes_of_type(old_type) if axes is None else (
            (axes,) if isinstance(axes, str) else tuple(axes))
        wrong = [a for a in chosen if a not in outer.axis_names
                 or outer.axis_types[outer.axis_names.index(a)] is not old_type]
        if wrong:
            raise ValueError(f"{name}: axes {wrong} are not {old_type.name} axes of the "
                             f"mesh {outer}")
        inner = outer.update_axis_types({a: new_type for a in chosen})
        specs = ([_own_spec(x) for x in leaves] if shardings_in is None else
                 [_spec_of(s) for s in tree_util.broadcast_prefix(
                     shardings_in, (args, kwargs), is_leaf=_is_target)])
        args, kwargs = tree_util.tree_unflatten(treedef, [
            x if s is None else _retyped(x, inner, s) for x, s in zip(leaves, specs)])
        with meshes_in_context(inner):
            outs = fun(*args, **kwargs)
        out_leaves, out_tree = tree_util.tree_flatten(outs)
        if shardings_out is None:
            specs = [_own_spec(x) for x in out_leaves]
        else:
            specs = [_spec_of(s) for s in tree_util.broadcast_prefix(shardings_out, outs,
                                                                     is_leaf=_is_target)]
        return tree_util.tree_unflatten(out_tree, [
            x if s is None else _retyped(x, outer, s) for x, s in zip(out_leaves, specs)])

    return switched


def _spec_of(s) -> PartitionSpec:
    if isinstance(s, NamedSharding):
        return s.spec
    if isinstance(s, PartitionSpec):
        return s
    raise TypeError(f"expected a PartitionSpec or NamedSharding, got {s!r}")


def _own_spec(x) -> PartitionSpec | None:
    sharding = getattr(get_aval(x), "typed_sharding", None)
    return None if sharding is None else sharding.spec


def auto_axes(fun: Callable | None = None, *, axes=None, out_sharding=None) -> Callable:
    """Runs `fun` with explicit mesh axes turned into `Auto` ones (the compiler chooses
    the layouts inside), and lays its results out as `out_sharding` when it returns.

    Use it around code whose sharding you want the compiler to decide, inside a
    program that otherwise types its shardings explicitly. Usable as a decorator,
    with or without arguments.

    Args:
        fun: the function to wrap.
        axes: a mesh axis name or names to switch (default: every Explicit axis).
        out_sharding: a `PartitionSpec`/`NamedSharding` (or pytree prefix of the
            results) for the results on the caller's mesh. If not given here, every
            call must pass `out_sharding=` as a keyword argument.

    Returns:
        The wrapped function.

    Raises:
        ValueError: (at call time) a named axis is not an Explicit axis of the mesh in
            context.

    Examples:
        >>> mesh = plax.make_mesh((2, 4), ("x", "y"))
        >>> with plax.set_mesh(mesh):
        ...     double = plax.sharding.auto_axes(lambda a: a * 2,
        ...                                      out_sharding=plax.sharding.PartitionSpec("y"))
        ...     plax.typeof(plax.jit(double)(jnp.arange(8.0)))
        ShapedArray(float32[8@y])
    """
    if fun is None:
        return functools.partial(auto_axes, axes=axes, out_sharding=out_sharding)
    return _with_target(fun, "out_sharding", out_sharding, lambda target: _switch_axes(
        fun, axes, AxisType.Auto, AxisType.Explicit, None, target, "auto_axes"))


def _with_target(fun: Callable, keyword: str, target: Any,
                 switched: Callable[[Any], Callable]) -> Callable:
    """`switched(target)`; without a `target`, as in JAX, each call gives it as the
    keyword argument `keyword` (a TypeError where a call leaves it out)."""
    if target is not None:
        return switched(target)

    @functools.wraps(fun)
    def given_at_call(*args, **kwargs):
        if keyword not in kwargs:
            raise TypeError(f"Missing required keyword argument: '{keyword}'")
        return switched(kwargs.pop(keyword))(*args, **kwargs)
    return given_at_call


def explicit_axes(fun: Callable | None = None, *, axes=None, in_sharding=None) -> Callable:
    """Runs `fun` with Auto mesh axes turned into `Explicit` ones: inside, the inputs
    carry the sharding types `in_sharding` gives them and operations propagate them;
    the results go back to the caller's (Auto) mesh.

    The counterpart of `auto_axes`, for explicitly typed code inside a program whose
    mesh axes are Auto. Usable as a decorator.

    Args:
        fun: the function to wrap.
        axes: a mesh axis name or names to switch (default: every Auto axis).
        in_sharding: a `PartitionSpec`/`NamedSharding` (or pytree prefix of the
            arguments) for the inputs inside. If not given here, every call must
            pass `in_sharding=` as a keyword argument.

    Returns:
        The wrapped function.

    Raises:
        TypeError: (at call time) `in_sharding` is given neither here nor to the call.
        ValueError: (at call time) a named axis is not an Auto axis of the mesh.

    Examples:
        >>> Auto = plax.sharding.AxisType.Auto
        >>> mesh = plax.make_mesh((2, 4), ("x", "y"), axis_types=(Auto, Auto))
        >>> def f(a):
        ...     print(plax.typeof(a))  # runs once, while tracing
        ...     return a + 1
        >>> with plax.set_mesh(mesh):
        ...     out = plax.jit(plax.sharding.explicit_axes(
        ...         f, in_sharding=plax.sharding.PartitionSpec("x")))(jnp.arange(8.0))
        float32[8@x]
    """
    if fun is None:
        return functools.partial(explicit_axes, axes=axes, in_sharding=in_sharding)
    return _with_target(fun, "in_sharding", in_sharding, lambda target: _switch_axes(
        fun, axes, AxisType.Explicit, AxisType.Auto, target, None, "explicit_axes"))

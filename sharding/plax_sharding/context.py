"""The mesh in context: `set_mesh`, `use_mesh`, `use_abstract_mesh` and their getters,
and `sharding_from_spec`, which makes a bare `PartitionSpec` a `NamedSharding` on it.

The meshes live in the kernel's thread-local slots (`plax.extend.sharding`), so
that jit, which cannot import this package, keys its caches on them: the abstract
mesh is part of the trace context, the concrete one decides where a computation
without committed arguments runs.
"""
from __future__ import annotations

from typing import Any

from plax.extend.core import EVAL_TRACE, current_trace
from plax.extend.sharding import Sharding, abstract_mesh, concrete_mesh, restore_meshes, \
    swap_meshes
from plax_sharding.mesh import EMPTY_ABSTRACT_MESH, AbstractMesh, Mesh
from plax_sharding.named_sharding import NamedSharding
from plax_sharding.partition_spec import PartitionSpec


def get_abstract_mesh() -> AbstractMesh:
    """The abstract mesh in context (from `plax.set_mesh`, `use_abstract_mesh`, or the
    mesh of the enclosing `shard_map`), usable inside `jit`.

    Returns:
        An `AbstractMesh`; the empty one (its `.empty` is True) when none is set.

    Examples:
        >>> plax.sharding.get_abstract_mesh().empty
        True
        >>> with plax.set_mesh(plax.make_mesh((8,), ("x",))):
        ...     plax.sharding.get_abstract_mesh().axis_names
        ('x',)
    """
    mesh = abstract_mesh()
    return EMPTY_ABSTRACT_MESH if mesh is None else mesh


def get_mesh() -> Mesh | None:
    """The concrete mesh set by `plax.set_mesh` (or `use_mesh`), or None.

    Only outside `jit`: a traced program should not depend on devices (use
    `get_abstract_mesh` there).

    Returns:
        A `Mesh`, or None if none is set.

    Raises:
        ValueError: called while tracing (inside `jit`).

    Examples:
        >>> mesh = plax.make_mesh((8,), ("x",))
        >>> with plax.set_mesh(mesh):
        ...     plax.sharding.get_mesh() is mesh
        True
    """
    if current_trace() is not EVAL_TRACE:
        raise ValueError("`get_mesh` can only be used outside of `plax.jit`; inside, use "
                         "`plax.sharding.get_abstract_mesh()`")
    return concrete_mesh()


class set_mesh:
    """Puts `mesh` in context for the current thread.

    While it is set, a bare `PartitionSpec` (in `device_put`, `jit`'s shardings,
    `reshard`, `shard_map`...) means `NamedSharding(mesh, spec)`, and explicit-axis
    sharding types refer to its axes. Called as a statement
    (`plax.set_mesh(mesh)`) it stays until replaced; used as a context manager
    (`with plax.set_mesh(mesh):`) it is undone when the block ends. `use_mesh` is the
    same function.

    Args:
        mesh: a `Mesh`, or None to clear the mesh.

    Raises:
        ValueError: `mesh` is not a `Mesh` (an `AbstractMesh` goes to
            `use_abstract_mesh`), or it is called inside `jit`.

    Examples:
        >>> mesh = plax.make_mesh((2, 4), ("x", "y"))
        >>> with plax.set_mesh(mesh):
        ...     x = plax.device_put(jnp.arange(8.0), plax.sharding.PartitionSpec("x"))
        >>> x.sharding.spec, plax.typeof(x)
        (P('x',), ShapedArray(float32[8@x]))
    """
    __slots__ = ("_previous",)

    def __init__(self, mesh: Mesh | None):
        if mesh is not None and not isinstance(mesh, Mesh):
            raise ValueError(f"set_mesh expects a plax.sharding.Mesh (or None), got "
                             f"{type(mesh).__name__}; use use_abstract_mesh for an "
                             "AbstractMesh")
        if current_trace() is not EVAL_TRACE:
            raise ValueError("`set_mesh` can only be used outside of `plax.jit`")
        self._previous = swap_meshes(None if mesh is None else mesh.abstract_mesh, mesh)

    def __enter__(self):
        return None

    def __exit__(self, *exc_info):
        restore_meshes(self._previous)
        return False


use_mesh = set_mesh


class use_abstract_mesh:
    """A context manager that makes bare `PartitionSpec`s refer to an abstract mesh.

    Inside the block, `get_abstract_mesh()` returns it and specs in
    `with_sharding_constraint`, `reshard` or explicit-axis types are resolved against
    it, without naming devices; a concrete mesh already in context stays.

    Args:
        mesh: an `AbstractMesh`.

    Raises:
        ValueError: `mesh` is not an `AbstractMesh`.

    Examples:
        >>> am = plax.sharding.AbstractMesh((2,), ("x",))
        >>> with plax.sharding.use_abstract_mesh(am):
        ...     plax.sharding.get_abstract_mesh()
        AbstractMesh('x': 2, axis_types=(Auto,))
    """
    __slots__ = ("_mesh", "_previous")

    def __init__(self, mesh: AbstractMesh):
        if not isinstance(mesh, AbstractMesh):
            raise ValueError(f"use_abstract_mesh expects an AbstractMesh, got "
                             f"{type(mesh).__name__}")
        self._mesh = mesh

    def __enter__(self):
        self._previous = swap_meshes(self._mesh)
        return self._mesh

    def __exit__(self, *exc_info):
        restore_meshes(self._previous)
        return False


def sharding_from_spec(spec: Any, what: str) -> Sharding:
    """`spec` (a `PartitionSpec`, or a tuple of its entries) as a `NamedSharding` on the
    mesh in context: the concrete one outside jit, the abstract one inside (so the
    Jaxpr names no device)."""
    if isinstance(spec, Sharding):
        return spec
    if isinstance(spec, tuple):
        spec = PartitionSpec(*spec)
    if not isinstance(spec, PartitionSpec):
        raise TypeError(f"{what} must be a Sharding, a PartitionSpec or None; got {spec!r} "
                        f"of type {type(spec).__name__}")
    mesh = concrete_mesh() if current_trace() is EVAL_TRACE else None
    mesh = mesh if mesh is not None else abstract_mesh()
    if mesh is None or mesh.empty:
        raise RuntimeError(
            f"{what} is the PartitionSpec {spec}, which needs a mesh in context: set one "
            "with `plax.set_mesh(mesh)` (or `plax.sharding.use_abstract_mesh`), or pass "
            "a NamedSharding(mesh, spec) instead")
    return NamedSharding(mesh, spec)

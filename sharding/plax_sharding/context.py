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
    """The abstract mesh in context; the empty one (`.empty` is True) if none."""
    mesh = abstract_mesh()
    return EMPTY_ABSTRACT_MESH if mesh is None else mesh


def get_mesh() -> Mesh | None:
    """The concrete mesh set by `set_mesh`/`use_mesh`, or None. Outside jit only."""
    if current_trace() is not EVAL_TRACE:
        raise ValueError("`get_mesh` can only be used outside of `plax.jit`; inside, use "
                         "`plax.sharding.get_abstract_mesh()`")
    return concrete_mesh()


class set_mesh:
    """Puts `mesh` in context for this thread: as a statement (`plax.set_mesh(mesh)`)
    it stays until replaced, as a context manager (`with plax.set_mesh(mesh):`) until
    the block ends. Bare `PartitionSpec`s then mean `NamedSharding(mesh, spec)`.
    Outside jit only; `None` clears the mesh."""
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
    """`with use_abstract_mesh(abstract_mesh):` makes bare `PartitionSpec`s refer to
    `abstract_mesh` (inside jit, in `with_sharding_constraint`, ...) without naming
    devices; the concrete mesh in context, if any, stays."""
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

"""The meshes in context: where `plax.sharding.set_mesh`, `use_mesh` and
`use_abstract_mesh` put the mesh that bare `PartitionSpec`s refer to.

The kernel holds the two slots, not the mesh classes (those are plax-sharding's):
jit and lowering read them through `plax.extend.sharding` without importing that
package. The abstract mesh (axis names and sizes, no devices) is part of the trace
context, so what is traced under it is cached apart; the concrete mesh only decides
where a computation runs, so two meshes of one shape share traces and lowerings.

Both are jaxlib thread-local states: a value set in one thread is not seen in another.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

from jaxlib._jax import config as _jaxlib_config

_abstract_mesh = _jaxlib_config.Config("plax_abstract_mesh_context", None,
                                       include_in_jit_key=True, include_in_trace_context=True)
_concrete_mesh = _jaxlib_config.Config("plax_concrete_mesh_context", None,
                                       include_in_jit_key=True)


def abstract_mesh() -> Any:
    """The abstract mesh in context (an `AbstractMesh`), or None."""
    return _abstract_mesh.value


def concrete_mesh() -> Any:
    """The concrete mesh in context (a `Mesh`, with devices), or None."""
    return _concrete_mesh.value


_KEEP = object()


def swap_meshes(abstract: Any = _KEEP, concrete: Any = _KEEP) -> tuple[Any, Any]:
    """Sets this thread's abstract and/or concrete mesh; returns what
    `restore_meshes` needs to put the previous ones back."""
    return (_KEEP if abstract is _KEEP else _abstract_mesh.swap_local(abstract),
            _KEEP if concrete is _KEEP else _concrete_mesh.swap_local(concrete))


def restore_meshes(previous: tuple[Any, Any]) -> None:
    """Puts back the meshes that `swap_meshes` returned."""
    abstract, concrete = previous
    if abstract is not _KEEP:
        _abstract_mesh.set_local(abstract)
    if concrete is not _KEEP:
        _concrete_mesh.set_local(concrete)


@contextlib.contextmanager
def meshes_in_context(abstract: Any = _KEEP, concrete: Any = _KEEP) -> Iterator[None]:
    """A block with this thread's abstract and/or concrete mesh set (then restored)."""
    previous = swap_meshes(abstract, concrete)
    try:
        yield
    finally:
        restore_meshes(previous)

"""`plax.export`: serialize a jitted computation and call it later, elsewhere, or from
JAX (the `jax.export` API of JAX 0.10).

Reading path: `exported.py` (`export` and the `Exported` it returns; the calling
convention of its module) → `shardings.py` (the named shardings of a sharded
export) → `call_exported.py` (`Exported.call`, a primitive whose lowering inlines
the module) → `shape_poly.py` (symbolic dimensions, their scopes and constraints)
→ `decision.py` (deciding their comparisons) → `solving.py` (solving for them, and
the constraints checked when called) → `serialization.py` and
`serialized_shardings.py` on `flatbuffer.py` (JAX's serialized format).
"""
from plax_transforms.export.calling_convention import (
    maximum_supported_calling_convention_version, minimum_supported_calling_convention_version)
from plax_transforms.export.exported import (DisabledSafetyCheck, Exported,
                                             default_export_platform, deserialize, export)
from plax_transforms.export.serialization import (register_namedtuple_serialization,
                                                  register_pytree_node_serialization)
from plax_transforms.export.shape_poly import (InconclusiveDimensionOperation, SymbolicScope,
                                               is_symbolic_dim, symbolic_args_specs,
                                               symbolic_shape)

default_lowering_platform = default_export_platform

__all__ = [
    "DisabledSafetyCheck", "Exported", "InconclusiveDimensionOperation", "SymbolicScope",
    "default_export_platform", "deserialize", "export", "is_symbolic_dim",
    "maximum_supported_calling_convention_version",
    "minimum_supported_calling_convention_version", "register_namedtuple_serialization",
    "register_pytree_node_serialization", "symbolic_args_specs", "symbolic_shape",
]

"""Shardings for packages that speak of placements (runtime, jit, lowering, the
sharding package) without importing the sharding implementations: the `Sharding`
base class, `ManualAxisType` (a value's varying/unreduced/reduced manual axes; staging
types results with it under `set_vma_rule`, printed in the order `note_axis_order` keeps),
its device-free Shardy form (`SdyArray`, `SdyDim`), the meshes in context,
`ShardingTypeError` (conflicting or ambiguous shardings in types), `sharding_from_spec`,
which turns a bare `PartitionSpec` into a sharding on the context mesh, and
`traced_device_put` (both provided by plax-sharding)."""
from plax._src import plugins as _plugins
from plax._src.errors import ShardingTypeError
from plax._src.manual_axis_type import (ManualAxisType, mat_axis_order, note_axis_order,
                                        set_vma_rule, vma_rule)
from plax._src.mesh_context import (abstract_mesh, concrete_mesh, meshes_in_context,
                                    restore_meshes, swap_meshes)
from plax._src.sharding import (Device, Index, SdyArray, SdyDim, Sharding,
                                hlo_shardings_equal, sdy_from_hlo)

sharding_from_spec = _plugins.seam("sharding_from_spec")
sharding_from_spec.__doc__ = """`sharding_from_spec(spec, what)`: a non-Sharding given where
a sharding is expected (a `PartitionSpec`, or a tuple of its entries: `()` is
replicated) as a sharding on the mesh in context; `what` names the option in errors."""

traced_device_put = _plugins.seam("traced_device_put")
traced_device_put.__doc__ = """`traced_device_put(x, target, donate, may_alias)`: `device_put`
of the traced value `x` to `target` (a Sharding, a Device or a memory space), as the
primitive `plax.device_put`."""

__all__ = ["Device", "Index", "ManualAxisType", "SdyArray", "SdyDim", "Sharding",
           "ShardingTypeError", "abstract_mesh",
           "concrete_mesh", "hlo_shardings_equal", "meshes_in_context", "restore_meshes",
           "mat_axis_order", "note_axis_order", "sdy_from_hlo", "set_vma_rule",
           "sharding_from_spec", "swap_meshes", "traced_device_put", "vma_rule"]

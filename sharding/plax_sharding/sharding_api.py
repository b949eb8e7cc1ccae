"""`plax.sharding`: meshes, partition specs and shardings (JAX's `jax.sharding`).

Reading path: `mesh.py` (Mesh, AbstractMesh, AxisType) → `partition_spec.py` (P) →
`named_sharding.py` (NamedSharding and its XLA/Shardy forms) → `context.py` (the
mesh in context) → `constraint.py` (with_sharding_constraint) → `visualize.py`.
"""
from plax.extend.sharding import ManualAxisType, Sharding
from plax_runtime.sharding_impls import GSPMDSharding, SingleDeviceSharding
from plax_sharding.api import make_mesh, make_single_device_sharding
from plax_sharding.context import (get_abstract_mesh, get_mesh, set_mesh, use_abstract_mesh,
                                   use_mesh)
from plax_sharding.explicit import auto_axes, explicit_axes, reshard
from plax_sharding.mesh import AbstractDevice, AbstractMesh, AxisType, Mesh
from plax_sharding.named_sharding import NamedSharding
from plax_sharding.partition_spec import PartitionSpec

P = PartitionSpec

__all__ = ["AbstractDevice", "AbstractMesh", "AxisType", "GSPMDSharding", "ManualAxisType", "Mesh",
           "auto_axes", "explicit_axes",
           "NamedSharding", "P", "PartitionSpec", "Sharding", "SingleDeviceSharding",
           "get_abstract_mesh", "get_mesh", "make_mesh", "make_single_device_sharding",
           "reshard", "set_mesh", "use_abstract_mesh", "use_mesh"]

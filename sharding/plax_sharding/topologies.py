"""`plax.experimental.topologies`: the devices a program is compiled for, attached
or not.

`get_attached_topology()` describes this process's devices. `get_topology_desc`
describes a slice by name through the backend plugin that knows its hardware (libtpu
for TPU: `"v5e:2x2"`...), as compile-only devices: lowering and compiling for them
works here, running needs the real slice. `make_mesh` lays a topology's devices out
as a `Mesh`.
"""
from __future__ import annotations

from typing import Any, Sequence

from plax_runtime import api as runtime_api, backends
from plax_sharding.mesh import Mesh
from plax_sharding.mesh_utils import create_device_mesh


class TopologyDescription:
    """The devices of a topology, in the order the runtime gives them."""

    def __init__(self, devices: Sequence[Any]):
        self.devices = list(devices)

    def __repr__(self):
        return f"TopologyDescription(devices={self.devices!r})"


def get_attached_topology(platform: str | None = None) -> TopologyDescription:
    """The devices of `platform` (default: the default backend) in every process."""
    return TopologyDescription(runtime_api.devices(platform))


def get_topology_desc(topology_name: str = "", platform: str | None = None,
                      **options) -> TopologyDescription:
    """The compile-only devices of the topology `topology_name` of `platform` (TPU by
    default, as in JAX); `options` go to the plugin. A backend whose plugin cannot
    describe topologies raises NotImplementedError; an uninstalled one RuntimeError."""
    topology = backends.make_topology(platform or "tpu", topology_name, **options)
    return TopologyDescription(topology._make_compile_only_devices())


def make_mesh(topo: TopologyDescription, mesh_shape: Sequence[int],
              axis_names: tuple[str, ...], *, contiguous_submeshes: bool = False) -> Mesh:
    """A `Mesh` of shape `mesh_shape` over the topology's devices."""
    devices = create_device_mesh(mesh_shape, list(topo.devices),
                                 contiguous_submeshes=contiguous_submeshes)
    return Mesh(devices, axis_names)


__all__ = ["TopologyDescription", "get_attached_topology", "get_topology_desc", "make_mesh"]

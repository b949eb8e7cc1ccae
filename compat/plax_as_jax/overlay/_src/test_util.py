"""`jax._src.test_util`: `create_mesh`, the mesh JAX's own tests make (JAX's notebook
on gradient checkpointing imports it for its offloading example)."""
import math
import unittest

import numpy as np
import plax

PLAX_MODULE = None


def create_mesh(mesh_shape, axis_names, iota_order=False, axis_types=None):
    """A mesh of `mesh_shape`: the first devices by id in order with `iota_order`,
    else laid out by `make_mesh` with Auto axes unless `axis_types` says; a test
    wanting more devices than there are is skipped (`unittest.SkipTest`)."""
    size, devices = math.prod(mesh_shape), plax.devices()
    if len(devices) < size:
        raise unittest.SkipTest(f"Test requires {size} global devices and found "
                                f"{len(devices)}.")
    if iota_order:
        ordered = sorted(devices, key=lambda d: d.id)[:size]
        return plax.sharding.Mesh(np.array(ordered).reshape(mesh_shape), axis_names,
                                  axis_types=axis_types)
    return plax.make_mesh(mesh_shape, axis_names,
                          axis_types or (plax.sharding.AxisType.Auto,) * len(mesh_shape))

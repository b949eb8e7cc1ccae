"""Shared test setup. Runs before any test module imports jaxlib clients."""
import os

import pytest

# Eight virtual CPU devices, so multi-device code is tested without accelerators; and
# LLVM's optimizations off (XLA's HLO passes still run): the suite's cost is compiling
# many small programs, whose machine code the tests do not measure (about a quarter
# of its CPU time). Subprocesses inherit both, so JAX references compile the same way.
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8 "
                                   "--xla_backend_optimization_level=0")

from hypothesis_profiles import setup_hypothesis  # noqa: E402

setup_hypothesis()


@pytest.fixture(scope="session")
def devs():
    """The 8 virtual CPU devices."""
    import plax
    return plax.devices()


@pytest.fixture(scope="session")
def mesh(devs):
    """A 2 x 4 mesh ('x', 'y') over the 8 devices, shared by the sharding tests."""
    import numpy as np
    from plax.sharding import Mesh
    return Mesh(np.array(devs).reshape(2, 4), ("x", "y"))

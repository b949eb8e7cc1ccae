"""Shared test setup. Runs before any test module imports jaxlib clients."""
import os

import pytest

# Eight virtual CPU devices, so multi-device code is tested without accelerators. The
# suite's cost is compiling many small programs whose machine code the tests do not
# measure, so compilation is made cheap: LLVM's optimizations off (XLA's HLO passes
# still run; about a quarter of the CPU time) and XLA:CPU's older loop emitters in
# place of its MLIR fusion emitters (about 30% less CPU per small compile).
# Subprocesses inherit the flags, so JAX references compile the same way.
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8 "
                                   "--xla_backend_optimization_level=0 "
                                   "--xla_cpu_use_fusion_emitters=false")

from hypothesis_profiles import setup_hypothesis  # noqa: E402

# tests/ecosystem/ runs other libraries' test suites in a venv of its own (its README
# command); never collected with plax's tests.
collect_ignore = ["ecosystem"]

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

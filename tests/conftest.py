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

import collections  # noqa: E402

from hypothesis_profiles import setup_hypothesis  # noqa: E402

# tests/ecosystem/ runs other libraries' test suites in a venv of its own (its README
# command); never collected with plax's tests.
collect_ignore = ["ecosystem"]

setup_hypothesis()

# Files of a few tests that run for minutes (each starts processes of its own, JAX's and
# plax's side by side): handed to the workers first, so that they run beside the rest
# of the suite instead of finishing it alone on one core.
LONG_FILES_FIRST = ("test_jax_docstrings_vs_jax.py", "test_bits_vs_jax.py",
                    "test_ecosystem_subset.py", "test_wheels.py")


def pytest_collection_modifyitems(items):
    """Order the test files for pytest-xdist (`--no-loadscope-reorder` keeps this
    order): LONG_FILES_FIRST, then the files with the most tests first, as xdist's own
    order would be; a file's tests keep their order."""
    counts = collections.Counter(item.path for item in items)

    def rank(item):
        name = item.path.name
        first = LONG_FILES_FIRST.index(name) if name in LONG_FILES_FIRST else len(
            LONG_FILES_FIRST)
        return first, -counts[item.path], str(item.path)
    items.sort(key=rank)


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

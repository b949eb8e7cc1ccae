"""Shared test setup. Runs before any test module imports jaxlib clients."""
import collections
import os

import pytest
from hypothesis_profiles import setup_hypothesis
from suite_flags import XLA_FLAGS

os.environ.setdefault("XLA_FLAGS", XLA_FLAGS)  # see suite_flags.py

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

"""Shared test setup. Runs before any test module imports jaxlib clients."""
import os

# Eight virtual CPU devices, so multi-device code is tested without accelerators.
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from hypothesis_profiles import setup_hypothesis  # noqa: E402

setup_hypothesis()

"""`jax.experimental.colocated_python.serialization`: `DeviceList` (jaxlib's, which
orbax names in annotations); the Pathways-only private helpers are absent."""
from jaxlib._jax import DeviceList  # noqa: F401

PLAX_MODULE = None

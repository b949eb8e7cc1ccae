"""`jax.lib`: `__version__`, that of the jaxlib plax runs on (equinox's tests read it)."""
from jaxlib.version import __version__  # noqa: F401

PLAX_MODULE = None

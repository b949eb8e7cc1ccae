"""`jax.version`: JAX's version module, for the release plax implements."""
from jaxlib.version import __version__

PLAX_MODULE = None
_version = __version__
__version_info__ = tuple(int(part) for part in __version__.split(".")[:3])
_minimum_jaxlib_version = __version__
_minimum_jaxlib_version_info = __version_info__

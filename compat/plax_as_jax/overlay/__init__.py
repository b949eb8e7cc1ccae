"""Overlays: each module here, at the path of a `jax` module (`overlay.interpreters.ad`
for `jax.interpreters.ad`), holds the names the alias adds to or maps onto plax's
module of the same path. This one is `jax` itself: the version attributes say the
JAX release plax implements (that of the jaxlib it runs on), not plax's own, since
libraries pick code paths by them.

An overlay may set `PLAX_MODULE` to the plax module it stands in front of (None: it
is the whole module).
"""
from jaxlib.version import __version__

__version_info__ = tuple(int(part) for part in __version__.split(".")[:3])

"""Pytree utilities for package authors: everything in the public `plax.tree_util`,
plus plax's own registry (the one its C++ paths flatten with) and prefix
broadcasting."""
from plax._src.tree_util import broadcast_prefix, registry
from plax.tree_util import *  # noqa: F403
from plax.tree_util import __all__ as _public

__all__ = ["broadcast_prefix", "registry"]
__all__.extend(_public)

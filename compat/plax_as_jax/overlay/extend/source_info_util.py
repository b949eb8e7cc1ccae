"""`jax.extend.source_info_util`: `register_exclusion` (flax hides its own frames)."""
from plax_as_jax.overlay._src.traceback_util import register_exclusion  # noqa: F401

PLAX_MODULE = None

"""`jax._src.state.types`: `AbstractRef`, the type of a mutable array ref (flax)."""
from plax.ref import AbstractRef  # noqa: F401

PLAX_MODULE = None

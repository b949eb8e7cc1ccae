"""`jax.extend.ifrt_programs`: jaxlib's IFRT program constructors (orbax's Pathways
plugin reads them)."""
from jaxlib._jax import ifrt_programs  # noqa: F401

PLAX_MODULE = None

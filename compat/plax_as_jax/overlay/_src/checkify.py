"""`jax._src.checkify`: `plax.experimental.checkify`, and the type variable `Out` its
signatures use (flax.nnx's checkify transform)."""
from typing import TypeVar

PLAX_MODULE = "plax.experimental.checkify"
Out = TypeVar("Out")

"""`jax.experimental`: `plax.experimental`, plus `hijax`'s definitions and `cur_qdd`."""
from plax_as_jax.overlay.experimental.hijax import cur_qdd  # noqa: F401

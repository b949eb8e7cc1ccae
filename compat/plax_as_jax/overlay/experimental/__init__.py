"""`jax.experimental`: `plax.experimental`, plus `hijax`'s definitions."""

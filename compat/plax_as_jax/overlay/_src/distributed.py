"""`jax._src.distributed`: `global_state` (orbax reads its `client` and `process_id`),
plax's own state of the multi-process run."""
from plax_runtime.distributed import global_state  # noqa: F401

PLAX_MODULE = None

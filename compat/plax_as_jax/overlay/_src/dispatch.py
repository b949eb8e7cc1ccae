"""`jax._src.dispatch`: `wait_for_tokens` (equinox registers it at exit): waits until
every effectful computation has finished."""
import plax

PLAX_MODULE = None


def wait_for_tokens() -> None:
    plax.effects_barrier()

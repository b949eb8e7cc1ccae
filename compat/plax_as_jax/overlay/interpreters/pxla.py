"""`jax.interpreters.pxla`: JAX's partitioned-execution internals. orbax imports the
module for its Pathways plugin (`global_avals_to_results_handler`, which plax has no
counterpart of) and chex looks for the long-gone `ShardedDeviceArray`; no name of it
is provided."""
PLAX_MODULE = None

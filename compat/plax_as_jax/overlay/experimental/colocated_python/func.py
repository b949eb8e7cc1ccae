"""`jax.experimental.colocated_python.func`: present so that orbax imports; its
private helpers are Pathways-only and absent here."""
PLAX_MODULE = None

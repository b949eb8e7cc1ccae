"""`jax.experimental.colocated_python`: plax's (`plax.experimental.colocated_python`);
the submodules `func` and `serialization` that orbax imports are overlays."""

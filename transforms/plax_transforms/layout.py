"""plax.experimental.layout: not built yet."""

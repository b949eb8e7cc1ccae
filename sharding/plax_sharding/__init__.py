"""plax-sharding: meshes, partition specs, named shardings and shard_map."""

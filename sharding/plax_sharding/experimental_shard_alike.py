"""`plax.experimental.shard_alike`: two values laid out alike by the partitioner."""
from plax_sharding.shard_alike import shard_alike

__all__ = ["shard_alike"]

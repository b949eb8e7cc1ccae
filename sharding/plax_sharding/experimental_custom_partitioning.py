"""`plax.experimental.custom_partitioning`: functions whose SPMD partitioning the user
writes (`custom_partitioning`), and the Shardy sharding rules that describe how their
operands' and results' dimensions are split (`SdyShardingRule`, `ArrayMapping`,
`CompoundFactor`, `BATCHING`)."""
from plax_sharding.custom_partitioning import custom_partitioning, custom_partitioning_p
from plax_sharding.sharding_rule_spec import (BATCHING, ArrayMapping, CompoundFactor,
                                              SdyShardingRule)

__all__ = ["BATCHING", "ArrayMapping", "CompoundFactor", "SdyShardingRule",
           "custom_partitioning", "custom_partitioning_p"]

"""The `Sharding` base class, for packages that speak of placements (runtime, jit,
the sharding package) without importing the sharding implementations."""
from plax._src.sharding import Device, Index, Sharding, hlo_shardings_equal

__all__ = ["Device", "Index", "Sharding", "hlo_shardings_equal"]

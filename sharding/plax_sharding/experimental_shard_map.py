"""`plax.experimental.shard_map`: JAX's older spelling of `plax.shard_map`.

`shard_map(f, mesh, in_specs, out_specs, check_rep=True, auto=frozenset())` takes
the mesh and specs positionally, `check_rep` for `check_vma`, and `auto` for the mesh
axes that stay automatic (the complement of `axis_names`). As in JAX (deprecated since
0.8), reading `shard_map` from this module warns with a DeprecationWarning.
"""
from __future__ import annotations

import warnings

from plax_sharding.shard_map import shard_map as _new_shard_map


def _shard_map(f, mesh, in_specs, out_specs, check_rep: bool = True, auto=frozenset()):
    """`plax.shard_map(f, mesh=mesh, in_specs=..., out_specs=..., axis_names=mesh axes
    but `auto`, check_vma=check_rep)`."""
    unknown = set(auto) - set(getattr(mesh, "axis_names", ()))
    if unknown:
        raise ValueError(f"shard_map: auto names axes {sorted(map(str, unknown))} that are "
                         f"not axes of the mesh {mesh}")
    manual = frozenset(getattr(mesh, "axis_names", ())) - frozenset(auto)
    return _new_shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                          axis_names=manual, check_vma=check_rep)


def __getattr__(name: str):
    if name == "shard_map":
        warnings.warn("plax.experimental.shard_map.shard_map is deprecated, as "
                      "jax.experimental.shard_map is since JAX 0.8.0; use plax.shard_map "
                      "instead", DeprecationWarning, stacklevel=2)
        return _shard_map
    raise AttributeError(f"module 'plax.experimental.shard_map' has no attribute {name!r}")

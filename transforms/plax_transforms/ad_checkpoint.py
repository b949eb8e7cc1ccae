"""`plax.ad_checkpoint`: rematerialization (`checkpoint`/`remat`), value names and
the policies that say which values reverse mode may save.

A policy is called as `policy(primitive, *avals, **params) -> bool` for each
equation of a checkpointed function whose value the backward pass needs: True
saves its output as a residual, False recomputes it.
"""
from __future__ import annotations

from types import SimpleNamespace

from plax_stdlib.lax.dot_general import dot_general_p
from plax_stdlib.lax.naming import checkpoint_name, name_p
from plax_transforms.remat import checkpoint, remat


def everything_saveable(*_, **__) -> bool:
    """Save every value (checkpointing then changes nothing)."""
    return True


def nothing_saveable(*_, **__) -> bool:
    """Save nothing but the checkpoint's inputs: recompute everything else."""
    return False


def dots_saveable(prim, *_, **__) -> bool:
    """Save the results of matrix products (`dot_general`), recompute the rest."""
    return prim is dot_general_p


def dots_with_no_batch_dims_saveable(prim, *_, **params) -> bool:
    """Save the results of `dot_general`s without batch dimensions."""
    if prim is not dot_general_p:
        return False
    (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
    return not lhs_batch and not rhs_batch


def save_only_these_names(*names: str):
    """A policy saving only the values tagged by `checkpoint_name` with one of `names`."""
    wanted = frozenset(names)

    def policy(prim, *_, **params) -> bool:
        return prim is name_p and params["name"] in wanted
    return policy


def save_anything_except_these_names(*names: str):
    """A policy saving every value except those tagged with one of `names`."""
    unwanted = frozenset(names)

    def policy(prim, *_, **params) -> bool:
        return not (prim is name_p and params["name"] in unwanted)
    return policy


checkpoint_policies = SimpleNamespace(
    everything_saveable=everything_saveable,
    nothing_saveable=nothing_saveable,
    dots_saveable=dots_saveable,
    checkpoint_dots=dots_saveable,
    dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=dots_with_no_batch_dims_saveable,
    save_only_these_names=save_only_these_names,
    save_anything_except_these_names=save_anything_except_these_names,
)


__all__ = ["checkpoint", "checkpoint_name", "checkpoint_policies", "remat", "name_p"]

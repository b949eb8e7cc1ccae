"""`plax.checkpoint_policies`: which values reverse mode may save in a checkpoint.

A policy is called as `policy(primitive, *avals, **params)` for each equation of a
checkpointed function whose value the backward pass needs. It returns True (or
`Saveable`) to save the output as a residual, False (or `Recompute`) to compute it
again, or an `Offloadable(src, dst)` to save it in another memory space. plax keeps
every residual in device memory, so an offloaded value is saved where it is.
"""
from __future__ import annotations

import dataclasses
from typing import NamedTuple

from plax_stdlib.lax.convolution import conv_general_dilated_p
from plax_stdlib.lax.dot_general import dot_general_p
from plax_stdlib.lax.naming import name_p


class _Decision:
    """`Saveable` or `Recompute`: a policy's answer, named."""
    __slots__ = ("name", "saved")

    def __init__(self, name: str, saved: bool):
        self.name, self.saved = name, saved

    def __repr__(self):
        return self.name


Saveable = _Decision("Saveable", True)
Recompute = _Decision("Recompute", False)


class Offloadable(NamedTuple):
    """Save the value, moving it from memory space `src` to `dst` (e.g. "device" to
    "pinned_host") until the backward pass."""
    src: str
    dst: str


def is_saved(decision) -> bool:
    """Whether a policy's answer saves the value; any other answer is JAX's TypeError."""
    if isinstance(decision, (bool, Offloadable)):
        return decision if isinstance(decision, bool) else True
    if isinstance(decision, _Decision):
        return decision.saved
    raise TypeError("Value returned by a remat policy should be a bool or "
                    "`ad_checkpoint.Recompute`, `ad_checkpoint.Saveable` or "
                    f"`ad_checkpoint.Offloadable(...)`. Got {decision} of type "
                    f"{type(decision)}.")


def everything_saveable(*_, **__) -> bool:
    """Save every value (checkpointing then changes nothing)."""
    return True


def nothing_saveable(*_, **__) -> bool:
    """Save nothing but the checkpoint's inputs: recompute everything else."""
    return False


@dataclasses.dataclass(frozen=True)
class DotsSaveable:
    """Save the results of matrix products: every `dot_general` and convolution, or
    (`only_if_no_batch_dims`) only the `dot_general`s without batch dimensions. A
    dataclass, as JAX's, so a Jaxpr prints the policy as JAX does."""
    only_if_no_batch_dims: bool

    def __call__(self, prim, *_, **params) -> bool:
        if not self.only_if_no_batch_dims:
            return prim is dot_general_p or prim is conv_general_dilated_p
        if prim is not dot_general_p:
            return False
        (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
        return not lhs_batch and not rhs_batch


dots_saveable = checkpoint_dots = DotsSaveable(False)
dots_with_no_batch_dims_saveable = checkpoint_dots_with_no_batch_dims = DotsSaveable(True)


def offload_dot_with_no_batch_dims(offload_src: str, offload_dst: str):
    """Offload the results of `dot_general`s without batch dimensions."""
    def policy(prim, *avals, **params):
        if dots_with_no_batch_dims_saveable(prim, *avals, **params):
            return Offloadable(offload_src, offload_dst)
        return Recompute
    return policy


def _named(prim, params, names: frozenset) -> bool:
    return prim is name_p and params["name"] in names


@dataclasses.dataclass(frozen=True)
class SaveOnlyTheseNames:
    """Save only the values tagged by `checkpoint_name` with one of `saveable_names`."""
    saveable_names: frozenset

    def __call__(self, prim, *_, **params) -> bool:
        return _named(prim, params, self.saveable_names)


@dataclasses.dataclass(frozen=True)
class SaveAnyNamesButThese:
    """Save the values tagged by `checkpoint_name`, except those with one of `names`."""
    names: frozenset

    def __call__(self, prim, *_, **params) -> bool:
        return prim is name_p and params["name"] not in self.names


def save_only_these_names(*names: str) -> SaveOnlyTheseNames:
    """A policy saving only the values tagged by `checkpoint_name` with one of `names`."""
    return SaveOnlyTheseNames(frozenset(names))


def save_anything_except_these_names(*names: str):
    """A policy saving every value except those tagged with one of `names`."""
    unwanted = frozenset(names)
    return lambda prim, *_, **params: not _named(prim, params, unwanted)


def save_any_names_but_these(*names_not_to_save: str) -> SaveAnyNamesButThese:
    """A policy saving the values tagged by `checkpoint_name`, except those with one
    of `names_not_to_save`."""
    return SaveAnyNamesButThese(frozenset(names_not_to_save))


def save_and_offload_only_these_names(*, names_which_can_be_saved,
                                      names_which_can_be_offloaded, offload_src, offload_dst):
    """Save the values tagged with `names_which_can_be_saved`, offload those tagged with
    `names_which_can_be_offloaded`, recompute the rest."""
    saved = frozenset(names_which_can_be_saved)
    offloaded = frozenset(names_which_can_be_offloaded)
    both = saved & offloaded
    if both:
        raise ValueError("The names should be exclusive and should not intersect in "
                         "`names_which_can_be_saved` and `names_which_can_be_offloaded`. "
                         f"Got names_which_can_be_saved={sorted(saved)}, "
                         f"names_which_can_be_offloaded={sorted(offloaded)}, overlap: "
                         f"{sorted(both)}")

    def policy(prim, *_, **params):
        if _named(prim, params, saved):
            return Saveable
        if _named(prim, params, offloaded):
            return Offloadable(offload_src, offload_dst)
        return Recompute
    return policy


def save_from_both_policies(policy_1, policy_2):
    """A policy saving what either policy saves (both must answer with bools)."""
    def policy(prim, *avals, **params):
        out1, out2 = policy_1(prim, *avals, **params), policy_2(prim, *avals, **params)
        if not (isinstance(out1, bool) and isinstance(out2, bool)):
            raise ValueError("The return value of the policies should be a boolean. Got: "
                             f"{out1} and {out2}. Please write a custom policy function "
                             "directly, rather than using this helper function.")
        return out1 or out2
    return policy


__all__ = [
    "checkpoint_dots", "checkpoint_dots_with_no_batch_dims", "dots_saveable",
    "dots_with_no_batch_dims_saveable", "everything_saveable", "nothing_saveable",
    "offload_dot_with_no_batch_dims", "save_and_offload_only_these_names",
    "save_any_names_but_these", "save_anything_except_these_names",
    "save_from_both_policies", "save_only_these_names",
]

"""How a call out of plax (a pure callback, an FFI call) is batched: its `vmap_method`.

The called function is opaque, so the user says what it can do with a batch:

* `"sequential"`: a loop (`lax.map`) calls it once per batch member;
* `"sequential_unrolled"`: the same loop, unrolled;
* `"expand_dims"`: one call; batched operands have the batch dimension first and
  unbatched ones a new leading dimension of size 1 (the function broadcasts);
* `"broadcast_all"`: one call, every operand batched to the full size first;
* `"legacy_vectorized"`: one call; only batched operands carry the batch dimension.

Without a method, vmap raises NotImplementedError (JAX 0.10's behaviour). Results are
batched at dimension 0.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import plax
from plax.extend.batching import moveaxis, not_mapped
from plax.extend.core import ShapedArray

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                "legacy_vectorized")

# bind(args, result_avals, leading_batch) -> results: the primitive applied again;
# `leading_batch[i]` says whether operand i now has a batch dimension in front.
Rebind = Callable[[Sequence[Any], tuple[ShapedArray, ...], Sequence[bool]], Sequence[Any]]


def check_vmap_method(vmap_method: str | None, api: str) -> None:
    if vmap_method is not None and vmap_method not in VMAP_METHODS:
        raise ValueError(f"{api}: vmap_method must be one of the allowed methods "
                         f"{[*VMAP_METHODS, None]}, but got: {vmap_method!r}")


def batch_call(rebind: Rebind, axis_size: int, args: Sequence[Any], dims: Sequence[Any], *,
               vmap_method: str | None, result_avals: Sequence[ShapedArray], what: str
               ) -> tuple[list, list[int]]:
    """The batching rule of a call out of plax, applied by `vmap_method`."""
    args = [x if d is not_mapped else moveaxis(x, d, 0) for x, d in zip(args, dims)]
    batched = [d is not not_mapped for d in dims]
    out_avals = tuple(ShapedArray((axis_size, *a.shape), a.dtype) for a in result_avals)
    if vmap_method in ("sequential", "sequential_unrolled"):
        fixed = [x for x, b in zip(args, batched) if not b]

        def one(members):
            it, rest = iter(members), iter(fixed)
            merged = [next(it) if b else next(rest) for b in batched]
            return list(rebind(merged, tuple(result_avals), [False] * len(merged)))
        members = [x for x, b in zip(args, batched) if b]
        unroll = axis_size if vmap_method == "sequential_unrolled" else 1
        _, outs = plax.lax.scan(lambda carry, xs: (carry, one(xs)), (), members,
                                unroll=max(unroll, 1))
    elif vmap_method in ("expand_dims", "broadcast_all"):
        size = axis_size if vmap_method == "broadcast_all" else 1
        args = [x if b else plax.lax.broadcast(x, (size,)) for x, b in zip(args, batched)]
        outs = rebind(args, out_avals, [True] * len(args))
    elif vmap_method == "legacy_vectorized":
        outs = rebind(args, out_avals, batched)
    else:
        raise NotImplementedError(
            f"vmap is only supported for {what} when vmap_method is one of "
            f"{', '.join(map(repr, VMAP_METHODS))}; got vmap_method={vmap_method!r}")
    outs = list(outs)
    return outs, [0] * len(outs)

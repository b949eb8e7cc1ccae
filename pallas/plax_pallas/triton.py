"""`plax.experimental.pallas.triton`: the GPU-style kernel operations of JAX's
`jax.experimental.pallas.triton`, in interpret mode: masked `load`/`store` of a
whole block, the atomic read-modify-writes (which return the old value; the
grid runs sequentially, so they are plain updates), and `dot`.
"""
from __future__ import annotations

from typing import Any, Callable

from plax_stdlib import lax, numpy as jnp


def load(ref, *, mask=None, other=None, cache_modifier: str | None = None,
         eviction_policy: str | None = None, volatile: bool = False):
    """The block `ref` holds; where `mask` is false, `other` instead (if given)."""
    value = ref[...]
    if mask is not None and other is not None:
        value = jnp.where(mask, value, jnp.asarray(other, value.dtype))
    return value


def store(ref, val, *, mask=None, eviction_policy: str | None = None) -> None:
    """Write `val` into the block `ref` holds, only where `mask` is true (if given)."""
    if mask is not None:
        val = jnp.where(mask, val, ref[...])
    ref[...] = val


def _atomic(update: Callable[[Any, Any], Any]):
    def op(x_ref_or_view, idx, val, *, mask=None):
        old = x_ref_or_view[idx]
        val = jnp.asarray(val, old.dtype)
        new = update(old, val)
        if mask is not None:
            new = jnp.where(mask, new, old)
        x_ref_or_view[idx] = jnp.broadcast_to(new, old.shape)
        return old
    return op


atomic_add = _atomic(lambda old, v: old + v)
atomic_max = _atomic(jnp.maximum)
atomic_min = _atomic(jnp.minimum)
atomic_and = _atomic(jnp.bitwise_and)
atomic_or = _atomic(jnp.bitwise_or)
atomic_xor = _atomic(jnp.bitwise_xor)
atomic_xchg = _atomic(lambda old, v: v)
for _name in ("add", "max", "min", "and", "or", "xor", "xchg"):
    globals()[f"atomic_{_name}"].__name__ = f"atomic_{_name}"
    globals()[f"atomic_{_name}"].__doc__ = (
        f"`x_ref[idx]` updated by {_name} with `val` where `mask`; → its old value.")


def atomic_cas(ref, cmp, val):
    """Where the scalar `ref[...]` equals `cmp`, write `val`; → the old value."""
    old = ref[...]
    ref[...] = jnp.where(old == cmp, jnp.asarray(val, old.dtype), old)
    return old


def dot(a, b, trans_a: bool = False, trans_b: bool = False, allow_tf32: bool | None = None,
        precision=None):
    """`a @ b` of two 2-D blocks, either transposed first."""
    if trans_a:
        a = jnp.swapaxes(a, -1, -2)
    if trans_b:
        b = jnp.swapaxes(b, -1, -2)
    return lax.dot(a, b, precision=precision)


__all__ = ["atomic_add", "atomic_and", "atomic_cas", "atomic_max", "atomic_min", "atomic_or",
           "atomic_xchg", "atomic_xor", "dot", "load", "store"]

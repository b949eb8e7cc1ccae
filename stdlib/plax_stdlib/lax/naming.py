"""`name`: an identity primitive that tags a value with a user's name, so that a
rematerialization policy (`save_only_these_names`) can decide to save it.

It is written by `plax.ad_checkpoint.checkpoint_name`; it computes nothing, lowers
to its operand, and its tangent passes through untagged (only the primal value is
a candidate residual).
"""
from __future__ import annotations

from plax.extend import tree_util
from plax.extend.batching import unary_batcher
from plax.extend.constructors import standard_primitive


def _name_jvp(primals, tangents, *, name: str):
    (x,), (t,) = primals, tangents
    return name_p.bind(x, name=name), t


name_p = standard_primitive("lax.name", lambda operand, *, name: operand,
                            lambda ctx, operand, *, name: operand,
                            impl=lambda operand, *, name: operand, jvp=_name_jvp,
                            batching=unary_batcher())


def checkpoint_name(x, name: str):
    """`x` (any pytree) tagged with `name`, for `checkpoint_policies.save_only_these_names`."""
    if not isinstance(name, str):
        raise TypeError(f"checkpoint_name: name must be a str, got {type(name).__name__}")
    return tree_util.tree_map(lambda leaf: name_p.bind(leaf, name=name), x)

"""`jax.interpreters.batching` on `plax.extend.batching`: the batching rule tables in
JAX's three signatures, each registered as plax's `(axis_data, args, dims, **params)`
rule (equinox's primitives batch through `axis_primitive_batchers`)."""
from __future__ import annotations

from plax.extend.batching import (bdim_at_front, batch_jaxpr, moveaxis,  # noqa: F401
                                  not_mapped)
from plax.extend.core import BATCHING

from plax_as_jax._rules import RuleTable

PLAX_MODULE = "plax.extend.batching"
__plax_rule_helper__ = True


def _from_plain(prim, rule):
    """`rule(args, dims, **params)`; applications with nothing batched are bound as is."""
    def batching(axis_data, args, dims, **params):
        if all(d is not_mapped for d in dims):
            out = prim.bind(*args, **params)
            return out, ([not_mapped] * len(out) if prim.multiple_results else not_mapped)
        return rule(tuple(args), tuple(dims), **params)  # tuples, as JAX passes them
    return batching


def _from_axis(prim, rule):
    """`rule(axis_size, axis_name, trace_type, args, dims, **params)`."""
    def batching(axis_data, args, dims, **params):
        return rule(axis_data.size, axis_data.name, None, tuple(args), tuple(dims), **params)
    return batching


primitive_batchers = RuleTable(BATCHING, _from_plain)
axis_primitive_batchers = RuleTable(BATCHING, _from_axis)
fancy_primitive_batchers = RuleTable(BATCHING)

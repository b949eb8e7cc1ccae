"""`jax.interpreters.ad` on `plax.extend.ad`: symbolic zeros, undefined primals, and the
jvp/transpose rule tables (equinox registers its primitives' rules through them)."""
from __future__ import annotations

import functools

import plax.extend.ad as pad
from plax.extend.ad import (UndefinedPrimal, Zero, add_tangents, instantiate,  # noqa: F401
                            is_undefined_primal, zeros_like_aval)
from plax.extend.core import JVP, TRANSPOSE, get_aval
from plax_transforms.ad import (JVPTrace, JVPTracer, LinearizeTrace,  # noqa: F401
                                LinearizeTracer)  # (isinstance checks: equinox's, tutorials')

from plax_as_jax._rules import RuleTable

PLAX_MODULE = "plax.extend.ad"
__plax_rule_helper__ = True

primitive_jvps = RuleTable(JVP)
primitive_transposes = RuleTable(TRANSPOSE)
add_jaxvals = add_tangents


def instantiate_zeros(tangent):
    """`tangent` as an array (a `Zero` becomes zeros of its type)."""
    return pad.instantiate(tangent)


def defjvp(primitive, *jvp_rules) -> None:
    """JAX's form: one rule per operand, `rule(tangent, *primals, **params)` giving
    that operand's part of the output tangent (None: no dependence)."""
    def jvp(primals, tangents, **params):
        out = primitive.bind(*primals, **params)
        parts = [rule(t, *primals, **params) for rule, t in zip(jvp_rules, tangents)
                 if rule is not None and type(t) is not Zero]
        if not parts:
            return out, Zero(pad.tangent_aval(get_aval(out)))
        return out, functools.reduce(add_tangents, parts)
    primitive_jvps[primitive] = jvp

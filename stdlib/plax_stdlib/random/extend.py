"""`plax.extend.random`: what a package defining PRNG primitives declares to plax.

A primitive that takes or makes typed keys says what it does to them, so that
`jax_debug_key_reuse` can check programs using it: `register_key_reuse_signature(
prim, KeyReuseSignature(Sink(0), Source(0)))` for one that consumes its key operand
and returns fresh keys, or a function of the equation for a signature that depends
on parameters or sub-Jaxprs (`jaxpr_signature` analyses those). Undeclared
primitives consume every key they take. The standard primitives are declared the
same way, in `plax_stdlib.key_reuse`.
"""
from plax_stdlib.key_reuse import (
    Forward,
    KeyReuseSignature,
    Sink,
    Source,
    check_key_reuse_jaxpr,
    jaxpr_signature,
    register_key_reuse_signature,
)

__all__ = ["Forward", "KeyReuseSignature", "Sink", "Source", "check_key_reuse_jaxpr",
           "jaxpr_signature", "register_key_reuse_signature"]

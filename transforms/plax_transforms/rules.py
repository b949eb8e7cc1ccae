"""Every module of plax-transforms that registers rules on primitives, loaded together.

Entry point `plax.primitives: transforms`, so that listing a primitive's rules
(`plax.extend.rules_of`) shows the transform rules of higher-order primitives — the
jit primitive's jvp, partial eval, transpose and batching, the control-flow rules —
even before the transform that uses them has been imported.
"""
from plax_transforms import (ad_jit, batching, control_flow_rules,  # noqa: F401
                             custom_derivatives, lowering_rules, remat)

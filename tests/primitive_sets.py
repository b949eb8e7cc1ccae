"""Primitives that the per-primitive lowering tables check elsewhere.

Collectives get their lowering with shard_map (named axes only exist under vmap so
far; tests/test_vmap_collectives.py); control flow carries Jaxprs and has its own
tests (tests/test_control_flow_*.py). The tables assert that these are the only
exemptions, so no new primitive can slip past them.
"""
COLLECTIVES = frozenset({"psum", "pmax", "pmin", "axis_index", "all_gather", "psum_scatter",
                         "all_to_all", "ppermute"})
CONTROL_FLOW = frozenset({"cond", "while", "scan"})
EXEMPT = COLLECTIVES | CONTROL_FLOW

"""Primitives that the per-primitive lowering tables check elsewhere.

Collectives lower only inside a shard_map body (tests/test_shard_map_collectives.py;
their batching in tests/test_vmap_collectives.py; ragged_all_to_all, psend and precv, which
XLA:CPU does not run: tests/test_ragged_collectives.py); control flow carries Jaxprs and has its own
tests (tests/test_control_flow_*.py; custom_linear_solve: tests/test_lax_implicit_solves.py);
`rng_bit_generator` takes a uint32[4] key rather than the tables' arrays, and is checked
with the rbg PRNG (tests/test_random_keys.py); `dimension_as_value` has a value only in
shape-polymorphic export (tests/test_export_shape_ops.py). The tables assert that these are the only
exemptions, so no new primitive can slip past them.

`NO_VALUES` have no output the value tables could compare with NumPy: tokens, `dce_sink`
(none at all) and `rng_uniform` (the backend's own stream); tests/test_lax_tokens_composite.py
checks them (and their lowering against JAX's).
"""
COLLECTIVES = frozenset({"psum", "psum_invariant", "pmax", "pmin", "axis_index", "all_gather",
                         "all_gather_invariant", "reduce_scatter", "all_to_all", "ppermute",
                         "pbroadcast", "pvary", "ragged_all_to_all", "psend", "precv"})
CONTROL_FLOW = frozenset({"cond", "while", "scan", "custom_linear_solve"})
KEYED = frozenset({"rng_bit_generator"})
EXPORT_ONLY = frozenset({"dimension_as_value"})
EXEMPT = COLLECTIVES | CONTROL_FLOW | KEYED | EXPORT_ONLY
NO_VALUES = frozenset({"create_token", "after_all", "dce_sink", "rng_uniform"})

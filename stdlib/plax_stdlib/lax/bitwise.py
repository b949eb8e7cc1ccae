"""Bitwise primitives on bools and integers: and/or/xor/not, shifts, bit counts.

The primitives keep JAX's names (`and`, `or`, `xor`, `not`), which are Python
keywords, so the public functions are `bitwise_and`... as in `jax.lax`.

Their operands' tangents are float0 zeros, which differentiation does not trace; the
logical ops and shifts still have zero jvp rules, as JAX registers them, and the bit
counts none, as in JAX.
"""
from __future__ import annotations

from plax.extend.constructors import BOOL_OR_INT, INT, hlo_rule
from plax_stdlib.lax.op_table import PIECEWISE_CONSTANT, binary_op, unary_op

and_p, bitwise_and = binary_op(
    "and", BOOL_OR_INT, hlo_rule("and_"),
    "Elementwise AND (logical for bools).",
    function="bitwise_and", jvp=PIECEWISE_CONSTANT,
    example=("lax.bitwise_and(jnp.array([12, 10]), jnp.array([10, 6]))",
             "Array([8, 2], dtype=int32)"))
or_p, bitwise_or = binary_op(
    "or", BOOL_OR_INT, hlo_rule("or_"),
    "Elementwise OR (logical for bools).",
    function="bitwise_or", jvp=PIECEWISE_CONSTANT,
    example=("lax.bitwise_or(jnp.array([12, 10]), jnp.array([10, 6]))",
             "Array([14, 14], dtype=int32)"))
xor_p, bitwise_xor = binary_op(
    "xor", BOOL_OR_INT, hlo_rule("xor"),
    "Elementwise exclusive OR (logical for bools).",
    function="bitwise_xor", jvp=PIECEWISE_CONSTANT,
    example=("lax.bitwise_xor(jnp.array([True, True]), jnp.array([True, False]))",
             "Array([False, True], dtype=bool)"))
not_p, bitwise_not = unary_op(
    "not", BOOL_OR_INT, hlo_rule("not_"),
    "Elementwise NOT (logical for bools, one's complement for integers).",
    function="bitwise_not", jvp=PIECEWISE_CONSTANT,
    example=("lax.bitwise_not(jnp.array([0, 5]))",
             "Array([-1, -6], dtype=int32)"))
shift_left_p, shift_left = binary_op(
    "shift_left", INT, hlo_rule("shift_left"),
    "Elementwise x << y; shifting by the bit width or more gives 0.", jvp=PIECEWISE_CONSTANT,
    example=("lax.shift_left(jnp.array([1, 3]), jnp.array([4, 1]))",
             "Array([16, 6], dtype=int32)"))
shift_right_logical_p, shift_right_logical = binary_op(
    "shift_right_logical", INT, hlo_rule("shift_right_logical"),
    "Elementwise x >> y filling with zeros; shifting by the bit width or more gives 0.",
    jvp=PIECEWISE_CONSTANT,
    example=("lax.shift_right_logical(jnp.array([-16, 16]), 2)",
             "Array([1073741820, 4], dtype=int32)"))
shift_right_arithmetic_p, shift_right_arithmetic = binary_op(
    "shift_right_arithmetic", INT, hlo_rule("shift_right_arithmetic"),
    "Elementwise x >> y filling with the sign bit.", jvp=PIECEWISE_CONSTANT,
    example=("lax.shift_right_arithmetic(jnp.array([-16, 16]), 2)",
             "Array([-4, 4], dtype=int32)"))
population_count_p, population_count = unary_op(
    "population_count", INT, hlo_rule("popcnt"), "Elementwise number of set bits.",
    example=("lax.population_count(jnp.array([7, 8]))",
             "Array([3, 1], dtype=int32)"))
clz_p, clz = unary_op(
    "clz", INT, hlo_rule("count_leading_zeros"), "Elementwise number of leading zero bits.",
    example=("lax.clz(jnp.array([1, 256]))",
             "Array([31, 23], dtype=int32)"))

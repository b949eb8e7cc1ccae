"""Bitwise primitives on bools and integers: and/or/xor/not, shifts, bit counts.

The primitives keep JAX's names (`and`, `or`, `xor`, `not`), which are Python
keywords, so the public functions are `bitwise_and`... as in `jax.lax`.
"""
from __future__ import annotations

from plax.extend.constructors import BOOL_OR_INT, INT, hlo_rule
from plax_stdlib.lax.op_table import binary_op, unary_op

and_p, bitwise_and = binary_op("and", BOOL_OR_INT, hlo_rule("and_"),
                               "Elementwise AND (logical for bools).", function="bitwise_and")
or_p, bitwise_or = binary_op("or", BOOL_OR_INT, hlo_rule("or_"),
                             "Elementwise OR (logical for bools).", function="bitwise_or")
xor_p, bitwise_xor = binary_op("xor", BOOL_OR_INT, hlo_rule("xor"),
                               "Elementwise exclusive OR (logical for bools).",
                               function="bitwise_xor")
not_p, bitwise_not = unary_op("not", BOOL_OR_INT, hlo_rule("not_"),
                              "Elementwise NOT (logical for bools, one's complement for integers).",
                              function="bitwise_not")
shift_left_p, shift_left = binary_op(
    "shift_left", INT, hlo_rule("shift_left"),
    "Elementwise x << y; shifting by the bit width or more gives 0.")
shift_right_logical_p, shift_right_logical = binary_op(
    "shift_right_logical", INT, hlo_rule("shift_right_logical"),
    "Elementwise x >> y filling with zeros; shifting by the bit width or more gives 0.")
shift_right_arithmetic_p, shift_right_arithmetic = binary_op(
    "shift_right_arithmetic", INT, hlo_rule("shift_right_arithmetic"),
    "Elementwise x >> y filling with the sign bit.")
population_count_p, population_count = unary_op(
    "population_count", INT, hlo_rule("popcnt"), "Elementwise number of set bits.")
clz_p, clz = unary_op(
    "clz", INT, hlo_rule("count_leading_zeros"), "Elementwise number of leading zero bits.")

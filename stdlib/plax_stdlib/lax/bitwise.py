"""Bitwise primitives on bools and integers: and/or/xor/not, shifts, bit counts.

The primitives keep JAX's names (`and`, `or`, `xor`, `not`), which are Python
keywords, so the public functions are `bitwise_and`... as in `jax.lax`.
"""
from __future__ import annotations

from plax.extend.constructors import BOOL_OR_INT, INT, binary, hlo_rule, unary
from plax_stdlib.lax.conversion import match_python_scalars

and_p = binary("lax.and", dtypes=BOOL_OR_INT, lower=hlo_rule("and_"))
def bitwise_and(x, y):
    """Elementwise AND (logical for bools)."""
    return and_p.bind(*match_python_scalars("and", x, y))


or_p = binary("lax.or", dtypes=BOOL_OR_INT, lower=hlo_rule("or_"))
def bitwise_or(x, y):
    """Elementwise OR (logical for bools)."""
    return or_p.bind(*match_python_scalars("or", x, y))


xor_p = binary("lax.xor", dtypes=BOOL_OR_INT, lower=hlo_rule("xor"))
def bitwise_xor(x, y):
    """Elementwise exclusive OR (logical for bools)."""
    return xor_p.bind(*match_python_scalars("xor", x, y))


not_p = unary("lax.not", dtypes=BOOL_OR_INT, lower=hlo_rule("not_"))
def bitwise_not(x):
    """Elementwise NOT (logical for bools, one's complement for integers)."""
    return not_p.bind(x)


shift_left_p = binary("lax.shift_left", dtypes=INT, lower=hlo_rule("shift_left"))
def shift_left(x, y):
    """Elementwise x << y; shifting by the bit width or more gives 0."""
    return shift_left_p.bind(*match_python_scalars("shift_left", x, y))


shift_right_logical_p = binary("lax.shift_right_logical", dtypes=INT,
                               lower=hlo_rule("shift_right_logical"))
def shift_right_logical(x, y):
    """Elementwise x >> y filling with zeros; shifting by the bit width or more gives 0."""
    return shift_right_logical_p.bind(*match_python_scalars("shift_right_logical", x, y))


shift_right_arithmetic_p = binary("lax.shift_right_arithmetic", dtypes=INT,
                                  lower=hlo_rule("shift_right_arithmetic"))
def shift_right_arithmetic(x, y):
    """Elementwise x >> y filling with the sign bit."""
    return shift_right_arithmetic_p.bind(
        *match_python_scalars("shift_right_arithmetic", x, y))


population_count_p = unary("lax.population_count", dtypes=INT, lower=hlo_rule("popcnt"))
def population_count(x):
    """Elementwise number of set bits."""
    return population_count_p.bind(x)


clz_p = unary("lax.clz", dtypes=INT, lower=hlo_rule("count_leading_zeros"))
def clz(x):
    """Elementwise number of leading zero bits."""
    return clz_p.bind(x)

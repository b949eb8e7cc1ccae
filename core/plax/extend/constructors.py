"""Helper constructors for primitives, and the checks their rules share: dtype kinds
(`FLOAT`, `INT`, ...), `standard_primitive`, `elementwise`/`unary`/`binary`, the
lowering helpers `hlo_rule`/`chlo_rule`/`elementwise_lowering`, and the shape and
dtype checks that give JAX-style errors."""
from plax._src.constructors import (
    ANY, BOOL, BOOL_OR_INT, COMPLEX, EXTENDED, F32_OR_F64, FLOAT, INEXACT, INT, NUMBER, ORDERED,
    SIGNED,
    UNSIGNED, binary, broadcasting_shape, canonicalize_axis, check_axes, check_dtype,
    check_same_dtypes, chlo_rule, complex_dtype, describe, dtype_name, elementwise,
    elementwise_lowering, hlo_rule, kind_of, real_dtype, standard_primitive, to_bool, unary,
    weak_result)

__all__ = [
    "ANY", "BOOL", "BOOL_OR_INT", "COMPLEX", "EXTENDED", "F32_OR_F64", "FLOAT", "INEXACT", "INT",
    "NUMBER",
    "ORDERED", "SIGNED", "UNSIGNED", "binary", "broadcasting_shape", "canonicalize_axis",
    "check_axes", "check_dtype", "check_same_dtypes", "chlo_rule", "complex_dtype", "describe",
    "dtype_name", "elementwise", "elementwise_lowering", "hlo_rule", "kind_of", "real_dtype",
    "standard_primitive", "to_bool", "unary", "weak_result",
]

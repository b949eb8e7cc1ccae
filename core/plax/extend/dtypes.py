"""plax's dtype system for rule and library authors: the extra dtypes (bfloat16,
float8s, int4, float0 for integer tangents, extended dtypes), canonicalisation under
x64, JAX's promotion lattice with weak types, and dtype predicates."""
from plax._src.dtypes import (
    ExtendedDType, TypePromotionError, bfloat16, canonicalize_dtype,
    check_and_canonicalize_user_dtype, check_valid_dtype, default_complex_dtype,
    default_float_dtype, default_int_dtype, default_uint_dtype, dtype, extended, finfo,
    float0, float4_e2m1fn, float6_e2m3fn, float6_e3m2fn, float8_e3m4, float8_e4m3,
    float8_e4m3b11fnuz, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz,
    float8_e8m0fnu, iinfo, int1, int2, int4, is_complex, is_float, is_integer, is_weakly_typed,
    issubdtype, itemsize_bits, lattice_result_type, prng_key, promote_types,
    python_scalar_dtypes, result_type, scalar_type_of, to_complex_dtype, to_inexact_dtype,
    uint1, uint2, uint4)

__all__ = [
    "ExtendedDType", "TypePromotionError", "bfloat16", "canonicalize_dtype",
    "check_and_canonicalize_user_dtype", "check_valid_dtype", "default_complex_dtype",
    "default_float_dtype", "default_int_dtype", "default_uint_dtype", "dtype", "extended",
    "finfo", "float0", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4",
    "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
    "float8_e5m2fnuz", "float8_e8m0fnu", "iinfo", "int1", "int2", "int4", "is_complex",
    "is_float", "is_integer", "is_weakly_typed", "issubdtype", "itemsize_bits",
    "lattice_result_type", "prng_key", "promote_types", "python_scalar_dtypes", "result_type",
    "scalar_type_of", "to_complex_dtype", "to_inexact_dtype", "uint1", "uint2", "uint4",
]

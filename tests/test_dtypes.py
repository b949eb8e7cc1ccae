"""Tests of plax._src.dtypes: canonicalization, weak types, the promotion lattice."""
import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st

from plax.extend import config, dtypes
from plax.extend.core import ShapedArray

# --- JAX's documented binary promotion table (docs: "Type promotion semantics"),
# with x64 enabled. Rows and columns in the order of `_NAMES`; i*, f*, c* are Python
# int/float/complex (weak types).
_NAMES = "b1 u1 u2 u4 u8 i1 i2 i4 i8 bf f2 f4 f8 c8 c16 i* f* c*".split()
_DOC_TABLE = """
b1  b1  u1  u2  u4  u8  i1  i2  i4  i8  bf  f2  f4  f8  c8  c16 i*  f*  c*
u1  u1  u1  u2  u4  u8  i2  i2  i4  i8  bf  f2  f4  f8  c8  c16 u1  f*  c*
u2  u2  u2  u2  u4  u8  i4  i4  i4  i8  bf  f2  f4  f8  c8  c16 u2  f*  c*
u4  u4  u4  u4  u4  u8  i8  i8  i8  i8  bf  f2  f4  f8  c8  c16 u4  f*  c*
u8  u8  u8  u8  u8  u8  f*  f*  f*  f*  bf  f2  f4  f8  c8  c16 u8  f*  c*
i1  i1  i2  i4  i8  f*  i1  i2  i4  i8  bf  f2  f4  f8  c8  c16 i1  f*  c*
i2  i2  i2  i4  i8  f*  i2  i2  i4  i8  bf  f2  f4  f8  c8  c16 i2  f*  c*
i4  i4  i4  i4  i8  f*  i4  i4  i4  i8  bf  f2  f4  f8  c8  c16 i4  f*  c*
i8  i8  i8  i8  i8  f*  i8  i8  i8  i8  bf  f2  f4  f8  c8  c16 i8  f*  c*
bf  bf  bf  bf  bf  bf  bf  bf  bf  bf  bf  f4  f4  f8  c8  c16 bf  bf  c8
f2  f2  f2  f2  f2  f2  f2  f2  f2  f2  f4  f2  f4  f8  c8  c16 f2  f2  c8
f4  f4  f4  f4  f4  f4  f4  f4  f4  f4  f4  f4  f4  f8  c8  c16 f4  f4  c8
f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  c16 c16 f8  f8  c16
c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  c16 c8  c16 c8  c8  c8
c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16
i*  i*  u1  u2  u4  u8  i1  i2  i4  i8  bf  f2  f4  f8  c8  c16 i*  f*  c*
f*  f*  f*  f*  f*  f*  f*  f*  f*  f*  bf  f2  f4  f8  c8  c16 f*  f*  c*
c*  c*  c*  c*  c*  c*  c*  c*  c*  c*  c8  c8  c8  c16 c8  c16 c*  c*  c*
"""
DOC_TABLE = {}
for _line in _DOC_TABLE.strip().splitlines():
    _row, *_cells = _line.split()
    DOC_TABLE.update({(_row, col): cell for col, cell in zip(_NAMES, _cells)})

_STRONG = {
    "b1": np.bool_, "u1": np.uint8, "u2": np.uint16, "u4": np.uint32, "u8": np.uint64,
    "i1": np.int8, "i2": np.int16, "i4": np.int32, "i8": np.int64, "bf": ml_dtypes.bfloat16,
    "f2": np.float16, "f4": np.float32, "f8": np.float64, "c8": np.complex64,
    "c16": np.complex128}
_WEAK_VALUES = {"i*": 1, "f*": 1.0, "c*": 1j}
_TO_32 = {"u8": "u4", "i8": "i4", "f8": "f4", "c16": "c8"}


def _arg(name):
    """A value of the table's type `name`: a strong dtype or a weak Python scalar."""
    return _WEAK_VALUES[name] if name in _WEAK_VALUES else np.dtype(_STRONG[name])


def _table_name(dtype, weak):
    if weak:
        return {"i": "i*", "f": "f*", "c": "c*"}[dtype.kind]
    return next(name for name, t in _STRONG.items() if np.dtype(t) == dtype)


@pytest.mark.parametrize("row", _NAMES)
def test_promotion_table_matches_jax_docs_with_x64(row):
    with config.enable_x64(True):
        got = {col: _table_name(*dtypes.lattice_result_type(_arg(row), _arg(col)))
               for col in _NAMES}
    assert got == {col: DOC_TABLE[row, col] for col in _NAMES}


def _x32_table(row, col):
    # Without x64, plax (like JAX 0.10) promotes uint32 with int8/16/32 to int32 rather
    # than int64, so that no 64-bit type arises from 32-bit inputs.
    if {row, col} in ({"u4", "i1"}, {"u4", "i2"}, {"u4", "i4"}):
        return "i4"
    return DOC_TABLE[row, col]


@pytest.mark.parametrize("row", _NAMES)
def test_promotion_table_without_x64_is_canonicalized(row):
    """Inputs become 32-bit first, then the (x32) table applies, then outputs are 32-bit."""
    got = {col: _table_name(*dtypes.lattice_result_type(_arg(row), _arg(col)))
           for col in _NAMES}
    expected = {}
    for col in _NAMES:
        cell = _x32_table(_TO_32.get(row, row), _TO_32.get(col, col))
        expected[col] = _TO_32.get(cell, cell)
    assert got == expected


@pytest.mark.parametrize("x64", [True, False])
def test_promote_types_is_not_canonicalized(x64):
    strong = [n for n in _NAMES if n not in _WEAK_VALUES]
    with config.enable_x64(x64):
        for row in strong:
            for col in strong:
                expected = DOC_TABLE[row, col] if x64 else _x32_table(row, col)
                expected = {"i*": "i8", "f*": "f8", "c*": "c16"}.get(expected, expected)
                got = dtypes.promote_types(_STRONG[row], _STRONG[col])
                assert _table_name(got, False) == expected, (row, col)


def test_promote_types_accepts_python_types_as_weak():
    assert dtypes.promote_types("uint8", int) == np.dtype("uint8")
    assert dtypes.promote_types("float16", float) == np.dtype("float16")
    assert dtypes.promote_types(np.int32, "float32") == np.dtype("float32")
    assert dtypes.promote_types(int, float) == np.dtype("float64")


# --- Dtypes outside the documented table.

NARROW_FLOATS = [ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3fnuz,
                 ml_dtypes.float8_e5m2fnuz, ml_dtypes.float8_e4m3b11fnuz, ml_dtypes.float8_e3m4,
                 ml_dtypes.float8_e4m3, ml_dtypes.float8_e8m0fnu, ml_dtypes.float4_e2m1fn,
                 ml_dtypes.float6_e2m3fn, ml_dtypes.float6_e3m2fn]
SUBBYTE_INTS = [ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2, ml_dtypes.uint2]


@pytest.mark.parametrize("t", NARROW_FLOATS)
def test_narrow_floats_take_weak_scalars_and_ints_but_no_other_float(t):
    # Narrow floats sit right above f*: integers and weak scalars promote to them,
    # other floating types never do.
    for other in [1, 2.0, t, np.int8, np.uint64, np.bool_]:
        assert dtypes.result_type(t, other) == np.dtype(t), other
    e4m3, e5m2 = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2
    other_float8 = e5m2 if t is e4m3 else e4m3
    for other in [np.float32, ml_dtypes.bfloat16, np.float16, other_float8, 1j]:
        with pytest.raises(TypeError, match="no available implicit dtype promotion path"):
            dtypes.result_type(t, other)
    with pytest.raises(ValueError, match="bit floats do not promote implicitly"):
        dtypes.promote_types(t, np.float32)  # also a ValueError, like JAX's


@pytest.mark.parametrize("t", SUBBYTE_INTS)
def test_subbyte_ints_take_weak_ints_only(t):
    assert dtypes.result_type(t, 3) == np.dtype(t)
    with pytest.raises(dtypes.TypePromotionError, match="bit integers do not promote"):
        dtypes.result_type(t, np.int8)
    with pytest.raises(dtypes.TypePromotionError):
        dtypes.result_type(t, 1.5)


def test_strict_promotion_allows_only_weak_and_equal():
    with config.numpy_dtype_promotion("strict"):
        assert dtypes.result_type(np.float32, 1.0) == np.dtype(np.float32)
        assert dtypes.result_type(np.int16, 1) == np.dtype(np.int16)
        assert dtypes.result_type(np.int8, np.int8) == np.dtype(np.int8)
        assert dtypes.result_type(1, 2.0, return_weak_type_flag=True) == (
            np.dtype(np.float32), True)
        for a, b in [(np.int32, np.float32), (np.int8, np.int16), (np.float32, 1j * 0 + 1),
                     (ml_dtypes.bfloat16, np.float16)]:
            with pytest.raises(TypeError, match="jax_numpy_dtype_promotion=strict"):
                dtypes.result_type(a, b)
    assert dtypes.result_type(np.int32, np.float32) == np.dtype(np.float32)


# --- Hypothesis properties of the lattice.

ALL_STRONG = [np.dtype(t) for t in [*_STRONG.values(), *NARROW_FLOATS, *SUBBYTE_INTS]]
strong_dtypes = st.sampled_from(ALL_STRONG)


def _promote_or_error(a, b):
    try:
        return dtypes.promote_types(a, b)
    except dtypes.TypePromotionError:
        return "error"


@given(strong_dtypes, strong_dtypes)
def test_join_is_commutative(a, b):
    with config.enable_x64(True):
        assert _promote_or_error(a, b) == _promote_or_error(b, a)


@given(strong_dtypes, strong_dtypes, strong_dtypes)
def test_join_is_associative(a, b, c):
    def join3(x, y, z):
        xy = _promote_or_error(x, y)
        return "error" if isinstance(xy, str) else _promote_or_error(xy, z)

    with config.enable_x64(True):
        left, right = join3(a, b, c), join3(b, c, a)
        try:
            flat = dtypes.result_type(a, b, c)
        except dtypes.TypePromotionError:
            flat = "error"
    assert left == right == flat


@given(strong_dtypes, strong_dtypes)
def test_join_is_idempotent_and_an_upper_bound(a, b):
    with config.enable_x64(True):
        assert dtypes.promote_types(a, a) == a
        ab = _promote_or_error(a, b)
        if not isinstance(ab, str):
            assert dtypes.promote_types(a, ab) == ab
            assert dtypes.promote_types(ab, b) == ab


_KIND_RANK = {"b": 0, "i": 1, "u": 1, "f": 2, "c": 3}
_SCALARS = [(True, 0), (3, 1), (-2, 1), (2.5, 2), (1j, 3)]


@given(st.sampled_from([d for d in ALL_STRONG if d not in map(np.dtype, SUBBYTE_INTS)]),
       st.sampled_from(_SCALARS), st.booleans())
def test_weak_scalars_never_widen_arrays(dt, scalar_and_rank, x64):
    scalar, rank = scalar_and_rank
    with config.enable_x64(x64):
        array = np.zeros(2, dt)
        array_rank = 2 if dt in map(np.dtype, NARROW_FLOATS) else _KIND_RANK[dt.kind]
        if rank <= array_rank:
            assert dtypes.result_type(array, scalar) == dtypes.canonicalize_dtype(dt)
            assert dtypes.result_type(scalar, array) == dtypes.canonicalize_dtype(dt)


# --- Canonicalization and x64.

def test_canonicalization_follows_x64():
    assert config.enable_x64.value is False
    pairs = [("int64", "int32"), ("uint64", "uint32"), ("float64", "float32"),
             ("complex128", "complex64"), ("int8", "int8"), ("bfloat16", "bfloat16")]
    for wide, narrow in pairs:
        assert dtypes.canonicalize_dtype(wide) == np.dtype(narrow)
        with config.enable_x64(True):
            assert dtypes.canonicalize_dtype(wide) == np.dtype(wide)
    assert dtypes.default_int_dtype() == np.dtype("int32")
    assert dtypes.default_float_dtype() == np.dtype("float32")
    assert dtypes.result_type(np.float64) == np.dtype("float32")
    assert dtypes.dtype(1, canonicalize=True) == np.dtype("int32")
    with config.enable_x64(True):
        assert dtypes.default_int_dtype() == np.dtype("int64")
        assert dtypes.default_float_dtype() == np.dtype("float64")
        assert dtypes.result_type(np.float64) == np.dtype("float64")
        assert dtypes.result_type(1) == np.dtype("int64")
        assert dtypes.dtype(1, canonicalize=True) == np.dtype("int64")


def test_dtype_of_values_and_specifiers():
    assert dtypes.dtype(1) == np.dtype("int64")
    assert dtypes.dtype(1.0) == np.dtype("float64")
    assert dtypes.dtype(True) == np.dtype(bool)
    assert dtypes.dtype(1j) == np.dtype("complex128")
    assert dtypes.dtype(int) == np.dtype("int64")
    assert dtypes.dtype(np.float32) == np.dtype("float32")
    assert dtypes.dtype("bfloat16") == np.dtype(ml_dtypes.bfloat16)
    assert dtypes.dtype(np.arange(3, dtype=np.int16)) == np.dtype("int16")
    assert dtypes.dtype(np.float64(2), canonicalize=True) == np.dtype("float32")
    assert dtypes.dtype(dtypes.float0) == dtypes.float0


class _PlaxValue:
    """Stands for a plax array/tracer: anything carrying an `aval`."""

    def __init__(self, dtype, weak_type=False):
        self.aval = ShapedArray((2,), dtype, weak_type)


def test_plax_values_keep_their_dtype_and_weak_type():
    x = _PlaxValue(np.float64, weak_type=True)
    assert dtypes.dtype(x, canonicalize=True) == np.dtype("float64")
    assert dtypes.is_weakly_typed(x) and not dtypes.is_weakly_typed(_PlaxValue(np.float32))
    assert dtypes.result_type(x, np.float16) == np.dtype("float16")
    assert dtypes.lattice_result_type(x) == (np.dtype("float64"), True)
    assert dtypes.lattice_result_type(x, _PlaxValue(np.float64)) == (np.dtype("float64"), False)
    assert dtypes.lattice_result_type(_PlaxValue(np.float16, True), 2) == (
        np.dtype("float16"), True)
    weak_i16 = _PlaxValue(np.int16, weak_type=True)
    assert dtypes.lattice_result_type(weak_i16, _PlaxValue(np.int8, True)) == (
        np.dtype("int16"), True)
    assert dtypes.result_type(weak_i16, return_weak_type_flag=True) == (np.dtype("int32"), True)


def test_weak_types():
    assert all(map(dtypes.is_weakly_typed, [1, 1.0, 1j]))
    assert not any(map(dtypes.is_weakly_typed, [True, np.int32(1), np.zeros(2)]))
    assert dtypes.result_type(1, 2.0, return_weak_type_flag=True) == (np.dtype("float32"), True)
    assert dtypes.result_type(True, 1, return_weak_type_flag=True) == (np.dtype("int32"), True)
    assert dtypes.result_type(True, False, return_weak_type_flag=True) == (np.dtype(bool), False)
    assert dtypes.result_type(np.int8, 1, return_weak_type_flag=True) == (np.dtype("int8"), False)
    assert dtypes.result_type(None) == np.dtype("float32")


def test_check_and_canonicalize_user_dtype():
    check = dtypes.check_and_canonicalize_user_dtype
    assert check(int) == np.dtype("int32") and check(float) == np.dtype("float32")
    assert check("bfloat16") == np.dtype(ml_dtypes.bfloat16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check(np.int16) == np.dtype("int16")
    with pytest.warns(UserWarning, match="float64 in zeros is not available.*float32"):
        assert check("float64", "zeros") == np.dtype("float32")
    with config.enable_x64(True):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert check("float64") == np.dtype("float64")


@pytest.mark.parametrize("bad", ["U5", str, object, "O", np.dtype("datetime64[s]")])
def test_unsupported_dtypes_are_type_errors(bad):
    with pytest.raises(TypeError, match="(not a valid plax array type|only bool and numeric)"):
        dtypes.dtype(bad)
    with pytest.raises(TypeError, match="zeros"):
        dtypes.check_and_canonicalize_user_dtype(bad, "zeros")


def test_bad_inputs():
    with pytest.raises(ValueError, match="got None"):
        dtypes.dtype(None)
    with pytest.raises(ValueError, match="dtype must be specified"):
        dtypes.check_and_canonicalize_user_dtype(None)
    with pytest.raises(TypeError, match="Cannot determine dtype"):
        dtypes.dtype(object())
    with pytest.raises(TypeError, match="not understood"):
        dtypes.canonicalize_dtype("float33")
    with pytest.raises(ValueError, match="at least one"):
        dtypes.result_type()
    with pytest.raises(TypeError, match="not a valid dtype for type promotion"):
        dtypes.promote_types("float32", "U3")
    with pytest.raises(TypeError, match="not a valid dtype for type promotion"):
        dtypes.result_type(dtypes.float0, np.float32)
    with pytest.raises(TypeError, match="no Python scalar type"):
        dtypes.scalar_type_of(dtypes.float0)


# --- Hierarchy and helpers.

class _KeyDType(dtypes.ExtendedDType):
    type = dtypes.prng_key
    name = "key<test>"


def test_issubdtype_places_ml_dtypes_in_numpy_hierarchy():
    for t in [ml_dtypes.bfloat16, *NARROW_FLOATS]:
        for parent in [t, np.floating, np.inexact, np.number, np.generic]:
            assert dtypes.issubdtype(t, parent)
        assert not dtypes.issubdtype(t, np.integer)
        assert not dtypes.issubdtype(t, np.float16)
        assert dtypes.is_float(t) and not dtypes.is_integer(t) and not dtypes.is_complex(t)
    for t in [ml_dtypes.int4, ml_dtypes.int2]:
        assert dtypes.issubdtype(t, np.signedinteger) and dtypes.issubdtype(t, np.integer)
        assert not dtypes.issubdtype(t, np.unsignedinteger) and dtypes.is_integer(t)
    assert dtypes.issubdtype(ml_dtypes.uint4, np.unsignedinteger)
    assert not dtypes.issubdtype(ml_dtypes.uint4, np.signedinteger)


@pytest.mark.parametrize("a", [t for name, t in _STRONG.items() if name != "bf"])
@pytest.mark.parametrize("b", [np.bool_, np.integer, np.signedinteger, np.unsignedinteger,
                               np.floating, np.complexfloating, np.inexact, np.number,
                               np.float32, np.int64])
def test_issubdtype_agrees_with_numpy_on_numpy_types(a, b):
    assert dtypes.issubdtype(a, b) == np.issubdtype(a, b)


def test_extended_dtypes():
    key = _KeyDType()
    assert dtypes.issubdtype(key, dtypes.extended) and dtypes.issubdtype(key, dtypes.prng_key)
    assert dtypes.issubdtype(key, key) and not dtypes.issubdtype(np.float32, key)
    assert not dtypes.issubdtype(np.float32, dtypes.extended)
    assert dtypes.canonicalize_dtype(key, allow_extended=True) is key
    with pytest.raises(TypeError, match="allow_extended"):
        dtypes.canonicalize_dtype(key)

    class Keys:
        dtype = key
    assert dtypes.result_type(Keys(), Keys()) is key
    with pytest.raises(TypeError, match="not a valid dtype for type promotion"):
        dtypes.result_type(Keys(), np.float32)


def test_finfo_iinfo_and_bits_for_ml_dtypes():
    assert dtypes.finfo(ml_dtypes.bfloat16).bits == 16
    assert dtypes.finfo(ml_dtypes.bfloat16).eps == 2.0 ** -7
    assert float(dtypes.finfo(ml_dtypes.float8_e4m3fn).max) == 448.0
    assert (dtypes.iinfo(ml_dtypes.int4).min, dtypes.iinfo(ml_dtypes.int4).max) == (-8, 7)
    assert dtypes.iinfo(ml_dtypes.uint4).max == 15
    assert dtypes.finfo(np.float32).eps == np.finfo(np.float32).eps
    bits = {ml_dtypes.int4: 4, ml_dtypes.float4_e2m1fn: 4, np.bool_: 8, np.float16: 16,
            np.complex64: 64, ml_dtypes.float8_e5m2: 8}
    assert {t: dtypes.itemsize_bits(t) for t in bits} == bits


def test_inexact_and_complex_conversions():
    inexact = {np.bool_: np.float32, np.int8: np.float32, ml_dtypes.uint4: np.float32,
               np.int32: np.float32, np.uint32: np.float32, np.int64: np.float64,
               np.uint64: np.float64, np.float16: np.float16, ml_dtypes.bfloat16:
               ml_dtypes.bfloat16, np.complex64: np.complex64}
    for src, dst in inexact.items():
        assert dtypes.to_inexact_dtype(src) == np.dtype(dst), src
    complex_ = {np.int8: np.complex64, np.int64: np.complex128, np.float16: np.complex64,
                np.float64: np.complex128, np.complex128: np.complex128,
                ml_dtypes.bfloat16: np.complex64}
    for src, dst in complex_.items():
        assert dtypes.to_complex_dtype(src) == np.dtype(dst), src


def test_scalar_type_of():
    cases = {np.bool_: bool, np.uint8: int, ml_dtypes.int4: int, ml_dtypes.bfloat16: float,
             ml_dtypes.float8_e5m2: float, np.float64: float, np.complex64: complex}
    assert {t: dtypes.scalar_type_of(np.zeros((), t)) for t in cases} == cases
    assert dtypes.scalar_type_of(3) is int


def test_float0_is_zero_sized_and_supported():
    assert dtypes.float0.itemsize == 0
    assert np.zeros((2, 3), dtypes.float0).nbytes == 0
    dtypes.check_valid_dtype(dtypes.float0)
    with pytest.raises(TypeError, match="not a valid plax array type"):
        dtypes.check_valid_dtype(np.dtype("U2"))

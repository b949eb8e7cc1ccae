"""`plax.numpy.float32` and friends: dtype-like classes that build arrays when called.

`jnp.float32(3)` is a 0-d float32 array (not a NumPy scalar), while `jnp.float32`
still works wherever NumPy expects a dtype (`np.dtype(jnp.float32)`,
`x.astype(jnp.float32)`, `jnp.float32 == np.float32`), because the class carries a
`dtype` attribute and compares equal to NumPy's scalar type.
"""
from __future__ import annotations

import numpy as np

from plax.extend import dtypes


class _ScalarMeta(type):
    dtype: np.dtype

    def __hash__(cls):
        return hash(cls.dtype.type)

    def __eq__(cls, other):
        return cls is other or other is cls.dtype.type or (
            isinstance(other, np.dtype) and other == cls.dtype)

    def __ne__(cls, other):
        return not cls == other

    def __call__(cls, x):
        from plax_stdlib.numpy.creation import asarray
        return asarray(x, dtype=cls.dtype)

    def __instancecheck__(cls, instance):
        return isinstance(instance, cls.dtype.type)

    def __repr__(cls):
        return f"<class 'plax.numpy.{cls.__name__}'>"


_SCALAR_DOC = """The {dtype} scalar type: usable wherever a dtype is expected
    (`x.astype(jnp.{name})`, `np.dtype(jnp.{name})`), and callable to convert a value to
    an array of that dtype.

    Unlike NumPy's scalar types, calling it returns a `plax.Array` (0-d for a scalar),
    not a NumPy scalar; `isinstance(v, jnp.{name})` is true of NumPy's {dtype}
    scalars.{x64}

    Args:
        x: a scalar, array or nested list to convert.

    Returns:
        An array of dtype {dtype}.

    Examples:
        >>> np.dtype(jnp.{name})
        {dtype_repr}{call}
    """

_X64_NOTE = """ Without `jax_enable_x64`, 64-bit values are not available: calling
    it gives a 32-bit array, with a warning."""


def _make_scalar_type(name: str, scalar_type) -> _ScalarMeta:
    dtype = np.dtype(scalar_type)
    wide = dtype.itemsize == 8 or dtype == np.complex128
    # jaxlib's runtime cannot transfer float6 arrays: their example only names the dtype.
    call = ("" if wide or dtype.name.startswith("float6") else
            f"\n        >>> jnp.{name}([1, 0]).dtype\n        {dtype!r}")
    doc = _SCALAR_DOC.format(name=name, dtype=dtype.name, dtype_repr=repr(dtype), call=call,
                             x64=_X64_NOTE if wide else "")
    return _ScalarMeta(name, (object,), {"dtype": dtype, "__doc__": doc})


bool_ = _make_scalar_type("bool_", np.bool_)
int8 = _make_scalar_type("int8", np.int8)
int16 = _make_scalar_type("int16", np.int16)
int32 = _make_scalar_type("int32", np.int32)
int64 = _make_scalar_type("int64", np.int64)
uint8 = _make_scalar_type("uint8", np.uint8)
uint16 = _make_scalar_type("uint16", np.uint16)
uint32 = _make_scalar_type("uint32", np.uint32)
uint64 = _make_scalar_type("uint64", np.uint64)
float16 = _make_scalar_type("float16", np.float16)
float32 = _make_scalar_type("float32", np.float32)
float64 = _make_scalar_type("float64", np.float64)
bfloat16 = _make_scalar_type("bfloat16", dtypes.bfloat16)
complex64 = _make_scalar_type("complex64", np.complex64)
complex128 = _make_scalar_type("complex128", np.complex128)
int4 = _make_scalar_type("int4", dtypes.int4)
uint4 = _make_scalar_type("uint4", dtypes.uint4)
float8_e4m3fn = _make_scalar_type("float8_e4m3fn", dtypes.float8_e4m3fn)
float8_e5m2 = _make_scalar_type("float8_e5m2", dtypes.float8_e5m2)
float8_e4m3fnuz = _make_scalar_type("float8_e4m3fnuz", dtypes.float8_e4m3fnuz)
float8_e5m2fnuz = _make_scalar_type("float8_e5m2fnuz", dtypes.float8_e5m2fnuz)
float8_e4m3b11fnuz = _make_scalar_type("float8_e4m3b11fnuz", dtypes.float8_e4m3b11fnuz)
float8_e3m4 = _make_scalar_type("float8_e3m4", dtypes.float8_e3m4)
float8_e4m3 = _make_scalar_type("float8_e4m3", dtypes.float8_e4m3)
float8_e8m0fnu = _make_scalar_type("float8_e8m0fnu", dtypes.float8_e8m0fnu)
float6_e2m3fn = _make_scalar_type("float6_e2m3fn", dtypes.float6_e2m3fn)
float6_e3m2fn = _make_scalar_type("float6_e3m2fn", dtypes.float6_e3m2fn)
float4_e2m1fn = _make_scalar_type("float4_e2m1fn", dtypes.float4_e2m1fn)
int1 = _make_scalar_type("int1", dtypes.int1)
int2 = _make_scalar_type("int2", dtypes.int2)
uint1 = _make_scalar_type("uint1", dtypes.uint1)
uint2 = _make_scalar_type("uint2", dtypes.uint2)

# NumPy's aliases; the 64-bit ones become 32-bit arrays when x64 is off.
int_ = int64
uint = uint64
float_ = float64
complex_ = complex128
single = float32
double = float64
half = float16
csingle = complex64
cdouble = complex128

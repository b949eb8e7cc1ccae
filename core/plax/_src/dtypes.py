"""Dtypes: which ones plax supports, x64 canonicalization, weak types, promotion.

plax follows JAX's dtype rules, which differ from NumPy's on purpose:
- with `jax_enable_x64` off (the default) 64-bit dtypes become 32-bit ones;
- Python scalars (and values derived from them) are *weakly typed*: they adopt the
  dtype of the array they meet instead of widening it (`int8_array + 1` is int8);
- the result of mixing dtypes is their least upper bound on a small promotion
  lattice, declared below as a graph, rather than a hand-written table. Narrow
  floats (float8/6/4) and sub-byte integers sit on their own branches so that
  they never promote implicitly.
"""
from __future__ import annotations

import functools
import warnings
from typing import Any

import ml_dtypes
import numpy as np

from plax._src import config

# --- The dtypes. --------------------------------------------------------------

bfloat16 = ml_dtypes.bfloat16
float8_e3m4 = ml_dtypes.float8_e3m4
float8_e4m3 = ml_dtypes.float8_e4m3
float8_e4m3b11fnuz = ml_dtypes.float8_e4m3b11fnuz
float8_e4m3fn = ml_dtypes.float8_e4m3fn
float8_e4m3fnuz = ml_dtypes.float8_e4m3fnuz
float8_e5m2 = ml_dtypes.float8_e5m2
float8_e5m2fnuz = ml_dtypes.float8_e5m2fnuz
float8_e8m0fnu = ml_dtypes.float8_e8m0fnu
float6_e2m3fn = ml_dtypes.float6_e2m3fn
float6_e3m2fn = ml_dtypes.float6_e3m2fn
float4_e2m1fn = ml_dtypes.float4_e2m1fn
int4 = ml_dtypes.int4
uint4 = ml_dtypes.uint4
# Narrower integers exist only in newer ml_dtypes releases.
int2 = getattr(ml_dtypes, "int2", None)
uint2 = getattr(ml_dtypes, "uint2", None)
int1 = getattr(ml_dtypes, "int1", None)
uint1 = getattr(ml_dtypes, "uint1", None)

# The tangent dtype of integer and bool values: a zero-sized structured dtype.
float0 = np.dtype([("float0", np.void, 0)])
"""The dtype of tangents of integer and boolean values: zero bits, as in JAX."""


class extended(np.generic):
    """Scalar class of all extended dtypes (for `issubdtype(key.dtype, extended)`)."""


class prng_key(extended):
    """Scalar class of PRNG key dtypes."""


class ExtendedDType:
    """Base of dtypes that are not NumPy dtypes (PRNG keys...).

    A subclass sets `type` to a subclass of `extended`, `name` to a display name,
    and says how one element is stored: an array of `element_shape` and
    `physical_dtype`. Devices hold, and lowered programs pass, that data (see
    `abstract.physical_aval`); only primitives that know the dtype look inside.
    """
    type: type = extended
    name: str = "extended"
    element_shape: tuple[int, ...] = ()
    physical_dtype: np.dtype = np.dtype(np.uint8)

    @property
    def itemsize(self) -> int:
        return int(np.prod(self.element_shape, dtype=np.int64)) * self.physical_dtype.itemsize

    def full(self, shape: tuple[int, ...], fill_value: Any):
        """An array of `shape` and this dtype: copies of `fill_value` if it is an element
        of this dtype, else elements whose data words all equal it (`zeros_like`, the
        fill of out-of-bounds gathers). Subclasses that support it override this."""
        raise TypeError(f"arrays of dtype {self.name} cannot be made from a fill value")

    def __repr__(self):
        return self.name


def _dtypes(*scalar_types) -> tuple[np.dtype, ...]:
    return tuple(np.dtype(t) for t in scalar_types if t is not None)


_NARROW_FLOATS = _dtypes(float8_e3m4, float8_e4m3, float8_e4m3b11fnuz, float8_e4m3fn,
                         float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu,
                         float6_e2m3fn, float6_e3m2fn, float4_e2m1fn)
_SUBBYTE_SIGNED = _dtypes(int1, int2, int4)
_SUBBYTE_UNSIGNED = _dtypes(uint1, uint2, uint4)
_SIGNED = _SUBBYTE_SIGNED + _dtypes(np.int8, np.int16, np.int32, np.int64)
_UNSIGNED = _SUBBYTE_UNSIGNED + _dtypes(np.uint8, np.uint16, np.uint32, np.uint64)
_FLOATS = _NARROW_FLOATS + _dtypes(bfloat16, np.float16, np.float32, np.float64)
_COMPLEX = _dtypes(np.complex64, np.complex128)
_BOOL = np.dtype(bool)

# Category letters ('b', 'i', 'u', 'f', 'c') of every numeric dtype; ml_dtypes' own
# dtypes all report NumPy kind 'V', so `dtype.kind` cannot be used.
_CATEGORY: dict[np.dtype, str] = {
    _BOOL: "b", **dict.fromkeys(_SIGNED, "i"), **dict.fromkeys(_UNSIGNED, "u"),
    **dict.fromkeys(_FLOATS, "f"), **dict.fromkeys(_COMPLEX, "c")}
_SUPPORTED = frozenset({*_CATEGORY, float0})

# Where ml_dtypes' scalar types sit in NumPy's abstract type hierarchy.
_ABSTRACT_PARENT: dict[type, type] = {
    **{d.type: np.floating for d in _FLOATS if not issubclass(d.type, np.floating)},
    **{d.type: np.signedinteger for d in _SUBBYTE_SIGNED},
    **{d.type: np.unsignedinteger for d in _SUBBYTE_UNSIGNED},
}

finfo = ml_dtypes.finfo
iinfo = ml_dtypes.iinfo
"""`numpy.iinfo` that also knows the narrow integers (int4, int2...)."""

python_scalar_dtypes: dict[type, np.dtype] = {
    bool: np.dtype(bool), int: np.dtype(np.int64),
    float: np.dtype(np.float64), complex: np.dtype(np.complex128),
}
"""The dtype of each Python scalar type before canonicalization (then weakly typed)."""


def check_valid_dtype(dtype: Any) -> None:
    """Raises TypeError unless `dtype` is one plax arrays can have."""
    if not isinstance(dtype, ExtendedDType) and dtype not in _SUPPORTED:
        raise TypeError(f"dtype {dtype} is not a valid plax array type; only bool and "
                        "numeric dtypes are supported")


# --- Type hierarchy. ------------------------------------------------------------

def _scalar_type(x: Any) -> type:
    if isinstance(x, ExtendedDType):
        return x.type
    if isinstance(x, type) and issubclass(x, np.generic):
        return x
    return np.dtype(x).type


def issubdtype(arg1: Any, arg2: Any) -> bool:
    """Whether `arg1` is a subtype of `arg2` in NumPy's hierarchy of scalar types
    (`jnp.floating`, `jnp.integer`, `jnp.inexact`...).

    Like `numpy.issubdtype`, except that the dtypes NumPy does not know as numbers
    (bfloat16, the float8/float4 types, int4...) are placed where they belong: under
    `np.floating`, `np.signedinteger`... (NumPy itself says
    `issubdtype(bfloat16, floating)` is False). PRNG key dtypes are under
    `plax.dtypes.extended`.

    Args:
        arg1: a dtype or scalar type.
        arg2: a dtype or abstract scalar type.

    Returns:
        A bool.

    Examples:
        >>> jnp.issubdtype(jnp.bfloat16, jnp.floating), np.issubdtype(jnp.bfloat16, np.floating)
        (True, False)
        >>> jnp.issubdtype(jnp.int4, jnp.signedinteger), jnp.issubdtype(jnp.float32, jnp.integer)
        (True, False)
    """
    if isinstance(arg2, ExtendedDType):
        return arg1 == arg2
    a_type, b_type = _scalar_type(arg1), _scalar_type(arg2)
    parent = _ABSTRACT_PARENT.get(a_type)
    if parent is not None:
        return a_type is b_type or issubclass(parent, b_type)
    return issubclass(a_type, b_type)


def is_float(dtype: Any) -> bool:
    """Whether `dtype` is a real floating dtype (bfloat16 and float8s included)."""
    return issubdtype(dtype, np.floating)


def is_integer(dtype: Any) -> bool:
    """Whether `dtype` is a signed or unsigned integer dtype (int4s included)."""
    return issubdtype(dtype, np.integer)


def is_complex(dtype: Any) -> bool:
    """Whether `dtype` is a complex dtype."""
    return issubdtype(dtype, np.complexfloating)


def itemsize_bits(dtype: Any) -> int:
    """Bits per element; unlike `itemsize`, right for int4 and float4."""
    dt = np.dtype(dtype)
    category = _CATEGORY.get(dt)
    if category == "b":
        return 8
    if category in ("i", "u"):
        return iinfo(dt).bits
    if category == "f":
        return finfo(dt).bits
    if category == "c":
        return 2 * finfo(dt).bits
    raise TypeError(f"itemsize_bits: {dt} is not a bool or numeric dtype")


def to_inexact_dtype(dtype: Any) -> np.dtype:
    """The float dtype an integer/bool dtype becomes in e.g. `mean`; inexact unchanged."""
    dt = np.dtype(dtype)
    if _CATEGORY.get(dt) in ("b", "i", "u"):
        return np.dtype(np.float64 if itemsize_bits(dt) > 32 else np.float32)
    return dt


def to_complex_dtype(dtype: Any) -> np.dtype:
    """The complex dtype wide enough for `dtype`'s inexact form."""
    wide = to_inexact_dtype(dtype) in (np.dtype(np.float64), np.dtype(np.complex128))
    return np.dtype(np.complex128 if wide else np.complex64)


# --- x64 canonicalization and defaults. -------------------------------------------

_TO_32BIT = {np.dtype(a): np.dtype(b) for a, b in [
    (np.int64, np.int32), (np.uint64, np.uint32),
    (np.float64, np.float32), (np.complex128, np.complex64)]}


def _is_extended(dtype: Any) -> bool:
    return isinstance(dtype, ExtendedDType) or (
        isinstance(dtype, type) and issubclass(dtype, extended))


def canonicalize_dtype(dtype: Any, allow_extended: bool = False) -> np.dtype:
    """`np.dtype(dtype)`, made 32-bit when `jax_enable_x64` is off."""
    if _is_extended(dtype):
        if not allow_extended:
            raise TypeError(f"canonicalize_dtype: extended dtype {dtype} needs "
                            "allow_extended=True")
        return dtype
    if not isinstance(dtype, np.dtype):
        try:
            dtype = np.dtype(dtype)
        except TypeError as e:
            raise TypeError(f"dtype {dtype!r} not understood") from e
    return dtype if config.enable_x64.value else _TO_32BIT.get(dtype, dtype)


def default_int_dtype() -> np.dtype:
    """The dtype a Python int becomes: int64, or int32 with x64 off."""
    return canonicalize_dtype(np.int64)


def default_uint_dtype() -> np.dtype:
    """The default unsigned integer dtype: uint64, or uint32 with x64 off."""
    return canonicalize_dtype(np.uint64)


def default_float_dtype() -> np.dtype:
    """The dtype a Python float becomes: float64, or float32 with x64 off."""
    return canonicalize_dtype(np.float64)


def default_complex_dtype() -> np.dtype:
    """The dtype a Python complex becomes: complex128, or complex64 with x64 off."""
    return canonicalize_dtype(np.complex128)


_DEFAULT_OF_CATEGORY = {"b": lambda: _BOOL, "i": default_int_dtype, "u": default_uint_dtype,
                        "f": default_float_dtype, "c": default_complex_dtype}


def check_and_canonicalize_user_dtype(dtype: Any, fun_name: str | None = None) -> np.dtype:
    """Validates a `dtype=` argument and returns the dtype plax will use.

    Python `int`/`float`/`complex` mean the default dtype of their kind. A 64-bit
    request with x64 off warns and gives the 32-bit dtype, as in JAX.
    """
    where = f" in {fun_name}" if fun_name else ""
    if dtype is None:
        raise ValueError(f"dtype must be specified{where}")
    if _is_extended(dtype):
        return dtype
    if isinstance(dtype, type) and dtype in python_scalar_dtypes:
        return _DEFAULT_OF_CATEGORY[_CATEGORY[python_scalar_dtypes[dtype]]]()
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"dtype {dtype!r} not understood{where}") from e
    if dt not in _SUPPORTED:
        raise TypeError(f"plax supports only bool and numeric dtypes, got dtype {dt}{where}")
    canonical = canonicalize_dtype(dt)
    if canonical != dt:
        warnings.warn(f"Explicitly requested dtype {dt}{where} is not available, and will be "
                      f"truncated to dtype {canonical}. To enable more dtypes, set the "
                      "jax_enable_x64 configuration option or the PLAX_ENABLE_X64 shell "
                      "environment variable.", stacklevel=3)
    return canonical


# --- Weak types and the dtype of a value. -------------------------------------------

def is_weakly_typed(x: Any) -> bool:
    """Python int/float/complex scalars, and plax values marked weak in their aval."""
    if type(x) in (int, float, complex):
        return True
    return bool(getattr(getattr(x, "aval", None), "weak_type", False))


def dtype(x: Any, canonicalize: bool = False) -> np.dtype:
    """The dtype of a value, scalar type, dtype or dtype name.

    Python scalars and scalar types give int64/float64/complex128/bool. With
    `canonicalize`, the result follows x64 mode; plax values (anything carrying an
    `aval`) keep their dtype, which was already fixed when they were made.
    """
    if x is None:
        raise ValueError("dtype() got None; expected a value, a dtype or a scalar type")
    if isinstance(x, type):
        if x in python_scalar_dtypes:
            dt = python_scalar_dtypes[x]
        elif issubclass(x, extended):
            raise TypeError(f"dtype() got the abstract scalar class {x.__name__}")
        else:
            dt = np.dtype(x)
    elif type(x) in python_scalar_dtypes:
        dt = python_scalar_dtypes[type(x)]
    elif getattr(x, "aval", None) is not None and hasattr(x.aval, "dtype"):
        return x.aval.dtype
    elif isinstance(x, (str, np.dtype, ExtendedDType)):
        dt = x if isinstance(x, ExtendedDType) else np.dtype(x)
    elif isinstance(getattr(x, "dtype", None), (np.dtype, ExtendedDType)):
        dt = x.dtype
    else:
        try:
            dt = np.result_type(x)
        except TypeError as e:
            raise TypeError(f"Cannot determine dtype of {x!r}") from e
    if not isinstance(dt, ExtendedDType) and dt not in _SUPPORTED:
        raise TypeError(f"Value {x!r} with dtype {dt} is not a valid plax array type; "
                        "only bool and numeric dtypes are supported")
    return canonicalize_dtype(dt, allow_extended=True) if canonicalize else dt


def scalar_type_of(x: Any) -> type:
    """The Python scalar type (bool, int, float, complex) matching `x`'s dtype."""
    category = _CATEGORY.get(dtype(x))
    if category is None:
        raise TypeError(f"scalar_type_of: {x!r} has no Python scalar type")
    return {"b": bool, "i": int, "u": int, "f": float, "c": complex}[category]


# --- The promotion lattice. ---------------------------------------------------------

class _Weak:
    """Lattice node of a weakly typed kind: `i*`, `f*`, `c*` in JAX's documentation.

    Not a Python type, because `np.dtype('int64') == int` is True and would make
    weak and strong nodes collide.
    """

    def __init__(self, name: str, category: str):
        self.name = name
        self.category = category

    def __repr__(self):
        return self.name


WEAK_INT, WEAK_FLOAT, WEAK_COMPLEX = _Weak("i*", "i"), _Weak("f*", "f"), _Weak("c*", "c")
_WEAK_OF_CATEGORY = {"i": WEAK_INT, "u": WEAK_INT, "f": WEAK_FLOAT, "c": WEAK_COMPLEX}
_WEAK_OF_PYTHON_TYPE = {int: WEAK_INT, float: WEAK_FLOAT, complex: WEAK_COMPLEX}


def _standard_lattice(x64: bool) -> dict:
    """Each node's immediate successors. With x64 off, uint32 ⊔ int32 is int32, so that
    no 64-bit type is formed from 32-bit inputs."""
    u8, u16, u32, u64, i8, i16, i32, i64, bf16, f16, f32, f64 = _dtypes(
        np.uint8, np.uint16, np.uint32, np.uint64, np.int8, np.int16, np.int32, np.int64,
        bfloat16, np.float16, np.float32, np.float64)
    c64, c128 = _COMPLEX
    return {
        _BOOL: [WEAK_INT],
        WEAK_INT: [u8, i8, *_SUBBYTE_UNSIGNED, *_SUBBYTE_SIGNED],
        u8: [u16, i16], u16: [u32, i32], u32: [u64, i64 if x64 else i32], u64: [WEAK_FLOAT],
        i8: [i16], i16: [i32], i32: [i64], i64: [WEAK_FLOAT],
        WEAK_FLOAT: [*_NARROW_FLOATS, bf16, f16, WEAK_COMPLEX],
        bf16: [f32], f16: [f32], f32: [f64, c64], f64: [c128],
        WEAK_COMPLEX: [c64], c64: [c128],
    }


def _strict_lattice() -> dict:
    """Only weak values promote; any two different strong dtypes have no join."""
    return {WEAK_INT: [WEAK_FLOAT, *_SIGNED, *_UNSIGNED],
            WEAK_FLOAT: [WEAK_COMPLEX, *_FLOATS],
            WEAK_COMPLEX: list(_COMPLEX),
            _BOOL: []}


def _upper_bounds(lattice: dict) -> dict:
    """Every node's reflexive-transitive successors (its upper bounds)."""
    nodes = {n for n, succs in lattice.items() for n in (n, *succs)}
    bounds: dict = {}

    def visit(node, path):
        if node in path:
            raise ValueError(f"type promotion lattice has a cycle through {node}")
        if node not in bounds:
            found = {node}
            for succ in lattice.get(node, ()):
                found |= visit(succ, path | {node})
            bounds[node] = frozenset(found)
        return bounds[node]

    for node in nodes:
        visit(node, frozenset())
    return bounds


_UPPER_BOUNDS = {
    ("standard", True): _upper_bounds(_standard_lattice(x64=True)),
    ("standard", False): _upper_bounds(_standard_lattice(x64=False)),
    ("strict", True): _upper_bounds(_strict_lattice()),
    ("strict", False): _upper_bounds(_strict_lattice()),
}


class TypePromotionError(TypeError, ValueError):
    """Dtypes with no implicit promotion. A TypeError, like NumPy's promotion errors,
    and a ValueError, like JAX's `TypePromotionError`."""


def _no_join_message(nodes: tuple, strict: bool) -> str:
    names = tuple(str(n) for n in nodes)
    head = f"Input dtypes {names} have no available implicit dtype promotion path"
    if strict:
        return (f"{head} when jax_numpy_dtype_promotion=strict. Try explicitly casting "
                "inputs to the desired output type, or set jax_numpy_dtype_promotion=standard.")
    if any(n in _NARROW_FLOATS for n in nodes):
        return (f"{head}. To avoid unintended promotion, 8-, 6- and 4-bit floats do not "
                "promote implicitly; cast explicitly, e.g. x.astype('float32').")
    if any(n in _SUBBYTE_SIGNED or n in _SUBBYTE_UNSIGNED for n in nodes):
        return (f"{head}. To avoid unintended promotion, 1-, 2- and 4-bit integers do not "
                "promote implicitly; cast explicitly, e.g. x.astype('int32').")
    return f"{head}. Try explicitly casting inputs to the desired output type."


@functools.lru_cache(maxsize=1024)
def _join(mode: str, x64: bool, nodes: frozenset) -> Any:
    """Least upper bound of `nodes` on the lattice for (`mode`, `x64`)."""
    bounds = _UPPER_BOUNDS[(mode, x64)]
    unknown = [n for n in nodes if n not in bounds]
    if unknown:
        extra = (" (arrays of an extended dtype, such as PRNG keys, only combine with arrays "
                 "of the same dtype)" if isinstance(unknown[0], ExtendedDType) else "")
        raise TypePromotionError(f"dtype {unknown[0]} is not a valid dtype for type "
                                 f"promotion{extra}")
    common = frozenset.intersection(*(bounds[n] for n in nodes))
    least = [c for c in common if common <= bounds[c]]
    if len(least) != 1:
        order = {n: i for i, n in enumerate(bounds)}  # stable order for the message
        raise TypePromotionError(_no_join_message(
            tuple(sorted(nodes, key=order.__getitem__)), strict=mode == "strict"))
    return least[0]


def _promotion_settings() -> tuple[str, bool]:
    return config.numpy_dtype_promotion.value, config.enable_x64.value


def promote_types(a: Any, b: Any) -> np.dtype:
    """The dtype two dtypes promote to, by JAX's type promotion lattice (not NumPy's).

    The lattice avoids the value-dependent and 64-bit-widening surprises of NumPy:
    `int8` and `uint8` give `int16`; an integer and a float give that float
    (`int32 + float16` is `float16`, where NumPy says float64); `bfloat16` and
    `float16` give `float32`. Python `int`, `float` and `complex` count as weak types,
    which take the other operand's dtype within their kind. The result is not
    narrowed for x64 mode (`result_type` does that).

    Args:
        a: a dtype, scalar type, or Python type.
        b: another.

    Returns:
        A NumPy dtype.

    Raises:
        TypePromotionError: with `jax_numpy_dtype_promotion="strict"`, dtypes that
            differ.

    Examples:
        >>> jnp.promote_types(jnp.int8, jnp.uint8), jnp.promote_types(jnp.int32, jnp.float16)
        (dtype('int16'), dtype('float16'))
        >>> jnp.promote_types(jnp.bfloat16, jnp.float16), jnp.promote_types(int, jnp.int8)
        (dtype('float32'), dtype('int8'))
    """
    def node(x):
        weak = _WEAK_OF_PYTHON_TYPE.get(x) if isinstance(x, type) else None
        return weak if weak is not None else np.dtype(x)

    joined = _join(*_promotion_settings(), frozenset((node(a), node(b))))
    if isinstance(joined, _Weak):
        return {WEAK_INT: np.dtype(np.int64), WEAK_FLOAT: np.dtype(np.float64),
                WEAK_COMPLEX: np.dtype(np.complex128)}[joined]
    return joined


def _node_of(dt: Any, weak: bool) -> Any:
    if not weak:
        return dt
    category = _CATEGORY.get(dt)
    return _WEAK_OF_CATEGORY.get(category, dt)  # weak bool stays bool


def _dtype_of_node(node: Any) -> np.dtype:
    if isinstance(node, _Weak):
        return _DEFAULT_OF_CATEGORY[node.category]()
    return canonicalize_dtype(node)


def lattice_result_type(*args: Any) -> tuple[np.dtype, bool]:
    """`(dtype, weak_type)` of combining `args` by the promotion lattice."""
    if not args:
        raise ValueError("at least one array or dtype is required")
    dts = [dtype(a, canonicalize=True) for a in args]
    weaks = [is_weakly_typed(a) for a in args]
    if len(args) == 1:
        out, weak = dts[0], weaks[0]
    elif all(d == dts[0] for d in dts[1:]) and not all(weaks):
        out, weak = dts[0], False  # also lets same-dtype extended values through
    else:
        mode, x64 = _promotion_settings()
        if all(weaks) and mode != "strict":
            # All weak: promote as strong dtypes, then mark weak (weak int16 + weak
            # int8 stays int16 instead of jumping to the default int).
            out, weak = _dtype_of_node(_join(mode, x64, frozenset(dts))), True
        else:
            joined = _join(mode, x64, frozenset(map(_node_of, dts, weaks)))
            out, weak = _dtype_of_node(joined), isinstance(joined, _Weak)
    return out, weak and out != _BOOL


def result_type(*args: Any, return_weak_type_flag: bool = False):
    """The dtype an operation combining `args` gives: arrays, scalars and dtypes, promoted
    by JAX's lattice (see `promote_types`).

    Python scalars and weakly typed arrays are weak: they do not widen the other
    operands' dtype within their kind. When every input is weak, the result is the
    default dtype of the kind (float32 for floats unless `jax_enable_x64`). None stands
    for the default float dtype.

    Args:
        *args: arrays, scalars or dtypes.
        return_weak_type_flag: also return whether the result is weakly typed.

    Returns:
        A dtype, or `(dtype, weak)` with `return_weak_type_flag`.

    Raises:
        ValueError: no arguments.

    Examples:
        >>> jnp.result_type(jnp.int8, 1.0), jnp.result_type(jnp.ones(2, jnp.bfloat16), 2)
        (dtype('float32'), dtype(bfloat16))
        >>> jnp.result_type(3, 2.0, return_weak_type_flag=True)
        (dtype('float32'), True)
    """
    if not args:
        raise ValueError("at least one array or dtype is required")
    out, weak = lattice_result_type(*(default_float_dtype() if a is None else a for a in args))
    if weak:
        out = _DEFAULT_OF_CATEGORY[_CATEGORY[out]]()
    return (out, weak) if return_weak_type_flag else out

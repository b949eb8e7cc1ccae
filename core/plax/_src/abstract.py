"""Abstract values: what tracing knows about an array without its data.

`ShapedArray` is the aval of every array value in plax. jaxlib's C++ array code
reads only `.shape`, `.dtype` (an `np.dtype` instance) and `.weak_type` from it,
so it can be handed to `batched_device_put` and result handlers directly.
"""
from __future__ import annotations

import math
import operator
from typing import Callable

import numpy as np

from plax._src import plugins
from plax._src.errors import InvalidShapeError
from plax._src import dtypes as _dtypes
from plax._src.dtypes import ExtendedDType
from plax._src.manual_axis_type import EMPTY as EMPTY_MAT
from plax._src.manual_axis_type import ManualAxisType, mat_axis_order

_SHORT_NAMES = {
    "bool": "bool", "float16": "f16", "float32": "f32", "float64": "f64",
    "bfloat16": "bf16", "complex64": "c64", "complex128": "c128",
    "int2": "i2", "int4": "i4", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint2": "u2", "uint4": "u4", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
}


def short_dtype_name(dtype, short: bool = True) -> str:
    """`f32`, `i8`, `bf16`, `key<fry>`...: the names the Jaxpr printer uses; with
    `short=False` NumPy's (`float32`), but float0's own name for NumPy's `void`."""
    if isinstance(dtype, ExtendedDType):
        return dtype.name
    name = "float0" if dtype == _dtypes.float0 else np.dtype(dtype).name
    return _SHORT_NAMES.get(name, name) if short else name


class SymbolicDimension:
    """Base of symbolic dimension sizes (shape polymorphism; `plax.export` defines the
    expressions). Avals keep them as they are; every other dimension is an `int`.
    Used as an operand it is a weakly typed int scalar (`get_aval`), staged as
    `as_value()`."""
    __slots__ = ()

    def extremum(self, op: str, a, b):
        """`max` or `min` (`op`) of `a` and `b`, one of them this dimension."""
        raise NotImplementedError

    def as_value(self):
        """The size as a value of the current trace (`lax.dimension_as_value`)."""
        raise NotImplementedError


class InconclusiveDimensionOperation(Exception):
    """An operation on symbolic dimensions whose result depends on their values
    (`plax.export.InconclusiveDimensionOperation`)."""


def decided(compare: Callable[[], bool], undecided: bool | None) -> bool | None:
    """`compare()`, a comparison of dimensions, or `undecided` where symbolic ones
    cannot decide it (checks that JAX skips for sizes known only when called)."""
    try:
        return compare()
    except InconclusiveDimensionOperation:
        return undecided


def max_dim(a, b):
    """The larger of two dimensions: with a symbolic one, the one its constraints say
    is larger, else a symbolic `max` (slicing's clamps stay exact in export)."""
    return _extremum("max", a, b)


def min_dim(a, b):
    """The smaller of two dimensions (see `max_dim`)."""
    return _extremum("min", a, b)


def _extremum(op: str, a, b):
    for d in (a, b):
        if isinstance(d, SymbolicDimension):
            return d.extremum(op, a, b)
    return max(a, b) if op == "max" else min(a, b)


def canonical_dim(d):
    """A dimension given by the user: an int (`operator.index`), or a symbolic one as is."""
    return d if isinstance(d, SymbolicDimension) else operator.index(d)


def canonical_shape(shape) -> tuple:
    """`shape` as a tuple of ints and symbolic dimensions."""
    return tuple(d if isinstance(d, SymbolicDimension) else int(d) for d in shape)


def shape_size(shape):
    """The number of elements (symbolic when a dimension is): `math.prod`, as JAX's
    `size`, for dimensions that are ints or symbolic (canonical shapes)."""
    return math.prod(shape)


class AbstractValue:
    """Base of all abstract values (array avals, tokens)."""
    __slots__ = ()

    def str_short(self) -> str:
        raise NotImplementedError


_unsharded_type = plugins.seam("unsharded_type")  # ndim -> NamedSharding(empty mesh, P(None...))
_SAME = object()  # `update`'s default: keep the sharding where the shape allows
_MAX_BYTES = 2**63 - 1  # XLA aborts the process on shapes whose byte size overflows int64


def _check_size(shape: tuple[int, ...], dtype: np.dtype) -> None:
    """Negative dimensions and sizes past int64 are a ValueError naming the shape,
    before XLA (which would abort the process) ever sees them (symbolic dimensions
    are checked when they get values)."""
    extent = 1  # XLA multiplies the nonzero dimensions, even of an empty array
    for d in shape:
        if isinstance(d, SymbolicDimension):
            continue  # its size is known only when the exported module is called
        if d < 0:
            raise InvalidShapeError(f"negative dimensions are not allowed: shape {shape}")
        extent *= d or 1
    if extent * max(dtype.itemsize, 1) > _MAX_BYTES:
        raise InvalidShapeError(f"array of shape {shape} and dtype {dtype.name} is too large: its "
                         f"size ({extent} elements of {dtype.itemsize} bytes) overflows a "
                         "64-bit integer")


def is_differentiable_dtype(dtype) -> bool:
    """Floating and complex values have tangents of their own dtype; others (integers,
    booleans, PRNG keys) float0."""
    return _dtypes.issubdtype(dtype, np.inexact) and dtype != _dtypes.float0


class ShapedArray(AbstractValue):
    """The abstract value (type) of an array: its shape and dtype, whether it is weakly
    typed, and, over explicit mesh axes, its sharding.

    Tracing works on these instead of values: `plax.typeof(x)` returns one, abstract
    evaluation rules take and return them, and Jaxprs print them short (`f32[2,3]`).
    `weak_type` marks a value that came from a Python scalar (it yields to the other
    operand's dtype in promotion). `typed_sharding` is the layout held in the type (a
    `NamedSharding` on an abstract mesh naming only Explicit axes), or None; `sharding`
    is what users see, as in JAX.

    `manual_axis_type` (JAX's field, also `mat`) names the manual mesh axes a value of
    a `shard_map` body varies over (`{V:i}` in its printed type); staging infers it
    for each equation's results (`manual_axis_type.set_vma_rule`). It is informative:
    equality and hashing ignore it (plax checks varying axes at shard_map's outputs).

    Args:
        shape: a tuple of non-negative ints.
        dtype: a NumPy dtype or an extended dtype (such as a PRNG key's).
        weak_type: whether the type is weak.
        sharding: the layout in the type, or None.
        manual_axis_type: the manual axes the value varies over (keyword only).

    Examples:
        >>> from plax.extend import ShapedArray
        >>> aval = ShapedArray((2, 3), np.float32)
        >>> aval, aval.ndim, aval.size
        (ShapedArray(float32[2,3]), 2, 6)
        >>> plax.typeof(jnp.ones((2, 3))) == aval
        True
        >>> plax.typeof(1.0)
        ShapedArray(float32[], weak_type=True)
    """
    __slots__ = ("shape", "dtype", "weak_type", "typed_sharding", "manual_axis_type")

    def __init__(self, shape, dtype, weak_type: bool = False, sharding=None, *,
                 manual_axis_type: ManualAxisType = EMPTY_MAT):
        self.manual_axis_type = manual_axis_type
        self.shape = canonical_shape(shape)
        self.dtype = dtype if isinstance(dtype, ExtendedDType) else np.dtype(dtype)
        self.weak_type = bool(weak_type)
        if sharding is not None and getattr(getattr(sharding, "mesh", None), "empty", False):
            sharding = None  # the user-visible unsplit default (empty mesh) is no layout
        self.typed_sharding = sharding
        if self.shape:
            _check_size(self.shape, self.dtype)

    @property
    def sharding(self):
        typed = self.typed_sharding
        return _unsharded_type(len(self.shape)) if typed is None else typed

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: shape_size(self.shape))
    mat = property(lambda self: self.manual_axis_type)
    vma = property(lambda self: self.manual_axis_type.varying)  # JAX's older field

    def update(self, shape=None, dtype=None, weak_type=None, sharding=_SAME,
               manual_axis_type=None) -> "ShapedArray":
        """A copy with the given fields replaced; a new shape drops the sharding
        unless one is given (a spec is only meaningful for the shape it was made for)."""
        shape = self.shape if shape is None else canonical_shape(shape)
        if sharding is _SAME:
            sharding = self.typed_sharding if shape == self.shape else None
        return ShapedArray(shape, self.dtype if dtype is None else dtype,
                           self.weak_type if weak_type is None else weak_type, sharding,
                           manual_axis_type=(self.manual_axis_type if manual_axis_type is None
                                             else manual_axis_type))

    def update_manual_axis_type(self, mat: ManualAxisType) -> "ShapedArray":
        if not isinstance(mat, ManualAxisType):
            raise TypeError(f"update_manual_axis_type: expected a ManualAxisType, got "
                            f"{type(mat).__name__}")
        return self if mat is self.manual_axis_type else self.update(manual_axis_type=mat)

    def to_tangent_aval(self) -> "ShapedArray":
        """The type of this value's tangents: float0 for integer and bool values;
        others keep the sharding in the type (on explicit mesh axes); all keep the weak
        type (a Python scalar's tangent is as weak as it), as in JAX."""
        differentiable = is_differentiable_dtype(self.dtype)
        return ShapedArray(self.shape, self.dtype if differentiable else _dtypes.float0,
                           self.weak_type, self.typed_sharding if differentiable else None,
                           manual_axis_type=self.manual_axis_type)

    at_least_vspace = to_tangent_aval  # JAX's older name, which libraries still call

    def strip_weak_type(self) -> "ShapedArray":
        return self.update(weak_type=False) if self.weak_type else self

    def str_short(self, dtype_name: str | None = None) -> str:
        """`f32[4,8]`; with explicit axes in the type, `f32[4@x,8@(y,z)]`; then the
        varying, unreduced and reduced axes as JAX prints them, `f32[3]{V:i, U:j}`."""
        spec = getattr(self.typed_sharding, "spec", None)
        parts = tuple(getattr(spec, "partitions", spec)) if spec is not None else ()
        dims = [str(d) if i >= len(parts) or parts[i] is None else f"{d}@{_axes_str(parts[i])}"
                for i, d in enumerate(self.shape)]
        mat = self.manual_axis_type
        kinds = [("V", mat.varying),
                 ("U", mat.unreduced | getattr(spec, "unreduced", frozenset())),
                 ("R", mat.reduced | getattr(spec, "reduced", frozenset()))]
        mesh_order = getattr(getattr(self.typed_sharding, "mesh", None), "axis_names", ())
        extra = ", ".join(f"{k}:{_axes_str(names if len(names) > 1 else names[0])}"
                          for k, axes in kinds if axes
                          for names in [mat_axis_order(axes, mesh_order)])
        extra = f"{{{extra}}}" if extra else ""
        return f"{dtype_name or short_dtype_name(self.dtype)}[{','.join(dims)}]{extra}"

    def __eq__(self, other):
        return (type(other) is ShapedArray and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type
                and self.typed_sharding == other.typed_sharding)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type, self.typed_sharding))

    def __str__(self):  # `~float32[]` for a weak type, as JAX prints `typeof`
        long_name = short_dtype_name(self.dtype, short=False)
        return ("~" if self.weak_type else "") + self.str_short(long_name)

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.str_short(short_dtype_name(self.dtype, short=False))}{weak})"


def _axes_str(entry) -> str:
    return f"({','.join(map(str, entry))})" if isinstance(entry, tuple) else str(entry)


def physical_aval(aval: AbstractValue) -> AbstractValue:
    """The aval of the data behind `aval`: an array of an extended dtype is stored as
    its elements' data (`key<fry>[3]` as `u32[3,2]`); other avals are their own."""
    dtype = getattr(aval, "dtype", None)
    if not isinstance(dtype, ExtendedDType):
        return aval
    return ShapedArray(aval.shape + tuple(dtype.element_shape), dtype.physical_dtype)


class AbstractToken(AbstractValue):
    """The aval of effect-ordering tokens. For the layout code of `jit` a token is a
    rank-0 value (one per device, replicated); it has no dtype."""
    __slots__ = ()
    shape = ()
    ndim = 0

    def str_short(self) -> str:
        return "Tok"

    def __eq__(self, other):
        return type(other) is AbstractToken

    def __hash__(self):
        return hash(AbstractToken)

    def __repr__(self):
        return "AbstractToken()"


abstract_token = AbstractToken()
"""The abstract value of every token (they carry ordering, not data)."""


class Token:
    """A token outside every program (`lax.create_token()` run eagerly, or returned
    from `jit`): it holds the device buffer that stands for it between programs, an
    empty bool array, as the ordered effects' tokens travel."""
    __slots__ = ("_buf",)
    aval = abstract_token

    def __init__(self, buf):
        self._buf = buf

    def block_until_ready(self) -> None:
        """Wait until the program that made this token has run."""
        self._buf.block_until_ready()

    def __repr__(self):
        return "Token()"


class ShapeDtypeStruct:
    """Describes an array by its shape and dtype (and optionally sharding), without
    any data.

    `plax.eval_shape` returns these, and ahead-of-time lowering
    (`plax.jit(f).lower(...)`, `.trace(...)`) accepts them in place of arrays,
    so programs can be traced and compiled for inputs that do not exist yet.

    Args:
        shape: a tuple of ints.
        dtype: a dtype (anything `numpy.dtype` accepts, or a plax dtype).
        sharding: a `Sharding` (or a `PartitionSpec`, resolved against the mesh
            in context) the array would have.
        weak_type: describe a weakly typed value (as Python scalars are).
        manual_axis_type: for `shard_map` internals: the manual mesh axes.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> spec = plax.ShapeDtypeStruct((2, 3), jnp.float32)
        >>> spec
        ShapeDtypeStruct(shape=(2, 3), dtype=float32)
        >>> plax.eval_shape(lambda a: a @ a.T, spec)
        ShapeDtypeStruct(shape=(2, 2), dtype=float32)
    """
    __slots__ = ("shape", "dtype", "sharding", "weak_type", "manual_axis_type")

    def __init__(self, shape, dtype, *, sharding=None, weak_type: bool = False,
                 manual_axis_type: ManualAxisType | None = None):
        self.shape = canonical_shape(shape)
        self.dtype = dtype if isinstance(dtype, ExtendedDType) else np.dtype(dtype)
        self.sharding = sharding
        self.weak_type = bool(weak_type)
        if manual_axis_type is not None and not isinstance(manual_axis_type, ManualAxisType):
            raise TypeError("`manual_axis_type` argument passed to ShapeDtypeStruct should be "
                            "of type `plax.sharding.ManualAxisType`. Got type "
                            f"{type(manual_axis_type)}")
        self.manual_axis_type = manual_axis_type

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: shape_size(self.shape))

    @classmethod
    def like(cls, x) -> "ShapeDtypeStruct":
        """The stand-in of `x` (an array, tracer, NumPy value or ShapeDtypeStruct): its
        shape, dtype and weak type, and its sharding where it is committed to one."""
        weak_type = getattr(getattr(x, "aval", x), "weak_type", 0) or _dtypes.is_weakly_typed(x)
        sharding = getattr(x, "sharding", None) if getattr(x, "_committed", True) else None
        return cls(np.shape(x), _dtypes.dtype(x, canonicalize=True), sharding=sharding,
                   weak_type=weak_type, manual_axis_type=getattr(x, "manual_axis_type", None))

    def __eq__(self, other):
        return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
                and self.dtype == other.dtype and self.sharding == other.sharding
                and self.weak_type == other.weak_type
                and self.manual_axis_type is other.manual_axis_type)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.sharding, self.weak_type,
                     self.manual_axis_type))

    def __repr__(self):
        extra = f", sharding={self.sharding}" if self.sharding is not None else ""
        extra += ", weak_type=True" if self.weak_type else ""
        if self.manual_axis_type is not None:
            extra += f", manual_axis_type={self.manual_axis_type!r}"
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{extra})"

"""Helper constructors for standard primitives, and the checks their rules share.

A primitive is built in one visible block: its name, the dtypes it accepts, its
lowering and, as keywords, any further rules (`jvp=`, `transpose=`, `batching=`...
each registered under that kind). For an elementwise primitive that is one
statement:

    sin_p = unary("lax.sin", dtypes=INEXACT, lower=hlo_rule("sine"))

Abstract evaluation raises `TypeError` when operands' dtypes or shapes do not fit
each other or the parameters (a padding config with an entry count other than the
operand's rank), naming the primitive, shapes and dtypes; and `ValueError` when
parameters are malformed on their own (an axis out of range...) — except where
JAX's shape rule raises another class for the same mistake: plax follows JAX's
class, rule by rule, so that users' `except` clauses keep working.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from numpy.exceptions import AxisError

from plax._src import dtypes as plax_dtypes
from plax._src.abstract import ShapedArray
from plax._src.ad_rules import PrimitiveRule
from plax._src.batching_rules import broadcasting_batcher
from plax._src.lazy_mlir import chlo, hlo, mu
from plax._src.primitive import Primitive

# Rules registered by these constructors belong to the module that calls them.
__plax_rule_helper__ = True

# --- dtype kinds ------------------------------------------------------------------

BOOL, SIGNED, UNSIGNED, FLOAT, COMPLEX = (
    frozenset({kind}) for kind in ("bool", "signed", "unsigned", "float", "complex"))
"""The five dtype kinds (`kind_of`): sets that a primitive's `dtypes=` combines."""
INT, INEXACT = SIGNED | UNSIGNED, FLOAT | COMPLEX
"""Integers, signed or not; floating or complex numbers."""
NUMBER, BOOL_OR_INT = INT | INEXACT, BOOL | INT
"""Every number; bool or an integer (the bitwise operations)."""
ORDERED = BOOL | INT | FLOAT
"""The dtypes with a total order up to NaN (comparisons, max, sort)."""
ANY = BOOL | NUMBER
"""Every dtype."""
EXTENDED = frozenset({"extended"})
"""Extended dtypes (PRNG keys...): for primitives that move elements without computing."""
F32_OR_F64 = frozenset({"float32", "float64"})
"""Kinds may also name single dtypes, as this set does."""

_KIND_NAMES = {"bool": "bool", "signed": "signed integer", "unsigned": "unsigned integer",
               "float": "floating", "complex": "complex", "extended": "extended (PRNG key)"}


def kind_of(dtype) -> str | None:
    """'bool', 'signed', 'unsigned', 'float', 'complex', 'extended', or None (float0)."""
    if isinstance(dtype, plax_dtypes.ExtendedDType):
        return "extended"
    dt = np.dtype(dtype)
    kind = _kinds.get(dt, _UNKNOWN)
    if kind is _UNKNOWN:  # every primitive application asks: remember the answer
        kind = _kinds[dt] = _classify(dt)
    return kind


_kinds: dict[np.dtype, str | None] = {}
_UNKNOWN = object()


def _classify(dt: np.dtype) -> str | None:
    if dt == np.dtype(bool):
        return "bool"
    for kind, scalar in (("signed", np.signedinteger), ("unsigned", np.unsignedinteger),
                         ("float", np.floating), ("complex", np.complexfloating)):
        if dt != plax_dtypes.float0 and plax_dtypes.issubdtype(dt, scalar):
            return kind
    return None


def dtype_name(dtype) -> str:
    """The name error messages use for a dtype (`float0` has no name of its own)."""
    if isinstance(dtype, plax_dtypes.ExtendedDType):
        return dtype.name
    dt = np.dtype(dtype)
    return "float0" if dt == plax_dtypes.float0 else dt.name


def describe(aval: ShapedArray) -> str:
    """`float32[2,3]`: an operand as it appears in error messages."""
    return f"{dtype_name(aval.dtype)}[{','.join(map(str, aval.shape))}]"


def check_dtype(name: str, aval: ShapedArray, kinds: frozenset, what: str = "operand") -> None:
    """TypeError naming the primitive `name`, the operand and the accepted dtypes,
    unless `aval`'s dtype is among `kinds` (the abstract eval's dtype check)."""
    if kind_of(aval.dtype) not in kinds and dtype_name(aval.dtype) not in kinds:
        accepted = " or ".join([_KIND_NAMES[k] for k in _KIND_NAMES if k in kinds] +
                               sorted(k for k in kinds if k not in _KIND_NAMES))
        key = (" (a PRNG key array: use plax.random functions on it, or "
               "plax.random.key_data for its bits)"
               if plax_dtypes.issubdtype(aval.dtype, plax_dtypes.prng_key) else "")
        raise TypeError(f"{name} does not accept dtype {dtype_name(aval.dtype)} "
                        f"(got {what} {describe(aval)}{key}); it accepts {accepted} dtypes")


def check_same_dtypes(name: str, *avals: ShapedArray) -> np.dtype:
    """The common dtype of `avals`, ignoring weak types; TypeError if they differ."""
    if any(a.dtype != avals[0].dtype for a in avals[1:]):
        raise TypeError(f"{name} requires arguments to have the same dtype, got "
                        f"{', '.join(map(describe, avals))}")
    return avals[0].dtype


def broadcasting_shape(name: str, *avals: ShapedArray) -> tuple[int, ...]:
    """The result shape of an elementwise op: lax broadcasts rank-0 operands, and
    dimensions of size 1 among operands of equal rank, and nothing else."""
    shapes = [a.shape for a in avals if a.shape]
    if not shapes:
        return ()
    if len({len(s) for s in shapes}) != 1:
        raise TypeError(f"{name} requires arguments of the same rank (or rank 0), got "
                        f"shapes {', '.join(map(str, shapes))}")
    result = []
    for sizes in zip(*shapes):
        not_one = {d for d in sizes if d != 1}
        if len(not_one) > 1:
            raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                            f"{', '.join(map(str, shapes))}")
        result.append(not_one.pop() if not_one else 1)
    return tuple(result)


def weak_result(avals: Sequence[ShapedArray], dtype) -> bool:
    """A result is weakly typed only if every input is; that holds for bool results too
    (`2 < 3.0` compares weak values, so JAX marks its bool weak)."""
    return all(a.weak_type for a in avals)


def canonicalize_axis(name: str, axis: int, ndim: int, what: str = "axis", *,
                      error: type[Exception] = AxisError, negative: bool = True) -> int:
    """`axis` in `[-ndim, ndim)` made non-negative, else `error`: by default NumPy's
    AxisError, both a ValueError and an IndexError (JAX raises either, op by op);
    the shape rules for which JAX raises TypeError pass that. With `negative=False`
    only `[0, ndim)` is accepted (the lax operations JAX gives no negative axes)."""
    axis = int(axis)
    if axis < 0 and not negative:
        raise error(f"{name}: {what} {axis} is negative, which this lax operation does "
                    f"not take (it must be in [0, {ndim}); plax.numpy's functions take "
                    "negative ones)")
    if not -ndim <= axis < ndim:
        raise error(f"{name}: {what} {axis} is out of bounds for an array of rank {ndim}")
    return axis + ndim if axis < 0 else axis


def check_axes(name: str, axes: Sequence[int], ndim: int, what: str = "axes", *,
               error: type[Exception] = ValueError) -> None:
    """Primitive params: axes must be distinct and in `[0, ndim)`, else `error`."""
    if any(not 0 <= a < ndim for a in axes):
        raise error(f"{name}: {what} {tuple(axes)} out of range for an operand of "
                    f"rank {ndim}")
    if len(set(axes)) != len(axes):
        raise error(f"{name}: {what} {tuple(axes)} contain duplicates")


# --- constructors ---------------------------------------------------------------------

def standard_primitive(id: str, abstract_eval: Callable, lower: Callable | None, *,
                       multiple_results: bool = False, dtypes: frozenset | None = None,
                       primitive_type: type = Primitive, **rules: Callable) -> Primitive:
    """A primitive (of namespaced `id`, e.g. `"lax.sin"`) with its abstract evaluation,
    generic lowering and further rules; an instance of `primitive_type`, a subclass of
    `Primitive` that binds otherwise (JAX's staging-time folding of a conversion).

    Each keyword in `rules` is a rule kind (`jvp`, `transpose`, `batching`...); a
    `PrimitiveRule` (such as `defjvp(...)`) is first given the primitive. `dtypes`
    declares the dtype kinds of its operands (`Primitive.dtypes`).
    """
    prim = primitive_type(id, multiple_results=multiple_results, dtypes=dtypes)
    prim.def_abstract_eval(abstract_eval)
    if lower is not None:
        prim.def_lowering(lower)
    for kind, fn in rules.items():
        prim.define_rule(kind, fn.for_primitive(prim) if isinstance(fn, PrimitiveRule) else fn)
    return prim


def elementwise(id: str, arity: int, *, dtypes: frozenset, lower: Callable,
                result_dtype: Callable[[np.dtype], np.dtype] | None = None,
                **rules: Callable) -> Primitive:
    """An elementwise primitive of `arity` operands of one dtype among `dtypes`.

    `result_dtype` maps the operands' dtype to the result's (default: the same).
    Its batching rule is `broadcasting_batcher` unless `batching=` says otherwise.
    """
    name = id.rpartition(".")[2]

    def abstract_eval(*avals: ShapedArray, **params) -> ShapedArray:
        if len(avals) != arity:
            raise TypeError(f"{name} takes {arity} operand{'s' * (arity > 1)}, "
                            f"got {len(avals)}")
        for aval in avals:
            check_dtype(name, aval, dtypes)
        dtype = check_same_dtypes(name, *avals)
        shape = broadcasting_shape(name, *avals)
        out_dtype = np.dtype(result_dtype(dtype)) if result_dtype else dtype
        return ShapedArray(shape, out_dtype, weak_result(avals, out_dtype))

    rules.setdefault("batching", broadcasting_batcher())
    return standard_primitive(id, abstract_eval, lower, dtypes=dtypes, **rules)


def unary(id: str, *, dtypes: frozenset, lower: Callable,
          result_dtype: Callable[[np.dtype], np.dtype] | None = None,
          **rules: Callable) -> Primitive:
    """An elementwise primitive of one operand (see `elementwise`)."""
    return elementwise(id, 1, dtypes=dtypes, lower=lower, result_dtype=result_dtype, **rules)


def binary(id: str, *, dtypes: frozenset, lower: Callable,
           result_dtype: Callable[[np.dtype], np.dtype] | None = None,
           **rules: Callable) -> Primitive:
    """An elementwise primitive of two operands (see `elementwise`)."""
    return elementwise(id, 2, dtypes=dtypes, lower=lower, result_dtype=result_dtype, **rules)


# --- result dtypes ----------------------------------------------------------------------

def to_bool(dtype) -> np.dtype:
    """The `result_dtype` of comparisons and predicates: bool whatever the operands."""
    return np.dtype(bool)


def real_dtype(dtype) -> np.dtype:
    """float32 for complex64, float64 for complex128; real dtypes unchanged."""
    dt = np.dtype(dtype)
    return np.dtype(dt.type(0).real.dtype) if kind_of(dt) == "complex" else dt


def complex_dtype(dtype) -> np.dtype:
    """complex64 for float32 (and narrower floats), complex128 for float64; complex
    dtypes unchanged."""
    dt = np.dtype(dtype)
    if kind_of(dt) == "complex":
        return dt
    return np.dtype(np.complex128 if dt == np.float64 else np.complex64)


# --- lowering of elementwise ops -----------------------------------------------------------

def elementwise_lowering(build: Callable) -> Callable:
    """A lowering rule that broadcasts its operands to the result's shape, then
    calls `build(ctx, *operands, **params)`."""
    def rule(ctx, *operands, **params):
        out_aval = ctx.avals_out[0]
        return build(ctx, *(mu.broadcast_to(x, out_aval) for x in operands), **params)
    rule.__name__ = f"lower_{getattr(build, '__name__', 'elementwise')}"
    return rule


def hlo_rule(op_name: str) -> Callable:
    """The lowering of an elementwise primitive to the StableHLO op `op_name`."""
    return elementwise_lowering(lambda ctx, *xs, **params: getattr(hlo, op_name)(*xs))


def chlo_rule(op_name: str) -> Callable:
    """The lowering of an elementwise primitive to the CHLO op `op_name`."""
    return elementwise_lowering(lambda ctx, *xs, **params: getattr(chlo, op_name)(*xs))

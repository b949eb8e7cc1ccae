"""Dtype conversions: `convert_element_type`, `bitcast_convert_type`, and `copy`.

Also the rule every binary `lax` function applies to Python scalars: `lax.add(x, 1.0)`
gives the scalar `x`'s dtype, keeping it weakly typed, instead of rejecting the
mismatch (lax never promotes two arrays of different dtypes).
"""
from __future__ import annotations

import sys
import warnings

import numpy as np

from plax.extend import dtypes, tree_util
from plax.extend.ad import Zero, defjvp, is_differentiable_dtype, linear_jvp, tangent_aval
from plax.extend.batching import moveaxis, unary_batcher
from plax.extend.constructors import (
    ANY,
    check_dtype,
    describe,
    dtype_name,
    kind_of,
    standard_primitive,
)
from plax.extend.core import (Literal, Primitive, ShapedArray, StagingTrace,
                              Tracer, current_trace, get_aval, is_python_scalar)
from plax.extend.mlir import hlo, mu

# --- convert_element_type ------------------------------------------------------------

_ANY_OR_FLOAT0 = ANY | {"float0"}  # float0 converts to and from every dtype, as in JAX


def _convert_element_type_abstract_eval(operand, *, new_dtype, weak_type, sharding):
    check_dtype("convert_element_type", operand, _ANY_OR_FLOAT0)
    check_dtype("convert_element_type", ShapedArray((), new_dtype), _ANY_OR_FLOAT0,
                what="new_dtype")
    return ShapedArray(operand.shape, new_dtype, weak_type)


def _convert_element_type_lower(ctx, operand, *, new_dtype, weak_type, sharding):
    aval_in, aval_out = ctx.avals_in[0], ctx.avals_out[0]
    if aval_in.dtype != aval_out.dtype and dtypes.float0 in (aval_in.dtype, aval_out.dtype):
        # float0's one value is zero (its booleans carry nothing): zeros, either way
        return mu.splat(0, aval_out)
    if aval_in.dtype == aval_out.dtype:  # (a weak type made strong): JAX's no-op convert
        return hlo.convert(mu.ir_type(aval_out), operand)
    return mu.convert(operand, aval_in, aval_out)


def _convert_element_type_jvp(primals, tangents, *, new_dtype, weak_type, sharding):
    (operand,), (t,) = primals, tangents
    # A known value converted to its own type is itself, as in JAX (a `vjp` then saves
    # the argument, not a copy, and its function lists it among the arguments)
    def unchanged(x):
        return sharding is None and _unchanged(x, get_aval(x), np.dtype(new_dtype), weak_type)
    ans = operand if unchanged(operand) else convert_element_type_p.bind(
        operand, new_dtype=new_dtype, weak_type=weak_type, sharding=sharding)
    if isinstance(t, Zero) or not is_differentiable_dtype(new_dtype):
        return ans, Zero(tangent_aval(get_aval(ans)))
    # (tangents and cotangents keep the weak types of their primals, as JAX's; a
    # staged tangent of that type already is forwarded, as JAX's staging forwards it)
    if unchanged(t):
        return ans, t
    return ans, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type,
                                            sharding=sharding)


def _convert_element_type_transpose(ct, operand, *, new_dtype, weak_type, sharding):
    aval = operand.aval
    if sharding is None and _unchanged(ct, get_aval(ct), aval.dtype, aval.weak_type):
        return [ct]  # (already of the operand's type: forwarded, as JAX's staging does)
    return [convert_element_type_p.bind(ct, new_dtype=aval.dtype, weak_type=aval.weak_type,
                                        sharding=sharding)]


class _ConvertElementType(Primitive):
    """Where a Jaxpr is traced, a host scalar is converted on the host, so that the
    Jaxpr holds a literal, as JAX's constant folding has it: a staged `grad`'s seed, the
    transposed conversion of a constant, an inlined jit's conversion of a Python scalar
    argument. (Eagerly, a conversion makes an Array.)"""

    def bind(self, operand, **params):
        trace = current_trace()
        if params["sharding"] is None and type(trace) is StagingTrace:
            folded = folded_on_host(_held_constant(trace, operand), params["new_dtype"],
                                    params["weak_type"])
            if folded is not None:
                return staged_constant(trace, folded)
        return super().bind(operand, **params)


def staged_constant(trace: StagingTrace, value):
    """`value`, a host constant, as a tracer of `trace` that stands for it (a literal,
    for a scalar), as JAX's tracers holding literals: an array like any traced value
    (`.dtype`, `.shape`), while the Jaxpr shows the constant where it is used."""
    return trace.tracer_type(trace, trace.to_atom(value))


def _held_constant(trace: StagingTrace, x):
    """`x`, or for a tracer of `trace` holding a literal (`staged_constant`'s), its
    value; None for other tracers."""
    if not isinstance(x, Tracer):
        return x
    atom = trace.to_atom(x) if x._trace is trace else None
    return atom.val if isinstance(atom, Literal) else None


convert_element_type_p = standard_primitive(
    "lax.convert_element_type", _convert_element_type_abstract_eval, _convert_element_type_lower,
    primitive_type=_ConvertElementType,
    jvp=_convert_element_type_jvp, transpose=_convert_element_type_transpose,
    batching=unary_batcher(),
    # JAX's form: the sharding is the result's type
    pretty_print=lambda eqn, _: sorted(kv for kv in eqn.params.items() if kv[0] != "sharding"))


def convert_element_type(operand, new_dtype):
    """Casts an array to another dtype, elementwise.

    Floating-point to integer truncates toward zero; to bool means `!= 0`;
    complex to real drops the imaginary part. Unlike `jnp.astype`, the result
    is never weakly typed.

    Args:
        operand: an array or scalar.
        new_dtype: the target dtype.

    Returns:
        An array of `operand`'s shape and `new_dtype`.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.convert_element_type(jnp.array([1.7, -1.7]), jnp.int32)
        Array([ 1, -1], dtype=int32)
    """
    new_dtype = dtypes.dtype(new_dtype, canonicalize=True)
    return convert_with_weak_type(operand, new_dtype, weak_type=False)


def folded_on_host(operand, new_dtype: np.dtype, weak_type: bool = False):
    """A host scalar converted on the host, so that a traced program holds it as a
    literal (JAX's folding: `convert_element_type(0.3, float32)` stages no equation): a
    NumPy scalar, or a Python scalar for a weakly typed result. None where XLA's
    conversion must decide (non-finite floats to integers, complex to real), where the
    value does not fit, and for a weak type no Python scalar has. (A 0-d NumPy array
    is its scalar.)"""
    if isinstance(operand, np.ndarray) and not operand.shape:
        operand = operand[()]
    if not (is_python_scalar(operand) or isinstance(operand, np.generic)):
        return None
    old = np.result_type(operand)
    if (old.kind == "c" and new_dtype.kind != "c") or (
            old.kind in "fc" and new_dtype.kind in "biu" and not np.isfinite(operand)):
        return None
    try:
        value = np.asarray(operand, dtype=new_dtype)[()]
    except (OverflowError, TypeError, ValueError):
        return None
    if not weak_type:
        return value
    kind = _weak_python_kind(new_dtype)
    return None if kind is None else kind(value)


def _unchanged(operand, aval, new_dtype: np.dtype, weak_type: bool) -> bool:
    """Whether converting `operand` (of abstract value `aval`) gives it back: it has
    that dtype and weak type, and is not a tracer of a known value (as JAX's: so an
    eager `jvp`'s Python-scalar tangent becomes an Array)."""
    return (aval.dtype, aval.weak_type) == (new_dtype, weak_type) and (
        operand.to_concrete_value() is None if isinstance(operand, Tracer)
        else hasattr(operand, "aval"))


def convert_with_weak_type(operand, new_dtype, weak_type: bool):
    """`convert_element_type` with an explicit result weak type; a no-op when the
    operand is `_unchanged` by it."""
    aval = get_aval(operand)
    new_dtype = np.dtype(new_dtype)
    if _unchanged(operand, aval, new_dtype, weak_type):
        return operand
    if kind_of(aval.dtype) == "complex" and kind_of(new_dtype) != "complex":
        warnings.warn("Casting complex values to real discards the imaginary part",
                      np.exceptions.ComplexWarning, stacklevel=3)
    return convert_element_type_p.bind(operand, new_dtype=new_dtype, weak_type=bool(weak_type),
                                       sharding=None)


_PYTHON_KINDS = {"b": bool, "i": int, "u": int, "f": float, "c": complex}


def constant_like(x, value):
    """`value` as a constant to combine with `x`, as JAX's `lax._const` makes it: a
    Python scalar (weakly typed, so the result stays as weak as `x`) for a weakly
    typed scalar `x` of its kind's default dtype, else a NumPy scalar of `x`'s dtype."""
    aval = get_aval(x)
    kind = _weak_python_kind(aval.dtype)
    if aval.weak_type and not aval.shape and kind is not None:
        return kind(value)
    return np.asarray(value, aval.dtype)[()]


def _weak_python_kind(dtype: np.dtype) -> type | None:
    """The Python scalar type whose weak dtype is `dtype`, if one is (a Python bool is
    a strong bool)."""
    kind = _PYTHON_KINDS.get(dtype.kind)
    if kind in (None, bool):
        return None
    return kind if dtypes.canonicalize_dtype(dtypes.python_scalar_dtypes[kind]) == dtype else None


# --- Python scalars in binary operations --------------------------------------------------

_KIND_RANK = {"bool": 0, "signed": 1, "unsigned": 1, "float": 2, "complex": 3}
_PY_KIND_RANK = {int: 1, float: 2, complex: 3}


def match_python_scalars(name: str, *args, strict: bool = False):
    """Give Python int/float/complex scalars among `args` the dtype of the first
    non-scalar argument, weakly typed; a scalar of a higher kind (a float meeting an
    int array) or an int that does not fit is a TypeError.

    `strict` (lax's binary ops): called from outside plax, a scalar whose default dtype
    (int32, float32...) is not the array's is JAX's TypeError, as JAX's lax takes no
    mixed dtypes; plax's own rules may still write `1` for a typed one."""
    if not any(type(a) in _PY_KIND_RANK for a in args):  # the common case: no scalar
        return args
    # (a token has no dtype: the primitive's own check then names it)
    target = next((getattr(get_aval(a), "dtype", None) for a in args
                   if not is_python_scalar(a)), None)
    if target is None:
        return args
    if strict:
        mixed = next((get_aval(a).dtype for a in args if type(a) in _PY_KIND_RANK
                      and get_aval(a).dtype != target), None)
        if mixed is not None and _called_by_user():
            tip = (f" (Tip: jnp.{_JNP_NAMES[name]} is a similar function that does "
                   "automatic type promotion on inputs)." if name in _JNP_NAMES else "")
            raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got "
                            f"{dtype_name(target)}, {dtype_name(mixed)}.{tip}")
    return tuple(_scalar_as(name, a, target) if type(a) in _PY_KIND_RANK else a for a in args)


# jnp's promoting counterpart of a lax function, for the hint JAX's error gives
_JNP_NAMES = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "divide",
              "max": "maximum", "min": "minimum", "pow": "power", "rem": "remainder",
              "atan2": "arctan2", "nextafter": "nextafter"}


def _called_by_user() -> bool:
    """Whether the lax function was called from outside plax: the first caller frame
    outside the modules defining lax's elementwise functions (their table and
    wrappers, this module, the traceback-filtering boundary) is not in a plax package:
    lax's other functions write `0` for a typed constant and are not the user."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith(
            ("plax_stdlib.lax.op_table", "plax_stdlib.lax.conversion",
             "plax_stdlib.lax.elementwise", "plax_stdlib.lax.comparison",
             "plax._src.traceback_util")):
        frame = frame.f_back
    return frame is None or not frame.f_globals.get("__name__", "").startswith("plax")


def _scalar_as(name: str, scalar, target: np.dtype):
    if get_aval(scalar).dtype == target:
        return scalar
    target_kind = kind_of(target)
    if target_kind is None or _PY_KIND_RANK[type(scalar)] > _KIND_RANK[target_kind]:
        raise TypeError(f"{name} cannot combine the Python {type(scalar).__name__} "
                        f"{scalar!r} with an array of dtype {dtype_name(target)}; convert "
                        "one of them explicitly (lax does not promote types)")
    if type(scalar) is int and target_kind in ("signed", "unsigned"):
        info = dtypes.iinfo(target)
        if not info.min <= scalar <= info.max:
            raise TypeError(f"{name}: Python int {scalar} is out of range for dtype "
                            f"{dtype_name(target)} (JAX's class for this is TypeError: "
                            "its lax takes no scalar of another dtype at all)")
    return convert_with_weak_type(scalar, target, weak_type=True)


# --- bitcast_convert_type ---------------------------------------------------------------

def _bitcast_abstract_eval(operand, *, new_dtype):
    name = "bitcast_convert_type"
    check_dtype(name, operand, ANY)
    check_dtype(name, ShapedArray((), new_dtype), ANY, what="new_dtype")
    old_bits, new_bits = dtypes.itemsize_bits(operand.dtype), dtypes.itemsize_bits(new_dtype)
    if old_bits == new_bits:
        shape = operand.shape
    elif old_bits > new_bits:
        shape = operand.shape + (old_bits // new_bits,)
    elif operand.shape and operand.shape[-1] * old_bits == new_bits:
        shape = operand.shape[:-1]
    else:
        raise ValueError(f"{name}: converting {describe(operand)} to the wider dtype "
                         f"{dtype_name(new_dtype)} requires a last dimension of size "
                         f"{new_bits // old_bits}")
    # After the sizes, as JAX checks them: bools and complex numbers have no bit
    # pattern to share with other dtypes.
    if operand.dtype != new_dtype and {kind_of(operand.dtype), kind_of(new_dtype)} & {
            "bool", "complex"}:
        raise TypeError(f"{name}: bool and complex values convert only to their own dtype, "
                        f"got {describe(operand)} to {dtype_name(new_dtype)}")
    return ShapedArray(shape, new_dtype)


def _bitcast_lower(ctx, operand, *, new_dtype):
    return hlo.bitcast_convert(mu.ir_type(ctx.avals_out[0]), operand)


def _bitcast_batching(axis_data, args, dims, *, new_dtype):
    """Only a wider dtype, which consumes the trailing dimension, cares where the
    batch dimension is: it must not be the trailing one."""
    (x,), (d,) = args, dims
    if d == get_aval(x).ndim - 1:
        x, d = moveaxis(x, d, 0), 0
    return bitcast_convert_type_p.bind(x, new_dtype=new_dtype), d


bitcast_convert_type_p = standard_primitive("lax.bitcast_convert_type", _bitcast_abstract_eval,
                                            _bitcast_lower, batching=_bitcast_batching,
                                            jvp=defjvp(None))


def bitcast_convert_type(operand, new_dtype):
    """Reinterprets the bits of `operand` as another dtype, without conversion.

    To a narrower dtype, a trailing dimension of the width ratio is added (one
    float32 gives four uint8); to a wider one, the trailing dimension (of the
    ratio's size) is consumed.

    Args:
        operand: an array.
        new_dtype: the dtype to read the bits as.

    Returns:
        An array of `new_dtype` holding the same bytes.

    Raises:
        ValueError: a wider `new_dtype` whose width ratio does not match the
            trailing dimension.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.bitcast_convert_type(jnp.float32(1.0), jnp.int32)
        Array(1065353216, dtype=int32)
        >>> lax.bitcast_convert_type(jnp.int32(1), jnp.uint8)
        Array([1, 0, 0, 0], dtype=uint8)
    """
    new_dtype = dtypes.dtype(new_dtype, canonicalize=True)
    return bitcast_convert_type_p.bind(operand, new_dtype=new_dtype)


# --- copy -----------------------------------------------------------------------------

copy_p = standard_primitive("lax.copy", lambda operand: operand, lambda ctx, operand: operand,
                            jvp=linear_jvp(), transpose=lambda ct, x: [copy_p.bind(ct)],
                            batching=unary_batcher())


def copy(operand):
    """A copy of `operand`: the same values in a new buffer when executed eagerly."""
    return copy_p.bind(operand)


# --- stop_gradient ----------------------------------------------------------------------

stop_gradient_p = standard_primitive("lax.stop_gradient", lambda operand: operand,
                                     lambda ctx, operand: operand, jvp=defjvp(None),
                                     batching=unary_batcher())


def stop_gradient(x):
    """Returns `x` unchanged, but blocks derivatives: its tangents and cotangents
    are zero.

    Use it to treat a value as a constant inside a differentiated function
    (targets in a loss, moving averages, straight-through estimators).

    Args:
        x: a pytree of arrays.

    Returns:
        `x`'s values.

    Examples:
        >>> import plax
        >>> plax.grad(lambda x: x * plax.lax.stop_gradient(x))(3.0)
        Array(3., dtype=float32, weak_type=True)
    """
    def stop(leaf):
        if not is_differentiable_dtype(get_aval(leaf).dtype):
            return leaf
        return stop_gradient_p.bind(leaf)
    return tree_util.tree_map(stop, x)

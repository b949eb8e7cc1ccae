"""`dot_general`: contractions with batch dimensions, and `dot`/`batch_matmul` on top.

`dimension_numbers` is `((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))`.
The result's dimensions are the batch dimensions, then lhs's free dimensions, then
rhs's free dimensions, each in order.
"""
from __future__ import annotations

import enum
import operator

import numpy as np

from plax.extend import config, dtypes
from plax.extend.ad import defjvp, is_undefined_primal
from plax.extend.batching import batched_axis
from plax.extend.constructors import (
    BOOL,
    NUMBER,
    check_axes,
    check_dtype,
    describe,
    dtype_name,
    kind_of,
    standard_primitive,
    weak_result,
)
from plax.extend.core import ShapedArray, get_aval
from plax.extend.mlir import hlo, ir, mu
from plax_stdlib.lax.dot_algorithm import (
    ALGORITHMS,
    CPU_PRESETS,
    FLOAT8,
    DotAlgorithmPreset,
    compute_types,
)
from plax_stdlib.lax.out_sharding import check_out_sharding, cotangent_sharding, with_batch_dim


class Precision(enum.Enum):
    """How much precision the backend should spend on the inputs of a matrix
    product or convolution (`precision=` of `dot`, `dot_general`, `conv...`,
    and `jnp.matmul`...).

    `DEFAULT` is fastest; on TPU it multiplies float32 inputs in one bfloat16
    pass, `HIGH` in three and `HIGHEST` in six (about float32 accuracy). On CPU
    all three compute in float32. Strings (`"highest"`...) are accepted where a
    Precision is. The option `jax_default_matmul_precision` changes the default.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> a = jnp.array([[1.0, 2.0]])
        >>> lax.dot(a, a.T, precision=lax.Precision.HIGHEST)
        Array([[5.]], dtype=float32)
        >>> lax.Precision("highest") is lax.Precision.HIGHEST
        True
    """
    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value):
        name = _PRECISION_NAMES.get(value.lower()) if isinstance(value, str) else None
        return None if name is None else cls[name]

    def __str__(self):
        return self.name

    def __repr__(self):
        return f"Precision.{self.name}"


def canonicalize_precision(precision):
    """None, a pair of `Precision`s (for lhs and rhs) or a dot algorithm, from a
    Precision, a precision or preset name, a pair of Precisions or names, a
    `DotAlgorithm` or a `DotAlgorithmPreset`.

    None means `jax_default_matmul_precision` (a precision or preset name)."""
    if precision is None:
        default = config.default_matmul_precision.value
        return None if default is None else canonicalize_precision(default)
    if isinstance(precision, ALGORITHMS):
        return precision
    if isinstance(precision, str) and precision in DotAlgorithmPreset.__members__:
        return DotAlgorithmPreset[precision]
    try:
        if isinstance(precision, (str, Precision)):
            return (Precision(precision),) * 2
        if isinstance(precision, (tuple, list)) and len(precision) == 2:
            return tuple(Precision(p) for p in precision)
    except ValueError:
        pass
    raise ValueError("precision must be None, a lax.Precision or one of the strings "
                     f"{sorted(_PRECISION_NAMES)}, a pair of them, a lax.DotAlgorithmPreset "
                     f"or its name, or a lax.DotAlgorithm; got {precision!r}")


_PRECISION_NAMES = {"default": "DEFAULT", "fastest": "DEFAULT", "bfloat16": "DEFAULT",
                    "high": "HIGH", "bfloat16_3x": "HIGH", "tensorfloat32": "HIGH",
                    "highest": "HIGHEST", "float32": "HIGHEST"}


def precision_config(precision):
    """The `precision_config` attribute of a dot or convolution, DEFAULT for both
    operands unless a precision says otherwise (as JAX spells it; a dot algorithm
    has its own attribute)."""
    if precision is None or isinstance(precision, ALGORITHMS):
        precision = (Precision.DEFAULT,) * 2
    return ir.ArrayAttr.get([hlo.PrecisionAttr.get(str(p)) for p in precision])


# --- dot_general --------------------------------------------------------------------------

_INTEGER = ("signed", "unsigned")
_COMPATIBLE = {"signed": _INTEGER + ("float",), "unsigned": _INTEGER + ("float",),
               "float": ("float",), "complex": ("complex",)}


def check_preferred_element_type(name: str, lhs: ShapedArray, preferred,
                                 narrowing: str = "int_to_float") -> np.dtype:
    """The result dtype of a product (`dot_general`, a convolution): `preferred` if
    given and compatible with the inputs' dtype, else the inputs' dtype.

    Which results may be narrower than the inputs, as in JAX: `"int_to_float"`
    (a convolution's integers summed as floats), `"from_floats"` (dot_general, as
    XLA's dot: floats may narrow, integers not) or `"any"` (a dot algorithm's)."""
    if preferred is None:
        return lhs.dtype
    in_kind, out_kind = kind_of(lhs.dtype), kind_of(preferred)
    if in_kind == "bool":
        in_kind = "signed"  # booleans accumulate like integers
    if out_kind not in _COMPATIBLE[in_kind]:
        raise TypeError(f"{name}: preferred_element_type {dtype_name(preferred)} is not "
                        f"compatible with inputs of dtype {dtype_name(lhs.dtype)} (allowed: "
                        "integer to integer or floating, floating to floating, complex to "
                        "complex)")
    may_narrow = {"int_to_float": in_kind in _INTEGER and out_kind == "float",
                  "from_floats": in_kind == "float", "any": True}[narrowing]
    if not may_narrow and dtypes.itemsize_bits(preferred) < dtypes.itemsize_bits(lhs.dtype):
        raise TypeError(f"{name}: preferred_element_type {dtype_name(preferred)} is "
                        f"narrower than the inputs' dtype {dtype_name(lhs.dtype)}")
    return np.dtype(preferred)


def _dot_general_abstract_eval(lhs, rhs, *, dimension_numbers, precision,
                               preferred_element_type, out_sharding):
    name = "dot_general"
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    # As in JAX, the operands may have different dtypes (the product is computed in
    # their promoted dtype) and may be booleans (a logical or of ands).
    check_dtype(name, lhs, NUMBER | BOOL, what="lhs")
    check_dtype(name, rhs, NUMBER | BOOL, what="rhs")
    # Malformed dimension numbers are a TypeError, as in JAX's shape rule.
    check_axes(name, lhs_contract + lhs_batch, lhs.ndim, "lhs contracting and batch dimensions",
               error=TypeError)
    check_axes(name, rhs_contract + rhs_batch, rhs.ndim, "rhs contracting and batch dimensions",
               error=TypeError)
    if len(lhs_contract) != len(rhs_contract) or len(lhs_batch) != len(rhs_batch):
        raise TypeError(f"{name}: lhs and rhs need as many contracting and batch dimensions "
                        f"as each other, got dimension_numbers {dimension_numbers}")
    for what, lhs_dims, rhs_dims in (("batch", lhs_batch, rhs_batch),
                                     ("contracting", lhs_contract, rhs_contract)):
        lhs_sizes = tuple(lhs.shape[d] for d in lhs_dims)
        rhs_sizes = tuple(rhs.shape[d] for d in rhs_dims)
        if lhs_sizes != rhs_sizes:
            raise TypeError(f"{name} requires {what} dimensions to have the same shape, got "
                            f"{lhs_sizes} and {rhs_sizes} (lhs {describe(lhs)}, rhs "
                            f"{describe(rhs)}, dimension_numbers {dimension_numbers})")
    free = lambda aval, used: tuple(d for i, d in enumerate(aval.shape) if i not in used)
    shape = (tuple(lhs.shape[d] for d in lhs_batch) + free(lhs, lhs_contract + lhs_batch)
             + free(rhs, rhs_contract + rhs_batch))
    inputs = lhs.update(dtype=_input_dtype(lhs, rhs))
    narrowing = "any" if isinstance(precision, ALGORITHMS) else "from_floats"
    dtype = check_preferred_element_type(name, inputs, preferred_element_type, narrowing)
    weak = preferred_element_type is None and weak_result((lhs, rhs), dtype)
    return ShapedArray(shape, dtype, weak)


def _input_dtype(lhs: ShapedArray, rhs: ShapedArray) -> np.dtype:
    """The dtype of a product of operands of these dtypes without preferred type: as
    XLA's dot (and JAX), the more precise one (complex, then more exponent, then
    more mantissa, then more bits, then signed) rather than their promotion, so
    bfloat16 with float16 is bfloat16 and uint32 with int8 is uint32."""
    if lhs.dtype == rhs.dtype:
        return lhs.dtype

    def precision(dtype):
        kind = kind_of(dtype)
        real = dtypes.finfo(dtype).dtype if kind == "complex" else dtype
        info = dtypes.finfo(real) if kind in ("float", "complex") else None
        return (kind == "complex", -1 if info is None else info.maxexp,
                -1 if info is None else info.nmant,
                1 if kind == "bool" else dtypes.itemsize_bits(real), kind != "unsigned")

    lhs_key, rhs_key = precision(lhs.dtype), precision(rhs.dtype)
    if lhs_key == rhs_key:
        raise TypeError(f"dot_general: operands of dtypes {dtype_name(lhs.dtype)} and "
                        f"{dtype_name(rhs.dtype)} have no common product type (lhs "
                        f"{describe(lhs)}, rhs {describe(rhs)})")
    return lhs.dtype if lhs_key > rhs_key else rhs.dtype


def _dot_general_lower(ctx, lhs, rhs, *, dimension_numbers, precision,
                       preferred_element_type, out_sharding):
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    lhs_aval, rhs_aval = ctx.avals_in
    out = ctx.avals_out[0]
    if isinstance(precision, ALGORITHMS):
        lhs_type, rhs_type, accumulation = _algorithm_types(ctx.platform, precision,
                                                            lhs_aval, rhs_aval, out)
        algorithm = precision.hlo_attribute(lhs_type, rhs_type)
    else:
        lhs_type, rhs_type = lhs_aval.dtype, rhs_aval.dtype
        mixed_float8 = lhs_type != rhs_type and lhs_type in FLOAT8 and rhs_type in FLOAT8
        if not mixed_float8 and (lhs_type != rhs_type or kind_of(out.dtype) != kind_of(lhs_type)):
            # as JAX lowers them: operands of mixed dtypes (except two float8s) meet in
            # the result's dtype; so do integers summed as floats
            lhs_type = rhs_type = out.dtype
        accumulation, algorithm = out.dtype, None
    lhs = mu.convert(lhs, lhs_aval, lhs_aval.update(dtype=lhs_type))
    rhs = mu.convert(rhs, rhs_aval, rhs_aval.update(dtype=rhs_type))
    dnums = hlo.DotDimensionNumbers.get(
        lhs_batching_dimensions=list(lhs_batch), rhs_batching_dimensions=list(rhs_batch),
        lhs_contracting_dimensions=list(lhs_contract),
        rhs_contracting_dimensions=list(rhs_contract))
    accumulated = out.update(dtype=accumulation)
    result = hlo.dot_general(mu.ir_type(accumulated), lhs, rhs, dnums,
                             precision_config=precision_config(precision),
                             algorithm=algorithm)
    return mu.convert(result, accumulated, out)


def _algorithm_types(platform: str, algorithm, lhs: ShapedArray, rhs: ShapedArray,
                     out: ShapedArray) -> tuple:
    """The operand and accumulation dtypes of a dot algorithm (which the backend
    must support: XLA's CPU backend would silently ignore the others)."""
    if platform == "cpu" and algorithm not in CPU_PRESETS:
        raise ValueError(f"The precision '{algorithm}' is not supported by dot_general on "
                         "CPU")
    lhs_type, rhs_type, accumulation = compute_types(algorithm, lhs.dtype, rhs.dtype,
                                                     out.dtype)
    return lhs_type, rhs_type, out.dtype if accumulation is None else accumulation


def _ranges_like(*xs):
    start = 0
    for x in xs:
        yield tuple(range(start, start + len(x)))
        start += len(x)


def _transpose_lhs(ct, y, x_aval, dimension_numbers, swap_ans: bool = False, **params):
    """The cotangent of dot_general's lhs: contract `ct` with `y` over y's free dims,
    the product typed with the lhs's sharding (as in JAX)."""
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    x_ndim, y_ndim = x_aval.ndim, get_aval(y).ndim
    x_kept = [d for d in range(x_ndim) if d not in x_contract + x_batch]
    y_kept = [d for d in range(y_ndim) if d not in y_contract + y_batch]
    if swap_ans:
        ans_batch, ans_y, _ = _ranges_like(x_batch, y_kept, x_kept)
    else:
        ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
    dims = ((ans_y, tuple(y_kept)), (ans_batch, tuple(y_batch)))
    from plax_stdlib.lax.shape_ops import axes_order, transpose
    x_contract_by_y = [x_contract[i] for i in axes_order(y_contract)]
    order = list(x_batch) + x_kept + x_contract_by_y
    params["out_sharding"] = cotangent_sharding(x_aval, ct, y, order=order)
    return transpose(dot_general_p.bind(ct, y, dimension_numbers=dims, **params),
                     axes_order(order))


def _dot_general_transpose(ct, lhs, rhs, *, dimension_numbers, precision,
                           preferred_element_type, out_sharding):
    params = dict(precision=precision, preferred_element_type=preferred_element_type,
                  out_sharding=None)  # as in JAX: the cotangent product in the same type
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    ct_lhs = ct_rhs = None
    if is_undefined_primal(lhs):
        ct_lhs = _transpose_lhs(ct, rhs, lhs.aval, dimension_numbers, **params)
        ct_lhs = _as_dtype_of(ct_lhs, lhs.aval)
    if is_undefined_primal(rhs):
        swapped = ((y_contract, x_contract), (y_batch, x_batch))
        ct_rhs = _transpose_lhs(ct, lhs, rhs.aval, swapped, swap_ans=True, **params)
        ct_rhs = _as_dtype_of(ct_rhs, rhs.aval)
    return [ct_lhs, ct_rhs]


def _as_dtype_of(ct, aval: ShapedArray):
    """A cotangent in its operand's dtype (operands of mixed dtypes meet in the product)."""
    from plax_stdlib.lax.conversion import convert_element_type
    return ct if get_aval(ct).dtype == aval.dtype else convert_element_type(ct, aval.dtype)


def _dot_general_batching(axis_data, args, dims, *, dimension_numbers, **params):
    """Mapped on both sides, the batch dimension becomes the first dot batch
    dimension; mapped on one side, a free dimension of that side. Nothing moves."""
    (lhs, rhs), (ld, rd) = args, dims
    (lc, rc), (lb, rb) = dimension_numbers

    def renumber(axes, d):
        return tuple(axes) if d is None else tuple(batched_axis(a, d) for a in axes)

    lc, lb, rc, rb = renumber(lc, ld), renumber(lb, ld), renumber(rc, rd), renumber(rb, rd)

    def free(ndim, used):
        return [i for i in range(ndim) if i not in used]

    if ld is not None and rd is not None:
        lb, rb, out_dim = (ld,) + lb, (rd,) + rb, 0
    elif ld is not None:
        out_dim = len(lb) + free(get_aval(lhs).ndim, lc + lb).index(ld)
    else:
        n_lhs_free = len(free(get_aval(lhs).ndim, lc + lb))
        out_dim = len(lb) + n_lhs_free + free(get_aval(rhs).ndim, rc + rb).index(rd)
    params["out_sharding"] = with_batch_dim(params.get("out_sharding"), out_dim, axis_data)
    out = dot_general_p.bind(lhs, rhs, dimension_numbers=((lc, rc), (lb, rb)), **params)
    return out, out_dim


def _dot_general_pretty_print(eqn, same_names):
    """JAX's form: unset params and the out sharding (the result's type) left out, the
    dimension numbers as lists."""
    params = {k: v for k, v in eqn.params.items() if v is not None and k != "out_sharding"}
    (lc, rc), (lb, rb) = params["dimension_numbers"]
    params["dimension_numbers"] = ((list(lc), list(rc)), (list(lb), list(rb)))
    return sorted(params.items())


dot_general_p = standard_primitive(
    "lax.dot_general", _dot_general_abstract_eval, _dot_general_lower, dtypes=NUMBER | BOOL,
    batching=_dot_general_batching,
    jvp=defjvp(lambda g, ans, x, y, **params: dot_general_p.bind(g, y, **params),
               lambda g, ans, x, y, **params: dot_general_p.bind(x, g, **params)),
    transpose=_dot_general_transpose, pretty_print=_dot_general_pretty_print)


def _dims(dims) -> tuple[int, ...]:
    return tuple(operator.index(d) for d in dims)


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None,
                out_sharding=None):
    """Contracts and batches two arrays: the general form of every dot product,
    matrix product and batched matrix product.

    `dimension_numbers` is `((lhs_contracting, rhs_contracting), (lhs_batch,
    rhs_batch))`, four sequences of dimension numbers. Contracting dimensions
    (equal sizes) are multiplied and summed away; batch dimensions (equal sizes)
    are kept and paired. The result's dimensions are the batch dimensions, then
    `lhs`'s remaining dimensions, then `rhs`'s remaining dimensions.

    Args:
        lhs: an array.
        rhs: an array.
        dimension_numbers: `((lhs_contracting, rhs_contracting), (lhs_batch,
            rhs_batch))`.
        precision: a `lax.Precision` (or a pair, one per operand), a
            `DotAlgorithmPreset`, or None for the backend's default.
        preferred_element_type: the dtype to accumulate and return in (e.g.
            float32 for bfloat16 inputs, int32 for int8 inputs).
        out_sharding: on a mesh with `Explicit` axes, the result's sharding.

    Returns:
        The contracted array.

    Raises:
        TypeError: the contracted or batch dimensions' sizes differ, or a
            dimension number is out of range or listed twice.

    Examples:
        A batch of matrix products, `einsum("bij,bjk->bik")`:

        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> a, b = jnp.ones((2, 3, 4)), jnp.ones((2, 4, 5))
        >>> lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))).shape
        (2, 3, 5)
        >>> lax.dot_general(jnp.array([1.0, 2.0]), jnp.array([3.0, 4.0]), (((0,), (0,)), ((), ())))
        Array(11., dtype=float32)
    """
    try:
        (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    except (TypeError, ValueError):
        raise TypeError("dot_general: dimension_numbers must be ((lhs_contracting, "
                        "rhs_contracting), (lhs_batch, rhs_batch)), got "
                        f"{dimension_numbers!r}") from None
    dnums = ((_dims(lhs_contract), _dims(rhs_contract)), (_dims(lhs_batch), _dims(rhs_batch)))
    if preferred_element_type is not None:
        preferred_element_type = dtypes.dtype(preferred_element_type, canonicalize=True)
    return dot_general_p.bind(lhs, rhs, dimension_numbers=dnums,
                              precision=canonicalize_precision(precision),
                              preferred_element_type=preferred_element_type,
                              out_sharding=check_out_sharding("dot_general", out_sharding))


def dot(lhs, rhs, precision=None, preferred_element_type=None, out_sharding=None, *,
        dimension_numbers=None):
    """Vector and matrix products of arrays of rank 1 or 2: contracts the last
    dimension of `lhs` with the first of `rhs`.

    vector·vector gives a scalar, matrix·vector a vector, matrix·matrix a
    matrix. With `dimension_numbers` it is `dot_general`.

    Args:
        lhs: an array of rank 1 or 2.
        rhs: an array of rank 1 or 2, of `lhs`'s dtype.
        precision: a `lax.Precision`, a pair of them, a `DotAlgorithmPreset`,
            or None.
        preferred_element_type: the dtype to accumulate and return in.
        out_sharding: on a mesh with `Explicit` axes, the result's sharding.
        dimension_numbers: as for `dot_general`.

    Returns:
        The product.

    Raises:
        TypeError: the contracted sizes differ.
        ValueError: an operand has rank above 2 (without `dimension_numbers`).

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> m = jnp.array([[1.0, 2.0], [3.0, 4.0]])
        >>> lax.dot(m, jnp.array([1.0, 1.0]))
        Array([3., 7.], dtype=float32)
    """
    if dimension_numbers is not None:
        return dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type,
                           out_sharding)
    lhs_shape, rhs_shape = get_aval(lhs).shape, get_aval(rhs).shape
    if not (1 <= len(lhs_shape) <= 2 and 1 <= len(rhs_shape) <= 2
            and lhs_shape[-1] == rhs_shape[0]):
        raise ValueError(f"Incompatible shapes for dot: got {lhs_shape} and {rhs_shape}; "
                         "lax.dot takes matrices and vectors whose inner dimensions agree "
                         "(use lax.dot_general with dimension_numbers otherwise)")
    return dot_general(lhs, rhs, (((len(lhs_shape) - 1,), (0,)), ((), ())), precision,
                       preferred_element_type, out_sharding)


def batch_matmul(lhs, rhs, precision=None):
    """Matrix products over leading batch dimensions: `(..., m, k) @ (..., k, n)`.

    Args:
        lhs: an array of rank >= 2.
        rhs: an array of `lhs`'s rank and batch dimensions.
        precision: a `lax.Precision`, a pair, or None.

    Returns:
        An array of shape `(..., m, n)`.

    Raises:
        ValueError: the ranks or batch dimensions differ.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.batch_matmul(jnp.ones((5, 2, 3)), jnp.ones((5, 3, 4))).shape
        (5, 2, 4)
    """
    lhs_shape, rhs_shape = get_aval(lhs).shape, get_aval(rhs).shape
    if len(lhs_shape) != len(rhs_shape) or len(lhs_shape) < 2:
        raise ValueError(f"batch_matmul requires operands of equal rank >= 2, got shapes "
                         f"{lhs_shape} and {rhs_shape}")
    if lhs_shape[:-2] != rhs_shape[:-2]:
        raise ValueError(f"batch_matmul requires equal batch dimensions, got shapes "
                         f"{lhs_shape} and {rhs_shape}")
    ndim = len(lhs_shape)
    batch = tuple(range(ndim - 2))
    return dot_general(lhs, rhs, (((ndim - 1,), (ndim - 2,)), (batch, batch)), precision)

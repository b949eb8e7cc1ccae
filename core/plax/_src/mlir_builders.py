"""Helpers for writing lowering rules: plax avals and dtypes as MLIR types and values.

A lowering rule builds StableHLO ops at the insertion point the driver has set, so
every helper here does the same: it creates ops in the current context and returns
`ir.Value`s. `jaxlib.mlir` is heavy to import, so the core imports this module only
from inside lowering rules, never at `import plax` time.
"""
from __future__ import annotations

import contextlib
from typing import Callable, Iterator, Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from plax._src import dtypes
from plax._src.abstract import AbstractToken, ShapedArray, SymbolicDimension, physical_aval


# --- types -------------------------------------------------------------------------

def _element_type_factories() -> dict[np.dtype, Callable[[], ir.Type]]:
    signless, unsigned = ir.IntegerType.get_signless, ir.IntegerType.get_unsigned
    table = {
        np.dtype(bool): lambda: signless(1),
        dtypes.float0: lambda: signless(1),  # float0 tangents are lowered as booleans
        np.dtype(np.float16): ir.F16Type.get, np.dtype(dtypes.bfloat16): ir.BF16Type.get,
        np.dtype(np.float32): ir.F32Type.get, np.dtype(np.float64): ir.F64Type.get,
        np.dtype(np.complex64): lambda: ir.ComplexType.get(ir.F32Type.get()),
        np.dtype(np.complex128): lambda: ir.ComplexType.get(ir.F64Type.get()),
    }
    for bits, (signed, uns) in {2: (dtypes.int2, dtypes.uint2), 4: (dtypes.int4, dtypes.uint4),
                                8: (np.int8, np.uint8), 16: (np.int16, np.uint16),
                                32: (np.int32, np.uint32), 64: (np.int64, np.uint64)}.items():
        if signed is not None:
            table[np.dtype(signed)] = lambda bits=bits: signless(bits)
            table[np.dtype(uns)] = lambda bits=bits: unsigned(bits)
    narrow_floats = {
        "float8_e3m4": "Float8E3M4Type", "float8_e4m3": "Float8E4M3Type",
        "float8_e4m3b11fnuz": "Float8E4M3B11FNUZType", "float8_e4m3fn": "Float8E4M3FNType",
        "float8_e4m3fnuz": "Float8E4M3FNUZType", "float8_e5m2": "Float8E5M2Type",
        "float8_e5m2fnuz": "Float8E5M2FNUZType", "float8_e8m0fnu": "Float8E8M0FNUType",
        "float6_e2m3fn": "Float6E2M3FNType", "float6_e3m2fn": "Float6E3M2FNType",
        "float4_e2m1fn": "Float4E2M1FNType"}
    for name, ir_name in narrow_floats.items():
        table[np.dtype(getattr(dtypes, name))] = getattr(ir, ir_name).get
    return table


_ELEMENT_TYPES = _element_type_factories()  # types need a context, so they are made on call


def ir_element_type(dtype) -> ir.Type:
    """The MLIR element type of a plax dtype: i1 for bool, ui32 for uint32, f8E4M3FN..."""
    factory = _ELEMENT_TYPES.get(np.dtype(dtype))
    if factory is None:
        raise TypeError(f"dtype {np.dtype(dtype)} has no StableHLO element type")
    return factory()


def ir_type(aval: ShapedArray) -> ir.RankedTensorType:
    """`tensor<2x3xf32>` for `f32[2,3]` (`tensor<?x3xf32>` for a symbolic `b`,
    `!stablehlo.token` for the token aval); an extended dtype's data for its arrays
    (`tensor<3x2xui32>` for `key<fry>[3]`)."""
    if isinstance(aval, AbstractToken):
        return hlo.TokenType.get()
    aval = physical_aval(aval)
    return ir.RankedTensorType.get(ir_shape(aval.shape), ir_element_type(aval.dtype))


def ir_shape(shape: Sequence) -> list[int]:
    """`shape` for MLIR: symbolic dimensions become dynamic (`?`)."""
    return [ir.ShapedType.get_dynamic_size() if isinstance(d, SymbolicDimension) else d
            for d in shape]


# --- symbolic dimensions (shape polymorphism) ----------------------------------------

_dimension_values: list[Callable[[str], ir.Value]] = []


@contextlib.contextmanager
def dimension_values(var_value: Callable[[str], ir.Value]) -> Iterator[None]:
    """While lowering a function of a shape-polymorphic module: `var_value(name)` is
    the scalar integer value of the dimension variable `name` in that function."""
    _dimension_values.append(var_value)
    try:
        yield
    finally:
        _dimension_values.pop()


def is_static(shape: Sequence) -> bool:
    return not any(isinstance(d, SymbolicDimension) for d in shape)


def dimension_value(d) -> ir.Value:
    """A dimension as a `tensor<i32>` value (symbolic ones computed from the variables)."""
    if not isinstance(d, SymbolicDimension):
        return dense_constant(np.int32(d))
    if not _dimension_values:
        raise ValueError(f"the symbolic dimension '{d}' can only be lowered inside a "
                         "shape-polymorphic export")
    value = d.to_ir(_dimension_values[-1])
    i32 = ir.RankedTensorType.get([], ir.IntegerType.get_signless(32))
    return value if value.type == i32 else hlo.convert(i32, value)


def shape_tensor(shape: Sequence) -> ir.Value:
    """`shape` as a `tensor<Nxi32>` value, for the dynamic ops' shape operands."""
    if is_static(shape):
        return dense_constant(np.array(shape, np.int32).reshape(len(shape)))
    i32_1 = ir.RankedTensorType.get([1], ir.IntegerType.get_signless(32))
    parts = [hlo.reshape(i32_1, dimension_value(d)) for d in shape]
    return hlo.concatenate(parts, 0)


def element_shape(aval: ShapedArray) -> tuple[int, ...]:
    """The shape of one element's data: `()` for NumPy dtypes, `(2,)` for threefry keys.
    Lowering rules of primitives that move elements (slices, transposes...) take
    that data whole: they extend their sizes and dimension lists with it."""
    return physical_aval(aval).shape[len(aval.shape):]


def element_dims(aval: ShapedArray) -> tuple[int, ...]:
    """The trailing dimensions that the data of extended-dtype elements adds to `aval`'s."""
    return tuple(range(len(aval.shape), len(aval.shape) + len(element_shape(aval))))


def ir_types(avals: Sequence[ShapedArray]) -> list[ir.RankedTensorType]:
    return [ir_type(a) for a in avals]


# --- constants ---------------------------------------------------------------------

def dense_constant(value, dtype=None) -> ir.Value:
    """A `stablehlo.constant` holding `value` (any array-like) as `dtype`."""
    array = np.asarray(value, dtype)
    if array.dtype == dtypes.float0:
        array = np.zeros(array.shape, bool)
    return hlo.constant(ir.DenseElementsAttr.get(
        np.ascontiguousarray(array), type=ir_element_type(array.dtype), shape=array.shape))


def splat(value, aval: ShapedArray) -> ir.Value:
    """A tensor of `aval`'s shape and dtype with every element equal to `value` (of a
    float0 aval, its zero: the booleans it is lowered as)."""
    dtype = np.dtype(bool) if aval.dtype == dtypes.float0 else aval.dtype
    return broadcast_to(dense_constant(np.asarray(value, dtype).reshape(()), dtype), aval)


# --- shapes and dtypes of values ------------------------------------------------------

def iota(aval: ShapedArray, dimension: int) -> ir.Value:
    """Indices counting along `dimension` of `aval` (the dynamic form when its shape is
    symbolic)."""
    if is_static(aval.shape):
        return hlo.iota(ir_type(aval), dimension)
    return hlo.dynamic_iota(ir_type(aval), shape_tensor(aval.shape), iota_dimension=dimension)


def slice(x: ir.Value, starts: Sequence, limits: Sequence, steps: Sequence,
          aval_out: ShapedArray) -> ir.Value:  # noqa: A001 - StableHLO's name
    """`stablehlo.slice` of `x` (`real_dynamic_slice` when a bound is symbolic)."""
    if is_static([*starts, *limits]):
        return hlo.slice(x, list(starts), list(limits), list(steps))
    return hlo.real_dynamic_slice(ir_type(aval_out), x, shape_tensor(starts),
                                  shape_tensor(limits), shape_tensor(steps))


def dynamic_slice(x: ir.Value, starts: Sequence[ir.Value], sizes: Sequence,
                  operand_shape: Sequence) -> ir.Value:
    """`stablehlo.dynamic_slice` of `sizes` at `starts` (int32 scalars). A symbolic size
    becomes a `real_dynamic_slice` from each start clamped into `[0, dim - size]`, the
    clamping dynamic_slice itself does."""
    if is_static(sizes):
        return hlo.dynamic_slice(x, list(starts), list(sizes))
    i32 = ir.RankedTensorType.get([], ir.IntegerType.get_signless(32))
    i32_1 = ir.RankedTensorType.get([1], ir.IntegerType.get_signless(32))
    begins = [hlo.reshape(i32_1, hlo.clamp(dense_constant(np.int32(0)),
                                           start if start.type == i32 else hlo.convert(i32, start),
                                           dimension_value(dim - size)))
              for start, dim, size in zip(starts, operand_shape, sizes)]
    begin = hlo.concatenate(begins, 0) if begins else shape_tensor([])
    element_type = ir.RankedTensorType(x.type).element_type
    return hlo.real_dynamic_slice(ir.RankedTensorType.get(ir_shape(sizes), element_type), x,
                                  begin, hlo.add(begin, shape_tensor(sizes)),
                                  shape_tensor([1] * len(sizes)))


def reshape(x: ir.Value, aval_out: ShapedArray) -> ir.Value:
    """`stablehlo.reshape` of `x` to `aval_out` (`dynamic_reshape` when its shape is
    symbolic)."""
    if is_static(aval_out.shape):
        return hlo.reshape(ir_type(aval_out), x)
    return hlo.dynamic_reshape(ir_type(aval_out), x, shape_tensor(physical_aval(aval_out).shape))


def broadcast_to(value: ir.Value, aval: ShapedArray) -> ir.Value:
    """Broadcast `value` to `aval.shape` the way lax's elementwise ops do.

    `value` must be rank 0, or have `aval`'s rank with each dimension equal to the
    target's or 1. Only `aval.shape` matters: the element type stays `value`'s.
    """
    value_type = ir.RankedTensorType(value.type)
    shape = tuple(value_type.shape)
    if list(shape) == ir_shape(aval.shape):  # (a `?` stands for the same symbolic size)
        return value
    if shape and len(shape) != len(aval.shape):
        raise ValueError(f"broadcast_to: cannot broadcast {shape} to {aval.shape}")
    dims = list(range(len(aval.shape))) if shape else []
    return broadcast_in_dim(value, aval.shape, dims)


def broadcast_in_dim(value: ir.Value, shape: Sequence, dims: Sequence[int]) -> ir.Value:
    """`stablehlo.broadcast_in_dim` of `value` to `shape` (the dynamic form when the
    shape is symbolic); the element type stays `value`'s."""
    element_type = ir.RankedTensorType(value.type).element_type
    out_type = ir.RankedTensorType.get(ir_shape(shape), element_type)
    if is_static(shape):
        return hlo.broadcast_in_dim(out_type, value, list(dims))
    return hlo.dynamic_broadcast_in_dim(out_type, value, shape_tensor(shape), list(dims))


def convert(value: ir.Value, aval_in: ShapedArray, aval_out: ShapedArray) -> ir.Value:
    """Element type conversion with lax's semantics.

    Complex to non-complex keeps the real part (to bool too, as JAX's: 1j is False);
    to bool means `!= 0`; everything else is `stablehlo.convert` (float to int rounds
    toward zero).
    """
    if aval_in.dtype == aval_out.dtype:
        return value
    if dtypes.is_complex(aval_in.dtype) and not dtypes.is_complex(aval_out.dtype):
        value, aval_in = hlo.real(value), aval_in.update(dtype=dtypes.finfo(aval_in.dtype).dtype)
    if aval_out.dtype == np.dtype(bool):
        return compare(value, splat(0, aval_in), "NE", aval_in.dtype)
    return hlo.convert(ir_type(aval_out), value)


def comparison_type(dtype) -> str:
    """The StableHLO comparison type for `dtype`: FLOAT, SIGNED or UNSIGNED."""
    if dtypes.is_float(dtype) or dtypes.is_complex(dtype):
        return "FLOAT"
    if dtypes.issubdtype(dtype, np.signedinteger):
        return "SIGNED"
    return "UNSIGNED"  # unsigned integers and bool


def compare(x: ir.Value, y: ir.Value, direction: str, dtype, *,
            total_order: bool = False) -> ir.Value:
    """`x <direction> y` elementwise (`direction` in EQ, NE, LT, LE, GT, GE).

    With `total_order`, floats compare by IEEE total order (-NaN < -inf < -0 < 0 <
    inf < NaN), as sorting needs.
    """
    kind = comparison_type(dtype)
    if total_order and kind == "FLOAT":
        kind = "TOTALORDER"
    return hlo.compare(x, y, hlo.ComparisonDirectionAttr.get(direction),
                       compare_type=hlo.ComparisonTypeAttr.get(kind))


def is_nan(x: ir.Value, dtype) -> ir.Value:
    return compare(x, x, "NE", dtype)


# --- regions -----------------------------------------------------------------------

def build_region(region: ir.Region, arg_avals: Sequence[ShapedArray],
                 body: Callable[..., Sequence[ir.Value]]) -> None:
    """Fill `region` (of a reduce, sort...) with one block computing `body(*args)`."""
    block = region.blocks.append(*ir_types(arg_avals))
    with ir.InsertionPoint(block):
        hlo.return_(list(body(*block.arguments)))


def reduce(operands: Sequence[ir.Value], init_values: Sequence[ir.Value],
           avals_out: Sequence[ShapedArray], axes: Sequence[int],
           body: Callable[..., Sequence[ir.Value]]) -> list[ir.Value]:
    """`stablehlo.reduce` of `operands` over `axes`.

    `body(*accumulators, *elements)` combines rank-0 values and returns one value
    per operand.
    """
    op = hlo.ReduceOp(ir_types(avals_out), list(operands), list(init_values), list(axes))
    scalars = [ShapedArray((), a.dtype) for a in avals_out]
    build_region(op.body, scalars * 2, body)
    return list(op.results)

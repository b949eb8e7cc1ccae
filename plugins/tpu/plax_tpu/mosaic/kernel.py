"""A Pallas kernel's Jaxpr lowered to Mosaic: MLIR's `arith`, `math`, `vector`,
`memref`, `scf` dialects and jaxlib's `tpu` dialect.

`lower_jaxpr(ctx, jaxpr, consts, args)` emits the equations at the current insertion
point. Arrays are vectors (scalars are scalars), references are `Ref`s: a memref
and the block dimensions it keeps that the kernel's reference drops (squeezed). Each
primitive has one rule in `RULES`, keyed by its name, `rule(ctx, eqn, *ins) -> outs`;
a primitive without one raises `NotImplementedError` naming it and the kernel's line.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import arith, math as mathd, memref, scf, vector
from jaxlib.mosaic.python import tpu

from plax.extend.core import ClosedJaxpr, Jaxpr, Literal, user_frame
from plax.extend.mlir import mu


class LoweringError(NotImplementedError):
    """A kernel that the Mosaic lowering does not support."""


@dataclasses.dataclass(frozen=True)
class Ref:
    """A kernel reference: `value` is a memref whose shape is the block's, with 1 at
    each `squeezed` dimension (which the kernel's reference does not have)."""
    value: ir.Value
    squeezed: tuple[int, ...]
    memory_space: str  # "vmem", "smem", "any", "semaphore_mem"

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(ir.MemRefType(self.value.type).shape)


@dataclasses.dataclass
class Context:
    """What rules need besides operands: the user's line of the equation being
    lowered (for errors) and the variables its Jaxpr reads later."""
    where: str = ""
    used: frozenset = frozenset()


# --- types and constants ------------------------------------------------------------------

def element_type(dtype) -> ir.Type:
    return mu.ir_element_type(np.dtype(dtype))


def memory_space_name(space) -> str:
    """A Pallas memory space (None: the default) as Mosaic spells it."""
    name = "vmem" if space is None else str(space)
    return "vmem" if name == "default" else name


def memref_type(shape, dtype, space: str) -> ir.Type:
    """The memref of a buffer of `shape` and `dtype` in memory space `space` (a
    semaphore space: semaphores, whatever `dtype`)."""
    if space in ("semaphore", "dma_semaphore"):
        return ir.MemRefType.get(list(shape), ir.Type.parse(f"!tpu.{space}"),
                                 memory_space=ir.Attribute.parse(
                                     "#tpu.memory_space<semaphore_mem>"))
    if np.dtype(dtype) == np.bool_:
        raise LoweringError("Pallas TPU lowering: boolean operands and results are not "
                            "supported (pass them as int32)")
    return ir.MemRefType.get(list(shape), element_type(dtype),
                             memory_space=ir.Attribute.parse(f"#tpu.memory_space<{space}>"))


def value_type(aval) -> ir.Type:
    """A vector for an array, the element type for a scalar."""
    elt = element_type(aval.dtype)
    return ir.VectorType.get(list(aval.shape), elt) if aval.shape else elt


def _is_float(dtype) -> bool:
    return np.issubdtype(np.dtype(dtype), np.floating) or np.dtype(dtype).name == "bfloat16"


def _is_unsigned(dtype) -> bool:
    return np.issubdtype(np.dtype(dtype), np.unsignedinteger)


def constant(value, aval) -> ir.Value:
    """`value` (a number or an array) as an `arith.constant` of `aval`'s type."""
    elt = element_type(aval.dtype)
    array = np.asarray(value)
    if aval.shape:
        typ = ir.VectorType.get(list(aval.shape), elt)
        if array.size == 1 or np.all(array == array.reshape(-1)[0]):
            attr = ir.DenseElementsAttr.get_splat(typ, _scalar_attr(array.reshape(-1)[0], elt,
                                                                    aval.dtype))
        else:
            attr = ir.DenseElementsAttr.get(np.ascontiguousarray(array.astype(aval.dtype)),
                                            type=typ)
        return arith.ConstantOp(typ, attr).result
    return arith.ConstantOp(elt, _scalar_attr(array.reshape(()), elt, aval.dtype)).result


def _scalar_attr(x, elt: ir.Type, dtype) -> ir.Attribute:
    if _is_float(dtype):
        return ir.FloatAttr.get(elt, float(x))
    if np.dtype(dtype) == np.bool_:
        return ir.IntegerAttr.get(elt, int(bool(x)))
    return ir.IntegerAttr.get(elt, int(x))


def index_constant(i: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), ir.IntegerAttr.get(ir.IndexType.get(), i)).result


def as_index(x: ir.Value) -> ir.Value:
    return arith.IndexCastOp(ir.IndexType.get(), x).result


def broadcast_to(x: ir.Value, aval_in, aval_out) -> ir.Value:
    """`x` of `aval_in` broadcast (NumPy's trailing alignment, size-1 dimensions
    stretched) to `aval_out`'s shape."""
    if tuple(aval_in.shape) == tuple(aval_out.shape):
        return x
    typ = ir.VectorType.get(list(aval_out.shape), element_type(aval_in.dtype))
    return vector.BroadcastOp(typ, x).result


# --- the interpreter ------------------------------------------------------------------------

def lower_jaxpr(ctx: Context, jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Any]) -> list:
    """Emit `jaxpr` on `args` (MLIR values or `Ref`s); → the values of its outputs."""
    env: dict[int, Any] = {}
    used = _used_vars(jaxpr)

    def read(atom):
        if isinstance(atom, Literal):
            return constant(atom.val, atom.aval)
        return env[id(atom)]

    for v, c in zip(jaxpr.constvars, consts):
        env[id(v)] = constant(np.asarray(c), v.aval)
    for v, a in zip(jaxpr.invars, args):
        env[id(v)] = a
    for eqn in jaxpr.eqns:
        rule = RULES.get(eqn.primitive.name)
        where = user_frame(eqn.source_info)
        if rule is None:
            raise LoweringError(
                f"Pallas TPU lowering: the primitive '{eqn.primitive.name}' is not supported "
                f"in a kernel compiled with Mosaic" + (f" (at {where})" if where else "")
                + "; pass interpret=True to run the kernel in interpret mode")
        sub = Context(where or ctx.where, used)
        outs = rule(sub, eqn, *(read(a) for a in eqn.invars))
        if not eqn.primitive.multiple_results:
            outs = [outs]
        for v, out in zip(eqn.outvars, outs):
            env[id(v)] = out
    return [read(a) for a in jaxpr.outvars]


def _used_vars(jaxpr: Jaxpr) -> frozenset[int]:
    used = {id(a) for e in jaxpr.eqns for a in e.invars if not isinstance(a, Literal)}
    return frozenset(used | {id(a) for a in jaxpr.outvars if not isinstance(a, Literal)})


def _unsupported(ctx: Context, what: str) -> LoweringError:
    return LoweringError(f"Pallas TPU lowering: {what} is not supported"
                         + (f" (at {ctx.where})" if ctx.where else ""))


RULES: dict[str, Callable] = {}


def rule(*names: str):
    def register(fn):
        for name in names:
            RULES[name] = fn
        return fn
    return register


# --- elementwise ------------------------------------------------------------------------------

def _operands(eqn, ins) -> list:
    """The operands broadcast to the result's shape, weakly typed literals cast to the
    result's dtype."""
    out = eqn.outvars[0].aval
    dtype = next((a.aval.dtype for a in eqn.invars if not getattr(a.aval, "weak_type", False)),
                 eqn.invars[0].aval.dtype)
    values = []
    for atom, x in zip(eqn.invars, ins):
        aval = atom.aval
        if isinstance(atom, Literal) and np.dtype(aval.dtype) != np.dtype(dtype):
            aval = aval.update(dtype=np.dtype(dtype))
            x = constant(atom.val, aval)
        values.append(broadcast_to(x, aval, out.update(dtype=aval.dtype)))
    return values


def _binary(float_op, signed_op, unsigned_op=None):
    def lower(ctx, eqn, *ins):
        x, y = _operands(eqn, ins)
        dtype = eqn.invars[0].aval.dtype
        if _is_float(dtype):
            op = float_op
        else:
            op = unsigned_op if (_is_unsigned(dtype) and unsigned_op) else signed_op
        if op is None:
            raise _unsupported(ctx, f"'{eqn.primitive.name}' of {np.dtype(dtype).name}")
        return op(x, y)
    return lower


rule("add")(_binary(arith.addf, arith.addi))
rule("sub")(_binary(arith.subf, arith.subi))
rule("mul")(_binary(arith.mulf, arith.muli))
rule("div")(_binary(arith.divf, arith.divsi, arith.divui))
rule("rem")(_binary(arith.remf, arith.remsi, arith.remui))
rule("max")(_binary(arith.maximumf, arith.maxsi, arith.maxui))
rule("min")(_binary(arith.minimumf, arith.minsi, arith.minui))
rule("and")(_binary(None, arith.andi))
rule("or")(_binary(None, arith.ori))
rule("xor")(_binary(None, arith.xori))
rule("pow")(_binary(mathd.powf, None))

_FLOAT_COMPARE = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge"}
_INT_COMPARE = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge"}


@rule(*_FLOAT_COMPARE)
def _compare(ctx, eqn, *ins):
    x, y = _operands(eqn, ins)
    dtype = eqn.invars[0].aval.dtype
    name = eqn.primitive.name
    if _is_float(dtype):
        return arith.cmpf(arith.CmpFPredicate[_FLOAT_COMPARE[name].upper()], x, y)
    predicate = _INT_COMPARE[name]
    if _is_unsigned(dtype) and predicate[0] == "s":
        predicate = "u" + predicate[1:]
    return arith.cmpi(arith.CmpIPredicate[predicate], x, y)


def _unary(float_op, int_op=None):
    def lower(ctx, eqn, x):
        dtype = eqn.invars[0].aval.dtype
        op = float_op if _is_float(dtype) else int_op
        if op is None:
            raise _unsupported(ctx, f"'{eqn.primitive.name}' of {np.dtype(dtype).name}")
        return op(x)
    return lower


rule("exp")(_unary(mathd.exp))
rule("exp2")(_unary(mathd.exp2))
rule("log")(_unary(mathd.log))
rule("log1p")(_unary(mathd.log1p))
rule("tanh")(_unary(mathd.tanh))
rule("sqrt")(_unary(mathd.sqrt))
rule("rsqrt")(_unary(mathd.rsqrt))
rule("sin")(_unary(mathd.sin))
rule("cos")(_unary(mathd.cos))
rule("floor")(_unary(mathd.floor))
rule("ceil")(_unary(mathd.ceil))
rule("abs")(_unary(mathd.absf, mathd.absi))
rule("neg")(_unary(arith.negf, lambda x: arith.subi(_zero_like(x), x)))


def _splat_like(x: ir.Value, value: int) -> ir.Value:
    """A constant of `x`'s type (a vector or a scalar) holding `value` everywhere."""
    typ = x.type
    elt = typ.element_type if isinstance(typ, ir.VectorType) else typ
    attr = ir.FloatAttr.get(elt, float(value)) if isinstance(elt, ir.FloatType) else \
        ir.IntegerAttr.get(elt, value)
    if isinstance(typ, ir.VectorType):
        attr = ir.DenseElementsAttr.get_splat(typ, attr)
    return arith.ConstantOp(typ, attr).result


def _zero_like(x: ir.Value) -> ir.Value:
    return _splat_like(x, 0)


def _one_like(x: ir.Value) -> ir.Value:
    return _splat_like(x, 1)


@rule("not")
def _not(ctx, eqn, x):
    return arith.xori(x, _splat_like(x, -1))


@rule("logistic")
def _logistic(ctx, eqn, x):
    one = _one_like(x)
    return arith.divf(one, arith.addf(one, mathd.exp(arith.negf(x))))


@rule("square")
def _square(ctx, eqn, x):
    return (arith.mulf if _is_float(eqn.invars[0].aval.dtype) else arith.muli)(x, x)


@rule("integer_pow")
def _integer_pow(ctx, eqn, x):
    y = eqn.params["y"]
    float_type = _is_float(eqn.invars[0].aval.dtype)
    mul = arith.mulf if float_type else arith.muli
    if y == 0:
        return _one_like(x)
    result, base, n = None, x, abs(y)
    while n:  # square and multiply
        if n & 1:
            result = base if result is None else mul(result, base)
        n >>= 1
        if n:
            base = mul(base, base)
    if y < 0:
        if not float_type:
            raise _unsupported(ctx, "a negative integer_pow of integers")
        result = arith.divf(_one_like(x), result)
    return result


@rule("select_n")
def _select_n(ctx, eqn, pred, *cases):
    if len(cases) != 2:
        raise _unsupported(ctx, f"select_n of {len(cases)} cases (Mosaic selects between two)")
    out = eqn.outvars[0].aval
    pred_aval = eqn.invars[0].aval
    if np.dtype(pred_aval.dtype) != np.bool_:
        pred = arith.cmpi(arith.CmpIPredicate.ne, pred, _zero_like(pred))
    pred = broadcast_to(pred, pred_aval.update(dtype=np.bool_), out.update(dtype=np.bool_))
    false_case, true_case = (broadcast_to(c, a.aval, out) for c, a in zip(cases, eqn.invars[1:]))
    return arith.select(pred, true_case, false_case)


@rule("clamp")
def _clamp(ctx, eqn, lo, x, hi):
    out = eqn.outvars[0].aval
    lo, hi = (broadcast_to(v, a.aval, out) for v, a in ((lo, eqn.invars[0]), (hi, eqn.invars[2])))
    if _is_float(out.dtype):
        return arith.minimumf(arith.maximumf(x, lo), hi)
    return arith.minsi(arith.maxsi(x, lo), hi)


@rule("convert_element_type")
def _convert(ctx, eqn, x):
    src, dst = eqn.invars[0].aval, eqn.outvars[0].aval
    return convert(ctx, x, src, dst)


def convert(ctx, x: ir.Value, src, dst) -> ir.Value:
    a, b = np.dtype(src.dtype), np.dtype(dst.dtype)
    if a == b:
        return x
    out = value_type(dst)
    if b == np.bool_:
        zero = _zero_like(x)
        return (arith.cmpf(arith.CmpFPredicate.UNE, x, zero) if _is_float(a)
                else arith.cmpi(arith.CmpIPredicate.ne, x, zero))
    if a == np.bool_:
        x = arith.extui(value_type(dst.update(dtype=np.int32)), x)
        a = np.dtype(np.int32)
        if b == a:
            return x
    if _is_float(a) and _is_float(b):
        return (arith.extf if a.itemsize < b.itemsize else arith.truncf)(out, x)
    if _is_float(b):
        return (arith.uitofp if _is_unsigned(a) else arith.sitofp)(out, x)
    if _is_float(a):
        return (arith.fptoui if _is_unsigned(b) else arith.fptosi)(out, x)
    if a.itemsize == b.itemsize:  # int32 <-> uint32: the same bits, signless in MLIR
        return x
    if a.itemsize < b.itemsize:
        return (arith.extui if _is_unsigned(a) else arith.extsi)(out, x)
    return arith.trunci(out, x)


# --- shapes -------------------------------------------------------------------------------

@rule("broadcast_in_dim")
def _broadcast_in_dim(ctx, eqn, x):
    aval, out = eqn.invars[0].aval, eqn.outvars[0].aval
    shape, dims = tuple(eqn.params["shape"]), list(eqn.params["broadcast_dimensions"])
    elt, in_shape = element_type(out.dtype), tuple(aval.shape)
    if dims != sorted(dims):  # it permutes the operand's dimensions: transpose it first
        order = sorted(range(len(dims)), key=dims.__getitem__)
        in_shape, dims = tuple(in_shape[i] for i in order), sorted(dims)
        x = tpu.transpose(ir.VectorType.get(list(in_shape), elt), x, order)
    if in_shape == shape:
        return x
    if dims:  # the operand's dimensions where they go, 1 elsewhere, then stretched
        expanded = [1] * len(shape)
        for d, n in zip(dims, in_shape):
            expanded[d] = n
        if tuple(expanded) != in_shape:
            x = vector.ShapeCastOp(ir.VectorType.get(expanded, elt), x).result
        if tuple(expanded) == shape:
            return x
    return vector.BroadcastOp(ir.VectorType.get(list(shape), elt), x).result


@rule("reshape", "squeeze", "expand_dims")
def _reshape(ctx, eqn, x):
    aval, out = eqn.invars[0].aval, eqn.outvars[0].aval
    if tuple(aval.shape) == tuple(out.shape):
        return x
    if not out.shape:  # a one-element vector to its scalar
        return vector.ExtractOp(x, [], [0] * len(aval.shape)).result
    if not aval.shape:
        return vector.BroadcastOp(value_type(out), x).result
    return vector.ShapeCastOp(value_type(out), x).result


@rule("transpose")
def _transpose(ctx, eqn, x):
    return tpu.transpose(value_type(eqn.outvars[0].aval), x, list(eqn.params["permutation"]))


@rule("iota")
def _iota(ctx, eqn):
    out = eqn.outvars[0].aval
    if len(out.shape) < 2:
        raise _unsupported(ctx, "a 1-D iota (Mosaic's iota is at least 2-D; use "
                           "lax.broadcasted_iota with two dimensions)")
    return tpu.iota(value_type(out), dimensions=[eqn.params["dimension"]])


# --- reductions -----------------------------------------------------------------------------

_REDUCTIONS = {
    "reduce_sum": ("ADD", "ADD", 0.0, 0),
    "reduce_max": ("MAXIMUMF", "MAXSI", float("-inf"), np.iinfo(np.int32).min),
    "reduce_min": ("MINIMUMF", "MINSI", float("inf"), np.iinfo(np.int32).max),
}


@rule(*_REDUCTIONS)
def _reduce(ctx, eqn, x):
    aval, out = eqn.invars[0].aval, eqn.outvars[0].aval
    axes = tuple(eqn.params["axes"])
    float_kind, int_kind, float_init, int_init = _REDUCTIONS[eqn.primitive.name]
    is_float = _is_float(aval.dtype)
    if not is_float and (np.dtype(aval.dtype) == np.bool_ or _is_unsigned(aval.dtype)):
        raise _unsupported(ctx, f"'{eqn.primitive.name}' of {np.dtype(aval.dtype).name}")
    kind = vector.CombiningKind[float_kind if is_float else int_kind]
    init = float_init if is_float else int_init
    if out.shape:
        acc = constant(init, out)
        return vector.MultiDimReductionOp(kind, x, acc, list(axes)).result
    # To a scalar: Mosaic reduces vectors to vectors, so through a leading unit
    # dimension, then the one element is extracted.
    elt = element_type(aval.dtype)
    x = vector.ShapeCastOp(ir.VectorType.get([1, *aval.shape], elt), x).result
    acc = constant(init, out.update(shape=(1,)))
    x = vector.MultiDimReductionOp(kind, x, acc, [a + 1 for a in axes]).result
    return vector.ExtractOp(x, [], [0]).result


# --- matmul -------------------------------------------------------------------------------

@rule("dot_general")
def _dot_general(ctx, eqn, lhs, rhs):
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    la, ra, out = eqn.invars[0].aval, eqn.invars[1].aval, eqn.outvars[0].aval
    if lb or rb or len(la.shape) != 2 or len(ra.shape) != 2:
        raise _unsupported(ctx, "dot_general other than a 2-D matrix product (batch "
                           "dimensions, vectors)")
    lnc = [d for d in range(2) if d not in lc]
    rnc = [d for d in range(2) if d not in rc]
    order = [x for d in lnc for x in (0, d)] + [x for d in rnc for x in (1, d)]
    dims = ir.Attribute.parse(
        f"#tpu.dot_dimension_numbers<{list(lc)}, {list(rc)}, {lnc}, {rnc}, {order}, [], []>")
    acc = constant(0, out)
    return tpu.matmul(value_type(out), lhs, rhs, acc, dimension_numbers=dims,
                      transpose_lhs_hint=False)


# --- references -------------------------------------------------------------------------------

def _indexer(ctx, ref: Ref, spec: tuple, dynamic: Sequence[ir.Value]):
    """(starts, sizes, strides, kept dims) of `ref[index]` over the memref's dimensions
    (squeezed ones included, at 0); a start is an int or an i32 value, and so is a
    size (a `pl.ds` of traced size, which only copies take)."""
    kernel_rank = len(ref.shape) - len(ref.squeezed)
    entries = list(spec)
    if Ellipsis in entries:
        at = entries.index(Ellipsis)
        entries[at:at + 1] = [("slice", None, None, None)] * (kernel_rank - len(entries) + 1)
    entries += [("slice", None, None, None)] * (kernel_rank - len(entries))
    kernel_dims = [d for d in range(len(ref.shape)) if d not in ref.squeezed]
    per_dim = {d: e for d, e in zip(kernel_dims, entries)}
    operands = iter(dynamic)
    starts, sizes, strides, kept = [], [], [], []
    for d, n in enumerate(ref.shape):
        entry = per_dim.get(d)
        if entry is None or entry == "dynamic" or entry[0] == "int":
            # a squeezed block dimension, or an integer index
            starts.append(0 if entry is None else next(operands) if entry == "dynamic"
                          else entry[1] % n)
            sizes.append(1)
            strides.append(1)
            kept.append(False)
        elif entry[0] == "dslice":
            starts.append(next(operands) if entry[1] is None else entry[1])
            sizes.append(next(operands) if entry[2] is None else entry[2])
            strides.append(entry[3])
            kept.append(True)
        else:
            start, stop, step = slice(*entry[1:]).indices(n)
            if step <= 0:
                raise _unsupported(ctx, "a reference slice with a negative step")
            starts.append(start)
            sizes.append(len(range(start, stop, step)))
            strides.append(step)
            kept.append(True)
    return starts, sizes, strides, kept


def _index_values(starts) -> list[ir.Value]:
    return [index_constant(s) if isinstance(s, int) else as_index(s) for s in starts]


def _i32_values(starts) -> list[ir.Value]:
    i32 = ir.IntegerType.get_signless(32)
    return [arith.ConstantOp(i32, ir.IntegerAttr.get(i32, s)).result if isinstance(s, int)
            else s for s in starts]


@rule("get")
def _get(ctx, eqn, ref, *dynamic):
    out = eqn.outvars[0].aval
    starts, sizes, strides, _ = _indexer(ctx, ref, eqn.params["spec"], dynamic)
    return load(ctx, ref, starts, sizes, strides, out)


def load(ctx, ref: Ref, starts, sizes, strides, out) -> ir.Value:
    starts = _index_values(starts)
    if ref.memory_space == "smem":
        if out.shape:
            raise _unsupported(ctx, f"loading a {out.str_short()} block from SMEM (SMEM holds "
                               "scalars: index every dimension)")
        return memref.LoadOp(ref.value, starts).result
    if ref.memory_space != "vmem":
        raise _unsupported(ctx, f"reading a reference in memory space {ref.memory_space} "
                           "(copy it to VMEM with pltpu.make_async_copy)")
    if not out.shape:
        raise _unsupported(ctx, "loading a scalar from VMEM (load a block; scalars live in "
                           "SMEM)")
    full = ir.VectorType.get(sizes, element_type(out.dtype))
    if any(s != 1 for s in strides):
        x = tpu.StridedLoadOp(full, ref.value, starts, strides).result
    else:
        x = vector.LoadOp(full, ref.value, starts).result
    if tuple(sizes) != tuple(out.shape):
        x = vector.ShapeCastOp(value_type(out), x).result
    return x


def store(ctx, ref: Ref, value: ir.Value, aval, starts, sizes, strides, mask=None) -> None:
    starts = _index_values(starts)
    if ref.memory_space == "smem":
        if aval.shape:
            raise _unsupported(ctx, f"storing a {aval.str_short()} block to SMEM (SMEM holds "
                               "scalars: index every dimension)")
        memref.StoreOp(value, ref.value, starts)
        return
    if ref.memory_space != "vmem":
        raise _unsupported(ctx, f"writing a reference in memory space {ref.memory_space}")
    if not aval.shape:
        raise _unsupported(ctx, "storing a scalar to VMEM")
    if tuple(sizes) != tuple(aval.shape):
        value = vector.ShapeCastOp(ir.VectorType.get(sizes, element_type(aval.dtype)),
                                   value).result
    if any(s != 1 for s in strides):
        if mask is not None:
            raise _unsupported(ctx, "a masked strided store")
        tpu.StridedStoreOp(value, ref.value, starts, strides)
    else:
        tpu.vector_store(value, ref.value, starts, strides=[], mask=mask)


@rule("swap")
def _swap(ctx, eqn, ref, value, *dynamic):
    aval = eqn.invars[1].aval
    starts, sizes, strides, _ = _indexer(ctx, ref, eqn.params["spec"], dynamic)
    old = None  # the old value is loaded only if the kernel reads it (`x_ref[...] = v` never)
    if id(eqn.outvars[0]) in ctx.used:
        old = load(ctx, ref, starts, sizes, strides, aval)
    store(ctx, ref, value, aval, starts, sizes, strides)
    return old


@rule("addupdate")
def _addupdate(ctx, eqn, ref, value, *dynamic):
    aval = eqn.invars[1].aval
    starts, sizes, strides, _ = _indexer(ctx, ref, eqn.params["spec"], dynamic)
    old = load(ctx, ref, starts, sizes, strides, aval)
    new = (arith.addf if _is_float(aval.dtype) else arith.addi)(old, value)
    store(ctx, ref, new, aval, starts, sizes, strides)
    return []


# --- scoped buffers ---------------------------------------------------------------------------

@rule("run_scoped")
def _run_scoped(ctx, eqn, *operands):
    """The function's equations in a `tpu.region` that allocates its buffers (a
    `memref.alloca` each, a `tpu.sem_alloc` for semaphores), freed where it ends."""
    p = eqn.params
    if p["collective_axes"]:
        raise _unsupported(ctx, "run_scoped over collective_axes")
    region = tpu.RegionOp(_result_types(v.aval for v in eqn.outvars))
    with ir.InsertionPoint(region.body):
        scoped = [_allocate(ctx, t) for t in p["types"]]
        jaxpr, consts = _closed(p["jaxpr"])
        tpu.yield_(lower_jaxpr(ctx, jaxpr, consts, [*operands, *scoped]))
    return list(region.results)


def _allocate(ctx, t) -> Ref:
    space = memory_space_name(t.memory_space)
    typ = memref_type(t.shape, t.dtype, space)
    if space in ("semaphore", "dma_semaphore"):
        return Ref(tpu.sem_alloc(typ), (), space)
    if space not in ("vmem", "smem"):
        raise _unsupported(ctx, f"a run_scoped buffer in memory space {space} (allocate it "
                           "in VMEM or SMEM)")
    return Ref(memref.alloca(typ, [], []), (), space)


# --- control flow -----------------------------------------------------------------------------

def _result_types(avals) -> list[ir.Type]:
    return [value_type(a) for a in avals]


def _closed(j) -> tuple[Jaxpr, Sequence[Any]]:
    return (j.jaxpr, j.consts) if isinstance(j, ClosedJaxpr) else (j, ())


@rule("cond")
def _cond(ctx, eqn, index, *ops):
    branches = eqn.params["branches"]
    outs = [v.aval for v in eqn.outvars]
    return _lower_branches(ctx, index, eqn.invars[0].aval, list(branches), ops, outs)


def _lower_branches(ctx, index, index_aval, branches, ops, out_avals) -> list:
    """`branches[index](*ops)` as nested `scf.if`s (clamped: the last for any larger
    index, as `lax.switch` does)."""
    if len(branches) == 1:
        jaxpr, consts = _closed(branches[0])
        return lower_jaxpr(ctx, jaxpr, consts, ops)
    zero = constant(0, index_aval)
    if np.dtype(index_aval.dtype) == np.bool_:
        pred = index
    else:
        pred = arith.cmpi(arith.CmpIPredicate.ne, index, zero)
    op = scf.IfOp(pred, _result_types(out_avals), has_else=True)
    with ir.InsertionPoint(op.then_block):
        if len(branches) == 2:
            jaxpr, consts = _closed(branches[1])
            results = lower_jaxpr(ctx, jaxpr, consts, ops)
        else:
            one = constant(1, index_aval)
            results = _lower_branches(ctx, arith.subi(index, one), index_aval, branches[1:],
                                      ops, out_avals)
        scf.YieldOp(results)
    with ir.InsertionPoint(op.else_block):
        jaxpr, consts = _closed(branches[0])
        scf.YieldOp(lower_jaxpr(ctx, jaxpr, consts, ops))
    return list(op.results)


@rule("scan")
def _scan(ctx, eqn, *ins):
    p = eqn.params
    n_consts, n_carry, length = p["num_consts"], p["num_carry"], p["length"]
    jaxpr, consts = _closed(p["jaxpr"])
    if len(ins) != n_consts + n_carry or len(eqn.outvars) != n_carry:
        raise _unsupported(ctx, "a scan over arrays (`xs` or stacked outputs; a fori_loop "
                           "is supported)")
    loop_consts, carry = ins[:n_consts], ins[n_consts:]
    i32 = ir.IntegerType.get_signless(32)
    fori = _counts_steps(jaxpr, n_consts)
    if fori:  # a fori_loop: its counter is the loop's induction variable
        lo = carry[0]
        hi = arith.addi(lo, arith.ConstantOp(i32, ir.IntegerAttr.get(i32, length)).result)
        carry = carry[1:]
    else:
        lo = arith.ConstantOp(i32, ir.IntegerAttr.get(i32, 0)).result
        hi = arith.ConstantOp(i32, ir.IntegerAttr.get(i32, length)).result
    step = arith.ConstantOp(i32, ir.IntegerAttr.get(i32, 1)).result
    loop = scf.ForOp(lo, hi, step, list(carry))
    with ir.InsertionPoint(loop.body):
        counter = [loop.induction_variable] if fori else []
        results = lower_jaxpr(ctx, jaxpr, consts, [*loop_consts, *counter,
                                                   *loop.inner_iter_args])
        scf.YieldOp(results[len(counter):])
    return [hi, *loop.results] if counter else list(loop.results)


def _counts_steps(jaxpr: Jaxpr, n_consts: int) -> bool:
    """Whether the scan body's first carry is an int32 counter it adds one to (the
    shape of a fori_loop), so that the loop's induction variable can be it."""
    if len(jaxpr.invars) <= n_consts:
        return False
    counter, first_out = jaxpr.invars[n_consts], jaxpr.outvars[0]
    if np.dtype(counter.aval.dtype) != np.int32 or counter.aval.shape:
        return False
    for eqn in jaxpr.eqns:
        if first_out in eqn.outvars:
            a, b = (eqn.invars + [None, None])[:2]
            return (eqn.primitive.name == "add" and a is counter and isinstance(b, Literal)
                    and b.val == 1)
    return False


@rule("while")
def _while(ctx, eqn, *ins):
    p = eqn.params
    cj, cc = _closed(p["cond_jaxpr"])
    bj, bc = _closed(p["body_jaxpr"])
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    cond_consts, body_consts, carry = ins[:nc], ins[nc:nc + nb], ins[nc + nb:]
    types = [c.type for c in carry]
    op = scf.WhileOp(types, list(carry))
    before = op.before.blocks.append(*types)
    with ir.InsertionPoint(before):
        (pred,) = lower_jaxpr(ctx, cj, cc, [*cond_consts, *before.arguments])
        scf.ConditionOp(pred, list(before.arguments))
    after = op.after.blocks.append(*types)
    with ir.InsertionPoint(after):
        scf.YieldOp(lower_jaxpr(ctx, bj, bc, [*body_consts, *after.arguments]))
    return list(op.results)


_CALLS = {"jit": "jaxpr", "pjit": "jaxpr", "closed_call": "call_jaxpr",
          "custom_jvp_call": "call_jaxpr", "custom_vjp_call": "call_jaxpr",
          "checkpoint": "jaxpr"}


@rule(*_CALLS)
def _call(ctx, eqn, *ins):
    called = eqn.params.get(_CALLS[eqn.primitive.name])
    if called is None:
        raise _unsupported(ctx, f"'{eqn.primitive.name}' without its Jaxpr")
    jaxpr, consts = _closed(called)
    n = len(jaxpr.invars)
    return lower_jaxpr(ctx, jaxpr, consts, ins[len(ins) - n:])


@rule("multiple_of")
def _multiple_of(ctx, eqn, x):
    for value in eqn.params["values"]:
        x = tpu.assume_multiple(x, value)
    return x


@rule("copy", "optimization_barrier")
def _identity(ctx, eqn, *xs):
    return xs if eqn.primitive.multiple_results else xs[0]


# --- asynchronous copies ----------------------------------------------------------------------

def _memref_view(ctx, ref: Ref, spec: tuple, dynamic) -> ir.Value:
    """The memref of `ref[index]` (`tpu.memref_slice`, then `tpu.memref_squeeze` of the
    integer-indexed and squeezed dimensions): what a DMA reads, writes or signals."""
    starts, sizes, strides, kept = _indexer(ctx, ref, spec, dynamic)
    if any(s != 1 for s in strides):
        raise _unsupported(ctx, "a strided slice of a reference in an async copy")
    typ = ir.MemRefType(ref.value.type)
    value = ref.value
    traced = [s for s in sizes if isinstance(s, ir.Value)]
    shape = [ir.ShapedType.get_dynamic_size() if isinstance(s, ir.Value) else s for s in sizes]
    if shape != list(typ.shape) or any(isinstance(s, ir.Value) or s for s in starts):
        sliced = ir.MemRefType.get(shape, typ.element_type, memory_space=typ.memory_space)
        value = tpu.memref_slice(sliced, value, _i32_values(starts), traced)
    if not all(kept):
        squeezed = ir.MemRefType.get([n for n, k in zip(shape, kept) if k], typ.element_type,
                                     memory_space=typ.memory_space)
        value = tpu.memref_squeeze(squeezed, value)
    return value


def _dma_operands(ctx, eqn, ins) -> list[ir.Value]:
    refs_, rest = ins[:3], list(ins[3:])
    views = []
    for ref, spec, n in zip(refs_, eqn.params["specs"], eqn.params["counts"]):
        views.append(_memref_view(ctx, ref, spec, rest[:n]))
        rest = rest[n:]
    return views


@rule("dma_start")
def _dma_start(ctx, eqn, *ins):
    src, dst, sem = _dma_operands(ctx, eqn, ins)
    tpu.enqueue_dma(source=src, target=dst, target_semaphore=sem)
    return []


@rule("dma_wait")
def _dma_wait(ctx, eqn, *ins):
    src, dst, sem = _dma_operands(ctx, eqn, ins)
    tpu.wait_dma2(sem, src, dst)
    return []


@rule("masked_store")
def _masked_store(ctx, eqn, ref, value, mask, *dynamic):
    aval, mask_aval = eqn.invars[1].aval, eqn.invars[2].aval
    if np.dtype(aval.dtype).itemsize != 4:
        raise _unsupported(ctx, f"a masked store of {np.dtype(aval.dtype).name} (Mosaic masks "
                           "32-bit stores)")
    starts, sizes, strides, _ = _indexer(ctx, ref, eqn.params["spec"], dynamic)
    if tuple(sizes) != tuple(mask_aval.shape):
        mask = vector.ShapeCastOp(ir.VectorType.get(sizes, element_type(np.bool_)), mask).result
    store(ctx, ref, value, aval, starts, sizes, strides, mask=mask)
    return []


# --- rotations, concatenation, slices ----------------------------------------------------------

@rule("roll")
def _roll(ctx, eqn, x, shift):
    p = eqn.params
    return tpu.dynamic_rotate(x, shift, p["axis"], stride=p["stride"],
                              stride_dimension=p["stride_axis"])


@rule("concatenate")
def _concatenate(ctx, eqn, *xs):
    return tpu.concatenate(list(xs), eqn.params["dimension"])


@rule("slice")
def _slice(ctx, eqn, x):
    p = eqn.params
    starts, limits = p["start_indices"], p["limit_indices"]
    strides = p["strides"] or (1,) * len(starts)
    sizes = [len(range(s, e, st)) for s, e, st in zip(starts, limits, strides)]
    return vector.extract_strided_slice(value_type(eqn.outvars[0].aval), x, list(starts),
                                        sizes, list(strides))

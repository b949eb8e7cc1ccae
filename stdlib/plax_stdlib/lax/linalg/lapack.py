"""Calling the LAPACK kernels that jaxlib ships for its CPU client.

jaxlib wraps LAPACK routines as XLA FFI handlers (`jaxlib.lapack.registrations()`):
custom-call targets named `lapack_<s|d|c|z><routine>_ffi`, one per dtype. plax
registers them with XLA's FFI registry the first time a lowering rule asks for one
(registering the same handler again, as JAX does when both are imported, is
allowed by XLA), and emits `stablehlo.custom_call` ops with the typed-FFI ABI
(`api_version = 4`): attributes go in a dictionary `backend_config`, and each
operand and result states its layout, so matrices reach LAPACK in column-major
(Fortran) order with no transposes in the program.

A kernel reports failure per matrix through an `info` result; `nan_where` turns
the matrices of a batch whose `info` is bad into NaNs, as JAX does.
"""
from __future__ import annotations

import functools
import threading
from typing import Sequence

import numpy as np

from plax.extend.core import ShapedArray
from plax.extend.mlir import hlo, ir, mu

_registration_lock = threading.Lock()
LAPACK_DTYPES = frozenset(map(np.dtype, (np.float32, np.float64, np.complex64, np.complex128)))


@functools.cache
def _registered_targets() -> frozenset[str]:
    """Register every LAPACK target of jaxlib's CPU client with XLA, once."""
    from jaxlib import lapack, xla_client
    with _registration_lock:
        names = []
        for name, capsule, api_version in lapack.registrations()["cpu"]:
            xla_client.register_custom_call_target(name, capsule, platform="cpu",
                                                   api_version=api_version)
            names.append(name)
    return frozenset(names)


def ensure_targets() -> frozenset[str]:
    """Load the LAPACK library and register every LAPACK target, for modules lowered
    elsewhere (exported ones) that call them; their names."""
    from jaxlib import lapack
    lapack.prepare_lapack_call("potrf_ffi", np.float32)  # loads the library
    return _registered_targets()


def target(routine: str, dtype) -> str:
    """The registered target computing LAPACK's `routine` (`potrf`, `syevd`...) on
    `dtype`; loads the LAPACK library behind jaxlib's kernels on first use."""
    from jaxlib import lapack
    dtype = np.dtype(dtype)
    if dtype not in LAPACK_DTYPES:
        raise NotImplementedError(f"LAPACK routine {routine} has no kernel for dtype {dtype}")
    name = lapack.prepare_lapack_call(f"{routine}_ffi", dtype)
    if name not in _registered_targets():
        raise NotImplementedError(f"jaxlib's CPU client has no LAPACK target {name!r}")
    return name


# --- attributes -----------------------------------------------------------------------

def char(c: str) -> ir.Attribute:
    """A LAPACK character option ('L', 'U', 'N', 'T', 'C', 'V'...) as the kernels take it."""
    return ir.IntegerAttr.get(ir.IntegerType.get_unsigned(8), ord(c))


def enum(value) -> ir.Attribute:
    """One of jaxlib's LAPACK option enums (`lapack.eig.ComputationMode`...)."""
    return ir.IntegerAttr.get(ir.IntegerType.get_unsigned(8), int(value.value))


def int32(value: int) -> ir.Attribute:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(32), int(value))


# --- layouts and the call --------------------------------------------------------------

def _layout(dims: Sequence[int]) -> ir.Attribute:
    return ir.DenseIntElementsAttr.get(np.asarray(dims, np.int64), type=ir.IndexType.get())


def _minor_to_major(aval: ShapedArray, column_major: bool) -> tuple[int, ...]:
    """Row-major for vectors and info arrays; a batch of column-major matrices for
    the matrix operands (the last two dimensions swapped in minor-to-major order)."""
    n = aval.ndim
    if column_major and n >= 2:
        return (n - 2, n - 1, *range(n - 3, -1, -1))
    return tuple(range(n - 1, -1, -1))


def call(name: str, operands: Sequence[ir.Value], avals_in: Sequence[ShapedArray],
         avals_out: Sequence[ShapedArray], *, aliases: dict[int, int] | None = None,
         matrix_rank: int | None = None, **attributes: ir.Attribute) -> list[ir.Value]:
    """Emit a typed-FFI custom call to `name`; its results.

    Operands and results whose rank is `matrix_rank` (by default the largest
    operand rank) are batches of column-major matrices. `aliases` maps operand
    indices to the result each one's buffer is reused for.

    Results with symbolic sizes (a shape-polymorphic export) have dynamic types:
    their shapes, computed from the dimension variables, follow the operands as
    `indices_of_shape_operands`, which is what shape refinement reads to make the
    types static once the sizes are known (and then drops).
    """
    rank = max(a.ndim for a in avals_in) if matrix_rank is None else matrix_rank
    operand_layouts = [_layout(_minor_to_major(a, a.ndim == rank)) for a in avals_in]
    operands = list(operands)
    i32 = ir.IntegerType.get_signless(32)
    attrs = {}
    if not all(mu.is_static(a.shape) for a in avals_out):
        first = len(operands)
        operands += [mu.shape_tensor(a.shape) for a in avals_out]
        operand_layouts += [_layout((0,))] * len(avals_out)
        attrs["indices_of_shape_operands"] = ir.DenseIntElementsAttr.get(
            np.arange(first, len(operands), dtype=np.int64))
    attrs.update({
        "call_target_name": ir.StringAttr.get(name),
        "has_side_effect": ir.BoolAttr.get(False),
        "api_version": ir.IntegerAttr.get(i32, 4),
        "backend_config": ir.DictAttr.get(attributes),
        "called_computations": ir.ArrayAttr.get([]),
        "operand_layouts": ir.ArrayAttr.get(operand_layouts),
        "result_layouts": ir.ArrayAttr.get(
            [_layout(_minor_to_major(a, a.ndim == rank)) for a in avals_out]),
    })
    if aliases:
        several = len(avals_out) > 1
        attrs["output_operand_aliases"] = ir.ArrayAttr.get([
            hlo.OutputOperandAlias.get(output_tuple_indices=[out] if several else [],
                                       operand_index=operand, operand_tuple_indices=[])
            for operand, out in aliases.items()])
    op = hlo.CustomCallOp.build_generic(results=mu.ir_types(avals_out), operands=operands,
                                        attributes=attrs)
    return list(op.results)


def info_aval(batch: tuple[int, ...]) -> ShapedArray:
    """The per-matrix status LAPACK kernels return."""
    return ShapedArray(batch, np.dtype(np.int32))


def succeeded(info: ir.Value, batch: tuple[int, ...], allow_positive: bool = False) -> ir.Value:
    """Booleans of shape `batch`: where `info` is 0 (or, with `allow_positive`, >= 0:
    LU's positive info only reports an exactly singular U)."""
    aval = info_aval(batch)
    return mu.compare(info, mu.splat(0, aval), "GE" if allow_positive else "EQ", aval.dtype)


def nan_where(ok: ir.Value, x: ir.Value, aval: ShapedArray, batch: tuple[int, ...]) -> ir.Value:
    """`x` (of `aval`, leading dims `batch`) with the matrices where `ok` is false
    replaced by NaNs."""
    mask = mu.broadcast_in_dim(ok, aval.shape, range(len(batch)))
    nan = np.array(complex(np.nan, np.nan) if np.dtype(aval.dtype).kind == "c" else np.nan,
                   aval.dtype)
    return hlo.select(mask, x, mu.splat(nan, aval))

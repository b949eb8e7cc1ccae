"""Dot algorithms: a `precision=` that names how a matmul computes (the types its
operands are rounded to, its accumulation type, how many passes), lowered to
StableHLO's `#stablehlo.dot_algorithm` attribute of `dot_general`.

`DotAlgorithm` spells the algorithm out; `DotAlgorithmPreset` names the known
ones. With a preset, operands whose dtype the preset does not take are converted to
its first storage type, and the product is computed in the preset's accumulation
type and converted to the result's dtype. Which algorithms run is up to the
backend: on CPU only a few presets are accepted (the others raise at lowering).
"""
from __future__ import annotations

import enum
from typing import NamedTuple

import numpy as np

from plax.extend import dtypes
from plax.extend.mlir import hlo, ir, mu


class DotAlgorithm(NamedTuple):
    """An explicit algorithm for a matrix product, passed as `precision=` to
    `dot_general` (or `jnp.matmul`...); `DotAlgorithmPreset` names the common ones.

    A backend implements only some algorithms and rejects the others with a
    ValueError when the product is lowered (the CPU backend rejects every explicit
    `DotAlgorithm`).

    Attributes:
        lhs_precision_type: the dtype the left operand is rounded to.
        rhs_precision_type: the dtype the right operand is rounded to.
        accumulation_type: the dtype the sums are kept in.
        lhs_component_count: into how many components of `lhs_precision_type`
            the left operand is split (3 for bf16x3 algorithms).
        rhs_component_count: the same for the right operand.
        num_primitive_operations: how many products of components are summed.
        allow_imprecise_accumulation: whether the backend may accumulate in a
            lower precision than `accumulation_type`.
    """
    lhs_precision_type: object
    rhs_precision_type: object
    accumulation_type: object
    lhs_component_count: int = 1
    rhs_component_count: int = 1
    num_primitive_operations: int = 1
    allow_imprecise_accumulation: bool = False

    def hlo_attribute(self, lhs_dtype, rhs_dtype):
        """The `#stablehlo.dot_algorithm` of this algorithm (the operands' dtypes do
        not matter: the types are spelled out)."""
        del lhs_dtype, rhs_dtype
        element = lambda t: mu.ir_element_type(dtypes.dtype(t))
        return hlo.DotAlgorithm.get(
            element(self.lhs_precision_type), element(self.rhs_precision_type),
            element(self.accumulation_type), self.lhs_component_count,
            self.rhs_component_count, self.num_primitive_operations,
            self.allow_imprecise_accumulation)


FLOAT8 = tuple(np.dtype(t) for t in (
    dtypes.float8_e4m3b11fnuz, dtypes.float8_e4m3fn, dtypes.float8_e4m3fnuz,
    dtypes.float8_e5m2, dtypes.float8_e5m2fnuz, dtypes.float8_e3m4, dtypes.float8_e4m3,
    dtypes.float8_e8m0fnu))


class DotAlgorithmPreset(enum.Enum):
    """Names an exact algorithm for a matrix product: the types the operands are
    rounded to, the accumulation type, and the number of passes. Pass it as
    `precision=` to `dot_general` (or `jnp.matmul`...).

    Names read `LHS_RHS_ACCUMULATION[_Xpasses]`: `BF16_BF16_F32_X3` rounds each
    operand to bfloat16 (in three components) and accumulates in float32.
    `DEFAULT` leaves the choice to the backend; the `ANY_F8` presets take any
    float8 operands. A backend rejects the presets it does not implement.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> a = jnp.array([[1.0, 2.0]])
        >>> lax.dot(a, a.T, precision=lax.DotAlgorithmPreset.F32_F32_F32)
        Array([[5.]], dtype=float32)
    """
    DEFAULT = enum.auto()
    ANY_F8_ANY_F8_F32 = enum.auto()
    ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
    ANY_F8_ANY_F8_ANY = enum.auto()
    ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
    F16_F16_F16 = enum.auto()
    F16_F16_F32 = enum.auto()
    BF16_BF16_BF16 = enum.auto()
    BF16_BF16_F32 = enum.auto()
    BF16_BF16_F32_X3 = enum.auto()
    BF16_BF16_F32_X6 = enum.auto()
    BF16_BF16_F32_X9 = enum.auto()
    TF32_TF32_F32 = enum.auto()
    TF32_TF32_F32_X3 = enum.auto()
    F32_F32_F32 = enum.auto()
    F64_F64_F64 = enum.auto()

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    def __str__(self) -> str:
        return self.name

    @property
    def _is_any_f8(self) -> bool:
        return self.name.startswith("ANY_F8")

    @property
    def supported_lhs_types(self) -> tuple | None:
        """The operand dtypes taken as they are (others are converted to the first);
        None: any."""
        if self is DotAlgorithmPreset.DEFAULT or self._is_any_f8:
            return None
        if self.name.startswith("F16"):
            return (np.float16,)
        if self in (DotAlgorithmPreset.BF16_BF16_BF16, DotAlgorithmPreset.BF16_BF16_F32):
            return (dtypes.bfloat16, np.float32)
        if self is DotAlgorithmPreset.F64_F64_F64:
            return (np.float64,)
        return (np.float32,)  # the multi-pass bf16 and tf32 ones split f32 operands

    @property
    def supported_rhs_types(self) -> tuple | None:
        return self.supported_lhs_types

    @property
    def accumulation_type(self):
        """The dtype the products are summed in; None: the result's."""
        if self is DotAlgorithmPreset.DEFAULT:
            return None
        parts = self.name.split("_")
        accumulation = parts[4] if self._is_any_f8 else parts[2]  # ANY: the result's
        return {"F16": np.float16, "BF16": dtypes.bfloat16, "F32": np.float32,
                "F64": np.float64}.get(accumulation)

    def supported_output_types(self, lhs_dtype, rhs_dtype) -> tuple | None:
        """The result dtypes the product is computed in directly (others are
        converted from the first); None: any."""
        if self in (DotAlgorithmPreset.ANY_F8_ANY_F8_F32,
                    DotAlgorithmPreset.ANY_F8_ANY_F8_F32_FAST_ACCUM):
            return (np.float32, np.float16, dtypes.bfloat16, dtypes.float8_e4m3fn,
                    dtypes.float8_e5m2, dtypes.float8_e5m2fnuz, dtypes.float8_e4m3fnuz,
                    dtypes.float8_e4m3b11fnuz)
        narrow = {DotAlgorithmPreset.F16_F16_F32: np.float16,
                  DotAlgorithmPreset.BF16_BF16_F32: dtypes.bfloat16}.get(self)
        if narrow is not None:  # the narrow result only from narrow operands
            both_narrow = dtypes.promote_types(lhs_dtype, rhs_dtype) == np.dtype(narrow)
            return (np.float32, narrow) if both_narrow else (np.float32,)
        return None if self.accumulation_type is None else (self.accumulation_type,)

    def hlo_attribute(self, lhs_dtype, rhs_dtype):
        """The `#stablehlo.dot_algorithm` of this preset for operands of these dtypes
        (None for DEFAULT)."""
        if self is DotAlgorithmPreset.DEFAULT:
            return None
        if self._is_any_f8:
            if np.dtype(lhs_dtype) not in FLOAT8 or np.dtype(rhs_dtype) not in FLOAT8:
                raise ValueError(f"The dot algorithm '{self}' requires both inputs to have "
                                 f"float8 dtypes. Got {np.dtype(lhs_dtype)} and "
                                 f"{np.dtype(rhs_dtype)} instead.")
            fast = self is DotAlgorithmPreset.ANY_F8_ANY_F8_F32_FAST_ACCUM
            return hlo.DotAlgorithm.get(
                mu.ir_element_type(np.dtype(lhs_dtype)), mu.ir_element_type(np.dtype(rhs_dtype)),
                ir.F32Type.get(), 1, 1, 1, fast)
        inputs, _, accumulation, *passes = self.name.split("_")
        element = {"F16": ir.F16Type.get, "BF16": ir.BF16Type.get, "F32": ir.F32Type.get,
                   "F64": ir.F64Type.get, "TF32": ir.FloatTF32Type.get}
        operations = int(passes[0][1:]) if passes else 1
        return hlo.DotAlgorithm.get(element[inputs](), element[inputs](),
                                    element[accumulation](), 1, 1, operations, False)


ALGORITHMS = (DotAlgorithm, DotAlgorithmPreset)

# What XLA's CPU backend compiles (it ignores the attribute otherwise, so lowering
# refuses the rest rather than compute something else).
CPU_PRESETS = frozenset({
    DotAlgorithmPreset.DEFAULT, DotAlgorithmPreset.F16_F16_F16,
    DotAlgorithmPreset.F32_F32_F32, DotAlgorithmPreset.F64_F64_F64,
    DotAlgorithmPreset.BF16_BF16_F32, DotAlgorithmPreset.BF16_BF16_F32_X3,
    DotAlgorithmPreset.BF16_BF16_F32_X6})


def compute_types(algorithm, lhs_dtype, rhs_dtype, out_dtype) -> tuple:
    """The dtypes an algorithm computes in for these operands and result: (lhs, rhs,
    accumulation); an accumulation of None means the result's dtype."""
    if isinstance(algorithm, DotAlgorithm):
        return tuple(dtypes.dtype(t) for t in (algorithm.lhs_precision_type,
                                               algorithm.rhs_precision_type,
                                               algorithm.accumulation_type))

    def taken(dtype, supported):
        if supported is None or np.dtype(dtype) in [np.dtype(t) for t in supported]:
            return np.dtype(dtype)
        return np.dtype(supported[0])

    lhs = taken(lhs_dtype, algorithm.supported_lhs_types)
    rhs = taken(rhs_dtype, algorithm.supported_rhs_types)
    return lhs, rhs, taken(out_dtype, algorithm.supported_output_types(lhs, rhs))

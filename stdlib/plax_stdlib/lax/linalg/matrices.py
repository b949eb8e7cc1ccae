"""What the linear-algebra primitives share: checks of matrix operands, the batching
rule of primitives that take leading batch dimensions, lowering a rule written as
a traced function, and small matrix operations (transposes, triangles, batched
products) their derivative rules compute with.

Every linalg primitive accepts operands `[..., m, n]`: any leading dimensions are
a batch, shared by all its operands.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from plax.extend.ad import PrimitiveRule
from plax.extend.batching import bdim_at_front
from plax.extend.constructors import check_dtype, describe, kind_of
from plax.extend.core import ShapedArray, get_aval, min_dim, stage_flat
from plax.extend.mlir import hlo, ir, mu
from plax_stdlib.lax.comparison import eq, ge, select
from plax_stdlib.lax.conversion import convert_element_type
from plax_stdlib.lax.creation import broadcasted_iota
from plax_stdlib.lax.dot_general import Precision, dot_general
from plax_stdlib.lax.elementwise import add, conj, div, mul, real
from plax_stdlib.lax.gathers import GatherDimensionNumbers, GatherScatterMode, gather
from plax_stdlib.lax.reductions import reduce_sum
from plax_stdlib.lax.shape_ops import broadcast_in_dim, expand_dims, transpose
from plax_stdlib.lax.slicing import slice as slice_

# --- checks ------------------------------------------------------------------------------

# The dtypes LAPACK (and cuSOLVER) compute in; others are a TypeError when traced rather
# than a missing kernel when lowered.
LAPACK_KINDS = frozenset({"float32", "float64", "complex64", "complex128"})


def check_matrix(name: str, aval: ShapedArray, what: str = "operand", *, square: bool = False,
                 kinds: frozenset = LAPACK_KINDS) -> tuple[int, ...]:
    """Check a `[..., m, n]` operand (square if asked); its batch dimensions.

    A rank below 2 is a TypeError (as for JAX's linalg primitives); a non-square
    matrix where one is needed, a ValueError naming the shape."""
    check_dtype(name, aval, kinds, what)
    if aval.ndim < 2:
        raise TypeError(f"{name} requires {what} of rank at least 2 (a batch of matrices "
                        f"[..., m, n]), got {describe(aval)}")
    if square and aval.shape[-1] != aval.shape[-2]:
        raise ValueError(f"{name} requires square matrices [..., n, n], got {what} of shape "
                         f"{aval.shape}")
    return aval.shape[:-2]


def check_batch(name: str, batch: tuple[int, ...], *others: tuple[str, ShapedArray, int]) -> None:
    """Operands of rank `core + len(batch)` whose leading dimensions are `batch`."""
    for what, aval, core in others:
        if aval.shape[:aval.ndim - core] != batch or aval.ndim - core != len(batch):
            raise TypeError(f"{name} requires {what} to have batch dimensions {batch} and "
                            f"{core} more, got {describe(aval)}")


def is_complex(x) -> bool:
    return kind_of(get_aval(x).dtype) == "complex"


def real_dtype_of(dtype) -> np.dtype:
    dt = np.dtype(dtype)
    return np.dtype(np.zeros((), dt).real.dtype)


# --- rules shared by the primitives ----------------------------------------------------------

class leading_batch(PrimitiveRule):
    """Batching of a primitive whose operands all carry the same leading batch
    dimensions: the vmapped dimension becomes the first of them (operands without
    it are broadcast), and so it is the first of every result."""

    def for_primitive(self, prim) -> Callable:
        def rule(axis_data, args, dims, **params):
            out = prim.bind(*(bdim_at_front(x, d, axis_data.size) for x, d in zip(args, dims)),
                            **params)
            return out, ([0] * len(out) if prim.multiple_results else 0)
        rule.__name__ = f"{prim.name}_batching"
        return rule


def lower_function(ctx, fn: Callable, avals_in, *operands, **params) -> list:
    """Inside a lowering rule: lower `fn(*operands, **params)`, a function written with
    other primitives and traced on `avals_in`, as a call to a private function."""
    def flat(*xs):
        out = fn(*xs, **params)
        return list(out) if isinstance(out, (tuple, list)) else [out]
    closed = stage_flat(flat, list(avals_in))
    return ctx.lower_subjaxpr(closed, *operands, name=ctx.primitive.name)


def lowering_from(fn: Callable) -> Callable:
    """The lowering rule that lowers `fn(*operands, **params)` (see `lower_function`)."""
    def rule(ctx, *operands, **params):
        return lower_function(ctx, fn, ctx.avals_in, *operands, **params)
    rule.__name__ = f"lower_{fn.__name__}"
    return rule


def tril_hlo(x: ir.Value, aval: ShapedArray, lower: bool = True) -> ir.Value:
    """In a lowering: `x` with the strict upper (or lower) triangle of each matrix zeroed."""
    index = ShapedArray(aval.shape, np.dtype(np.int32))
    rows = mu.iota(index, aval.ndim - 2)
    cols = mu.iota(index, aval.ndim - 1)
    keep = mu.compare(rows, cols, "GE" if lower else "LE", index.dtype)
    return hlo.select(keep, x, mu.splat(0, aval))


def slice_hlo(x: ir.Value, aval: ShapedArray, axis: int, start, limit) -> ir.Value:
    """In a lowering: `x` (of `aval`) cut to [start:limit] along `axis` (the dynamic
    form when its shape is symbolic)."""
    axis %= aval.ndim
    if (start, limit) == (0, aval.shape[axis]):
        return x
    starts = [start if d == axis else 0 for d in range(aval.ndim)]
    limits = [limit if d == axis else size for d, size in enumerate(aval.shape)]
    out = ShapedArray((*aval.shape[:axis], limit - start, *aval.shape[axis + 1:]), aval.dtype)
    return mu.slice(x, starts, limits, [1] * aval.ndim, out)


# --- matrix operations for derivative rules --------------------------------------------------

def mT(x):
    """The transpose of each matrix of a batch."""
    n = get_aval(x).ndim
    return transpose(x, (*range(n - 2), n - 1, n - 2))


def mH(x):
    """The conjugate transpose of each matrix of a batch."""
    return conj(mT(x)) if is_complex(x) else mT(x)


def matmul(a, b):
    """Batched matrix products at full precision; `a` and `b` share batch dimensions."""
    n = get_aval(a).ndim
    batch = tuple(range(n - 2))
    return dot_general(a, b, (((n - 1,), (n - 2,)), (batch, batch)),
                       precision=Precision.HIGHEST)


def triangle_mask(shape, k: int = 0, lower: bool = True):
    """Booleans of `shape`, true on the lower triangle (below the `k`-th diagonal, k
    included) or the upper one (above it)."""
    n = len(shape)
    shifted_rows = add(broadcasted_iota(np.int32, shape, n - 2), np.int32(k))  # (JAX's order)
    cols = broadcasted_iota(np.int32, shape, n - 1)
    return ge(shifted_rows, cols) if lower else ge(cols, shifted_rows)


def _zeros_like(x):
    aval = get_aval(x)
    return broadcast_in_dim(np.zeros((), aval.dtype), aval.shape, ())


def tril(x, k: int = 0):
    return select(triangle_mask(get_aval(x).shape, k, True), x, _zeros_like(x))


def triu(x, k: int = 0):
    return select(triangle_mask(get_aval(x).shape, k, False), x, _zeros_like(x))


def eye_like(x):
    """Identity matrices of `x`'s shape (batch included) and dtype."""
    aval = get_aval(x)
    rows = broadcasted_iota(np.int32, aval.shape, aval.ndim - 2)
    cols = broadcasted_iota(np.int32, aval.shape, aval.ndim - 1)
    return convert_element_type(eq(rows, cols), aval.dtype)


def symmetrize(x):
    """(x + xᴴ) / 2: the Hermitian part of each matrix."""
    return div(add(x, mH(x)), np.array(2, get_aval(x).dtype))


def hermitian_from_triangle(x, lower: bool):
    """The Hermitian matrices whose lower (or upper) triangle is that of `x`: what a
    kernel that reads one triangle sees."""
    strict = tril(x, -1) if lower else triu(x, 1)
    diagonal = mul(x, eye_like(x))
    if is_complex(x):
        diagonal = convert_element_type(real(diagonal), get_aval(x).dtype)
    return add(add(strict, mH(strict)), diagonal)


def diagonal(x):
    """The diagonal of each (square or not) matrix: `[..., min(m, n)]`."""
    aval = get_aval(x)
    m, n = aval.shape[-2:]
    k = min_dim(m, n)
    square = x if m == n else _leading_block(x, k)
    return reduce_sum(mul(square, eye_like(square)), (aval.ndim - 1,))


def _leading_block(x, k: int):
    aval = get_aval(x)
    return slice_(x, (0,) * aval.ndim, (*aval.shape[:-2], k, k))


def diag_matrix(v):
    """Diagonal matrices `[..., k, k]` with the vectors `v` `[..., k]` on the diagonal."""
    aval = get_aval(v)
    shape = (*aval.shape, aval.shape[-1])
    spread = broadcast_in_dim(v, shape, (*range(aval.ndim - 1), aval.ndim))
    return mul(spread, eye_like(spread))


def take_rows(x, permutation):
    """`x[..., permutation[...], :]`: rows of each matrix taken in `permutation`'s
    order (one gather, so it is linear in `x` and transposes to a scatter-add)."""
    aval = get_aval(x)
    nb = aval.ndim - 2
    if 0 in aval.shape:  # nothing to move (and no slice of size 1 to gather)
        shape = (*aval.shape[:-2], get_aval(permutation).shape[-1], aval.shape[-1])
        return broadcast_in_dim(np.zeros((), aval.dtype), shape, ())
    batch = tuple(range(nb))
    dnums = GatherDimensionNumbers(offset_dims=(nb + 1,), collapsed_slice_dims=(nb,),
                                   start_index_map=(nb,), operand_batching_dims=batch,
                                   start_indices_batching_dims=batch)
    return gather(x, expand_dims(permutation, (nb + 1,)), dnums,
                  (1,) * (nb + 1) + (aval.shape[-1],), mode=GatherScatterMode.PROMISE_IN_BOUNDS)

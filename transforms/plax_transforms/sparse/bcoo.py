"""`BCOO`: a sparse array in coordinate format, and the operations on it.

A BCOO of shape `shape` holds `nse` stored elements: `data` (nse,) and `indices`
(nse, ndim), row k being the coordinates of `data[k]`. Coordinates may repeat
(their values add up). Unused slots hold a zero at coordinates equal to the shape
(out of bounds, as in JAX), so a BCOO built under `jit` has a fixed `nse`;
operations ignore elements whose coordinates are out of bounds. Only unbatched
BCOO arrays are supported (`n_batch = n_dense = 0`).

Every operation is written with plax.numpy and lax operations (gathers, scatters
and segment sums), so jit, vmap and grad apply to them unchanged; a BCOO is a
pytree of (data, indices).
"""
from __future__ import annotations

import math
import operator
from typing import Any, Sequence

import numpy as np

from plax.extend import dtypes, tree_util
from plax.extend.core import Tracer
from plax_stdlib import numpy as jnp
from plax_stdlib.ops import segment_sum


_SCALAR_DIVISION_ONLY = "only the division of a BCOO by a scalar is supported"


class BCOO:
    """A sparse array: `data[k]` is the element at `indices[k]` (repeated coordinates
    add up). Make one with `BCOO.fromdense` or `BCOO((data, indices), shape=...)`."""
    __array_priority__ = 100  # so that `ndarray @ bcoo` defers to `BCOO.__rmatmul__`

    def __init__(self, args: tuple[Any, Any], *, shape: Sequence[int],
                 indices_sorted: bool = False, unique_indices: bool = False):
        data, indices = args
        self.data, self.indices = jnp.asarray(data), jnp.asarray(indices)
        self.shape = tuple(operator.index(d) for d in shape)
        self.indices_sorted, self.unique_indices = indices_sorted, unique_indices
        if self.data.ndim != 1 or self.indices.ndim != 2 or \
                self.indices.shape != (self.data.shape[0], len(self.shape)):
            raise ValueError(f"BCOO: data must have shape (nse,) and indices (nse, ndim), got "
                             f"data {self.data.shape} and indices {self.indices.shape} for "
                             f"shape {self.shape}")
        if not dtypes.issubdtype(self.indices.dtype, np.integer):
            raise TypeError(f"BCOO: indices must be integers, got {self.indices.dtype}")

    dtype = property(lambda self: self.data.dtype)
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))
    nse = property(lambda self: self.data.shape[0])
    n_batch = n_dense = 0
    n_sparse = property(lambda self: len(self.shape))
    T = property(lambda self: bcoo_transpose(self, tuple(reversed(range(self.ndim)))))

    @classmethod
    def fromdense(cls, mat: Any, *, nse: int | None = None, index_dtype=np.int32,
                  n_dense: int = 0, n_batch: int = 0) -> "BCOO":
        return bcoo_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense,
                              n_batch=n_batch)

    def todense(self):
        return bcoo_todense(self)

    def transpose(self, axes: Sequence[int] | None = None) -> "BCOO":
        return bcoo_transpose(self, tuple(reversed(range(self.ndim))) if axes is None
                              else tuple(axes))

    def sum(self, axis: int | Sequence[int] | None = None):
        return bcoo_reduce_sum(self, range(self.ndim) if axis is None
                               else (axis,) if isinstance(axis, int) else axis)

    def astype(self, dtype) -> "BCOO":
        return self._with_data(self.data.astype(dtype))

    def _with_data(self, data) -> "BCOO":
        return BCOO((data, self.indices), shape=self.shape, indices_sorted=self.indices_sorted,
                    unique_indices=self.unique_indices)

    def __matmul__(self, other):
        return _matmul(self, other)

    def __rmatmul__(self, other):
        return _matmul(other, self)

    def __mul__(self, other):
        return multiply(self, other)

    __rmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, BCOO) or jnp.ndim(other) != 0:
            raise NotImplementedError(_SCALAR_DIVISION_ONLY)
        return self._with_data(self.data / other)

    def __neg__(self):
        return self._with_data(-self.data)

    def __add__(self, other):
        return add(self, other)

    __radd__ = __add__

    def __sub__(self, other):
        return add(self, -other)

    def __rsub__(self, other):
        return add(-self, other)

    def __repr__(self):
        return f"BCOO({self.dtype.name}{list(self.shape)}, nse={self.nse})"


tree_util.register_pytree_node(
    BCOO, lambda m: ((m.data, m.indices), (m.shape, m.indices_sorted, m.unique_indices)),
    lambda aux, children: BCOO(tuple(children), shape=aux[0], indices_sorted=aux[1],
                               unique_indices=aux[2]))


def _concrete_int(x, what: str) -> int:
    if isinstance(x, Tracer):
        value = x.to_concrete_value()
        if value is None:
            from plax.errors import ConcretizationTypeError
            raise ConcretizationTypeError(f"{what} must be known in Python (it fixes the "
                                          "number of stored elements); pass nse=")
        x = value
    return int(np.asarray(x))


def bcoo_fromdense(mat: Any, *, nse: int | None = None, index_dtype=np.int32, n_dense: int = 0,
                   n_batch: int = 0) -> BCOO:
    """The nonzero elements of the dense `mat` as a BCOO with `nse` slots (default:
    the number of nonzeros, which needs a concrete `mat`; extra slots hold zeros)."""
    if n_dense or n_batch:
        raise NotImplementedError("bcoo_fromdense: batched or dense dimensions (n_batch, "
                                  "n_dense) are not supported yet")
    mat = jnp.asarray(mat)
    if mat.ndim == 0:
        raise ValueError("bcoo_fromdense: a sparse array needs at least one dimension")
    if nse is None:
        nse = _concrete_int(jnp.count_nonzero(mat), "bcoo_fromdense without nse: the count "
                                                   "of nonzeros")
    nse = operator.index(nse)
    if nse < 0:
        raise ValueError(f"bcoo_fromdense: nse must be non-negative, got {nse}")
    coords = jnp.nonzero(mat, size=nse, fill_value=0)
    indices = jnp.stack([c.astype(index_dtype) for c in coords], axis=1) if nse else \
        jnp.zeros((0, mat.ndim), index_dtype)
    data = mat[coords] if nse else jnp.zeros((0,), mat.dtype)
    real = jnp.arange(nse) < jnp.count_nonzero(mat)  # the other slots are padding
    indices = jnp.where(real[:, None], indices, jnp.asarray(mat.shape, index_dtype))
    return BCOO((jnp.where(real, data, 0), indices), shape=mat.shape, indices_sorted=True,
                unique_indices=True)


def _in_bounds(mat: BCOO):
    """Which stored elements have coordinates inside the shape (padding has not)."""
    return jnp.all((mat.indices >= 0) & (mat.indices < jnp.asarray(mat.shape,
                                                                    mat.indices.dtype)), axis=1)


def _flat_positions(mat: BCOO, dims: Sequence[int]):
    """Row-major positions of the coordinates `dims` of each stored element in an
    array of the shape `mat.shape[dims]`; one past the end for out-of-bounds elements
    (which segment sums drop and fill-mode gathers read as 0)."""
    position = jnp.zeros(mat.indices.shape[:1], mat.indices.dtype)
    for d in dims:
        position = position * mat.shape[d] + mat.indices[:, d]
    return jnp.where(_in_bounds(mat), position, math.prod(mat.shape[d] for d in dims))


def _kept_data(mat: BCOO):
    return jnp.where(_in_bounds(mat), mat.data, 0)


def bcoo_todense(mat: BCOO):
    """The dense array `mat` represents."""
    flat = segment_sum(mat.data, _flat_positions(mat, range(mat.ndim)), num_segments=mat.size)
    return jnp.reshape(flat, mat.shape)


def todense(x: Any):
    """`x` made dense if it is a BCOO, else `x` as it is."""
    return bcoo_todense(x) if isinstance(x, BCOO) else x


def bcoo_transpose(mat: BCOO, permutation: Sequence[int]) -> BCOO:
    permutation = tuple(operator.index(p) for p in permutation)
    if sorted(permutation) != list(range(mat.ndim)):
        raise ValueError(f"bcoo_transpose: {permutation} is not a permutation of the "
                         f"{mat.ndim} dimensions of {mat}")
    return BCOO((mat.data, mat.indices[:, list(permutation)]),
                shape=tuple(mat.shape[p] for p in permutation))


def bcoo_reduce_sum(mat: BCOO, axes: Sequence[int]):
    """The sum over `axes`: a BCOO over the remaining dimensions (a dense scalar when
    every axis is summed)."""
    axes = sorted({operator.index(a) % mat.ndim for a in axes}) if mat.ndim else []
    kept = [d for d in range(mat.ndim) if d not in axes]
    if not kept:
        return jnp.sum(_kept_data(mat))
    return BCOO((_kept_data(mat), mat.indices[:, kept]), shape=tuple(mat.shape[d] for d in kept))


def bcoo_dot_general(lhs: BCOO, rhs: Any, *, dimension_numbers, precision=None,
                     preferred_element_type=None):
    """`lax.dot_general(lhs.todense(), rhs, dimension_numbers)` without making `lhs`
    dense: each stored element multiplies the slice of `rhs` its contracted
    coordinates pick, and the products are summed into the output at its free
    coordinates. Batch dimensions are not supported."""
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    if lhs_batch or rhs_batch:
        raise NotImplementedError("bcoo_dot_general: batch dimensions are not supported yet")
    rhs = jnp.asarray(rhs)
    lhs_contract, rhs_contract = tuple(lhs_contract), tuple(rhs_contract)
    if [lhs.shape[d] for d in lhs_contract] != [rhs.shape[d] for d in rhs_contract]:
        raise TypeError(f"bcoo_dot_general: contracting dimensions {lhs_contract} of {lhs} "
                        f"and {rhs_contract} of {rhs.dtype}{list(rhs.shape)} differ in size")
    lhs_free = [d for d in range(lhs.ndim) if d not in lhs_contract]
    rhs_free = [d for d in range(rhs.ndim) if d not in rhs_contract]
    dtype = preferred_element_type or dtypes.result_type(lhs.dtype, rhs.dtype)
    # rhs with its contracting dimensions flattened into the first one.
    picked_shape = (math.prod(rhs.shape[d] for d in rhs_contract),
                    *(rhs.shape[d] for d in rhs_free))
    rhs_rows = jnp.reshape(jnp.transpose(rhs, (*rhs_contract, *rhs_free)), picked_shape)
    picked = rhs_rows.at[_flat_positions(lhs, lhs_contract)].get(mode="fill", fill_value=0)
    products = (lhs.data.reshape((-1,) + (1,) * len(rhs_free)).astype(dtype)
                * picked.astype(dtype))
    out_rows = math.prod(lhs.shape[d] for d in lhs_free)
    summed = segment_sum(products, _flat_positions(lhs, lhs_free), num_segments=out_rows)
    return jnp.reshape(summed, (*(lhs.shape[d] for d in lhs_free),
                                *(rhs.shape[d] for d in rhs_free)))


def dense_dot_bcoo(lhs: Any, rhs: BCOO, *, dimension_numbers, **options):
    """`dot_general` of a dense `lhs` with a sparse `rhs`, as the sparse product with
    the operands swapped and the output dimensions moved back."""
    (lhs_contract, rhs_contract), batch = dimension_numbers
    out = bcoo_dot_general(rhs, lhs, dimension_numbers=((rhs_contract, lhs_contract), batch),
                           **options)
    n_rhs_free = rhs.ndim - len(rhs_contract)
    return jnp.moveaxis(out, tuple(range(n_rhs_free)),
                        tuple(range(out.ndim - n_rhs_free, out.ndim)))


def _matmul(lhs, rhs):
    """`lhs @ rhs` with one operand a BCOO (2-D or 1-D, as NumPy's matmul)."""
    if isinstance(lhs, BCOO) and isinstance(rhs, BCOO):
        return _matmul(lhs, bcoo_todense(rhs))
    sparse = lhs if isinstance(lhs, BCOO) else rhs
    dense = jnp.asarray(rhs if sparse is lhs else lhs)
    if sparse.ndim > 2 or dense.ndim > 2 or 0 in (sparse.ndim, dense.ndim):
        raise NotImplementedError(f"BCOO @: operands of 1 or 2 dimensions are supported, got "
                                  f"shapes {getattr(lhs, 'shape', None)} and "
                                  f"{getattr(rhs, 'shape', None)}")
    if sparse is lhs:
        dims = (((lhs.ndim - 1,), (0,)), ((), ()))
        return bcoo_dot_general(lhs, dense, dimension_numbers=dims)
    dims = (((dense.ndim - 1,), (rhs.ndim - 2 if rhs.ndim == 2 else 0,)), ((), ()))
    return dense_dot_bcoo(dense, rhs, dimension_numbers=dims)


def multiply(lhs, rhs):
    """Elementwise product with a BCOO operand: a BCOO (zeros stay zeros). A dense
    operand is read at the stored coordinates (broadcast to the sparse shape)."""
    if isinstance(lhs, BCOO) and isinstance(rhs, BCOO):
        return multiply(lhs, bcoo_todense(rhs))
    sparse, other = (lhs, rhs) if isinstance(lhs, BCOO) else (rhs, lhs)
    other = jnp.asarray(other)
    if other.ndim == 0:
        return sparse._with_data(sparse.data * other)
    full = jnp.reshape(jnp.broadcast_to(other, sparse.shape), (-1,))
    at = _flat_positions(sparse, range(sparse.ndim))
    return sparse._with_data(sparse.data * full.at[at].get(mode="fill", fill_value=0))


def add(lhs, rhs):
    """Sum with a BCOO operand: a BCOO if both are sparse (their elements side by
    side), else a dense array."""
    if isinstance(lhs, BCOO) and isinstance(rhs, BCOO):
        if lhs.shape != rhs.shape:
            raise ValueError(f"BCOO +: shapes {lhs.shape} and {rhs.shape} differ")
        dtype = dtypes.result_type(lhs.dtype, rhs.dtype)
        return BCOO((jnp.concatenate([lhs.data.astype(dtype), rhs.data.astype(dtype)]),
                     jnp.concatenate([lhs.indices, rhs.indices.astype(lhs.indices.dtype)])),
                    shape=lhs.shape)
    return todense(lhs) + todense(rhs)


__all__ = ["BCOO", "bcoo_dot_general", "bcoo_fromdense", "bcoo_reduce_sum", "bcoo_todense",
           "bcoo_transpose", "todense"]


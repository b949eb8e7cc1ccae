"""`ragged_dot` and `ragged_dot_general`: matrix products where one dimension of
the lhs is split into consecutive groups of the sizes `group_sizes`.

Three modes, by where the lhs ragged dimension sits: non-contracting (each group
of rows meets its own slice of the rhs along the rhs group dimension: the mixture
of experts product), contracting (each group of the contracted dimension gives its
own product: a leading group dimension in the result), and batch (an ordinary
batched product). The groups are made dense: the lhs is repeated along a new
group axis and masked to each group's range, so one `dot_general` computes the
result, and derivatives and batching come from its rules. Entries past the sum
of the group sizes belong to no group.
"""
from __future__ import annotations

import dataclasses
from plax.extend.constructors import describe, kind_of
from plax.extend.core import get_aval
from plax_stdlib.lax.bitwise import bitwise_and
from plax_stdlib.lax.comparison import le, lt, select_n
from plax_stdlib.lax.creation import broadcasted_iota, full
from plax_stdlib.lax.cumulative import cumsum
from plax_stdlib.lax.dot_general import dot_general
from plax_stdlib.lax.shape_ops import broadcast_in_dim, concatenate
from plax_stdlib.lax.slicing import slice_in_dim


@dataclasses.dataclass(frozen=True, init=False)
class RaggedDotDimensionNumbers:
    """The dimension numbers of `ragged_dot_general`.

    Attributes:
        dot_dimension_numbers: those of a `dot_general`: `((lhs_contracting,
            rhs_contracting), (lhs_batch, rhs_batch))`.
        lhs_ragged_dimensions: the one dimension of `lhs` split into groups.
        rhs_group_dimensions: the dimension of `rhs` indexing the groups (one
            when the ragged dimension is not contracted, none otherwise).

    Examples:
        >>> from plax import lax
        >>> dn = lax.RaggedDotDimensionNumbers(
        ...     dot_dimension_numbers=(((1,), (1,)), ((), ())),
        ...     lhs_ragged_dimensions=(0,), rhs_group_dimensions=(0,))
        >>> dn.lhs_ragged_dimensions
        (0,)
    """
    dot_dimension_numbers: tuple
    lhs_ragged_dimensions: tuple[int, ...]
    rhs_group_dimensions: tuple[int, ...]

    def __init__(self, dot_dimension_numbers, lhs_ragged_dimensions, rhs_group_dimensions):
        object.__setattr__(self, "dot_dimension_numbers",
                           tuple(tuple(tuple(int(d) for d in part) for part in pair)
                                 for pair in dot_dimension_numbers))
        object.__setattr__(self, "lhs_ragged_dimensions",
                           tuple(int(d) for d in lhs_ragged_dimensions))
        object.__setattr__(self, "rhs_group_dimensions",
                           tuple(int(d) for d in rhs_group_dimensions))


_BASIC = RaggedDotDimensionNumbers((((1,), (1,)), ((), ())), (0,), (0,))


def _dense_groups(x, group_sizes, dim: int):
    """`x` repeated along a new leading group axis, entry g keeping only the slice of
    `dim` that group g covers."""
    shape = get_aval(x).shape
    g = get_aval(group_sizes).shape[0]
    full_shape = (g,) + shape
    ends = cumsum(group_sizes)
    starts = concatenate([full((1,), 0, get_aval(group_sizes).dtype),
                          slice_in_dim(ends, 0, g - 1)], 0) if g > 1 else full(
        (1,), 0, get_aval(group_sizes).dtype)
    position = broadcasted_iota(get_aval(group_sizes).dtype, full_shape, dim + 1)
    inside = bitwise_and(le(broadcast_in_dim(starts, full_shape, (0,)), position),
                         lt(position, broadcast_in_dim(ends, full_shape, (0,))))
    repeated = broadcast_in_dim(x, full_shape, tuple(range(1, len(full_shape))))
    return select_n(inside, full(full_shape, 0, get_aval(x).dtype), repeated)


def _mode(lhs_ndim: int, dnums: RaggedDotDimensionNumbers) -> tuple[str, int]:
    if len(dnums.lhs_ragged_dimensions) != 1:
        raise TypeError("ragged_dot_general expects exactly one lhs ragged dimension, got "
                        f"{dnums.lhs_ragged_dimensions}")
    ragged = dnums.lhs_ragged_dimensions[0]
    if not 0 <= ragged < lhs_ndim:
        raise TypeError(f"ragged_dot_general: lhs ragged dimension {ragged} out of range for "
                        f"an lhs of rank {lhs_ndim}")
    (contract, _), (batch, _) = dnums.dot_dimension_numbers
    if ragged in contract:
        return "contracting", ragged
    if ragged in batch:
        return "batch", ragged
    return "noncontracting", ragged


def ragged_dot_general(lhs, rhs, group_sizes, ragged_dot_dimension_numbers,
                       precision=None, preferred_element_type=None, group_offset=None,
                       out_sharding=None):
    """The general grouped ("ragged") product behind `ragged_dot`: a dot product
    in which one dimension of `lhs` is split into consecutive groups of sizes
    `group_sizes`, each group multiplied with its own slice of `rhs` along a
    group dimension.

    `ragged_dot_dimension_numbers` (a `RaggedDotDimensionNumbers`) gives the
    dot dimension numbers, `lhs`'s ragged dimension, and `rhs`'s group
    dimensions (one when the ragged dimension is not contracted, none when it
    is).

    Args:
        lhs: an array.
        rhs: an array.
        group_sizes: a 1-d integer array of group sizes.
        ragged_dot_dimension_numbers: a `RaggedDotDimensionNumbers`.
        precision: a `lax.Precision`, a pair, or None.
        preferred_element_type: the accumulation and result dtype.
        group_offset: not supported (must be None).
        out_sharding: on a mesh with `Explicit` axes, the result's sharding.

    Returns:
        The grouped product.

    Examples:
        `ragged_dot` written out:

        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> dn = lax.RaggedDotDimensionNumbers(
        ...     dot_dimension_numbers=(((1,), (1,)), ((), ())),
        ...     lhs_ragged_dimensions=(0,), rhs_group_dimensions=(0,))
        >>> rhs = jnp.stack([jnp.eye(2), 2 * jnp.eye(2)])
        >>> lax.ragged_dot_general(jnp.ones((3, 2)), rhs, jnp.array([1, 2], jnp.int32), dn)
        Array([[1., 1.],
               [2., 2.],
               [2., 2.]], dtype=float32)
    """
    if group_offset is not None:
        raise NotImplementedError("ragged_dot_general: group_offset is not supported")
    dnums = ragged_dot_dimension_numbers
    if not isinstance(dnums, RaggedDotDimensionNumbers):
        raise TypeError(f"ragged_dot_general requires RaggedDotDimensionNumbers, got "
                        f"{dnums!r}")
    gs = get_aval(group_sizes)
    if kind_of(gs.dtype) not in ("signed", "unsigned"):
        raise TypeError(f"ragged_dot_general requires integer group_sizes, got {describe(gs)}")
    if gs.ndim != 1:
        raise NotImplementedError(f"ragged_dot_general: only 1-D group_sizes are supported, "
                                  f"got {describe(gs)}")
    lhs_aval, rhs_aval = get_aval(lhs), get_aval(rhs)
    mode, ragged = _mode(lhs_aval.ndim, dnums)
    (l_contract, r_contract), (l_batch, r_batch) = dnums.dot_dimension_numbers
    up = lambda dims: tuple(d + 1 for d in dims)  # noqa: E731
    kwargs = dict(precision=precision, preferred_element_type=preferred_element_type,
                  out_sharding=out_sharding)
    groups = gs.shape[0]
    if mode == "batch":
        if dnums.rhs_group_dimensions:
            raise TypeError("ragged_dot_general requires zero rhs group dimensions when the "
                            "lhs ragged dimension is a batch dimension")
        return dot_general(lhs, rhs, dnums.dot_dimension_numbers, **kwargs)
    dense = _dense_groups(lhs, group_sizes, ragged)
    if mode == "noncontracting":
        if len(dnums.rhs_group_dimensions) != 1:
            raise TypeError("ragged_dot_general requires exactly one rhs group dimension when "
                            "the lhs ragged dimension is non-contracting")
        group_dim = dnums.rhs_group_dimensions[0]
        if group_dim in r_contract or group_dim in r_batch:
            raise TypeError("ragged_dot_general: the rhs group dimension must be distinct "
                            "from its contracting and batch dimensions")
        if rhs_aval.shape[group_dim] != groups:
            raise TypeError(f"ragged_dot_general: expected an rhs group dimension of size "
                            f"{groups}, got {describe(rhs_aval)} (dimension {group_dim})")
        return dot_general(dense, rhs, ((up(l_contract) + (0,), tuple(r_contract) + (group_dim,)),
                                        (up(l_batch), tuple(r_batch))), **kwargs)
    if dnums.rhs_group_dimensions:
        raise TypeError("ragged_dot_general requires zero rhs group dimensions when the lhs "
                        "ragged dimension is contracting")
    rhs_repeated = broadcast_in_dim(rhs, (groups,) + rhs_aval.shape,
                                    tuple(range(1, rhs_aval.ndim + 1)))
    return dot_general(dense, rhs_repeated, ((up(l_contract), up(r_contract)),
                                             ((0,) + up(l_batch), (0,) + up(r_batch))),
                       **kwargs)


def ragged_dot(lhs, rhs, group_sizes, precision=None, preferred_element_type=None,
               group_offset=None, out_sharding=None):
    """A grouped matrix product: consecutive groups of `lhs`'s rows, of sizes
    `group_sizes`, are each multiplied by their own matrix of `rhs` (as in
    mixture-of-experts layers).

    Rows `sum(group_sizes[:i])` to `sum(group_sizes[:i + 1])` of `lhs` are
    multiplied by `rhs[i]`; rows past the last group give zeros.

    Args:
        lhs: an array of shape (m, k).
        rhs: an array of shape (g, k, n): one matrix per group.
        group_sizes: an integer array of shape (g,), summing to at most m.
        precision: a `lax.Precision`, a pair, or None.
        preferred_element_type: the accumulation and result dtype.
        group_offset: not supported (must be None).
        out_sharding: on a mesh with `Explicit` axes, the result's sharding.

    Returns:
        An array of shape (m, n).

    Raises:
        TypeError: the shapes do not fit (m, k) x (g, k, n).

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lhs = jnp.ones((3, 2))
        >>> rhs = jnp.stack([jnp.eye(2), 2 * jnp.eye(2)])  # group 0: x1, group 1: x2
        >>> lax.ragged_dot(lhs, rhs, jnp.array([1, 2], jnp.int32))
        Array([[1., 1.],
               [2., 2.],
               [2., 2.]], dtype=float32)
    """
    return ragged_dot_general(lhs, rhs, group_sizes, _BASIC, precision=precision,
                              preferred_element_type=preferred_element_type,
                              group_offset=group_offset, out_sharding=out_sharding)


"""`ragged_all_to_all`: an all-to-all of ragged data (slices of varying length along
the leading axis) over a named axis.

Each member holds its data as a ragged array: `operand` and `K` slices of it, the
k-th starting at `input_offsets[k]` with `send_sizes[k]` rows. With `s = K / n`
slices per member of an axis of size n, slice k goes to member `k // s`, which
writes it into its copy of `output` at `output_offsets[k]` (an offset *on the
receiver*). The receiver's own `recv_sizes[i*s + t]` is the size of slice t of
member i (the two must agree; XLA's GPU kernel copies `send_sizes` rows).
Everything outside the received slices is `output`'s.

Inside `shard_map`/`pmap` this lowers to XLA's `ragged_all_to_all` custom call (run
by the GPU and TPU backends; XLA:CPU refuses it when compiling, as it does for JAX).
Under `vmap(..., axis_name=...)` of its own axis the exchange is emulated with a
gather of the slices and a scatter into the outputs (JAX has no rule for that).
It is linear in (`operand`, `output`): its jvp is itself, and its transpose sends
the cotangent back along the slices (offsets swapped by an `all_to_all`) and keeps
the cotangent of `output` where nothing was received.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from plax.extend.ad import Zero, instantiate, is_undefined_primal, tangent_aval
from plax.extend.batching import axis_size as _bound_size
from plax.extend.batching import canonicalize_axis_names, move_to
from plax.extend.constructors import describe, kind_of, standard_primitive
from plax.extend.core import AXIS_NAMES, EVAL_TRACE, IMPL, ShapedArray, current_trace, get_aval
from plax.extend.mlir import hlo, ir, mu
from plax_stdlib.lax import bitwise, comparison, elementwise, reductions, shape_ops
from plax_stdlib.lax.conversion import convert_element_type
from plax_stdlib.lax.creation import broadcasted_iota, iota
from plax_stdlib.lax.gathers import GatherDimensionNumbers, GatherScatterMode, gather
from plax_stdlib.lax.parallel import _groups, _groups_attr, all_to_all
from plax_stdlib.lax.scatters import ScatterDimensionNumbers, scatter

_INDEX_OPERANDS = ("input_offsets", "send_sizes", "output_offsets", "recv_sizes")


def _abstract_eval(operand, output, *index_operands, axis_name, axis_index_groups):
    for what, aval in zip(_INDEX_OPERANDS, index_operands):
        if kind_of(aval.dtype) not in ("signed", "unsigned"):
            raise ValueError(f"ragged_all_to_all {what} must be integer type, got "
                             f"{describe(aval)}")
        if aval.ndim != 1 or aval.shape[0] < 1:
            raise ValueError(f"ragged_all_to_all {what} must be rank 1 with positive "
                             f"dimension size, but got shape {aval.shape}")
    # (JAX leaves these to XLA's verifier, which only the GPU/TPU compilers reach.)
    lengths = {aval.shape[0] for aval in index_operands}
    if len(lengths) != 1:
        raise ValueError("ragged_all_to_all: input_offsets, send_sizes, output_offsets and "
                         "recv_sizes must have the same length, got "
                         f"{[describe(a) for a in index_operands]}")
    if operand.dtype != output.dtype:
        raise TypeError(f"ragged_all_to_all: operand {describe(operand)} and output "
                        f"{describe(output)} must have the same dtype")
    if operand.ndim < 1 or operand.ndim != output.ndim or operand.shape[1:] != output.shape[1:]:
        raise ValueError(f"ragged_all_to_all: operand {describe(operand)} and output "
                         f"{describe(output)} must be arrays of rows of one shape (equal "
                         "shapes but for the leading axis)")
    return ShapedArray(output.shape, output.dtype)


def _group_size(names: tuple, groups) -> int:
    """The number of members exchanging data: RuntimeError when evaluated eagerly
    (JAX's impl rule), NameError for a name unbound where it is traced, ValueError
    for groups that do not split the axis evenly."""
    if current_trace() is EVAL_TRACE:
        _impl()
    size = math.prod(_bound_size(n) for n in names)
    if groups is None:
        return size
    if len({len(g) for g in groups}) != 1 or sorted(i for g in groups for i in g) != [
            *range(size)]:
        raise ValueError(f"ragged_all_to_all: axis_index_groups must split the {size} members "
                         f"of axis {names!r} into groups of one size, each member in one "
                         f"group; got {groups}")
    return len(groups[0])


def _impl(*args, **params):  # (as JAX: outside vmap, shard_map and pmap)
    raise RuntimeError("ragged_all_to_all must be used within a mapped context like vmap "
                       "or shard_map.")


def _lowering(ctx, *args, axis_name, axis_index_groups):
    groups = _groups(ctx, axis_name, "ragged_all_to_all", axis_index_groups)
    config = ir.DictAttr.get({
        "replica_groups": _groups_attr(groups),
        "channel_id": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 1),
    })
    return hlo.CustomCallOp([mu.ir_type(ctx.avals_out[0])], list(args),
                            call_target_name="ragged_all_to_all", backend_config=config,
                            api_version=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 4)
                            ).results[0]


def _jvp(primals, tangents, **params):
    operand, output, *index_operands = primals
    d_operand, d_output = tangents[:2]
    out = ragged_all_to_all_p.bind(*primals, **params)
    if isinstance(d_operand, Zero) and isinstance(d_output, Zero):
        return out, Zero(tangent_aval(get_aval(out)))
    return out, ragged_all_to_all_p.bind(instantiate(d_operand), instantiate(d_output),
                                         *index_operands, **params)


def _transpose(ct, operand, output, input_offsets, send_sizes, output_offsets, recv_sizes, *,
               axis_name, axis_index_groups):
    if axis_index_groups:
        raise NotImplementedError("transpose of ragged_all_to_all with axis_index_groups "
                                  "(it needs an all_to_all within the groups)")
    ct = instantiate(ct)
    ct_aval = get_aval(ct)
    # Where this member's slices landed, as offsets on this member (and back).
    landed = all_to_all(output_offsets, axis_name, 0, 0, tiled=True)
    taken_from = all_to_all(input_offsets, axis_name, 0, 0, tiled=True)
    cts = [None] * 6
    if is_undefined_primal(operand):
        zeros = shape_ops.broadcast_in_dim(np.zeros((), ct_aval.dtype)[()],
                                           operand.aval.shape, ())
        cts[0] = ragged_all_to_all_p.bind(ct, zeros, landed, recv_sizes, taken_from, send_sizes,
                                          axis_name=axis_name, axis_index_groups=None)
    if is_undefined_primal(output):
        received = _rows_covered(landed, recv_sizes, ct_aval.shape[0])
        mask = shape_ops.broadcast_in_dim(received, ct_aval.shape, (0,))
        zeros = shape_ops.broadcast_in_dim(np.zeros((), ct_aval.dtype)[()], ct_aval.shape, ())
        cts[1] = comparison.select_n(mask, ct, zeros)
    return cts


def _rows_covered(offsets, sizes, rows: int):
    """Which of `rows` rows some slice [offsets[k], offsets[k] + sizes[k]) covers."""
    dtype = get_aval(offsets).dtype
    sizes = convert_element_type(sizes, dtype)
    k = get_aval(offsets).shape[0]
    row = broadcasted_iota(dtype, (k, rows), 1)
    start = shape_ops.broadcast_in_dim(offsets, (k, rows), (0,))
    stop = shape_ops.broadcast_in_dim(elementwise.add(offsets, sizes), (k, rows), (0,))
    inside = bitwise.bitwise_and(comparison.ge(row, start), comparison.lt(row, stop))
    return reductions.reduce_or(inside, (0,))


def _batching(axis_data, args, dims, *, axis_name, axis_index_groups):
    if axis_data.name in axis_name:
        if len(axis_name) > 1 or axis_index_groups:
            raise NotImplementedError("vmap of ragged_all_to_all over several axis names or "
                                      "with axis_index_groups")
        return _emulated_exchange(axis_data.size, *(move_to(x, d, 0, axis_data.size)
                                                    for x, d in zip(args, dims))), 0
    if axis_index_groups:
        raise NotImplementedError("vmap of ragged_all_to_all with axis_index_groups")
    return _merged_batch(axis_data.size, args, dims, axis_name), 0


def _merged_batch(b: int, args, dims, axis_name):
    """A batch of b exchanges as one: member i's b operands (and outputs) stacked
    along their rows, with b times as many slices, offsets moved to each one's rows."""
    operand, output = (move_to(x, d, 0, b) for x, d in zip(args[:2], dims[:2]))
    n_rows, m_rows = get_aval(operand).shape[1], get_aval(output).shape[1]
    # The b copies of slice k stay together (slice k*b + c), so slice k still goes
    # to the same member.
    io, ss, oo, rs = (move_to(x, d, 1, b) for x, d in zip(args[2:], dims[2:]))

    def shifted(offsets, rows):
        dtype = get_aval(offsets).dtype
        step = elementwise.mul(iota(dtype, b), np.asarray(rows, dtype)[()])
        return elementwise.add(offsets, shape_ops.broadcast_in_dim(step, get_aval(offsets).shape,
                                                                   (1,)))

    def flat(x):
        shape = get_aval(x).shape
        return shape_ops.reshape(x, (shape[0] * shape[1], *shape[2:]))

    out = ragged_all_to_all_p.bind(
        flat(operand), flat(output), flat(shifted(io, n_rows)), flat(ss),
        flat(shifted(oo, m_rows)), flat(rs), axis_name=axis_name, axis_index_groups=None)
    return shape_ops.reshape(out, (b, m_rows, *get_aval(out).shape[1:]))


def _emulated_exchange(n: int, operand, output, input_offsets, send_sizes, output_offsets,
                       recv_sizes):
    """The exchange among the n members of the vmapped axis, every value stacked
    along a leading member axis: each received row is gathered from the operands,
    then scattered into the outputs (rows outside [0, N) or [0, M) are dropped)."""
    del recv_sizes  # (the sender's send_sizes say how many rows move, as on GPUs)
    n_rows, m_rows = get_aval(operand).shape[1], get_aval(output).shape[1]
    row_shape = get_aval(output).shape[2:]
    k = get_aval(input_offsets).shape[1]
    s = k // n
    i32 = np.dtype(np.int32)

    def by_receiver(x):  # sender i's slice j*s + t, as [j, i, t]
        x = shape_ops.reshape(convert_element_type(x, i32), (n, n, s))
        return shape_ops.transpose(x, (1, 0, 2))

    grid = (n, n, s, n_rows)  # [receiver j, sender i, slice t, row p of the slice]

    def spread(x, dims=(0, 1, 2)):
        return shape_ops.broadcast_in_dim(x, grid, dims)

    p = broadcasted_iota(i32, grid, 3)
    src = elementwise.add(spread(by_receiver(input_offsets)), p)
    dst = elementwise.add(spread(by_receiver(output_offsets)), p)
    count = spread(by_receiver(send_sizes))
    valid = comparison.lt(p, count)
    for index, bound in ((src, n_rows), (dst, m_rows)):
        valid = bitwise.bitwise_and(valid, comparison.ge(index, np.int32(0)))
        valid = bitwise.bitwise_and(valid, comparison.lt(index, np.int32(bound)))
    sender = broadcasted_iota(i32, grid, 1)
    receiver = broadcasted_iota(i32, grid, 0)
    flat_src = elementwise.add(elementwise.mul(sender, np.int32(n_rows)), src)
    flat_dst = elementwise.add(elementwise.mul(receiver, np.int32(m_rows)), dst)
    zero = shape_ops.broadcast_in_dim(np.int32(0), grid, ())
    nowhere = shape_ops.broadcast_in_dim(np.int32(n * m_rows), grid, ())
    flat_src = comparison.select_n(valid, zero, flat_src)
    flat_dst = comparison.select_n(valid, nowhere, flat_dst)

    window = tuple(range(len(grid), len(grid) + len(row_shape)))
    rows = gather(shape_ops.reshape(operand, (n * n_rows, *row_shape)),
                  shape_ops.expand_dims(flat_src, (len(grid),)),
                  GatherDimensionNumbers(window, (0,), (0,)), (1, *row_shape),
                  mode=GatherScatterMode.CLIP)
    out = scatter(shape_ops.reshape(output, (n * m_rows, *row_shape)),
                  shape_ops.expand_dims(flat_dst, (len(grid),)), rows,
                  ScatterDimensionNumbers(window, (0,), (0,)),
                  mode=GatherScatterMode.FILL_OR_DROP)
    return shape_ops.reshape(out, (n, m_rows, *row_shape))


ragged_all_to_all_p = standard_primitive(
    "lax.ragged_all_to_all", _abstract_eval, _lowering, jvp=_jvp, transpose=_transpose,
    batching=_batching,
    **{IMPL: _impl, AXIS_NAMES: lambda *, axis_name, axis_index_groups: axis_name})


def ragged_all_to_all(operand, output, input_offsets, send_sizes, output_offsets, recv_sizes,
                      *, axis_name, axis_index_groups=None):
    """An all-to-all exchange of variable-sized slices among the members of a named
    axis, each written into the receiver's `output` buffer at a given offset
    (as used to route tokens to experts).

    Member-side view, with K = len(send_sizes) slices: slice k of `operand`
    (rows `input_offsets[k]` to `input_offsets[k] + send_sizes[k]`) goes to
    member `k // (K / n)`, which writes it at `output_offsets[k]` in its
    `output`; `recv_sizes` are the sizes of the slices received, in the order
    of their senders.

    Args:
        operand: the rows to send.
        output: the buffer the received rows are written into.
        input_offsets: where each slice starts in `operand`.
        send_sizes: each slice's number of rows.
        output_offsets: where each slice goes in the receiver's `output`.
        recv_sizes: the sizes of the received slices.
        axis_name: the name of a bound axis.
        axis_index_groups: optional lists of positions along the axis, of one
            size: the exchange happens within each group (under shard_map and
            pmap; neither vmap of the axis nor the transpose takes groups).

    Returns:
        `output` with the received rows written in.

    Examples:
        Each of two members sends its one row to every member, which stores
        sender j's row at row j of its output (an all-gather, written out):

        >>> import plax, plax.numpy as jnp
        >>> def gather_rows(x):
        ...     me = plax.lax.axis_index("i")
        ...     ones = jnp.ones(2, jnp.int32)
        ...     return plax.lax.ragged_all_to_all(
        ...         x, jnp.zeros((2, 1)), input_offsets=jnp.zeros(2, jnp.int32),
        ...         send_sizes=ones, output_offsets=jnp.full(2, me, jnp.int32),
        ...         recv_sizes=ones, axis_name="i")
        >>> plax.vmap(gather_rows, axis_name="i")(jnp.array([[[1.0]], [[2.0]]]))
        Array([[[1.],
                [2.]],
        <BLANKLINE>
               [[1.],
                [2.]]], dtype=float32)
    """
    names = canonicalize_axis_names(axis_name)
    if axis_index_groups is not None:
        axis_index_groups = tuple(tuple(operator.index(i) for i in g) for g in axis_index_groups)
    size = _group_size(names, axis_index_groups)
    slices = get_aval(input_offsets)
    if slices.ndim == 1 and slices.shape[0] % size:  # (other shapes: the abstract eval)
        raise ValueError(f"ragged_all_to_all: the number of slices {slices.shape[0]} must be "
                         f"a multiple of the number of members {size} of axis {names!r} (the "
                         "same number of slices for each)")
    return ragged_all_to_all_p.bind(operand, output, input_offsets, send_sizes, output_offsets,
                                    recv_sizes, axis_name=names,
                                    axis_index_groups=axis_index_groups)

"""The result specs of gather and scatter on operands with shardings in their types,
or None where the layout cannot be decided without collectives (the caller turns
that into JAX's "use out_sharding" error).

A gather's result dimensions come from the operand's window (offset) dimensions and
from the indices' query dimensions. It is decidable when every operand dimension
indexed into is either taken whole or unsplit, the indices' query dimensions that
are not batching dimensions are unsplit (else the transposed scatter would need
collectives), and each batching pair agrees (or one side is unsplit). A scatter is
the inverse: the result keeps the operand's spec, batching dimensions resolve over
operand, indices and updates, window dimensions taken whole agree between operand
and updates (others are unsplit on both), inserted dimensions are unsplit in the
operand, and the updates' and indices' other query dimensions and the index vector
are unsplit.
"""
from __future__ import annotations


def _agree(*entries) -> bool:
    """At most one distinct split among `entries` (None agrees with anything)."""
    return len({e for e in entries if e is not None}) <= 1


def _first_split(*entries):
    return next((e for e in entries if e is not None), None)


def gather_spec(operand_shape, operand_spec, indices_spec, dnums, slice_sizes):
    """The spec of `gather`'s result, or None where it is ambiguous."""
    if not any(operand_spec) and not any(indices_spec):
        return (None,) * (len(dnums.offset_dims) + len(indices_spec) - 1)
    indexed_whole_or_unsplit = all(
        slice_sizes[d] == operand_shape[d] or operand_spec[d] is None
        for d in dnums.start_index_map)
    batch_pairs = list(zip(dnums.operand_batching_dims, dnums.start_indices_batching_dims))
    batches_agree = all(_agree(operand_spec[o], indices_spec[i]) for o, i in batch_pairs)
    queries_unsplit = all(
        e is None for i, e in enumerate(indices_spec)
        if i not in dnums.start_indices_batching_dims)  # the index vector included
    if not (indexed_whole_or_unsplit and batches_agree and queries_unsplit):
        return None
    queries = list(indices_spec[:-1])
    for o, i in batch_pairs:
        queries[i] = _first_split(indices_spec[i], operand_spec[o])
    windows = iter(operand_spec[d] for d in range(len(operand_spec))
                   if d not in dnums.collapsed_slice_dims
                   and d not in dnums.operand_batching_dims)
    rest = iter(queries)
    return tuple(next(windows) if d in dnums.offset_dims else next(rest)
                 for d in range(len(dnums.offset_dims) + len(queries)))


def _updates_query_dims(updates_ndim: int, window_dims) -> list[int]:
    """The dimensions of the updates that are queries (not window dimensions), in
    the order of the indices' query dimensions."""
    return [d for d in range(updates_ndim) if d not in window_dims]


def scatter_spec(operand_shape, operand_spec, indices_spec, updates_shape, updates_spec,
                 dnums):
    """The spec of a scatter's result, or None where it is ambiguous."""
    if not any(operand_spec) and not any(indices_spec) and not any(updates_spec):
        return (None,) * len(operand_spec)
    queries = _updates_query_dims(len(updates_spec), dnums.update_window_dims)
    update_batch = [queries[i] for i in dnums.scatter_indices_batching_dims]
    batches = list(zip(dnums.operand_batching_dims, dnums.scatter_indices_batching_dims,
                       update_batch))
    operand_windows = [d for d in range(len(operand_spec))
                       if d not in dnums.inserted_window_dims
                       and d not in dnums.operand_batching_dims]
    windows = list(zip(dnums.update_window_dims, operand_windows))
    decidable = (
        all(_agree(operand_spec[o], indices_spec[i], updates_spec[u]) for o, i, u in batches)
        and all((updates_shape[u] == operand_shape[o] and updates_spec[u] == operand_spec[o])
                or (updates_spec[u] is None and operand_spec[o] is None)
                for u, o in windows)
        and all(operand_spec[d] is None for d in dnums.inserted_window_dims)
        and all(updates_spec[d] is None for d in queries if d not in update_batch)
        and all(e is None for i, e in enumerate(indices_spec)
                if i not in dnums.scatter_indices_batching_dims))  # index vector too
    if not decidable:
        return None
    out = list(operand_spec)
    for o, i, u in batches:
        out[o] = _first_split(operand_spec[o], indices_spec[i], updates_spec[u])
    for u, o in windows:
        out[o] = _first_split(operand_spec[o], updates_spec[u])
    return tuple(out)

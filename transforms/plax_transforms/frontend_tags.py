"""Putting an equation's XLA frontend attributes (`eqn.frontend_attributes`, set by
`plax.experimental.xla_metadata` and `compute_on`) on the ops lowered from it.

As in JAX, metadata goes on the ops that produce the equation's results (an implicit
broadcast of a scalar operand keeps none); the attributes that say where an op runs
go on every op the equation emitted but constants, so that a scalar broadcast the
rule adds runs on the host with the rest. Only ops the equation's own rule emitted
are tagged: a result that is an operand passed through keeps its producer's tags.
"""
from __future__ import annotations

import contextlib
from typing import Iterator, Sequence

from jaxlib.mlir import ir

PLACEMENT_KEYS = frozenset({"_xla_compute_type", "_xla_stream_annotation", "inlineable"})
FRONTEND_ATTRIBUTES = "mhlo.frontend_attributes"
# The platform whose lowering rules an op for another compute unit takes (as in JAX:
# host computations lower as on CPU, SparseCore ones as on TPU).
_COMPUTE_TYPE_PLATFORMS = {"host": "cpu", "sparseoffload": "tpu"}


def rule_platform(attributes: tuple[tuple[str, str], ...], platform: str) -> str:
    """The platform of the lowering rule for an equation tagged with `attributes` in
    a module for `platform`."""
    for key, value in attributes:
        if key == "_xla_compute_type":
            return _COMPUTE_TYPE_PLATFORMS.get(value, platform)
    return platform


def add_frontend_attributes(op: ir.Operation, attributes: dict[str, str]) -> None:
    """Merge `attributes` into `op`'s frontend attributes (those it has win)."""
    new = {k: ir.StringAttr.get(v) for k, v in attributes.items()}
    if FRONTEND_ATTRIBUTES in op.attributes:
        existing = {a.name: a.attr for a in ir.DictAttr(op.attributes[FRONTEND_ATTRIBUTES])}
        new = {**new, **existing}
    op.attributes[FRONTEND_ATTRIBUTES] = ir.DictAttr.get(new)


@contextlib.contextmanager
def emitting_apart() -> Iterator[list[ir.Operation]]:
    """Emit the ops of the body into a scratch block, then move them, in order, to
    the insertion point; the list yielded holds them afterwards (finding what a rule
    emitted costs what it emitted, not the size of the block)."""
    anchor = ir.Operation.create("builtin.unrealized_conversion_cast", loc=ir.Location.unknown())
    scratch = ir.Operation.create("builtin.module", regions=1, loc=ir.Location.unknown())
    scratch.detach_from_parent()
    block = scratch.regions[0].blocks.append()
    emitted: list[ir.Operation] = []
    with ir.InsertionPoint(block):
        yield emitted
    for op in block.operations:
        emitted.append(op.operation)
    for op in emitted:
        op.move_before(anchor)
    anchor.erase()


def tag_emitted_ops(attributes: tuple[tuple[str, str], ...], new: Sequence[ir.Operation],
                    results: Sequence[ir.Value]) -> None:
    """Tag with `attributes` the ops `new` that one equation's rule emitted (see the
    module doc), its results being `results`."""
    placement = {k: v for k, v in attributes if k in PLACEMENT_KEYS}
    metadata = {k: v for k, v in attributes if k not in PLACEMENT_KEYS}
    if placement:
        for op in new:
            if op.name != "stablehlo.constant":
                add_frontend_attributes(op, placement)
    if metadata:
        emitted = set(new)
        for value in results:
            owner = value.owner
            if isinstance(owner, (ir.OpView, ir.Operation)) and owner.operation in emitted:
                add_frontend_attributes(owner.operation, metadata)

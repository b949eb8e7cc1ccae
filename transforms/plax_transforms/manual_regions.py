"""Manual regions of a module: the bodies of `shard_map`s, which each device runs on
its own blocks.

`AxisContext` says where a region sits: the mesh's axes and which of them are manual
there. The collectives' lowering rules compute their device groups from it alone
(partition `p` of the module is the device at flat position `p` of the mesh).

A region manual over only some axes (`shard_map(..., axis_names=...)`) is still
partitioned over the others by XLA, so an op that asks which device it runs on
(`partition_id`) has no meaning there. `lower_fully_manual` emits such ops in a
region nested inside it that is manual over every mesh axis (Shardy: a nested
`sdy.manual_computation` over the remaining axes; GSPMD: the values marked manual
and made whole again over the axes that are automatic outside).

`gspmd_sharding` states a layout inside manual regions in GSPMD's form, and
`spmd_custom_call` emits GSPMD's annotation ops.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable, Hashable, Sequence

import numpy as np
from jaxlib import xla_client as xc
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import sdy

from plax.extend.core import ShapedArray, physical_aval
from plax.extend.mlir import hlo, mu


@dataclasses.dataclass(frozen=True)
class AxisContext:
    """Where a manual region of the module sits: the mesh's axis names and sizes in
    mesh order, and the axes that are manual there (every enclosing `shard_map`'s).

    Device-free: partition `p` of the module is the device at flat position `p` of
    the mesh, so groups of devices are computed from the sizes alone.
    """
    mesh_shape: tuple[tuple[Hashable, int], ...]
    manual_axes: frozenset

    @property
    def axis_sizes(self) -> dict[Hashable, int]:
        return dict(self.mesh_shape)

    @property
    def is_fully_manual(self) -> bool:
        """Whether no axis that splits the devices is left to the partitioner here."""
        return all(n in self.manual_axes for n, s in self.mesh_shape if s > 1)

    def check_manual(self, axes: Sequence[Hashable], what: str) -> None:
        """NameError unless every one of `axes` is manual here."""
        for name in axes:
            if name not in self.manual_axes:
                raise NameError(f"{what}: axis name {name!r} is not a manual axis of the "
                                f"enclosing shard_map (manual axes: "
                                f"{sorted(map(str, self.manual_axes))})")

    def replica_groups(self, axes: Sequence[Hashable]) -> list[list[int]]:
        """The partition ids of each group of devices that differ only in their
        position along `axes`; within a group, ordered by that position (the first
        of `axes` varying slowest)."""
        names = [n for n, _ in self.mesh_shape]
        sizes = [s for _, s in self.mesh_shape]
        grid = np.arange(math.prod(sizes)).reshape(sizes)
        moved = [names.index(a) for a in axes]
        grid = np.moveaxis(grid, moved, list(range(len(moved))))
        return np.reshape(grid, (math.prod(sizes[i] for i in moved), -1)).T.tolist()

    def stride(self, axis: Hashable) -> int:
        """How many partition ids apart neighbours along `axis` are."""
        names = [n for n, _ in self.mesh_shape]
        return math.prod(s for _, s in self.mesh_shape[names.index(axis) + 1:])

    def hlo_sharding(self, ndim: int) -> xc.HloSharding:
        """GSPMD's sharding of a value of rank `ndim` that each device of this region
        holds as its own: manual over the manual axes, replicated over the others."""
        return gspmd_sharding(self.mesh_shape, [()] * ndim, self.manual_axes)


def gspmd_sharding(mesh_shape, split_axes: Sequence[tuple], manual_axes=frozenset()
                   ) -> xc.HloSharding:
    """The device-free HloSharding that splits dimension `i` over the mesh axes
    `split_axes[i]` (major first), is manual over the other `manual_axes` and
    replicates over the remaining axes; axes of size 1 play no part."""
    sizes = dict(mesh_shape)
    names = [n for n, _ in mesh_shape]
    split_axes = [tuple(a for a in axes if sizes[a] > 1) for axes in split_axes]
    used = [a for axes in split_axes for a in axes]
    manual = [a for a in names if a in manual_axes and a not in used and sizes[a] > 1]
    rest = [a for a in names if a not in used and a not in manual]
    tiles = [math.prod(sizes[a] for a in axes) for axes in split_axes]
    n_manual, n_rest = (math.prod(sizes[a] for a in axes) for axes in (manual, rest))
    if math.prod(tiles) == 1 and n_manual == 1:
        return xc.HloSharding.replicate()
    if math.prod(tiles) == 1 and n_rest == 1:
        return xc.HloSharding.manual()
    groups = [(n, t) for n, t in ((n_manual, xc.OpSharding.Type.MANUAL),
                                  (n_rest, xc.OpSharding.Type.REPLICATED)) if n > 1]
    return xc.HloSharding.iota_tile(tiles + [n for n, _ in groups], [sizes[a] for a in names],
                                    [names.index(a) for a in used + manual + rest],
                                    [t for _, t in groups])


def spmd_custom_call(target: str, value: ir.Value, aval: ShapedArray,
                     sharding: xc.HloSharding, open_ndim: int = 0) -> ir.Value:
    """GSPMD's annotation op `target` on `value`, of result type `aval`: `Sharding`
    (`value` laid out as `sharding`), `SPMDFullToShardShape` (enter a manual region:
    the device's block) or `SPMDShardToFullShape` (leave it). The first `open_ndim`
    dimensions are left to the partitioner."""
    open_dims = ",".join(map(str, range(open_ndim)))
    op = hlo.CustomCallOp([mu.ir_type(aval)], [value], call_target_name=target,
                          backend_config=ir.StringAttr.get(
                              f"unspecified_dims=[{open_dims}]" if open_dims else ""))
    op.attributes["mhlo.sharding"] = ir.StringAttr.get(str(sharding))
    return op.result


def lower_fully_manual(mctx, build: Callable[..., Sequence[ir.Value]],
                       avals: Sequence[ShapedArray], operands: Sequence[ir.Value] = (),
                       operand_avals: Sequence[ShapedArray] = ()) -> list[ir.Value]:
    """Emit `build(*operands)` (returning values of types `avals`) in a region manual
    over every mesh axis, nested in the partially manual region `mctx` lowers now;
    its results. Operands and results are values each device holds whole here; the
    results must be the same on the devices that differ only along the axes
    automatic here (such as a device's index along a manual axis).

    Constants `build` needs are best passed as operands: GSPMD may merge a constant
    inside the nested region with an equal one outside it, whose layouts then
    conflict."""
    outer = mctx.axis_context
    inner = AxisContext(outer.mesh_shape, frozenset(n for n, _ in outer.mesh_shape))
    ndims = [physical_aval(a).ndim for a in avals]
    in_ndims = [physical_aval(a).ndim for a in operand_avals]
    if mctx.shardy:
        mesh = tuple((str(n), s) for n, s in outer.mesh_shape)
        newly_manual = [str(n) for n, _ in outer.mesh_shape if n not in outer.manual_axes]

        def whole(ranks):
            return sdy.TensorShardingPerValueAttr.get(
                [mctx.replicated_attribute(nd, mesh_shape=mesh) for nd in ranks])
        op = sdy.ManualComputationOp(
            mu.ir_types(avals), list(operands), whole(in_ndims), whole(ndims),
            sdy.ManualAxesAttr.get([ir.StringAttr.get(a) for a in newly_manual]))
        block = ir.Block.create_at_start(op.body, mu.ir_types(operand_avals))
        with ir.InsertionPoint(block), mctx.manual_region(inner):
            sdy.return_(list(build(*block.arguments)))
        return list(op.results)

    def move(target, value, aval, ndim, src, dst):
        value = spmd_custom_call("Sharding", value, aval, src.hlo_sharding(ndim))
        return spmd_custom_call(target, value, aval, dst.hlo_sharding(ndim))
    args = [move("SPMDFullToShardShape", v, a, nd, outer, inner)
            for v, a, nd in zip(operands, operand_avals, in_ndims)]
    with mctx.manual_region(inner):
        values = list(build(*args))
    return [move("SPMDShardToFullShape", v, a, nd, inner, outer)
            for v, a, nd in zip(values, avals, ndims)]

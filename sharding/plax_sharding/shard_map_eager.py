"""Eager `shard_map`: the body of a call made outside `jit` runs one primitive at a
time, on every device at once, as JAX's does (so `print` inside it shows each
device's block).

A value of the body is a `ShardMapTracer` whose `val` stacks every device's block
along a new leading axis, split over the manual axes the value varies over (in mesh
order; over all manual axes with check_vma=False): each device holds its own block,
with a leading axis of size 1. A primitive applied to such values runs as a shard_map
of that one primitive (each device takes its blocks out of the stack, applies it, and
stacks the results), staged once per primitive, parameters and types, then compiled
and cached as every eager `shard_map_p` is. Values the body did not compute (closed
over, or Python scalars) enter whole, as every device holds them. The arguments enter
and the outputs leave by the same means, split and assembled as their specs say.

With check_vma, each value is typed with the axes it varies over (`{V:i}`), as while
the body is traced under jit; one that varies over none converts to a Python scalar.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np
from jaxlib._jax import config as _jaxlib_config

from plax.extend import config, tree_util
from plax.extend.sharding import meshes_in_context
from plax.extend.core import (
    EVAL_TRACE,
    ClosedJaxpr,
    Primitive,
    ShapedArray,
    Trace,
    Tracer,
    escaped_tracer_error,
    get_aval,
    register_cache,
    set_current_trace,
    stage_flat,
)
from plax_stdlib.lax import shape_ops
from plax_sharding.device_put_primitive import device_put_p
from plax_sharding.mesh import Mesh
from plax_sharding.partition_spec import PartitionSpec
from plax_sharding.shard_map_primitive import body_context, shard_map_p
from plax_sharding.vma import matching_required


class ShardMapTracer(Tracer):
    """A value of an eager shard_map's body: every device's block, stacked in `val`
    over the manual axes `axes`; `aval` is one block's type."""
    __slots__ = ("val", "axes", "_aval")

    def __init__(self, trace: ShardMapTrace, val, aval: ShapedArray, axes: tuple):
        super().__init__(trace)
        self.val, self._aval, self.axes = val, aval, axes

    @property
    def aval(self):
        return self._aval

    def to_concrete_value(self):
        """The value, when it is known to be the same on every device (check_vma)."""
        if self._trace.check_vma and not self._aval.manual_axis_type.vur:
            return np.asarray(self.val)[0]
        return None

    def __str__(self):
        """Each device's block, headed by the device and its mesh coordinates (JAX's)."""
        mesh = self._trace.mesh
        with set_current_trace(EVAL_TRACE), meshes_in_context(None, None):  # one device's
            held = {s.device: s.data[0] for s in self.val.addressable_shards}
        names = f"({', '.join(map(str, mesh.axis_names))},)"
        return "\n".join(f"On {device} at mesh coordinates {names} = {idx}:\n"
                         f"{str(held[device])}\n"
                         for idx, device in np.ndenumerate(mesh.devices))

    __repr__ = __str__  # as JAX's, for debuggers


class ShardMapTrace(Trace):
    """Runs primitives on the blocks of every device of `mesh`, manual over
    `manual_axes`."""

    def __init__(self, mesh: Mesh, manual_axes: tuple, check_vma: bool):
        super().__init__()
        self.mesh, self.manual_axes, self.check_vma = mesh, manual_axes, bool(check_vma)

    def describe(self):
        return f"the body of an eager shard_map over mesh axes {self.manual_axes}"

    def value_origin(self, tracer) -> str:
        if not self.check_vma:
            return (f"With check_vma=False, every value counts as varying over the manual "
                    f"axes {self.manual_axes}: each device holds its own.")
        return (f"It varies over mesh axes {tracer.axes}: each device holds its own value "
                "(lax.psum or lax.all_gather make it the same on every device).")

    def run(self, body: Callable, args: Sequence[Any], in_specs: Sequence[PartitionSpec],
            blocks: Sequence[ShapedArray]) -> tuple[list, Any]:
        """`body` applied to each device's blocks of `args` (split as `in_specs` say, of
        types `blocks`): its flat outputs and their treedef."""
        tracers = self._apply(None, [_Operand(x, s, b, False)
                                     for x, s, b in zip(args, in_specs, blocks)])
        try:
            with set_current_trace(self), body_context(self.mesh, self.manual_axes,
                                                       self.check_vma):
                out = body(*tracers)
            return tree_util.tree_flatten(out)
        finally:
            self.invalidate()

    def assemble(self, outs: Sequence[Any], out_specs: Sequence[PartitionSpec]) -> list:
        """The global arrays whose blocks `outs` are, laid out as `out_specs` say."""
        return self._apply(None, [self._operand(x) for x in outs], tuple(out_specs))

    def process_primitive(self, primitive: Primitive, args, params):
        rule = _EAGER_RULES.get(primitive)
        if rule is not None:
            return rule(*args, **params)
        outs = self._apply((primitive, tuple(params.items())),
                           [self._operand(x) for x in args])
        return outs if primitive.multiple_results else outs[0]

    def _operand(self, x) -> _Operand:
        """This trace's values enter stacked; any other array enters whole."""
        if isinstance(x, ShardMapTracer) and x._trace is self:
            return _Operand(x.val, _stacked_spec(x.axes), x.aval, True)
        if isinstance(x, Tracer):
            raise escaped_tracer_error(x)
        return _Operand(x, PartitionSpec(), get_aval(x), False)

    def _apply(self, bound, operands: Sequence[_Operand], out_specs: tuple | None = None):
        """Each device applies `bound` (a primitive and its parameters; None for the
        identity) to its blocks of `operands`: the results stacked as tracers, or, given
        `out_specs`, assembled as global arrays."""
        in_specs = tuple(o.spec for o in operands)
        avals = tuple(o.block for o in operands)
        key = (bound, avals, tuple(a.manual_axis_type for a in avals), in_specs,
               tuple(o.stacked for o in operands), out_specs, self.mesh, self.manual_axes,
               self.check_vma, _jaxlib_config.trace_context())
        try:
            hash(key)
        except TypeError:  # parameters that cannot be hashed: staged afresh
            body, specs, out_blocks = _staged.__wrapped__(*key)
        else:
            body, specs, out_blocks = _staged(*key)
        with set_current_trace(EVAL_TRACE):
            outs = shard_map_p.bind(*(o.val for o in operands), jaxpr=body, mesh=self.mesh,
                                    in_specs=in_specs, out_specs=specs,
                                    manual_axes=self.manual_axes, check_vma=self.check_vma)
        if out_specs is not None:
            return outs
        return [ShardMapTracer(self, o, b, s.axes_of(0)) for o, b, s in zip(outs, out_blocks,
                                                                           specs)]


class _Operand(NamedTuple):
    """An operand of a per-device application: its value, the spec that splits it into
    blocks, a block's type, and whether the blocks are stacked (see the module's doc)."""
    val: Any
    spec: PartitionSpec
    block: ShapedArray
    stacked: bool


def _stacked_spec(axes: tuple) -> PartitionSpec:
    """The spec of stacked blocks: the leading axis split over `axes`."""
    return PartitionSpec(axes[0] if len(axes) == 1 else (axes or None))


@functools.lru_cache(maxsize=1024)
def _staged(bound, avals, mats, in_specs, stacked, out_specs, mesh, manual_axes, check_vma,
            _context) -> tuple[ClosedJaxpr, tuple, list]:
    """The per-device body of `_apply` (see there), the specs of its results, and the
    types of the result blocks."""
    out_blocks: list = []

    def body(*xs):
        blocks = [shape_ops.squeeze(x, (0,)) if s else x for x, s in zip(xs, stacked)]
        outs = list(blocks) if bound is None else _bind(bound, blocks)
        out_blocks[:] = [get_aval(o) for o in outs]
        return outs if out_specs is not None else [shape_ops.expand_dims(o, (0,)) for o in outs]

    typed = [a.update_manual_axis_type(m) for a, m in zip(avals, mats)]
    # With jax_auto_pcast off, operands varying over different axes are refused here,
    # at the primitive, where under jit they are refused at shard_map's outputs.
    with body_context(mesh, manual_axes, check_vma), \
            matching_required(check_vma and not config.auto_pcast.value):
        closed = stage_flat(body, [_with_stack(a) if s else a for a, s in zip(typed, stacked)])
    if out_specs is None:
        out_specs = tuple(_stacked_spec(tuple(a for a in mesh.axis_names if a in b.vma)
                                        if check_vma else manual_axes) for b in out_blocks)
    return closed, out_specs, out_blocks


register_cache(_staged.cache_clear)


def _bind(bound, blocks) -> list:
    primitive, params = bound
    outs = primitive.bind(*blocks, **dict(params))
    return list(outs) if primitive.multiple_results else [outs]


def _with_stack(aval: ShapedArray) -> ShapedArray:
    """The type of a block stacked with others: a leading axis of size 1."""
    typed = aval.typed_sharding
    if typed is not None:
        typed = typed.update(spec=PartitionSpec(None, *typed.spec.for_rank(aval.ndim)))
    return aval.update(shape=(1, *aval.shape), sharding=typed)


def _device_put(x, *, device, donate, may_alias):
    """`device_put` in the body leaves each block where it is, and refuses a target."""
    if device is not None:
        raise ValueError("device_put with explicit device not allowed within "
                         f"shard_map-decorated functions, but got device {device}")
    return x


_EAGER_RULES: dict[Primitive, Callable] = {device_put_p: _device_put}

"""`custom_partitioning`: a function whose SPMD partitioning the user writes.

Calling the decorated function traces its body into a closed Jaxpr and binds
`sharding.custom_partitioning`. Evaluated eagerly, or lowered for one device (or
inside a region manual over every mesh axis), it is just that body. Lowered for
several devices it becomes XLA's `CustomSPMDPartitioning` custom call, whose backend
config is the key of a `_Partitioner` in `_partitioners`: jaxlib's custom-call
partitioner (registered once, below) calls back into Python while XLA partitions
the module. Under Shardy the call carries the user's `sharding_rule` as an
`sdy.sharding_rule` attribute, which propagation reads; under GSPMD propagation asks
`infer_sharding_from_operands` and `propagate_user_sharding`. Either way the SPMD
partitioner then calls `partition(*static_args, mesh, arg_shapes, result_shape)`
with the shardings it chose (as `NamedSharding`s on the call's mesh, or
`GSPMDSharding`s without `decode_shardings`), and inserts, per device, the module
that plax lowers from the returned per-shard function, resharding the operands and
results to the shardings returned with it.

The module is lowered once per abstract layout and compiled per device assignment,
so the mesh the callbacks see is made at compile time from the devices being compiled
for (`executing.compiling_for`): the mesh of the call's NamedShardings over them, or
one with the axes of the mesh in context when the function was lowered (with
neither, the rules get `mesh=None` and `GSPMDSharding`s). Inside a shard_map manual
over some axes, XLA lays the call out within each group of devices along the
automatic axes: the rules get the whole mesh and `GSPMDSharding`s over the first
group's devices (as JAX gives), and the per-shard function is lowered manual over
every axis, so its collectives name the whole mesh's axes. A callable
`sharding_rule` runs while lowering, which names no devices: it is given the
abstract mesh in context (or None).

As in JAX 0.10, there are no jvp or batching rules: differentiating or vmapping a
custom-partitioned function raises NotImplementedError.
"""
from __future__ import annotations

import contextlib
import inspect
import math
import weakref
from typing import Callable, Sequence

import numpy as np
from jaxlib import xla_client as xc

from plax.errors import UnexpectedTracerError
from plax.extend import config, tree_util
from plax.extend.batching import extend_axis_env
from plax.extend.core import (ClosedJaxpr, Primitive, ShapedArray, ShapeDtypeStruct, Tracer,
                              check_callable, eval_jaxpr, finalize_debug_info, get_aval,
                              make_tracing_debug_info, result_paths_from_tree, stage_flat)
from plax.extend.mlir import hlo, ir, mu
from plax.extend.sharding import Sharding, abstract_mesh
from plax_runtime.sharding_impls import GSPMDSharding
from plax_sharding.mesh import Mesh
from plax_sharding.named_sharding import NamedSharding
from plax_sharding.partition_spec import PartitionSpec
from plax_sharding.sharding_rule_spec import (SdyShardingRule, rule_attribute,
                                              str_to_sdy_sharding_rule)
from plax_transforms import executing
from plax_transforms.lowering import lower_jaxpr_to_module
from plax_transforms.manual_regions import AxisContext
from plax_transforms.mlir_context import own_ir_context

_CALL_TARGET = "CustomSPMDPartitioning"

custom_partitioning_p = Primitive("sharding.custom_partitioning", multiple_results=True)


# --- the decorator ---------------------------------------------------------------------

class custom_partitioning:
    """Wraps `fun` so that XLA partitions it with the rules `def_partition` gives
    (JAX's `jax.experimental.custom_partitioning.custom_partitioning`).

    Arguments at `static_argnums` are passed to the rules first, as Python values."""

    def __init__(self, fun: Callable, static_argnums: Sequence[int] = ()):
        check_callable(fun, "custom_partitioning")
        self.fun = fun
        self.static_argnums = tuple(static_argnums)
        self.partition = None
        self.propagate_user_sharding = None
        self.infer_sharding_from_operands = None
        self.decode_shardings = True
        self.sharding_rule = None

    def __getattr__(self, name: str):
        # the wrapped function's attributes (`__name__`, `__doc__`...) show through
        if name == "fun":
            raise AttributeError(name)
        return getattr(self.fun, name)

    def def_partition(self, partition, infer_sharding_from_operands=None,
                      propagate_user_sharding=None, decode_shardings=True,
                      sharding_rule=None, *, reduction_factors=(),
                      need_replication_factors=(), permutation_factors=(),
                      **factor_sizes):
        """Set the rules; `sharding_rule` is an `SdyShardingRule`, an einsum-like
        string (with the factor keywords), or a callable
        `(*static_args, mesh, operand_types, result_types)` returning either."""
        self.partition = partition
        self.propagate_user_sharding = propagate_user_sharding
        self.infer_sharding_from_operands = infer_sharding_from_operands
        self.decode_shardings = decode_shardings
        if isinstance(sharding_rule, str):
            sharding_rule = str_to_sdy_sharding_rule(
                sharding_rule, reduction_factors=reduction_factors,
                need_replication_factors=need_replication_factors,
                permutation_factors=permutation_factors, **factor_sizes)
        else:
            unused = dict(factor_sizes)
            for kind, factors in (("reduction_factors", reduction_factors),
                                  ("need_replication_factors", need_replication_factors),
                                  ("permutation_factors", permutation_factors)):
                if factors:
                    unused[kind] = factors
            if unused:
                raise ValueError(f"Unknown keyword arguments: {unused}")
            if not (sharding_rule is None or callable(sharding_rule)
                    or isinstance(sharding_rule, SdyShardingRule)):
                raise TypeError("sharding_rule must be an SdyShardingRule, an einsum-like "
                                f"string or a callable, got {type(sharding_rule).__name__}")
        self.sharding_rule = sharding_rule
        return partition

    def __call__(self, *args, **kwargs):
        if self.partition is None:  # JAX fails reading the unset rules: an AttributeError
            raise AttributeError(f"custom_partitioning function {_name(self.fun)} has no "
                                 "partition rule; call def_partition before calling it")
        args = _positional(self.fun, args, kwargs)
        static = set(self.static_argnums)
        for i in static:
            if not -len(args) <= i < len(args):
                raise ValueError(f"custom_partitioning: static_argnums {self.static_argnums} "
                                 f"names argument {i}, but the function was called with "
                                 f"{len(args)} positional arguments")
        static = {i % len(args) for i in static}
        static_args = tuple(args[i] for i in sorted(static))
        if any(isinstance(leaf, Tracer) for leaf in tree_util.tree_leaves(static_args)):
            raise UnexpectedTracerError(
                "Found a traced value passed as an argument to a custom_partitioning "
                "function in a position indicated as static by static_argnums.")
        dynamic = tuple(a for i, a in enumerate(args) if i not in static)
        flat, in_tree = tree_util.tree_flatten(dynamic)
        try:
            in_avals = [get_aval(x) for x in flat]
        except TypeError as err:
            raise TypeError(f"custom_partitioning function {_name(self.fun)}: {err}") from None
        out_tree: list = []

        def body(*leaves):
            it = iter(in_tree.unflatten(leaves))
            full = [args[i] if i in static else next(it) for i in range(len(args))]
            outs, tree = tree_util.tree_flatten(self.fun(*full))
            out_tree[:] = [tree]
            return outs

        call = stage_flat(body, in_avals)
        if any(isinstance(c, Tracer) for c in call.consts):
            raise NotImplementedError(
                f"custom_partitioning function {_name(self.fun)} closes over a value traced "
                "by an enclosing transformation; pass it as an argument instead")
        dbg = make_tracing_debug_info("custom_partitioning", self.fun, args, {},
                                      static_argnums=tuple(static))
        call = call.replace(jaxpr=call.jaxpr.replace(debug_info=finalize_debug_info(
            dbg, result_paths_from_tree(out_tree[0]))))
        rule = _rule_for_partitioner(self)
        shardy = config.use_shardy_partitioner.value
        outs = custom_partitioning_p.bind(
            *flat, call=call, partition=self.partition,
            propagate_user_sharding=None if shardy else self.propagate_user_sharding,
            infer_sharding_from_operands=None if shardy else self.infer_sharding_from_operands,
            decode_shardings=self.decode_shardings, sharding_rule=rule, in_tree=in_tree,
            out_tree=out_tree[0], static_args=static_args)
        return out_tree[0].unflatten(outs)


def _name(fun) -> str:
    return getattr(fun, "__name__", type(fun).__name__)


def _positional(fun, args: tuple, kwargs: dict) -> tuple:
    """Every argument by position, defaults filled in (static_argnums count them)."""
    try:
        bound = inspect.signature(fun).bind(*args, **kwargs)
    except ValueError:  # no signature (a builtin): only positional calls work
        if kwargs:
            raise TypeError("keyword arguments could not be resolved to positions") from None
        return args
    bound.apply_defaults()
    if bound.kwargs:
        raise TypeError("keyword arguments could not be resolved to positions")
    return bound.args


def _rule_for_partitioner(f: custom_partitioning):
    """The sharding rule the partitioner in use reads: Shardy needs `sharding_rule`
    (JAX's NotImplementedError where only GSPMD's propagation callbacks are given)."""
    if not config.use_shardy_partitioner.value:
        return None
    if f.sharding_rule is None and (f.propagate_user_sharding is not None
                                    or f.infer_sharding_from_operands is not None):
        raise NotImplementedError(
            "Shardy is used, but sharding propagation callbacks instead of sharding_rule "
            "are provided. Need to provide sharding_rule to migrate to Shardy.")
    return f.sharding_rule


# --- the primitive ---------------------------------------------------------------------

@custom_partitioning_p.def_abstract_eval
def _abstract_eval(*avals, call: ClosedJaxpr, **_):
    return list(call.out_avals)


@custom_partitioning_p.def_impl
def _impl(*args, call: ClosedJaxpr, **_):
    return eval_jaxpr(call.jaxpr, call.consts, *args)


@custom_partitioning_p.def_lowering
def _lowering(ctx, *args, call: ClosedJaxpr, partition, propagate_user_sharding,
              infer_sharding_from_operands, decode_shardings, sharding_rule, in_tree,
              out_tree, static_args):
    axis_ctx = ctx.axis_context
    if ctx.num_partitions == 1 or (axis_ctx is not None and axis_ctx.is_fully_manual):
        return ctx.lower_subjaxpr(call, *args, name=_called(call))
    context_mesh = abstract_mesh()
    if context_mesh is not None and context_mesh.empty:
        context_mesh = None
    if axis_ctx is not None:  # in a shard_map manual over some axes: its mesh's
        mesh_shape, manual_axes = tuple(axis_ctx.mesh_shape), axis_ctx.manual_axes
    else:
        mesh_shape = tuple(context_mesh.shape_tuple) if context_mesh is not None else None
        manual_axes = frozenset()
    partitioner = _Partitioner(
        partition, propagate_user_sharding, infer_sharding_from_operands, decode_shardings,
        in_tree, out_tree, static_args, ctx.platform, mesh_shape, manual_axes)
    key = str(id(partitioner))
    _partitioners[key.encode()] = partitioner
    ctx.module_context.keepalives.append(partitioner)  # XLA holds only its key
    op = hlo.CustomCallOp(
        mu.ir_types(call.out_avals), list(args),
        call_target_name=ir.StringAttr.get(_CALL_TARGET),
        has_side_effect=ir.BoolAttr.get(False),
        api_version=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 2),
        called_computations=ir.ArrayAttr.get([]), backend_config=ir.StringAttr.get(key))
    if sharding_rule is not None and ctx.shardy:
        in_shapes = [tuple(a.shape) for a in ctx.avals_in]
        out_shapes = [tuple(a.shape) for a in call.out_avals]
        if callable(sharding_rule) and not isinstance(sharding_rule, SdyShardingRule):
            sharding_rule = _rule_from_callable(sharding_rule, static_args, context_mesh,
                                                [a.type for a in args],
                                                [r.type for r in op.results])
        op.attributes["sdy.sharding_rule"] = rule_attribute(sharding_rule, in_shapes, out_shapes)
    return list(op.results)


def _rule_from_callable(make_rule, static_args, mesh, operand_types, result_types):
    made = make_rule(*static_args, mesh, operand_types, result_types)
    options = {}
    if isinstance(made, (tuple, list)) and len(made) == 2:
        made, options = made
    if isinstance(made, str):
        return str_to_sdy_sharding_rule(made, **options)
    if not isinstance(made, SdyShardingRule):
        raise ValueError("sharding_rule callable must produce either an SdyShardingRule "
                         "object or an Einsum-like notation string.")
    return made


def _called(call: ClosedJaxpr) -> str:
    dbg = call.jaxpr.debug_info
    return dbg.func_name if dbg is not None else "custom_partitioning"


# --- the partitioner's callbacks ------------------------------------------------------------

_partitioners: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


class _Target:
    """What the rules are told about the compile under way: its devices, the concrete
    mesh over them (None if unknown), and the devices the partitioner's shardings of
    this call span (inside a partly manual shard_map: one group of the automatic axes,
    the first along the manual ones)."""

    def __init__(self, devices: tuple, mesh: Mesh | None, manual_axes: frozenset):
        self.devices, self.mesh = devices, mesh
        self.group = devices
        if mesh is not None and manual_axes:
            names = list(mesh.axis_names)
            first = tuple(0 if n in manual_axes else slice(None) for n in names)
            self.group = tuple(mesh.devices[first].flat)


class _Partitioner:
    """One lowered call's rules, and how to speak of XLA's shapes and shardings to them."""

    def __init__(self, partition, propagate_user_sharding, infer_sharding_from_operands,
                 decode_shardings, in_tree, out_tree, static_args, platform, mesh_shape,
                 manual_axes):
        self.partition = partition
        self.propagate_user_sharding = propagate_user_sharding
        self.infer_sharding_from_operands = infer_sharding_from_operands
        self.decode_shardings = decode_shardings
        self.in_tree, self.out_tree = in_tree, out_tree
        self.static_args = static_args
        self.platform = platform
        self.mesh_shape = mesh_shape  # the mesh's (axis, size) pairs, if known when lowered
        self.manual_axes = manual_axes

    # what the rules are told ----------------------------------------------------------
    def _target(self) -> _Target:
        """The compile under way; its mesh is the call's NamedSharding's mesh over
        exactly these devices, else one over them with the axes known when the call
        was lowered. Its axes are `Auto`, as in JAX (the partitioner's choices are
        not types)."""
        devices, like = executing.compiling_for()
        devices = tuple(devices)
        for s in like:
            mesh = getattr(s, "mesh", None)
            if (isinstance(mesh, Mesh) and s._device_assignment == devices
                    and self.mesh_shape in (None, tuple(mesh.shape_tuple))):
                return _Target(devices, Mesh(mesh.devices, mesh.axis_names), self.manual_axes)
        if self.mesh_shape is not None and math.prod(n for _, n in self.mesh_shape) == len(
                devices):
            grid = np.array(devices, dtype=object).reshape([n for _, n in self.mesh_shape])
            return _Target(devices, Mesh(grid, [a for a, _ in self.mesh_shape]),
                           self.manual_axes)
        return _Target(devices, None, self.manual_axes)

    def _sharding(self, target: _Target, hlo_sharding, ndim: int):
        if hlo_sharding is None:
            return None
        if target.mesh is not None and self.decode_shardings and not self.manual_axes:
            named = NamedSharding(target.mesh, PartitionSpec())._like_from_xla(hlo_sharding,
                                                                               ndim)
            if named is not None:  # every dimension named, as JAX tells the rules
                spec = tuple(named.spec)
                return NamedSharding(target.mesh,
                                     PartitionSpec(*spec, *(None,) * (ndim - len(spec))))
        return GSPMDSharding(target.group, hlo_sharding)

    def _shapes(self, target, tree, shapes, shardings):
        return tree.unflatten([
            ShapeDtypeStruct(s.dimensions(), s.numpy_dtype(),
                             sharding=self._sharding(target, h, len(s.dimensions())))
            for s, h in zip(shapes, shardings)])

    # what the rules answer ------------------------------------------------------------
    def _hlo(self, target, tree, shardings, shapes, what: str) -> list[xc.HloSharding]:
        try:
            flat = tree.flatten_up_to(shardings)
        except (ValueError, TypeError) as err:
            raise ValueError(f"custom_partitioning: {what} must have the structure "
                             f"{tree}: {err}") from None
        out = []
        for sharding, shape in zip(flat, shapes):
            if not isinstance(sharding, Sharding):
                raise ValueError("Custom Partitioning rules must return Sharding.")
            try:
                spans = sharding._device_assignment
            except (ValueError, TypeError, AttributeError):  # an abstract mesh names none
                spans = target.group
            if tuple(spans) != target.group:
                raise ValueError(
                    f"custom_partitioning: {what} {sharding} spans other devices than the "
                    f"{len(target.group)} the partitioner lays this call out over, in their "
                    "order; use the mesh (or the shardings) the rules are given")
            out.append(sharding._to_xla_hlo_sharding(len(shape.dimensions())))
        return out

    # the callbacks --------------------------------------------------------------------
    def on_partition(self, arg_shapes, arg_shardings, result_shape, result_sharding):
        target = self._target()
        result_shapes, result_shardings = _elements(result_shape, result_sharding)
        mesh, lower_fn, out_shardings, in_shardings = self.partition(
            *self.static_args, target.mesh,
            self._shapes(target, self.in_tree, arg_shapes, arg_shardings),
            self._shapes(target, self.out_tree, result_shapes, result_shardings))
        out_hlo = self._hlo(target, self.out_tree, out_shardings, result_shapes,
                            "the result shardings partition returned")
        in_hlo = self._hlo(target, self.in_tree, in_shardings, arg_shapes,
                           "the argument shardings partition returned")
        tiled_in = [_aval(h.tile(s)) for h, s in zip(in_hlo, arg_shapes)]
        tiled_out = [_aval(h.tile(s)) for h, s in zip(out_hlo, result_shapes)]
        mesh = mesh if mesh is not None else target.mesh
        module = self._per_shard_module(lower_fn, mesh, tiled_in, tiled_out)
        return module, in_hlo, _packed(result_shape, out_hlo)

    def _per_shard_module(self, lower_fn, mesh, tiled_in, tiled_out) -> bytes:
        in_tree = self.in_tree

        def flat_fn(*blocks):
            return tree_util.tree_leaves(lower_fn(*in_tree.unflatten(blocks)))

        axes = tuple(mesh.shape_tuple) if mesh is not None else ()
        with contextlib.ExitStack() as stack:
            for name, size in axes:
                stack.enter_context(extend_axis_env(name, size))
            closed = stage_flat(flat_fn, tiled_in)
        got = [(tuple(a.shape), np.dtype(a.dtype)) for a in closed.out_avals]
        want = [(tuple(a.shape), np.dtype(a.dtype)) for a in tiled_out]
        if got != want:
            raise ValueError(f"Mismatch in result shapes. "
                             f"{[a.str_short() for a in closed.out_avals]} vs "
                             f"{[a.str_short() for a in tiled_out]}")
        # the whole module is one device's part: a region manual over every mesh axis
        manual = AxisContext(axes, frozenset(n for n, _ in axes)) if axes else None
        with own_ir_context():
            lowered = lower_jaxpr_to_module(
                closed, name="custom_partitioning_shard", platform=self.platform,
                keep_unused=True, hoist_constants=False, axis_context=manual)
        return lowered.bytecode

    def on_infer(self, arg_shapes, arg_shardings, result_shape):
        if self.infer_sharding_from_operands is None:  # no preference
            return None
        target = self._target()
        result_shapes, _ = _elements(result_shape, None)
        chosen = self.infer_sharding_from_operands(
            *self.static_args, target.mesh,
            self._shapes(target, self.in_tree, arg_shapes, arg_shardings),
            self.out_tree.unflatten([ShapedArray(s.dimensions(), s.numpy_dtype())
                                     for s in result_shapes]))
        return _packed(result_shape, self._hlo(target, self.out_tree, chosen, result_shapes,
                                               "infer_sharding_from_operands' result"))

    def on_propagate_user(self, user_sharding, shape):
        if self.propagate_user_sharding is None:
            return user_sharding
        target = self._target()
        shapes, shardings = _elements(shape, user_sharding)
        chosen = self.propagate_user_sharding(
            *self.static_args, target.mesh, self._shapes(target, self.out_tree, shapes, shardings))
        return _packed(shape, self._hlo(target, self.out_tree, chosen, shapes,
                                        "propagate_user_sharding's result"))


def _aval(shape) -> ShapedArray:
    return ShapedArray(tuple(shape.dimensions()), shape.numpy_dtype())


def _elements(shape, sharding):
    """The array shapes (and their shardings) of a result `shape`, a tuple or one."""
    if shape.is_tuple():
        shardings = (sharding.tuple_elements() if sharding is not None
                     else [None] * len(shape.tuple_shapes()))
        return list(shape.tuple_shapes()), list(shardings)
    return [shape], [sharding]


def _packed(shape, shardings: list[xc.HloSharding]) -> xc.HloSharding:
    return xc.HloSharding.tuple_sharding(shape, shardings) if shape.is_tuple() else shardings[0]


def _on_partition(arg_shapes, arg_shardings, result_shape, result_sharding, key):
    return _partitioners[key].on_partition(arg_shapes, arg_shardings, result_shape,
                                           result_sharding)


def _on_infer(arg_shapes, arg_shardings, result_shape, key):
    return _partitioners[key].on_infer(arg_shapes, arg_shardings, result_shape)


def _on_propagate_user(user_sharding, shape, key):
    return _partitioners[key].on_propagate_user(user_sharding, shape)


xc.register_custom_call_partitioner(_CALL_TARGET, _on_propagate_user, _on_partition, _on_infer,
                                    can_side_effecting_have_replicated_sharding=True)


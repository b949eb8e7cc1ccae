"""Lowering a Jaxpr to a StableHLO module.

Each equation is lowered by its primitive's `lowering` rule for the target
platform, `rule(ctx, *operands, **params)`, which emits MLIR ops and returns the
result value(s). `ctx` is a `LoweringRuleContext`: the input and output avals, the
platform, and `lower_subjaxpr` for higher-order primitives (a call to a private
function, emitted once per distinct sub-Jaxpr in a module).

The module's public `@main` takes the hoisted constants (device arrays the Jaxpr
closes over) followed by the inputs that survive dead-code elimination. Arguments
and results carry the user's names from the Jaxpr's debug info, as JAX 0.10's do:
arguments as name locations, results as `jax.result_info` attributes; every op is
located at the user's line that applied the primitive.

Ordered effects (`plax.extend.core.ordered_effects`) are threaded as tokens: `@main`
takes and returns one `!stablehlo.token` per ordered effect of the Jaxpr (ahead of
everything else, marked `jax.token`), private functions likewise, and each lowering
rule reads and replaces the current token of its effect in `ctx.tokens`. Host
callbacks (`ModuleContext.add_host_callback`) are handed to the compiler with the
module.

A module for several devices (`num_partitions > 1`) is partitioned by XLA's SPMD
partitioner. Arguments and results whose sharding is given carry it in Shardy's
form (`sdy.sharding`, with `sdy.mesh` symbols; the default) or GSPMD's
(`mhlo.sharding`), and memory kinds other than `device` as `mhlo.memory_kind`.
Shardings are stated without devices (mesh axis names and sizes, logical device
ids), so one module serves every device assignment of its shape.

Inside a manual region (the body of a `shard_map`, lowered to
`sdy.manual_computation`), `ctx.axis_context` is an `AxisContext`: the mesh's axes
and sizes and which of them are manual there. Collectives lower from it alone: their
device groups are positions in the mesh, which are the module's partition ids. What
needs the device's own partition id lowers through `ctx.lower_fully_manual` in a
partially manual region (see `manual_regions.py`).
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import re
import warnings
from typing import Any, Iterator, Sequence

import numpy as np
from jaxlib import _jax
from jaxlib.mlir import ir
from jaxlib.mlir._mlir_libs import _jax_mlir_ext
from jaxlib.mlir.dialects import func, sdy

from plax.extend import config, dtypes, registry as plugins, rules_of
from plax.extend.core import (
    LOWERING,
    AbstractValue,
    ClosedJaxpr,
    Jaxpr,
    Literal,
    Primitive,
    Tracer,
    dce_jaxpr,
    ordered_effects,
    physical_aval,
)
from plax.extend.mlir import hlo, mu
from plax.extend.sharding import Sharding
from plax.extend.traceback_util import is_plax_file
from plax_runtime.layouts import AUTO
from plax_transforms.frontend_tags import emitting_apart, rule_platform, tag_emitted_ops
from plax_transforms.manual_regions import AxisContext, lower_fully_manual
from plax_transforms.mlir_context import (
    module_to_bytecode,
    module_to_string,
    note_lowering,
    shared_ir_context,
)

# NumPy constants up to this size are written into the module; larger ones, and
# device arrays, are passed to `@main` as leading arguments instead.
INLINE_CONSTANT_BYTES = 1 << 20


# --- source locations ------------------------------------------------------------

def _user_filename(code) -> str | None:
    """The file of a frame to show in locations; None hides plax's own frames."""
    return None if is_plax_file(code.co_filename) else code.co_filename


# --- contexts ----------------------------------------------------------------------

class ModuleContext:
    """What is shared while lowering one module: the MLIR context and module, the
    target platform, how many devices it is partitioned over and in which dialect
    its shardings are stated, the private functions and mesh symbols already emitted."""

    def __init__(self, context: ir.Context, module: ir.Module, platform: str, *,
                 num_partitions: int = 1, shardy: bool = True, dim_vars: Sequence[str] = ()):
        self.context = context
        self.module = module
        self.platform = platform
        self.num_partitions = num_partitions
        self.shardy = shardy
        self.symbol_table = ir.SymbolTable(module.operation)
        # (id(jaxpr), ids of consts) → (function name, result types, the ClosedJaxpr,
        # kept alive so that the ids stay unique).
        self._functions: dict[tuple, tuple[str, list[ir.Type], ClosedJaxpr]] = {}
        # Shape polymorphism: the dimension variables every function takes first (as
        # `tensor<i32>` arguments), their values in the function being lowered, and
        # whether the module calls shape-polymorphic code and so needs shape
        # refinement before it is compiled.
        self.dim_vars = tuple(dim_vars)
        self.dim_values: list[list[ir.Value]] = []
        self.needs_shape_refinement = False
        self._meshes: dict[tuple, str] = {}  # (axes, device ids) → `sdy.mesh` symbol
        # Objects the compiled module refers to by address (callbacks of custom calls),
        # and functions to run once it is compiled for a device assignment.
        self.keepalives: list = []
        self.on_compile: list = []
        self.host_callbacks: list = []  # Python functions custom calls call by index
        self._host_channels = 1  # the last host-transfer channel id (1: the collectives')
        self._locations = _jax_mlir_ext.TracebackToLocationCache(_user_filename, 1, context)
        self.axis_context: AxisContext | None = None  # inside a manual region
        self.inline_calls = False  # see `inlining_calls`

    def add_keepalive(self, obj) -> None:
        """Keep `obj` alive as long as the compiled module (JAX's name)."""
        self.keepalives.append(obj)

    @contextlib.contextmanager
    def inlining_calls(self) -> Iterator[None]:
        """Lower sub-Jaxprs inline rather than as calls of private functions.

        XLA's StableHLO-to-HLO export aborts on a `func.call` in a `while` condition
        whose result does not depend on the loop's data (no operands, or only
        zero-sized ones: an empty carry, or a constant condition); the condition's
        region is lowered with every call inlined, as JAX inlines it."""
        previous, self.inline_calls = self.inline_calls, True
        try:
            yield
        finally:
            self.inline_calls = previous

    @contextlib.contextmanager
    def manual_region(self, axis_context: AxisContext) -> Iterator[None]:
        """Lower the ops of a manual region (a shard_map's body) in `axis_context`."""
        previous, self.axis_context = self.axis_context, axis_context
        try:
            yield
        finally:
            self.axis_context = previous

    def sharding_attribute(self, sharding: Sharding, ndim: int, *,
                           open_dims: bool = False, as_type: bool = False) -> ir.Attribute:
        """`sharding` for a value of rank `ndim` as an attribute of this module's
        dialect: an `sdy.TensorShardingAttr` naming a mesh symbol (emitted on first
        use), or GSPMD's `mhlo.sharding` string. `open_dims` leaves every dimension
        open to further sharding by the partitioner (Shardy only); `as_type`: the
        sharding is a value's type (a NamedSharding's `_to_sdy_sharding(as_type=)`)."""
        if not self.shardy:
            return ir.StringAttr.get(str(sharding._to_xla_hlo_sharding(ndim)))
        layout = _sdy_layout(sharding, ndim, as_type)
        if layout.mesh_shape is not None and layout.num_devices != self.num_partitions:
            raise ValueError(
                f"the sharding {sharding} spans {layout.num_devices} devices, but the "
                f"computation runs on {self.num_partitions}; its mesh must have as many "
                "devices as the arguments' (or the context mesh's) device assignment")
        mesh = self._mesh_symbol(layout.mesh_shape, layout.device_ids)
        dims = [sdy.DimensionShardingAttr.get([sdy.AxisRefAttr.get(a) for a in d.axes],
                                              not (d.is_open or open_dims))
                for d in layout.dims]
        return sdy.TensorShardingAttr.get(
            mesh, dims, replicated_axes=[sdy.AxisRefAttr.get(a) for a in layout.replicated_axes])

    def replicated_attribute(self, ndim: int, mesh_shape=None) -> ir.Attribute:
        """The sharding attribute of a value of rank `ndim` every device holds whole
        (Shardy: on the mesh of `mesh_shape`, `(name, size)` pairs; default the empty
        mesh)."""
        if not self.shardy:
            return ir.StringAttr.get("{replicated}")
        closed = sdy.DimensionShardingAttr.get([], True)
        mesh = self._mesh_symbol(mesh_shape, None if mesh_shape else ())
        return sdy.TensorShardingAttr.get(mesh, [closed] * ndim)

    def place_on_one_device(self, op: ir.Operation, device_index: int = 0) -> None:
        """Annotate `op` (all its results) with a sharding that puts it on the device
        at `device_index` of the module's devices: the partitioner runs it once, there
        (how host callbacks of a computation over several devices run once)."""
        if not self.shardy:
            op.attributes["mhlo.sharding"] = ir.StringAttr.get(f"{{maximal device={device_index}}}")
            return
        mesh = self._mesh_symbol((), (device_index,))
        one = sdy.TensorShardingAttr.get(mesh, [])
        op.attributes["sdy.sharding"] = sdy.TensorShardingPerValueAttr.get(
            [one] * max(1, len(op.results)))

    def _mesh_symbol(self, mesh_shape, device_ids) -> str:
        key = (mesh_shape, device_ids)
        name = self._meshes.get(key)
        if name is None:
            axes = [sdy.MeshAxisAttr.get(axis, size) for axis, size in mesh_shape or ()]
            wanted = ("empty_mesh" if mesh_shape is None else
                      f"maximal_mesh_{device_ids[0]}" if mesh_shape == () and device_ids
                      and len(device_ids) == 1 else
                      "mesh" if not self._meshes else f"mesh_{len(self._meshes)}")
            with ir.InsertionPoint.at_block_begin(self.module.body), ir.Location.unknown():
                op = sdy.MeshOp(wanted, sdy.MeshAttr.get(axes, list(device_ids or ())))
            name = ir.StringAttr(self.symbol_table.insert(op.operation)).value
            self._meshes[key] = name
        return name

    def add_host_callback(self, callback) -> int:
        """Register a Python function the compiled module calls back into; its index
        (what jaxlib's `xla_ffi_python_<platform>_callback` custom call is given)."""
        self.host_callbacks.append(callback)
        return len(self.host_callbacks) - 1

    def new_host_channel(self) -> int:
        """A channel id of its own for one send to or receive from the host."""
        self._host_channels += 1
        return self._host_channels

    def location(self, source_info, name: str) -> ir.Location:
        """A name location (`jit(f)/sin`) wrapping the user's source line."""
        child = (self._locations.get(source_info) if source_info is not None
                 else ir.Location.unknown())
        return ir.Location.name(name, childLoc=child)

    def function_for(self, closed: ClosedJaxpr, name: str,
                     name_stack: str) -> tuple[str, list[ir.Type]]:
        """The private function computing `closed`, emitted on first request: it takes
        and returns the tokens of `closed`'s ordered effects ahead of its values."""
        # The same Jaxpr inside and outside a manual region lowers differently.
        key = (id(closed.jaxpr), tuple(map(id, closed.consts)), self.axis_context)
        entry = self._functions.get(key)
        if entry is None:
            fn_name, result_types = _lower_private_function(self, closed, name, name_stack)
            entry = self._functions[key] = (fn_name, result_types, closed)
        return entry[0], entry[1]


@dataclasses.dataclass(frozen=True)
class LoweringRuleContext:
    """What a lowering rule is told about the equation it lowers."""
    module_context: ModuleContext
    primitive: Primitive
    avals_in: tuple[AbstractValue, ...]
    avals_out: tuple[AbstractValue, ...]
    name_stack: str
    # The current token of each ordered effect: a rule of an ordered effect reads its
    # token here and stores the one its op produces (the body's later equations see it).
    tokens: dict = dataclasses.field(default_factory=dict)

    @property
    def platform(self) -> str:
        return self.module_context.platform

    @property
    def num_partitions(self) -> int:
        """How many devices the module is partitioned over (1: no SPMD partitioning)."""
        return self.module_context.num_partitions

    @property
    def shardy(self) -> bool:
        """Whether shardings are stated in Shardy's `sdy` dialect (else GSPMD's)."""
        return self.module_context.shardy

    @property
    def axis_context(self) -> AxisContext | None:
        """The mesh axes manual here (inside a shard_map's body), or None."""
        return self.module_context.axis_context

    def sharding_attribute(self, sharding: Sharding, ndim: int, *,
                           open_dims: bool = False, as_type: bool = False) -> ir.Attribute:
        """See `ModuleContext.sharding_attribute`."""
        return self.module_context.sharding_attribute(sharding, ndim, open_dims=open_dims,
                                                      as_type=as_type)

    def lower_fully_manual(self, build, avals: Sequence[AbstractValue],
                           operands: Sequence[ir.Value] = (),
                           operand_avals: Sequence[AbstractValue] = ()) -> list[ir.Value]:
        """Emit `build(*operands)` in a region manual over every mesh axis, nested in
        this partially manual one (see `manual_regions.lower_fully_manual`); its
        results."""
        return lower_fully_manual(self.module_context, build, avals, operands, operand_avals)

    def lower_subjaxpr(self, closed_jaxpr: ClosedJaxpr, *args: ir.Value,
                       name: str | None = None, tokens: dict | None = None) -> list[ir.Value]:
        """Call a private function computing `closed_jaxpr` on `args`; its results.

        The tokens of its ordered effects are taken from and put back into `tokens`
        (default: `self.tokens`); a rule emitting a region passes the dict of tokens
        that region threads, and returns them from it."""
        name = name or self.primitive.name
        tokens = self.tokens if tokens is None else tokens
        effects = ordered_effects(closed_jaxpr.effects)
        if self.module_context.inline_calls and not effects:
            return self.lower_inline(closed_jaxpr, *args, name=name)
        fn_name, result_types = self.module_context.function_for(
            closed_jaxpr, name, f"{self.name_stack}/{self.primitive.name}({name})")
        dims = self.module_context.dim_values[-1] if self.module_context.dim_vars else []
        if dims is None:
            _no_dimension_values(f"a call of '{name}'")
        call = func.CallOp(result_types, ir.FlatSymbolRefAttr.get(fn_name),
                           [*dims, *(tokens[e] for e in effects), *args])
        results = list(call.results)
        tokens.update(zip(effects, results[:len(effects)]))
        return results[len(effects):]

    def emit_function(self, name: str, in_avals: Sequence[AbstractValue],
                      out_avals: Sequence[AbstractValue], body) -> str:
        """A private function from `in_avals` to `out_avals` whose ops `body(*args)`
        emits, without the dimension-variable arguments of the module's other
        functions (the reducer a custom call names in `called_computations`, as
        `stablehlo.dynamic_reduce_window` does); its symbol name."""
        mctx = self.module_context
        with ir.InsertionPoint(mctx.module.body), ir.Location.unknown():
            fn = func.FuncOp(sanitize_name(name), ir.FunctionType.get(
                mu.ir_types(in_avals), mu.ir_types(out_avals)))
        fn.attributes["sym_visibility"] = ir.StringAttr.get("private")
        mctx.symbol_table.insert(fn)
        with ir.InsertionPoint(fn.add_entry_block()), _without_dimensions(mctx):
            func.ReturnOp(list(body(*fn.arguments)))
        return ir.StringAttr(fn.attributes["sym_name"]).value

    def lower_inline(self, closed_jaxpr: ClosedJaxpr, *args: ir.Value,
                     name: str | None = None, tokens: dict | None = None) -> list[ir.Value]:
        """Emit `closed_jaxpr`'s ops at the current insertion point (inside a region
        the rule built); its results. `tokens` as in `lower_subjaxpr`."""
        consts = [_constant(_host_value(c), v.aval)
                  for v, c in zip(closed_jaxpr.jaxpr.constvars, closed_jaxpr.consts)]
        return lower_jaxpr_body(self.module_context, closed_jaxpr.jaxpr, consts, list(args),
                                "/".join(filter(None, (self.name_stack, self.primitive.name
                                                       if name is None else name))),
                                self.tokens if tokens is None else tokens)


# --- the module ----------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class LoweringResult:
    """A lowered module and how a call's flat inputs map onto `@main`'s arguments."""
    module: ir.Module
    context: ir.Context
    name: str
    kept_var_idx: tuple[int, ...]  # flat inputs `@main` takes, after the const args
    const_args: tuple[Any, ...]  # values passed ahead of them, in order
    in_avals: tuple[AbstractValue, ...]  # of `@main`'s arguments (const args first)
    arg_names: tuple[str, ...]  # of `@main`'s arguments ("" where unknown)
    out_avals: tuple[AbstractValue, ...]
    donated_args: tuple[bool, ...]  # per `@main` argument
    bytecode: bytes  # the module serialized, as the compiler takes it
    num_partitions: int = 1
    shardy: bool = True
    # The shardings the module states, per `@main` argument and result; None where
    # the partitioner chooses (an unannotated input or output).
    arg_shardings: tuple[Sharding | None, ...] = ()
    result_shardings: tuple[Sharding | None, ...] = ()
    jaxpr: Jaxpr | None = None  # the Jaxpr lowered (shardings inside it place outputs)
    keepalives: tuple = ()
    on_compile: tuple = ()  # run, in `executing.compiling_for`'s context, after a compile
    # The ordered effects whose tokens `@main` takes and returns first (not counted in
    # `in_avals`/`out_avals` and the rest), and the Python callbacks of its custom calls.
    ordered_effects: tuple = ()
    host_callbacks: tuple = ()

    @property
    def nbytes(self) -> int:
        """Roughly what the lowering holds: its module and hoisted constants."""
        return len(self.bytecode) + sum(getattr(c, "nbytes", 0) for c in self.const_args)

    def as_text(self, *, debug_info: bool = False) -> str:
        return module_to_string(self.module, debug_info=debug_info)


def sanitize_name(name: str) -> str:
    """`name` with characters that MLIR symbol names do not allow replaced by `_`."""
    return re.sub(r"[^A-Za-z0-9_.$-]", "_", name)


def module_name(name: str) -> str:
    """The lowered module's name, as JAX's: `jit_f`, `jit__lambda` (no trailing `_`)."""
    return ("jit_" + sanitize_name(name)).rstrip("_")


def lower_jaxpr_to_module(closed: ClosedJaxpr, *, name: str, platform: str,
                          donated_invars: Sequence[bool] | None = None,
                          keep_unused: bool = False, num_replicas: int = 1,
                          num_partitions: int = 1,
                          in_shardings: Sequence[Sharding | None] | None = None,
                          out_shardings: Sequence[Sharding | None] | None = None,
                          shardy: bool | None = None, hoist_constants: bool = True,
                          dim_vars: Sequence[str] = (),
                          aliases: Sequence[int | None] = (),
                          axis_context: AxisContext | None = None,
                          in_layouts: Sequence = (), out_layouts: Sequence = ()
                          ) -> LoweringResult:
    """Lower `closed` to a verified StableHLO module whose `@main` computes it.

    Inputs that no output (nor effect) depends on are pruned unless `keep_unused`; the
    result's `kept_var_idx` says which flat inputs remain. A donated input whose
    aval matches an output aliases it (`tf.aliasing_output`); other donated
    inputs are marked `jax.buffer_donor`. `in_shardings`/`out_shardings` (one per
    flat input/output, None where the partitioner chooses) are stated on `@main`;
    `shardy` defaults to `jax_use_shardy_partitioner`. With `hoist_constants=False`
    every constant is written into the module (as `plax.export` needs). A module
    whose avals have symbolic dimensions names its `dim_vars`: `@main` (and every
    private function) takes them first, as `tensor<i32>` values. `aliases` (empty, or
    one entry per input) names the output an input is donated to, and such an input
    is kept even if unused (a mutable reference's value and its final value).
    `axis_context` lowers the whole module as a manual region (one device's part of
    a computation over a mesh: what a custom partitioner inserts per device).
    `in_layouts`/`out_layouts` (empty, or one per flat input/output: a `Layout`,
    `Layout.AUTO` for XLA's choice, or None for the default) are asked of XLA as
    `mhlo.layout_mode`s.
    """
    n_in, n_out = len(closed.jaxpr.invars), len(closed.jaxpr.outvars)
    donated_invars = tuple(donated_invars) if donated_invars is not None else (False,) * n_in
    in_shardings = tuple(in_shardings) if in_shardings is not None else (None,) * n_in
    out_shardings = tuple(out_shardings) if out_shardings is not None else (None,) * n_out
    for what, values, n in (("donated_invars", donated_invars, n_in),
                            ("in_shardings", in_shardings, n_in),
                            ("out_shardings", out_shardings, n_out)):
        if len(values) != n:
            raise ValueError(f"{what} has {len(values)} entries for {n} "
                             f"{'outputs' if what == 'out_shardings' else 'inputs'}")
    if shardy is None:
        shardy = config.use_shardy_partitioner.value
    aliases = tuple(aliases) or (None,) * n_in
    if len(aliases) != n_in:
        raise ValueError(f"aliases has {len(aliases)} entries for {n_in} inputs")
    jaxpr, consts, kept_var_idx = _prune_unused_inputs(
        closed, keep_unused, [a is not None for a in aliases])
    donated = tuple(donated_invars[i] or aliases[i] is not None for i in kept_var_idx)
    kept_aliases = tuple(aliases[i] for i in kept_var_idx)

    inline = [not hoist_constants or _is_inlinable(c) for c in consts]
    hoisted = [(v, c) for v, c, i in zip(jaxpr.constvars, consts, inline) if not i]
    dbg = jaxpr.debug_info
    arg_names = [""] * len(hoisted) + [dbg.safe_arg_name(i) if dbg else ""
                                       for i in range(len(jaxpr.invars))]
    n_dims = len(dim_vars)
    result_names = [dbg.safe_result_path(i) if dbg else "" for i in range(len(jaxpr.outvars))]
    in_avals = tuple(v.aval for v, _ in hoisted) + tuple(jaxpr.in_avals)
    out_avals = tuple(jaxpr.out_avals)
    donated_args = (False,) * len(hoisted) + donated
    arg_shardings = (None,) * len(hoisted) + tuple(in_shardings[i] for i in kept_var_idx)

    context = shared_ir_context()
    with context, ir.Location.unknown():
        module = ir.Module.create()
        attrs = module.operation.attributes
        attrs["sym_name"] = ir.StringAttr.get(module_name(name))
        i32 = ir.IntegerType.get_signless(32)
        attrs["mhlo.num_replicas"] = ir.IntegerAttr.get(i32, num_replicas)
        attrs["mhlo.num_partitions"] = ir.IntegerAttr.get(i32, num_partitions)
        mctx = ModuleContext(context, module, platform, num_partitions=num_partitions,
                             shardy=shardy, dim_vars=dim_vars)
        mctx.axis_context = axis_context
        placement = _Placement(mctx, arg_shardings, out_shardings)
        effects = ordered_effects(jaxpr.effects)
        arg_attrs, donated_args = _arg_attributes(len(hoisted), donated_args, in_avals,
                                                  out_avals, placement, len(effects),
                                                  (None,) * len(hoisted) + kept_aliases)
        res_attrs = [ir.DictAttr.get({"jax.result_info": ir.StringAttr.get(n),
                                      **placement.attributes(s, aval)})
                     for n, s, aval in zip(result_names, out_shardings, out_avals)]
        if in_layouts or out_layouts:
            kept_layouts = [in_layouts[i] for i in kept_var_idx] if in_layouts else []
            arg_attrs = _with_layout_modes(arg_attrs, len(hoisted), kept_layouts, in_avals)
            res_attrs = _with_layout_modes(res_attrs, 0, out_layouts, out_avals)
        dim_attrs = [ir.DictAttr.get({"jax.global_constant": ir.StringAttr.get(v)})
                     for v in dim_vars]
        token_attrs = [ir.DictAttr.get({"jax.token": ir.BoolAttr.get(True)})] * len(effects)
        main = _new_function(mctx, "main", in_avals, out_avals, public=True,
                             arg_attrs=dim_attrs + token_attrs + arg_attrs,
                             res_attrs=token_attrs + res_attrs, num_tokens=len(effects))
        arg_locs = [ir.Location.name(n) if n else ir.Location.unknown() for n in arg_names]
        n_leading = n_dims + len(effects)
        block = main.add_entry_block(arg_locs=[ir.Location.unknown()] * n_leading + arg_locs)
        with ir.InsertionPoint(block), _function_dims(mctx, block):
            tokens = dict(zip(effects, list(block.arguments)[n_dims:]))
            args = list(block.arguments)[n_leading:]
            hoisted_ids = {id(v): a for (v, _), a in zip(hoisted, args)}
            const_values = [hoisted_ids[id(v)] if id(v) in hoisted_ids
                            else _constant(c, v.aval)
                            for v, c in zip(jaxpr.constvars, consts)]
            outs = lower_jaxpr_body(mctx, jaxpr, const_values, args[len(hoisted):],
                                    f"jit({name})", tokens)
            outs = [placement.place_result(v, s, aval)
                    for v, s, aval in zip(outs, out_shardings, out_avals)]
            func.ReturnOp([tokens[e] for e in effects] + outs)
        _verify(module)
        if mctx.needs_shape_refinement and not dim_vars:
            module = _refine_shapes(module)
    bytecode = module_to_bytecode(module)
    note_lowering(context, len(bytecode))
    return LoweringResult(module, context, name, kept_var_idx, tuple(c for _, c in hoisted),
                          in_avals, tuple(arg_names), out_avals, donated_args, bytecode,
                          num_partitions, shardy, arg_shardings, out_shardings, closed.jaxpr,
                          tuple(mctx.keepalives), tuple(mctx.on_compile), effects,
                          tuple(mctx.host_callbacks))


class _Placement:
    """The sharding and memory-kind attributes of `@main`'s arguments and results.

    Shardings are stated only for modules over several devices. Memory kinds are
    stated (on every argument and result with a sharding) once any of them is not
    `device`; results in another memory kind are moved there by an
    `annotate_device_placement` custom call.
    """

    def __init__(self, mctx: ModuleContext, arg_shardings, out_shardings):
        self.mctx = mctx
        self.arg_shardings = arg_shardings
        self.out_shardings = out_shardings
        given = [s for s in (*arg_shardings, *out_shardings) if s is not None]
        self.memory_kinds = any(s.memory_kind not in (None, "device") for s in given)

    def same_layout(self, arg_sharding: Sharding | None, out: int, aval) -> bool:
        """Whether an argument and output `out` (both of `aval`'s type) are laid out
        alike: always on one device; over several, when both layouts are stated equal."""
        if self.mctx.num_partitions == 1:
            return True
        out_sharding = self.out_shardings[out]
        if arg_sharding is None or out_sharding is None:
            return False
        ndim = _physical_ndim(aval)
        return (arg_sharding.memory_kind == out_sharding.memory_kind
                and arg_sharding._to_sdy_sharding(ndim) == out_sharding._to_sdy_sharding(ndim))

    @property
    def _sharding_key(self) -> str:
        return "sdy.sharding" if self.mctx.shardy else "mhlo.sharding"

    def attributes(self, sharding: Sharding | None, aval) -> dict[str, ir.Attribute]:
        if sharding is None:
            return {}
        attrs = {}
        if self.mctx.num_partitions > 1:
            attrs[self._sharding_key] = self.mctx.sharding_attribute(sharding,
                                                                     _physical_ndim(aval))
        if self.memory_kinds:
            attrs["mhlo.memory_kind"] = ir.StringAttr.get(sharding.memory_kind or "device")
        return attrs

    def const_attributes(self, aval) -> dict[str, ir.Attribute]:
        """A hoisted constant is passed whole to every device: stated replicated."""
        if self.mctx.num_partitions == 1:
            return {}
        return {self._sharding_key: self.mctx.replicated_attribute(_physical_ndim(aval))}

    def place_result(self, value: ir.Value, sharding: Sharding | None, aval) -> ir.Value:
        if sharding is None or not self.memory_kinds:
            return value
        kind = ir.StringAttr.get(sharding.memory_kind or "device")
        op = hlo.CustomCallOp(
            [value.type], [value], call_target_name="annotate_device_placement",
            has_side_effect=ir.BoolAttr.get(True), backend_config=ir.StringAttr.get(""))
        op.attributes["mhlo.frontend_attributes"] = ir.DictAttr.get(
            {"_xla_buffer_placement": kind})
        return op.result


def _refine_shapes(module: ir.Module) -> ir.Module:
    """`module` (which calls shape-polymorphic code on static shapes) with every shape
    made static, and its shape assertions checked."""
    try:
        refined = _jax.mlir.refine_polymorphic_shapes(
            module_to_bytecode(module), enable_shape_assertions=True,
            validate_static_shapes=True)
    except Exception as err:  # jaxlib raises a bare ValueError/RuntimeError text
        raise ValueError(f"shape refinement of a module calling a shape-polymorphic "
                         f"exported function failed: {err}") from None
    return ir.Module.parse(refined)


@contextlib.contextmanager
def _without_dimensions(mctx: ModuleContext):
    """While emitting a function without dimension-variable arguments: using a
    dimension's value, or calling a function (which takes them), is an error."""
    if not mctx.dim_vars:
        yield
        return
    mctx.dim_values.append(None)
    try:
        with mu.dimension_values(lambda var: _no_dimension_values(
                f"the dimension variable '{var}'")):
            yield
    finally:
        mctx.dim_values.pop()


def _no_dimension_values(what: str):
    raise NotImplementedError(
        f"shape-polymorphic export: a function that takes no dimension variables (the "
        f"reducer of a window reduction with symbolic parameters) cannot use {what}; "
        "write the reducer without jit or other calls, and without symbolic sizes")


@contextlib.contextmanager
def _function_dims(mctx: ModuleContext, block: ir.Block):
    """While lowering a function's body: its leading dimension-variable arguments are
    the values of the module's dimension variables."""
    if not mctx.dim_vars:
        yield
        return
    values = list(block.arguments)[:len(mctx.dim_vars)]
    by_name = dict(zip(mctx.dim_vars, values))
    mctx.dim_values.append(values)
    try:
        with mu.dimension_values(by_name.__getitem__):
            yield
    finally:
        mctx.dim_values.pop()


def _prune_unused_inputs(closed: ClosedJaxpr, keep_unused: bool, keep: Sequence[bool]):
    """The Jaxpr without inputs (and constants) no output needs, but those `keep`
    marks; kept input indices."""
    jaxpr, consts = closed.jaxpr, list(closed.consts)
    if keep_unused:
        return jaxpr, consts, tuple(range(len(jaxpr.invars)))
    pruned, kept = dce_jaxpr(jaxpr, [True] * len(jaxpr.outvars), instantiate=list(keep))
    live = {id(v) for v in pruned.constvars}
    consts = [c for v, c in zip(jaxpr.constvars, consts) if id(v) in live]
    return pruned, consts, tuple(i for i, k in enumerate(kept) if k)


def _arg_attributes(n_consts, donated_args, in_avals, out_avals,
                    placement: _Placement, n_tokens: int = 0,
                    aliases: Sequence[int | None] = ()) -> tuple[list, tuple[bool, ...]]:
    """Const and donation markers, shardings and memory kinds of `@main`'s arguments,
    and which arguments are donated in the end (`_donations`)."""
    donations, donated_in_the_end = _donations(donated_args, in_avals, out_avals, placement,
                                               aliases)
    attrs = []
    for i, aval in enumerate(in_avals):
        sharding = placement.arg_shardings[i]
        entry = placement.attributes(sharding, aval)
        if i < n_consts:
            entry["jax.const"] = ir.BoolAttr.get(True)
            entry.update(placement.const_attributes(aval))
        how = donations.get(i)
        if how == _DONOR:
            entry["jax.buffer_donor"] = ir.BoolAttr.get(True)
        elif how is not None:  # tokens come first among the outputs
            entry["tf.aliasing_output"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32),
                                                             how + n_tokens)
        attrs.append(ir.DictAttr.get(entry))
    return attrs, donated_in_the_end


def _with_layout_modes(attrs: list, offset: int, layouts: Sequence, avals: Sequence) -> list:
    """`attrs` (of `@main`'s arguments or results) with the layout asked for entry
    `offset + i` as its `mhlo.layout_mode` (none for a None: the default)."""
    attrs = list(attrs)
    for i, layout in enumerate(layouts, offset):
        if layout is not None:
            mode = ("auto" if layout is AUTO
                    else layout.mlir_layout_mode(physical_aval(avals[i]).dtype))
            entries = {named.name: named.attr for named in attrs[i]}
            attrs[i] = ir.DictAttr.get({**entries, "mhlo.layout_mode": ir.StringAttr.get(mode)})
    return attrs


_DONOR = "buffer donor"


def _donations(donated_args, in_avals, out_avals, placement: _Placement,
               aliases: Sequence[int | None] = ()
               ) -> tuple[dict[int, int | str], tuple[bool, ...]]:
    """How each donated argument is given to XLA, as JAX decides it: aliased to the
    output `aliases` names for it (a mutable reference's final value), else to the
    next free output of its shape and dtype (a buffer donor instead when their
    layouts may differ); else a buffer donor when a free output has as many
    elements, or when the program spans several devices and some output's layout is
    left to the partitioner; else not donated at all (the Array stays alive), with
    a warning naming it. Returns {argument: output index or _DONOR} and the
    arguments donated in the end."""
    how: dict[int, int | str] = {}
    aliases = tuple(aliases) or (None,) * len(donated_args)
    taken: set[int] = {a for a in aliases if a is not None}
    donated = [i for i, d in enumerate(donated_args) if d]
    for i in donated:
        wanted = aliases[i]
        out = wanted if wanted is not None else next(
            (j for j, o in enumerate(out_avals)
             if j not in taken and _same_buffer_type(in_avals[i], o)), None)
        if out is not None:
            taken.add(out)
            how[i] = out if placement.same_layout(placement.arg_shardings[i], out,
                                                  in_avals[i]) else _DONOR
    partitioner_chooses = placement.mctx.num_partitions > 1 and any(
        s is None for s in placement.out_shardings)
    unusable = []
    for i in donated:
        if i in how:
            continue
        size = getattr(in_avals[i], "size", None)
        out = next((j for j, o in enumerate(out_avals)
                    if j not in taken and getattr(o, "size", None) == size), None)
        if out is not None:
            taken.add(out)
        if out is not None or partitioner_chooses:
            how[i] = _DONOR
        else:
            unusable.append(in_avals[i].str_short(in_avals[i].dtype.name))
    if unusable:
        warnings.warn(f"Some donated buffers were not usable: {', '.join(unusable)}.\n"
                      "Donation gives an argument's buffer to an output of the same "
                      "shape and dtype; run `python -m plax.errors buffer-donation` for more.",
                      stacklevel=3)
    return how, tuple(i in how for i in range(len(donated_args)))


def _same_buffer_type(a: AbstractValue, b: AbstractValue) -> bool:
    return (getattr(a, "shape", None) == getattr(b, "shape", None)
            and getattr(a, "dtype", None) == getattr(b, "dtype", None))


def _verify(module: ir.Module) -> None:
    try:
        module.operation.verify()
    except ir.MLIRError as err:
        raise ValueError(f"plax produced an invalid StableHLO module (a lowering rule "
                         f"emitted ill-typed ops): {err}\n"
                         f"{module.operation.get_asm(print_generic_op_form=True)}") from None


def _new_function(mctx: ModuleContext, name: str, in_avals, out_avals, *, public: bool,
                  arg_attrs=None, res_attrs=None, num_tokens: int = 0) -> func.FuncOp:
    i32 = ir.RankedTensorType.get([], ir.IntegerType.get_signless(32))
    tokens = [hlo.TokenType.get()] * num_tokens
    in_types = [i32] * len(mctx.dim_vars) + tokens + [mu.ir_type(a) for a in in_avals]
    out_types = tokens + [mu.ir_type(a) for a in out_avals]
    with ir.InsertionPoint(mctx.module.body):
        fn = func.FuncOp(name, ir.FunctionType.get(in_types, out_types))
    fn.attributes["sym_visibility"] = ir.StringAttr.get("public" if public else "private")
    if arg_attrs is not None:
        fn.arg_attrs = ir.ArrayAttr.get(arg_attrs)
    if res_attrs is not None:
        fn.result_attrs = ir.ArrayAttr.get(res_attrs)
    mctx.symbol_table.insert(fn)
    return fn


def _lower_private_function(mctx: ModuleContext, closed: ClosedJaxpr, name: str,
                            name_stack: str) -> tuple[str, list[ir.Type]]:
    jaxpr = closed.jaxpr
    effects = ordered_effects(jaxpr.effects)
    with ir.Location.unknown():
        fn = _new_function(mctx, sanitize_name(name), jaxpr.in_avals, jaxpr.out_avals,
                           public=False, num_tokens=len(effects))
        block = fn.add_entry_block()
        with ir.InsertionPoint(block), _function_dims(mctx, block):
            n_dims = len(mctx.dim_vars)
            tokens = dict(zip(effects, list(block.arguments)[n_dims:]))
            consts = [_constant(_host_value(c), v.aval)
                      for v, c in zip(jaxpr.constvars, closed.consts)]
            outs = lower_jaxpr_body(mctx, jaxpr, consts,
                                    list(block.arguments)[n_dims + len(effects):],
                                    name_stack, tokens)
            func.ReturnOp([tokens[e] for e in effects] + outs)
    return ir.StringAttr(fn.attributes["sym_name"]).value, list(fn.type.results)


# --- equations ------------------------------------------------------------------------

def lower_jaxpr_body(mctx: ModuleContext, jaxpr: Jaxpr, consts: Sequence[ir.Value],
                     args: Sequence[ir.Value], name_stack: str,
                     tokens: dict | None = None) -> list[ir.Value]:
    """Emit `jaxpr`'s equations at the current insertion point; its output values.
    `tokens` (the current token of each ordered effect) is updated as they are used."""
    tokens = {} if tokens is None else tokens
    env: dict[int, ir.Value] = {}

    def read(atom) -> ir.Value:
        if isinstance(atom, Literal):
            return _constant(atom.val, atom.aval)
        return env[id(atom)]

    for var, value in zip(jaxpr.constvars, consts, strict=True):
        env[id(var)] = value
    for var, value in zip(jaxpr.invars, args, strict=True):
        env[id(var)] = value
    for eqn in jaxpr.eqns:
        prim = eqn.primitive
        rule = lowering_rule(prim, rule_platform(eqn.frontend_attributes, mctx.platform)
                             if eqn.frontend_attributes else mctx.platform)
        stack = f"{name_stack}/{eqn.name_stack}" if eqn.name_stack else name_stack
        ctx = LoweringRuleContext(mctx, prim, tuple(a.aval for a in eqn.invars),
                                  tuple(v.aval for v in eqn.outvars), stack, tokens)
        apart = emitting_apart() if eqn.frontend_attributes else contextlib.nullcontext()
        with mctx.location(eqn.source_info, f"{stack}/{prim.name}"), apart as emitted:
            try:
                result = rule(ctx, *map(read, eqn.invars), **eqn.params)
            except (TypeError, ValueError) as err:
                if not mctx.dim_vars or all(mu.is_static(getattr(a, "shape", ()))
                                            for a in (*ctx.avals_in, *ctx.avals_out)):
                    raise
                shapes = ", ".join(a.str_short() for a in ctx.avals_in)
                raise NotImplementedError(
                    f"the lowering of '{prim.name}' on {mctx.platform} does not support "
                    f"symbolic dimensions (shape-polymorphic export) of its operands "
                    f"({shapes}): {type(err).__name__}: {err}") from err
        outs = _rule_results(prim, result, ctx.avals_out)
        if emitted is not None:
            tag_emitted_ops(eqn.frontend_attributes, emitted, outs)
        for var, value in zip(eqn.outvars, outs):
            typed = getattr(var.aval, "typed_sharding", None)  # explicit axes: the type's layout
            env[id(var)] = (value if typed is None
                            else sharding_constraint(ctx, value, typed, var.aval, as_type=True))
    return [read(v) for v in jaxpr.outvars]


def _sdy_layout(sharding: Sharding, ndim: int, as_type: bool):
    return sharding._to_sdy_sharding(ndim, as_type=True) if as_type else (
        sharding._to_sdy_sharding(ndim))


def sharding_constraint(ctx: LoweringRuleContext, value: ir.Value, sharding: Sharding,
                        aval, *, as_type: bool = False) -> ir.Value:
    """`value` constrained to `sharding` for the partitioner: `sdy.sharding_constraint`
    under Shardy, a `Sharding` custom call under GSPMD; on one device, `value`.
    `as_type`: `sharding` is the value's type (see `ModuleContext.sharding_attribute`)."""
    if ctx.num_partitions == 1:
        return value
    ndim = _physical_ndim(aval)
    attr = ctx.sharding_attribute(sharding, ndim, as_type=as_type)
    if ctx.shardy:
        return sdy.ShardingConstraintOp(value, attr).result
    open_dims = [i for i, d in enumerate(_sdy_layout(sharding, ndim, as_type).dims)
                 if d.is_open]
    unspecified = f"unspecified_dims=[{','.join(map(str, open_dims))}]" if open_dims else ""
    op = hlo.CustomCallOp([value.type], [value], call_target_name="Sharding",
                          backend_config=ir.StringAttr.get(unspecified))
    op.attributes["mhlo.sharding"] = attr
    return op.result


@functools.cache
def _load_platform_rules() -> None:
    plugins.load_group("plax.lowering")


def lowering_rule(prim: Primitive, platform: str):
    """`prim`'s lowering rule for `platform` (a platform-specific one wins, so the
    platform rules that plugins add are loaded first, once)."""
    _load_platform_rules()
    rule = prim.get_rule(LOWERING, platform)
    if rule is None:
        have = rules_of(prim)
        lowerings = {k: v for k, v in have.items() if k.startswith(LOWERING)}
        raise NotImplementedError(
            f"primitive '{prim.id}' has no lowering rule for platform {platform!r}"
            + (f" (lowering rules exist for: {lowerings})" if lowerings else "")
            + f"; its rules and the packages that registered them: {have or 'none'}")
    return rule


def _rule_results(prim: Primitive, result, avals_out) -> list[ir.Value]:
    outs = list(result) if isinstance(result, (list, tuple)) else [result]
    if len(outs) != len(avals_out):
        raise ValueError(f"the lowering rule of '{prim.name}' returned {len(outs)} values "
                         f"for {len(avals_out)} outputs")
    for value, aval in zip(outs, avals_out):
        expected = mu.ir_type(aval)
        if not isinstance(value, ir.Value) or value.type != expected:
            got = value.type if isinstance(value, ir.Value) else type(value).__name__
            raise ValueError(f"the lowering rule of '{prim.name}' returned {got} where "
                             f"abstract evaluation says {expected} ({aval.str_short()})")
    return outs


# --- constants ------------------------------------------------------------------------

def _is_inlinable(value) -> bool:
    if isinstance(value, (bool, int, float, complex, np.generic)):
        return True
    return isinstance(value, np.ndarray) and value.nbytes <= INLINE_CONSTANT_BYTES


def _physical_ndim(aval) -> int:
    """The rank of the tensor behind `aval`: a key array's trailing data dimensions
    count (a sharding of `key<fry>[8]` leaves the data's `2` unsplit)."""
    return len(physical_aval(aval).shape)


def _host_value(value):
    if isinstance(value, Tracer):
        raise ValueError(f"cannot lower a Jaxpr that closes over the traced value {value!r}")
    return value


def _constant(value, aval) -> ir.Value:
    if isinstance(aval.dtype, dtypes.ExtendedDType):  # a device array of keys: its data
        aval, value = physical_aval(aval), value._value
    array = np.asarray(value, dtype=aval.dtype)
    if not mu.is_static(aval.shape):  # a scalar literal of a symbolic shape
        return mu.broadcast_to(mu.dense_constant(array.reshape(())), aval)
    if array.shape != aval.shape:
        array = np.broadcast_to(array, aval.shape)
    return mu.dense_constant(array)
